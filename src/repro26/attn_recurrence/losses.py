"""Training objectives.

Surrogate distillation: the head maps values by ``P (x) I``, the surrogate by ``M``; for values
``v ~ N(0, I)`` the output error is ``E_v ||(P (x) I - M) v||^2 = ||P (x) I - M||_F^2``, so the
surrogate is trained on the Frobenius distance of the mixing operators (no sampling of values).

Language models: mean next-token cross-entropy, weighted by a mask (MQAR scores only answers).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, Int


def operator_mse(M: Float[Array, "T T d d"], P: Float[Array, "T T"]) -> Array:
    """``||P (x) I_d - M||_F^2`` for one sequence."""
    d = M.shape[-1]
    return jnp.sum((P[:, :, None, None] * jnp.eye(d) - M) ** 2)


def surrogate_loss(model, data, key, batch: int):
    """Mean ``||P (x) I - M(x)||_F^2`` over a random batch of the training pool."""
    X, P = data
    idx = jax.random.randint(key, (batch,), 0, X.shape[0])
    err = jax.vmap(lambda x, p: operator_mse(model.mixing(x), p))(X[idx], P[idx])
    return jnp.mean(err), {}


def lm_loss(model, data, key, batch: int):
    """Masked next-token cross-entropy of a GPT-2 on a random batch of windows."""
    windows, mask = data
    idx = jax.random.randint(key, (batch,), 0, windows.shape[0])
    w, m = windows[idx], mask[idx]
    logits = jax.vmap(lambda ids: model.forward(ids)[0])(w[:, :-1])
    nll = optax.softmax_cross_entropy_with_integer_labels(logits, w[:, 1:])
    loss = jnp.sum(nll * m) / jnp.maximum(jnp.sum(m), 1.0)
    return loss, {}


def answer_accuracy(model, windows: Int[Array, "n T1"], mask: Float[Array, "n T"]) -> Array:
    """Fraction of masked targets predicted exactly (argmax)."""
    logits = jax.vmap(lambda ids: model.forward(ids)[0])(windows[:, :-1])
    hit = (jnp.argmax(logits, -1) == windows[:, 1:]) * mask
    return jnp.sum(hit) / jnp.maximum(jnp.sum(mask), 1.0)
