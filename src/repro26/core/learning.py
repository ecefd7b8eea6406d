"""Does every parameter learn? (DESIGN.md, "Claims that decide", rule 6.)

A trainable leaf that receives exactly zero gradient in the first steps of training never
moves under Adam or SGD: a zero-initialised output layer in front of a ``tanh`` silences every
layer behind it. :func:`silent_leaves` runs a few optimiser steps on a model and lists, by
path, the inexact-array leaves whose gradient was exactly zero at every one of those steps;
:func:`assert_every_parameter_learns` fails unless that list equals the leaves named as frozen
on purpose. Method tests call it on the method and each learned baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optax


def leaf_names(tree: Any) -> list[str]:
    """``jax.tree_util.keystr`` path of every inexact-array leaf of ``tree``, in tree order."""
    leaves = jax.tree_util.tree_flatten_with_path(eqx.filter(tree, eqx.is_inexact_array))[0]
    return [jax.tree_util.keystr(path) for path, leaf in leaves if leaf is not None]


def silent_leaves(model: Any, loss_fn: Callable[[Any, Any], jax.Array], batches: Iterable[Any],
                  optimiser: optax.GradientTransformation | None = None) -> list[str]:
    """Paths of the trainable leaves whose gradient is exactly zero at every step.

    ``loss_fn(model, batch) -> scalar``; one optimiser step (Adam, lr 1e-3, unless given) per
    batch, so a leaf that only gets gradient once others have moved off their initial values
    (a layer behind a zero-initialised one) is found to learn."""
    optimiser = optimiser or optax.adam(1e-3)
    params, static = eqx.partition(model, eqx.is_inexact_array)
    state = optimiser.init(params)
    names = leaf_names(params)
    touched = [False] * len(names)

    @eqx.filter_jit
    def step(params, state, batch):
        grads = jax.grad(lambda p: loss_fn(eqx.combine(p, static), batch))(params)
        updates, state = optimiser.update(grads, state, params)
        return eqx.apply_updates(params, updates), state, grads

    for batch in batches:
        params, state, grads = step(params, state, batch)
        flat = [g for g in jax.tree_util.tree_leaves(grads) if g is not None]
        touched = [t or bool(jnp.any(g != 0)) for t, g in zip(touched, flat)]
    return [n for n, t in zip(names, touched) if not t]


def assert_every_parameter_learns(model: Any, loss_fn: Callable[[Any, Any], jax.Array],
                                  batches: Iterable[Any], *, frozen: Iterable[str] = (),
                                  optimiser: optax.GradientTransformation | None = None) -> None:
    """Raise ``AssertionError`` naming every leaf that got no gradient and is not in ``frozen``
    (substrings of leaf paths, for leaves that are frozen on purpose: a frozen base, a fixed
    embedding), and every ``frozen`` entry that names no silent leaf."""
    frozen = list(frozen)
    silent = silent_leaves(model, loss_fn, batches, optimiser)
    unexpected = [n for n in silent if not any(f in n for f in frozen)]
    stale = [f for f in frozen if not any(f in n for n in silent)]
    if unexpected:
        raise AssertionError(f"{len(unexpected)} trainable leaves got zero gradient: "
                             + ", ".join(unexpected[:12]))
    if stale:
        raise AssertionError(f"named frozen but they learn (or match no leaf): {stale}")
