r"""Reverse-time samplers on the uniform grid ``t_k = 1 - k/N``, ``k = 0..N``.

Every sampler starts from the prior (uniform tokens; all-mask for MDLM) at ``t = 1`` and takes
``N`` steps ``t -> s = t - 1/N``, evaluating the network once per step at the current time ``t``.

* ``tau`` — Poisson-timed tau-leaping (the Neural CTMC sampler): with the rates frozen over the
  step, the first jump of a position is ``Exp(lambda)``-distributed, so the position jumps with
  probability ``1 - exp(-lambda (t - s))`` and lands on ``y ~ J(. | x, t)``. Works for any
  method with reverse rates (Neural CTMC, SEDD, GIDD via :func:`losses.model_rates`).
* ``jump`` — the first jump of the whole sequence (Neural CTMC's decomposition, one network
  call per step): the time to the next jump is ``Exp(Lambda)`` with the sequence's exit rate
  ``Lambda = sum_l lambda_l`` (rates frozen over the step), so the sequence jumps with
  probability ``1 - exp(-Lambda (t - s))``, at position ``l ~ lambda_l / Lambda``, to
  ``y ~ J_l(. | x, t)``; at most one position changes per step (exact in the limit of many
  steps, as the reverse CTMC changes one position at a time).
* ``euler`` — first-order Euler step of the Kolmogorov equation,
  ``P(x -> y) = R(x -> y)(t - s)``, i.e. jump with probability ``min(1, lambda (t - s))``.
* ``ancestral`` for MDLM — a masked position is revealed with probability
  ``(alpha_s - alpha_t) / (1 - alpha_t) = (t - s) / t`` to ``y ~ x_hat`` (SUBS: revealed tokens
  are never changed; the last step reveals every position).
* ``ancestral`` for GIDD — plug-in posterior ``p(z_s | z_t) ∝ q_{t|s}(z_t | z_s) q_s(z_s | x_hat)``
  with ``q_{t|s}(z_t|z) = a delta + (1-a)/V``, ``a = alpha_t / alpha_s`` (its paper's sampler).

``N`` is a traced integer (``lax.fori_loop``), so one compilation serves 16/32/64/128 steps.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int, PRNGKeyArray

from repro26.neural_ctmc import losses
from repro26.neural_ctmc.names import ALL_SAMPLERS

def _uniform_step(method, sampler, model, x, t, s, key, eps):
    k_u, k_y = jax.random.split(key)
    tb = jnp.full(x.shape[0], t)
    logits, rate_h = jax.vmap(model)(x, tb)
    tt = jnp.broadcast_to(tb[:, None], x.shape)
    if sampler == "ancestral":  # GIDD plug-in posterior
        vocab = logits.shape[-1]
        a_t, a_s = losses.alpha(t, eps), losses.alpha(s, eps)
        a = a_t / a_s
        like = a * jax.nn.one_hot(x, vocab) + (1.0 - a) / vocab
        prior = a_s * jax.nn.softmax(logits, -1) + (1.0 - a_s) / vocab
        return jax.random.categorical(k_y, jnp.log(like) + jnp.log(prior))
    lam, log_j = losses.model_rates(method, logits, rate_h, x, tt, eps)
    dt = t - s
    if sampler == "jump":
        k_l = jax.random.fold_in(key, 1)
        total = lam.sum(-1)
        jump = jax.random.uniform(k_u, total.shape) < -jnp.expm1(-total * dt)
        where = jax.random.categorical(k_l, jnp.log(jnp.maximum(lam, 1e-30)))
        y = jax.random.categorical(k_y, jnp.take_along_axis(log_j, where[:, None, None], 1)[:, 0])
        hit = jump[:, None] & (jnp.arange(x.shape[1])[None, :] == where[:, None])
        return jnp.where(hit, y[:, None], x)
    p_jump = -jnp.expm1(-lam * dt) if sampler == "tau" else jnp.clip(lam * dt, 0.0, 1.0)
    jump = jax.random.uniform(k_u, x.shape) < p_jump
    return jnp.where(jump, jax.random.categorical(k_y, log_j), x)


def _mdlm_step(model, x, t, s, key):
    k_u, k_y = jax.random.split(key)
    vocab = model.vocab_size
    logits, _ = jax.vmap(model)(x, jnp.full(x.shape[0], t))
    reveal = (x == vocab) & (jax.random.uniform(k_u, x.shape) < (t - s) / t)
    return jnp.where(reveal, jax.random.categorical(k_y, logits), x)


@eqx.filter_jit
def sample(method: str, sampler: str, model, key: PRNGKeyArray, n: int, length: int,
           n_steps: Int[Array, ""], eps: float) -> Int[Array, "n length"]:
    """``n`` sequences of ``length`` tokens from ``model`` with ``n_steps`` reverse steps."""
    if sampler not in ALL_SAMPLERS[method]:
        raise ValueError(f"sampler {sampler!r} is not defined for {method}; "
                         f"use {ALL_SAMPLERS[method]}")
    vocab = model.vocab_size
    k_init, k_loop = jax.random.split(key)
    if method == "mdlm":
        x = jnp.full((n, length), vocab, jnp.int32)
    else:
        x = jax.random.randint(k_init, (n, length), 0, vocab)
    n_f = n_steps.astype(jnp.float32)

    def body(k, x):
        t = 1.0 - k / n_f
        s = jnp.maximum(1.0 - (k + 1) / n_f, 0.0)
        kk = jax.random.fold_in(k_loop, k)
        if method == "mdlm":
            return _mdlm_step(model, x, t, s, kk)
        return _uniform_step(method, sampler, model, x, t, s, kk, eps)

    return jax.lax.fori_loop(0, n_steps, body, x)
