r"""Exact output laws of few-step samplers on a language small enough to enumerate.

The ``synthetic`` study's language is a random HMM with ``V^L`` sequences (4,096 for V = 4,
L = 6); its law ``p`` is exact (forward algorithm, :func:`data.hmm_log_prob`). Every sampler of
:mod:`solvers` updates the positions of ``x`` independently given ``x``, so one step is the
Markov kernel

    K(x, y) = prod_l P_l(y_l | x, t, s),

and the law after ``N`` steps from the prior ``q_0`` is ``q_N = q_0 K_1 ... K_N``, computed here
without sampling noise by contracting ``q_k`` with the per-position factors over all states
(``(V + 1)^L`` states with the mask for MDLM). Per-position factors ``P_l`` (rows over the
``V`` tokens, plus the mask for MDLM):

* ``tau``:   jump with probability ``1 - exp(-lambda (t - s))`` to ``y ~ J``;
* ``euler``: jump with probability ``min(1, lambda (t - s))`` to ``y ~ J``;
* ``ancestral`` (GIDD): ``prop. to (a delta(x_l) + (1 - a)/V) (alpha_s x_hat + (1 - alpha_s)/V)``,
  ``a = alpha_t / alpha_s``;
* ``ancestral`` (MDLM): a mask is revealed with probability ``(t - s)/t`` to ``y ~ x_hat``.

The ``jump`` sampler (Neural CTMC's decomposition at the sequence level) is not a product over
positions: the sequence jumps once with probability ``1 - exp(-Lambda (t - s))``,
``Lambda = sum_l lambda_l``, at position ``l`` with probability ``lambda_l / Lambda``, to
``y ~ J_l``; its kernel moves mass only to the ``L (V - 1)`` one-position neighbours
(:func:`propagate_jump`).

*Exact-rate floors.* The same samplers run on the exact quantities of ``p`` instead of a
network: the marginal reverse rates ``R(x -> x^{l<-y}) = (beta_t / V) p_t(x^{l<-y}) / p_t(x)``
(``p_t`` = ``p`` noised independently per position) and the exact clean-data posteriors
``x_hat_l = p(x0_l | x_t)`` (uniform noise) or ``p(x0_l | unmasked x_t)`` (masks). What remains
of ``KL(q_N || p)`` is the sampler's own discretisation error.
"""

from __future__ import annotations

import functools
import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy
from jaxtyping import Array, Float, Int

from repro26.neural_ctmc import data as D
from repro26.neural_ctmc import losses

#: floors: (sampler label, noise) for every sampler kind
FLOORS: tuple[tuple[str, str], ...] = (("tau", "uniform"), ("euler", "uniform"),
                                       ("jump", "uniform"), ("ancestral", "uniform"),
                                       ("ancestral", "mask"))


# ----------------------------------------------------------------------------- the language


def all_sequences(vocab: int, length: int) -> Int[Array, "S L"]:
    """Every sequence in ``{0..vocab-1}^length``, in base-``vocab`` order (first position most
    significant): row ``i`` is the digits of ``i``."""
    idx = jnp.arange(vocab ** length)
    powers = vocab ** jnp.arange(length - 1, -1, -1)
    return ((idx[:, None] // powers) % vocab).astype(jnp.int32)


def synthetic_language(sc) -> tuple[dict, Float[Array, " S"]]:
    """The HMM of the ``synthetic`` config section and its exact law over all sequences."""
    hmm = D.make_hmm(jax.random.PRNGKey(sc.data_seed), sc.vocab_size, sc.hidden_states,
                     sc.concentration, sc.concentration)
    logp = D.hmm_log_prob(hmm, all_sequences(sc.vocab_size, sc.seq_len))
    return hmm, jnp.exp(logp - jax.nn.logsumexp(logp))


def independent_positions(p: Float[Array, " S"], vocab: int, length: int) -> Float[Array, " S"]:
    """The product of ``p``'s per-position marginals (the trivial baseline: no dependencies)."""
    tensor = p.reshape((vocab,) * length)
    out = jnp.ones(())
    for axis in range(length):
        marginal = tensor.sum(axis=tuple(a for a in range(length) if a != axis))
        out = out[..., None] * marginal
    return out.reshape(-1)


def divergences(q: Float[Array, " S"], p: Float[Array, " S"]) -> dict[str, float]:
    """``KL(q || p)``, ``KL(p || q)`` and ``H(q)`` in nats (per sequence)."""
    q = jnp.clip(q, 0.0, None)
    q = q / q.sum()
    tiny = 1e-300
    return {"kl_qp": float(jnp.sum(xlogy(q, q) - xlogy(q, jnp.maximum(p, tiny)))),
            "kl_pq": float(jnp.sum(xlogy(p, p) - xlogy(p, jnp.maximum(q, tiny)))),
            "entropy": float(-jnp.sum(xlogy(q, q)))}


# ----------------------------------------------------------------------------- one step


def step_factors(method: str, sampler: str, x: Int[Array, "S L"], t, s, eps: float,
                 lam=None, log_j=None, x_hat=None) -> Float[Array, "S L W"]:
    """Per-position kernel rows ``P_l(. | x)`` (``W = V``, or ``V + 1`` with the mask for MDLM).

    ``lam (S, L)`` and ``log_j (S, L, V)`` are the reverse exit rates and jump log-probs
    (``tau``, ``euler``); ``x_hat (S, L, V)`` the clean-data prediction (``ancestral``)."""
    if method == "mdlm":
        vocab = x_hat.shape[-1]
        masked = (x == vocab)[..., None]
        reveal = (t - s) / t
        move = jnp.concatenate([reveal * x_hat, jnp.full(x.shape + (1,), 1.0 - reveal)], -1)
        return jnp.where(masked, move, jax.nn.one_hot(x, vocab + 1))
    if sampler == "ancestral":
        vocab = x_hat.shape[-1]
        a_t, a_s = losses.alpha(t, eps), losses.alpha(s, eps)
        a = a_t / a_s
        row = ((a * jax.nn.one_hot(x, vocab) + (1.0 - a) / vocab)
               * (a_s * x_hat + (1.0 - a_s) / vocab))
        return row / row.sum(-1, keepdims=True)
    vocab = log_j.shape[-1]
    dt = t - s
    p_jump = -jnp.expm1(-lam * dt) if sampler == "tau" else jnp.clip(lam * dt, 0.0, 1.0)
    stay = jax.nn.one_hot(x, vocab)
    return (1.0 - p_jump)[..., None] * stay + p_jump[..., None] * jnp.exp(log_j)


@jax.jit
def propagate(q: Float[Array, " S"], factors: Float[Array, "S L W"]) -> Float[Array, " S"]:
    """``q'(y) = sum_x q(x) prod_l factors[x, l, y_l]`` over all ``W^L`` states ``y``.

    Split ``y`` into its first ``a = L // 2`` digits and the rest: with
    ``A[x, y_{:a}] = q(x) prod_{l < a} factors[x, l, y_l]`` and
    ``B[x, y_{a:}] = prod_{l >= a} factors[x, l, y_l]``, ``q'(y_{:a}, y_{a:}) = (A^T B)``, one
    ``(W^a x S) @ (S x W^{L-a})`` matrix product (no ``S x W^L`` intermediate)."""
    n_states, length, width = factors.shape
    split = length // 2

    def outer(f):  # (S, l, W) -> (S, W^l), first digit most significant
        out = f[:, 0, :]
        for pos in range(1, f.shape[1]):
            out = (out[:, :, None] * f[:, pos, None, :]).reshape(n_states, -1)
        return out

    left = q[:, None] * outer(factors[:, :split]) if split else q[:, None]
    return (left.T @ outer(factors[:, split:])).reshape(-1)


@functools.lru_cache(maxsize=4)
def mask_transitions(vocab: int, length: int) -> tuple[Int[Array, " P"], Int[Array, "P L"]]:
    """``(src, dst digits)`` of every allowed MDLM move ``x -> y`` (unmasked positions are
    kept, masked ones become any token or stay masked): ``(V + 2)^L`` pairs instead of
    ``(V + 1)^{2L}``."""
    width = vocab + 1
    xs = np.asarray(all_sequences(width, length))
    src, dst = [], []
    for pattern in itertools.product((False, True), repeat=length):
        masked = np.array(pattern)
        idx = np.flatnonzero(np.all((xs == vocab) == masked, axis=1))
        opts = np.array(list(itertools.product(range(width), repeat=int(masked.sum()))), int)
        y = np.repeat(xs[idx][:, None, :], len(opts), axis=1)
        y[:, :, masked] = opts[None].reshape(1, len(opts), -1)
        src.append(np.repeat(idx, len(opts)))
        dst.append(y.reshape(-1, length))
    return jnp.asarray(np.concatenate(src)), jnp.asarray(np.concatenate(dst), jnp.int32)


@jax.jit
def propagate_sparse(q: Float[Array, " S"], factors: Float[Array, "S L W"], src: Int[Array, " P"],
                     dst_digits: Int[Array, "P L"]) -> Float[Array, " S"]:
    """:func:`propagate` restricted to the listed moves (the kernel is zero elsewhere)."""
    n_states, length, width = factors.shape
    vals = q[src] * jnp.prod(factors[src[:, None], jnp.arange(length)[None, :], dst_digits], -1)
    dst = dst_digits @ (width ** jnp.arange(length - 1, -1, -1))
    return jax.ops.segment_sum(vals, dst, num_segments=n_states)


@jax.jit
def propagate_jump(q: Float[Array, " S"], x: Int[Array, "S L"], lam: Float[Array, "S L"],
                   log_j: Float[Array, "S L V"], dt) -> Float[Array, " S"]:
    """One step of the ``jump`` sampler on all ``V^L`` sequences ``x`` (base-``V`` order):
    ``q'(y) = q(y) e^{-Lambda(y) dt} + sum_{x, l: y = x^{l<-v}} q(x) (1 - e^{-Lambda(x) dt})
    (lambda_l(x) / Lambda(x)) J_l(v | x)``."""
    n_states, length = x.shape
    vocab = log_j.shape[-1]
    total = lam.sum(-1)
    p_move = -jnp.expm1(-total * dt)
    own = jax.nn.one_hot(x, vocab, dtype=bool)
    move = (q * p_move / jnp.maximum(total, 1e-30))[:, None, None] * lam[..., None] \
        * jnp.where(own, 0.0, jnp.exp(log_j))
    powers = vocab ** jnp.arange(length - 1, -1, -1)
    nb = (jnp.arange(n_states)[:, None, None]
          + (jnp.arange(vocab)[None, None, :] - x[:, :, None]) * powers[None, :, None])
    return q * (1.0 - p_move) + jax.ops.segment_sum(move.reshape(-1), nb.reshape(-1),
                                                    num_segments=n_states)


def grid(n_steps: int) -> list[tuple[float, float]]:
    """``(t, s)`` of the ``N`` steps on ``t_k = 1 - k/N``."""
    return [(1.0 - k / n_steps, max(1.0 - (k + 1) / n_steps, 0.0)) for k in range(n_steps)]


def output_law(method: str, sampler: str, outputs, vocab: int, length: int, n_steps: int,
               eps: float) -> Float[Array, " S"]:
    """Exact law ``q_N`` over the ``V^L`` sequences after ``n_steps`` steps from the prior.

    ``outputs(t) -> dict(lam, log_j, x_hat)`` gives the model's quantities at time ``t`` for
    every state of :func:`states`."""
    x = states(method, vocab, length)
    if method == "mdlm":
        q = jnp.zeros(x.shape[0]).at[-1].set(1.0)  # all-mask is the last state
    else:
        q = jnp.full(x.shape[0], 1.0 / x.shape[0])
    for t, s in grid(n_steps):
        if sampler == "jump":
            out = outputs(t)
            q = propagate_jump(q, x, out["lam"], out["log_j"], t - s)
            continue
        factors = step_factors(method, sampler, x, t, s, eps, **outputs(t))
        if method == "mdlm":
            q = propagate_sparse(q, factors, *mask_transitions(vocab, length))
        else:
            q = propagate(q, factors)
    if method == "mdlm":  # the last step reveals every mask: keep the unmasked states
        q = q.reshape((vocab + 1,) * length)[(slice(0, vocab),) * length].reshape(-1)
    return q


@functools.lru_cache(maxsize=8)
def states(method: str, vocab: int, length: int) -> Int[Array, "S L"]:
    """All states a sampler visits: ``V^L`` sequences, or ``(V+1)^L`` with the mask (id V)."""
    return all_sequences(vocab + (method == "mdlm"), length)


# ----------------------------------------------------------------------------- networks


def network_outputs(method: str, model, vocab: int, length: int, eps: float, batch: int = 4096):
    """``outputs(t)`` of a trained network (see :func:`output_law`), evaluated on all states."""
    x = states(method, vocab, length)

    @eqx.filter_jit
    def run(model, t):
        def one(xs):
            logits, rate_h = model(xs, t)
            out = {"x_hat": jax.nn.softmax(logits, -1)} if method in ("mdlm", "gidd") else {}
            if method != "mdlm":
                out["lam"], out["log_j"] = losses.model_rates(
                    method, logits, rate_h, xs, jnp.full(xs.shape, t), eps)
            return out
        return jax.lax.map(one, x[needed], batch_size=batch)

    # MDLM's prediction is never read at a state without masks: skip those
    needed = np.flatnonzero(np.any(np.asarray(x) == vocab, axis=1)) if method == "mdlm" \
        else np.arange(x.shape[0])

    def outputs(t):
        out = run(model, jnp.float32(t))
        if method == "mdlm":
            out = {"x_hat": jnp.zeros((x.shape[0], length, vocab)).at[needed].set(out["x_hat"])}
        return out

    return outputs


def cached_outputs(outputs):
    """``outputs`` memoised by ``t`` (the grids of N = 16..128 share their times)."""
    cache: dict = {}

    def cached(t):
        if t not in cache:
            cache[t] = outputs(t)
        return cache[t]

    return cached


# ----------------------------------------------------------------------------- exact quantities


def noised_law(p: Float[Array, " S"], vocab: int, length: int, t, eps: float) -> Float[Array, "..."]:
    """``p_t`` as a ``(V,)*L`` tensor: ``p`` noised by ``alpha_t I + (1 - alpha_t) 11^T / V``
    on every position."""
    a = losses.alpha(t, eps)
    kernel = a * jnp.eye(vocab) + (1.0 - a) / vocab
    tensor = p.reshape((vocab,) * length)
    for axis in range(length):
        tensor = jnp.moveaxis(jnp.tensordot(tensor, kernel, axes=([axis], [0])), -1, axis)
    return tensor


def exact_uniform_outputs(p: Float[Array, " S"], vocab: int, length: int, eps: float):
    """``outputs(t)`` of the true reverse process of ``p`` under uniform noise: rates
    ``(beta_t/V) p_t(x^{l<-y})/p_t(x)`` and ``x_hat_l(y) = p(x0_l = y | x_t^{-l})``."""
    x = all_sequences(vocab, length)
    idx = jnp.arange(x.shape[0])
    powers = vocab ** jnp.arange(length - 1, -1, -1)

    def outputs(t):
        p_t = noised_law(p, vocab, length, t, eps).reshape(-1)
        # neighbour index x^{l<-y} for every (state, l, y)
        nb = idx[:, None, None] + (jnp.arange(vocab)[None, None, :] - x[:, :, None]) * powers[None, :, None]
        ratio = p_t[nb] / p_t[:, None, None]
        own = jax.nn.one_hot(x, vocab, dtype=bool)
        rates = jnp.where(own, 0.0, losses.beta(t, eps) / vocab * ratio)
        lam = rates.sum(-1)
        log_j = jnp.log(jnp.where(own, 1e-30, rates) / jnp.maximum(lam, 1e-30)[..., None])
        # x_hat_l(y) = p(x0_l = y | x_t without l), prop. to sum_{x0: x0_l = y} p(x0)
        # prod_{m != l} q_t(x_t,m | x0_m): with it GIDD's rates (beta/V) q_t(y|x_hat)/q_t(x|x_hat)
        # are the exact ones (the minimiser of its loss; the full posterior p(x0_l | x_t) is not)
        a = losses.alpha(t, eps)
        kern = a * jnp.eye(vocab) + (1.0 - a) / vocab
        post = []
        for pos in range(length):
            # p noised on every axis but pos: joint law of (x_t without pos, x0_pos)
            joint = p.reshape((vocab,) * length)
            for axis in range(length):
                if axis != pos:
                    joint = jnp.moveaxis(jnp.tensordot(joint, kern, axes=([axis], [0])), -1, axis)
            neighbour = idx[:, None] + (jnp.arange(vocab)[None, :] - x[:, pos, None]) * powers[pos]
            w = joint.reshape(-1)[neighbour]
            post.append(w / w.sum(-1, keepdims=True))
        return {"lam": lam, "log_j": log_j, "x_hat": jnp.stack(post, 1)}

    return outputs


def exact_mask_outputs(p: Float[Array, " S"], vocab: int, length: int):
    """``outputs(t)`` of the true MDLM denoiser: ``x_hat_l(y) = p(x0_l = y | unmasked x)``
    (independent of ``t``)."""
    seqs = np.asarray(all_sequences(vocab, length))
    xs = np.asarray(states("mdlm", vocab, length))
    p = np.asarray(p, np.float64)
    x_hat = np.zeros(xs.shape + (vocab,))
    onehot = np.eye(vocab)[seqs]  # (S0, L, V)
    for start in range(0, len(xs), 1024):
        xb = xs[start:start + 1024]
        consistent = np.all((xb[:, None, :] == vocab) | (xb[:, None, :] == seqs[None]), -1)
        w = consistent * p[None, :]
        num = np.einsum("bs,slv->blv", w, onehot)
        x_hat[start:start + 1024] = num / np.maximum(num.sum(-1, keepdims=True), 1e-300)
    x_hat = jnp.asarray(x_hat, jnp.float32)
    return lambda t: {"x_hat": x_hat}
