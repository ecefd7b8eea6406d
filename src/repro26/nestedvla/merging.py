"""Merging per-task weight deltas ("task vectors") tau_t = B_t A_t into one delta per layer.

Each operator takes task vectors stacked on a leading task axis, ``tau`` (n_tasks, ...), and a
scaling lambda, and returns one delta of shape ``tau.shape[1:]``:

* task arithmetic (Ilharco et al. 2023): lambda * sum_t tau_t;
* TIES (Yadav et al. 2023): keep each tau_t's top-k fraction of entries by magnitude (trim),
  elect the sign of each entry as sign(sum_t trimmed tau_t), average the trimmed entries that
  agree with the elected sign (disjoint mean), times lambda;
* DARE (Yu et al. 2024): drop each entry of tau_t with probability p and rescale the kept ones
  by 1 / (1 - p) (unbiased: E = tau_t), then task arithmetic.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from repro26.nestedvla.names import MERGERS as METHODS


def task_arithmetic(tau: jax.Array, lam: float) -> jax.Array:
    return lam * jnp.sum(tau, axis=0)


def trim(tau: jax.Array, keep: float) -> jax.Array:
    """Zero all but the ``keep`` fraction of largest-magnitude entries of each task vector."""
    flat = jnp.abs(tau.reshape(tau.shape[0], -1))
    k = max(1, int(round(keep * flat.shape[1])))
    threshold = -jnp.sort(-flat, axis=1)[:, k - 1]
    return jnp.where(flat >= threshold[:, None], tau.reshape(flat.shape), 0.0).reshape(tau.shape)


def ties(tau: jax.Array, lam: float, keep: float) -> jax.Array:
    trimmed = trim(tau, keep)
    sign = jnp.sign(jnp.sum(trimmed, axis=0))
    agree = (jnp.sign(trimmed) == sign) & (trimmed != 0)
    count = jnp.sum(agree, axis=0)
    mean = jnp.sum(jnp.where(agree, trimmed, 0.0), axis=0) / jnp.maximum(count, 1)
    return lam * mean


def dare(tau: jax.Array, lam: float, drop: float, key: jax.Array) -> jax.Array:
    keep = jax.random.bernoulli(key, 1.0 - drop, tau.shape)
    return task_arithmetic(jnp.where(keep, tau / (1.0 - drop), 0.0), lam)


def merge(method: str, deltas, lam: float, *, keep: float, drop: float, key: jax.Array):
    """Merge per-layer stacked task vectors ``deltas`` (tuple of (n_tasks, out, in))."""
    if method == "task_arithmetic":
        return tuple(task_arithmetic(d, lam) for d in deltas)
    if method == "ties":
        return tuple(ties(d, lam, keep) for d in deltas)
    if method == "dare":
        keys = jax.random.split(key, len(deltas))
        return tuple(dare(d, lam, drop, k) for d, k in zip(deltas, keys))
    raise ValueError(f"unknown merging method {method!r}")
