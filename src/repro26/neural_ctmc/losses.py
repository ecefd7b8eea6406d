r"""Forward noise, closed-form reverse rates and the four variational bounds.

Forward process (uniform noise)
-------------------------------
Every position runs an independent CTMC on ``{0..V-1}`` with generator
``Q_t = beta(t) (1 1^T / V - I)``. Its marginal is

    q_t(x | x0) = alpha_t delta(x, x0) + (1 - alpha_t) / V,     alpha_t = exp(-int_0^t beta),

and we use the linear schedule ``alpha_t = 1 - (1 - eps) t`` on ``t in [0, 1]``, so
``beta(t) = (1 - eps) / alpha_t`` and ``q_1`` is uniform up to ``eps`` (the prior ``pi`` is
uniform). For MDLM the state space has one more symbol ``m`` (mask), the forward process moves
``x0 -> m`` at rate ``beta`` and ``eps = 0`` (``q_1 = delta_m``).

Reverse rates given x0 (closed form)
------------------------------------
The time reversal of a CTMC with marginals ``q_t`` has rates
``R*_t(x -> y) = Q_t(y, x) q_t(y) / q_t(x)`` (``y != x``); conditioned on ``x0`` this is

    R*(x -> y | x0) = (beta_t / V) q_t(y | x0) / q_t(x | x0),

so the exit rate and the jump distribution (abstract: "when to jump" and "where to jump") are

    lambda*(x) = sum_{y != x} R* = (beta_t / V) (1 - q_t(x | x0)) / q_t(x | x0),
    J*(y | x)  = R* / lambda*    = q_t(y | x0) / (1 - q_t(x | x0))          (y != x).

Path-space KL and the Neural CTMC loss
--------------------------------------
For two CTMCs on ``[0, 1]`` started from the same law, Girsanov's theorem for jump processes
gives ``KL(P* || P_theta) = E_{P*} int_0^1 sum_{y != x_t} [R_theta - R* + R* log(R* / R_theta)] dt``.
The true reverse process conditioned on ``x0`` has the forward marginals, so the expectation
is ``E_{t ~ U[0,1]} E_{x_t ~ q_t(.|x0)}``. Writing ``R = lambda J`` for both processes and
using ``sum_y J = 1``, the integrand splits exactly into

    Poisson KL (timing):   lambda_theta - lambda* + lambda* log(lambda* / lambda_theta)
    direction:             lambda* KL(J*(.|x) || J_theta(.|x)).

The data log-likelihood bound (the ELBO) follows from the chain rule of KL on path space:
``-log p_theta(x0) <= KL(q_1(.|x0) || pi) + KL(P*_{x0} || P_theta)``, summed over the ``L``
positions (the forward process factorises over positions, and a multi-position reverse process
with one jump at a time has the sum of per-position rates). Both terms are >= 0, the path KL is 0
exactly when ``lambda_theta = lambda*`` and ``J_theta = J*`` (tested), and every method below
is this same bound under a different parameterisation of ``R_theta`` — so the four methods'
bounds are directly comparable in nats/token.

Parameterisations
-----------------
* Neural CTMC: ``lambda_theta = c_t softplus(h_rate + b_t)``, ``J_theta = softmax_{y != x}(logits)``,
  where ``c_t = beta_t / (1 - alpha_t)`` is the known time scale of ``lambda*`` (for a noisy
  token ``lambda* / c_t = 1 - q_t(x|x0)`` lies in ``[(V-1)/V, 1]``) and the fixed offset
  ``b_t = softplus^{-1}((1 - alpha_t)(V - 1)/V)`` makes a zero head give
  ``lambda_theta = beta_t (V - 1)/V``: with uniform jumps this is the reverse process of
  *uniform* data, whose bound is exactly ``L log V`` (the same start as GIDD / SEDD / MDLM with
  zero logits; a fair initialisation, tested). The loss is exactly the Poisson KL plus the
  direction term above.
* SEDD (score entropy, uniform graph): ``R_theta(x -> y) = (beta_t/V) exp(s_theta(x)_y)``; the
  denoising score entropy ``sum_y (beta/V)[e^s - r s + r(log r - 1)]``, ``r = q(y|x0)/q(x|x0)``,
  is the same integrand.
* GIDD (clean-data prediction): ``x_hat = softmax(logits)``, ``R_theta(x -> y) = (beta/V)
  q_t(y|x_hat) / q_t(x|x_hat)`` with ``q_t(.|x_hat) = alpha x_hat + (1-alpha)/V``. The integrand
  simplifies to GIDD's ELBO weights: ``(beta / (V q_t(x|x0))) [KL(q_t(.|x0) || q_t(.|x_hat)) +
  r - 1 - log r]``, ``r = q_t(x|x0) / q_t(x|x_hat)``.
* MDLM (masked, SUBS): ``x_hat = softmax(logits)`` over the ``V`` real tokens (the mask
  logit is -inf, unmasked tokens are copied); the continuous-time ELBO is
  ``int_0^1 (1/t) sum_{masked} -log x_hat(x0) dt`` for ``alpha_t = 1 - t``.

Time integral
-------------
``int_0^1 f(t) dt`` is estimated by stratified importance sampling with ``K`` time draws per
sequence (``u_k = (k + U) / K``, ``k = 0..K-1``, one uniform ``U`` per sequence; ``t = F^{-1}(u)``
for the proposal CDF ``F``; every draw weighted by ``1 / p(t)``; the sequence's estimate is the
mean of its ``K`` draws: unbiased, and its variance falls faster than ``1/K`` for smooth
integrands). For the uniform methods the integrand grows like ``1/alpha_t`` near ``t = 1``
(``beta`` does), so the proposal is the mixture ``p = (1 + beta_t / log(1/eps)) / 2`` of uniform
``t`` and uniform ``sigma = -log alpha_t``, ``F(t) = (t + sigma_t / log(1/eps)) / 2`` (inverted by
bisection). MDLM's per-token term ``1[masked] -log x_hat(x0) / t`` is nonzero with probability
``t``, so under uniform ``t`` its variance grows like ``log(1 / T_MIN)`` and one token at a tiny
``t`` can carry a whole batch; its proposal is ``p(t) = 1 / (2 sqrt t)`` (``t = u^2``, weight
``2 sqrt t``), which minimises ``int dt / (t p(t))`` and bounds the term's second moment by
``4 nll^2``. ``t`` is kept in ``[T_MIN, 1]``; the dropped
``[0, T_MIN]`` contributes ``O(T_MIN)`` nats.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy
from jaxtyping import Array, Float, Int, PRNGKeyArray

T_MIN = 1e-5


# ----------------------------------------------------------------------------- schedule


def alpha(t: Float[Array, "*b"], eps: float) -> Float[Array, "*b"]:
    """``alpha_t = 1 - (1 - eps) t``: probability that a token has not been resampled."""
    return 1.0 - (1.0 - eps) * t


def one_minus_alpha(t: Float[Array, "*b"], eps: float) -> Float[Array, "*b"]:
    return (1.0 - eps) * t


def beta(t: Float[Array, "*b"], eps: float) -> Float[Array, "*b"]:
    """Noise rate ``beta_t = -d log alpha_t / dt``."""
    return (1.0 - eps) / alpha(t, eps)


def generator(vocab_size: int, beta_t: float) -> Float[Array, "V V"]:
    """``Q_t = beta_t (1 1^T / V - I)`` (rows: from, columns: to; rows sum to 0)."""
    return beta_t * (jnp.full((vocab_size, vocab_size), 1.0 / vocab_size) - jnp.eye(vocab_size))


def uniform_marginal(x0: Int[Array, "*b"], t: Float[Array, "*b"], eps: float, vocab_size: int
                     ) -> Float[Array, "*b V"]:
    """``q_t(. | x0) = alpha_t delta(x0) + (1 - alpha_t) / V``."""
    t = jnp.asarray(t)
    a = alpha(t, eps)[..., None]
    return a * jax.nn.one_hot(x0, vocab_size) + one_minus_alpha(t, eps)[..., None] / vocab_size


def prior_kl_uniform(eps: float, vocab_size: int) -> float:
    """``KL(q_1(.|x0) || Uniform)`` per position (the same for every ``x0``)."""
    p_hit = eps + (1.0 - eps) / vocab_size
    p_miss = (1.0 - eps) / vocab_size
    return p_hit * math.log(p_hit * vocab_size) + (vocab_size - 1) * p_miss * math.log(p_miss * vocab_size)


def corrupt_uniform(key: PRNGKeyArray, x0: Int[Array, "*b L"], t: Float[Array, "*b"], eps: float,
                    vocab_size: int) -> Int[Array, "*b L"]:
    """Draw ``x_t ~ q_t(.|x0)`` per position: resample uniformly with probability ``1 - alpha_t``."""
    k_flip, k_tok = jax.random.split(key)
    flip = jax.random.uniform(k_flip, x0.shape) < one_minus_alpha(t, eps)[..., None]
    return jnp.where(flip, jax.random.randint(k_tok, x0.shape, 0, vocab_size), x0)


def corrupt_mask(key: PRNGKeyArray, x0: Int[Array, "*b L"], t: Float[Array, "*b"],
                 vocab_size: int) -> Int[Array, "*b L"]:
    """Absorbing noise with ``alpha_t = 1 - t``: mask (id ``V``) with probability ``t``."""
    masked = jax.random.uniform(key, x0.shape) < t[..., None]
    return jnp.where(masked, vocab_size, x0)


# ----------------------------------------------------------------------------- reverse rates


def true_reverse_rates(x: Int[Array, "*b"], x0: Int[Array, "*b"], t: Float[Array, "*b"],
                       eps: float, vocab_size: int) -> Float[Array, "*b V"]:
    """``R*(x -> y | x0) = (beta_t / V) q_t(y|x0) / q_t(x|x0)`` for ``y != x``, 0 on ``y = x``."""
    q = uniform_marginal(x0, t, eps, vocab_size)
    qx = jnp.take_along_axis(q, x[..., None], axis=-1)
    rates = (beta(t, eps)[..., None] / vocab_size) * q / qx
    return jnp.where(jax.nn.one_hot(x, vocab_size, dtype=bool), 0.0, rates)


def true_exit_and_jump(x: Int[Array, "*b"], x0: Int[Array, "*b"], t: Float[Array, "*b"],
                       eps: float, vocab_size: int
                       ) -> tuple[Float[Array, "*b"], Float[Array, "*b V"]]:
    """``(lambda*, J*)``: ``lambda* = (beta/V)(1 - q(x))/q(x)``, ``J*(y) = q(y)/(1 - q(x))``."""
    q = uniform_marginal(x0, t, eps, vocab_size)
    qx = jnp.take_along_axis(q, x[..., None], axis=-1)[..., 0]
    lam = beta(t, eps) / vocab_size * (1.0 - qx) / qx
    jump = jnp.where(jax.nn.one_hot(x, vocab_size, dtype=bool), 0.0, q) / (1.0 - qx)[..., None]
    return lam, jump


def rate_scale(t: Float[Array, "*b"], eps: float) -> Float[Array, "*b"]:
    """``c_t = beta_t / (1 - alpha_t)``: the time scale of the exit rate under uniform noise."""
    return beta(t, eps) / one_minus_alpha(t, eps)


def rate_offset(t: Float[Array, "*b"], eps: float, vocab_size: int) -> Float[Array, "*b"]:
    """``b_t = softplus^{-1}((1 - alpha_t)(V - 1)/V)``: with it a zero exit-rate head gives the
    uniform-data exit rate ``beta_t (V - 1)/V`` (see the module docstring)."""
    return jnp.log(jnp.expm1(one_minus_alpha(t, eps) * (vocab_size - 1) / vocab_size))


def _log_softplus(h):
    return jnp.where(h < -20.0, h, jnp.log(jax.nn.softplus(h)))


def masked_log_softmax(logits: Float[Array, "*b V"], x: Int[Array, "*b"]) -> Float[Array, "*b V"]:
    """``log softmax`` over ``y != x`` (the entry ``y = x`` is ``-inf``)."""
    own = jax.nn.one_hot(x, logits.shape[-1], dtype=bool)
    return jax.nn.log_softmax(jnp.where(own, -jnp.inf, logits), axis=-1)


def model_rates(method: str, logits: Float[Array, "*b V"], rate_h: Float[Array, "*b"],
                x: Int[Array, "*b"], t: Float[Array, "*b"], eps: float
                ) -> tuple[Float[Array, "*b"], Float[Array, "*b V"]]:
    """``(lambda_theta, log J_theta)`` of a uniform-noise method's reverse process at ``(x, t)``."""
    vocab = logits.shape[-1]
    own = jax.nn.one_hot(x, vocab, dtype=bool)
    if method == "neural_ctmc":
        h = rate_h + rate_offset(t, eps, vocab)
        return rate_scale(t, eps) * jax.nn.softplus(h), masked_log_softmax(logits, x)
    if method == "sedd":
        log_j = masked_log_softmax(logits, x)
        lse = jax.nn.logsumexp(jnp.where(own, -jnp.inf, logits), axis=-1)
        return beta(t, eps) / vocab * jnp.exp(lse), log_j
    if method == "gidd":
        a = alpha(t, eps)[..., None]
        q_hat = a * jax.nn.softmax(logits, axis=-1) + one_minus_alpha(t, eps)[..., None] / vocab
        log_q = jnp.log(q_hat)
        log_qx = jnp.take_along_axis(log_q, x[..., None], axis=-1)[..., 0]
        q_not_x = 1.0 - jnp.exp(log_qx)
        lam = beta(t, eps) / vocab * q_not_x / jnp.exp(log_qx)
        return lam, masked_log_softmax(log_q, x)
    raise ValueError(f"method {method!r} has no uniform-noise reverse rates")


# ----------------------------------------------------------------------------- path KL


def path_kl_rates(r_star: Float[Array, "*b V"], r_theta: Float[Array, "*b V"]) -> Float[Array, "*b"]:
    """Generic path-KL integrand ``sum_y [R_theta - R* + R* log(R*/R_theta)]`` (reference)."""
    safe = jnp.where(r_theta > 0, r_theta, 1.0)
    return jnp.sum(r_theta - r_star + xlogy(r_star, r_star) - xlogy(r_star, safe), axis=-1)


def neural_ctmc_integrand(logits: Float[Array, "*b V"], rate_h: Float[Array, "*b"],
                          x: Int[Array, "*b"], x0: Int[Array, "*b"], t: Float[Array, "*b"],
                          eps: float) -> tuple[Float[Array, "*b"], Float[Array, "*b"]]:
    """``(Poisson KL, lambda* KL(J* || J_theta))`` per position, in the scaled form
    ``c_t [s - s* + s* log(s*/s)]`` and ``c_t s* KL`` with ``lambda = c_t s``,
    ``s = softplus(rate_h + b_t)``."""
    vocab = logits.shape[-1]
    rate_h = rate_h + rate_offset(t, eps, vocab)
    c = rate_scale(t, eps)
    q = uniform_marginal(x0, t, eps, vocab)
    qx = jnp.take_along_axis(q, x[..., None], axis=-1)[..., 0]
    s_star = one_minus_alpha(t, eps) * (1.0 - qx) / (vocab * qx)
    s = jax.nn.softplus(rate_h)
    poisson = c * (s - s_star + xlogy(s_star, s_star) - s_star * _log_softplus(rate_h))
    own = jax.nn.one_hot(x, vocab, dtype=bool)
    j_star = jnp.where(own, 0.0, q) / (1.0 - qx)[..., None]
    log_j = masked_log_softmax(logits, x)
    kl = jnp.sum(xlogy(j_star, j_star) - jnp.where(own, 0.0, j_star * log_j), axis=-1)
    return poisson, c * s_star * kl


def sedd_integrand(logits: Float[Array, "*b V"], x: Int[Array, "*b"], x0: Int[Array, "*b"],
                   t: Float[Array, "*b"], eps: float) -> Float[Array, "*b"]:
    """Denoising score entropy, uniform graph: ``sum_{y!=x} (beta/V)[e^s - r s + r(log r - 1)]``."""
    vocab = logits.shape[-1]
    q = uniform_marginal(x0, t, eps, vocab)
    qx = jnp.take_along_axis(q, x[..., None], axis=-1)
    r = q / qx
    own = jax.nn.one_hot(x, vocab, dtype=bool)
    s = jnp.where(own, 0.0, logits)
    terms = jnp.exp(s) - r * s + xlogy(r, r) - r
    return beta(t, eps) / vocab * jnp.sum(jnp.where(own, 0.0, terms), axis=-1)


def gidd_integrand(logits: Float[Array, "*b V"], x: Int[Array, "*b"], x0: Int[Array, "*b"],
                   t: Float[Array, "*b"], eps: float) -> Float[Array, "*b"]:
    """GIDD ELBO: ``beta/(V q(x|x0)) [KL(q(.|x0) || q(.|x_hat)) + r - 1 - log r]``."""
    vocab = logits.shape[-1]
    a = alpha(t, eps)[..., None]
    q = uniform_marginal(x0, t, eps, vocab)
    log_q_hat = jnp.log(a * jax.nn.softmax(logits, axis=-1)
                        + one_minus_alpha(t, eps)[..., None] / vocab)
    kl = jnp.sum(xlogy(q, q) - q * log_q_hat, axis=-1)
    qx = jnp.take_along_axis(q, x[..., None], axis=-1)[..., 0]
    log_r = jnp.log(qx) - jnp.take_along_axis(log_q_hat, x[..., None], axis=-1)[..., 0]
    return beta(t, eps) / (vocab * qx) * (kl + jnp.expm1(log_r) - log_r)


# ----------------------------------------------------------------------------- time sampling


def _mixture_cdf(t, eps):
    """CDF of the uniform-noise proposal ``p(t) = (1 + beta_t / log(1/eps)) / 2``."""
    return 0.5 * (t - jnp.log(alpha(t, eps)) / -jnp.log(eps))


def sample_times(key: PRNGKeyArray, n: int, draws: int, eps: float, method: str,
                 across_batch: bool = False
                 ) -> tuple[Float[Array, "n draws"], Float[Array, "n draws"]]:
    """``(t, w)`` with ``E[mean_k w_k f(t_k)] = int_0^1 f`` per row: ``draws`` stratified
    draws per row (see the module docstring). ``across_batch``: one uniform ``U`` for the whole
    batch, ``u_ik = (k n + i + U) / (n draws)`` (MDLM's low-discrepancy sampler): every row
    still has one draw in each ``[k/K, (k+1)/K)``, and the ``n K`` draws tile ``[0, 1]``, so
    the batch mean is unbiased with less variance (a training estimate; the rows are no longer
    independent, so a per-sequence standard error needs ``across_batch=False``)."""
    if across_batch:
        cells = jnp.arange(draws)[None, :] * n + jnp.arange(n)[:, None]
        u = (cells + jax.random.uniform(key, ())) / (n * draws)
    else:
        u = (jnp.arange(draws)[None, :] + jax.random.uniform(key, (n, 1))) / draws
    if method == "mdlm":
        t = jnp.clip(u * u, T_MIN, 1.0)
        return t, 2.0 * jnp.sqrt(t)

    def bisect(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        below = _mixture_cdf(mid, eps) < u
        return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

    lo, hi = jax.lax.fori_loop(0, 40, bisect, (jnp.zeros_like(u), jnp.ones_like(u)))
    t = jnp.clip(0.5 * (lo + hi), T_MIN, 1.0)
    density = 0.5 * (1.0 + beta(t, eps) / -jnp.log(eps))
    return t, 1.0 / density


# ----------------------------------------------------------------------------- bounds


def sequence_bound(method: str, model, x0: Int[Array, "B L"], key: PRNGKeyArray, eps: float,
                   draws: int = 1, across_batch: bool = False) -> dict[str, Float[Array, " B"]]:
    """Estimate of the NLL bound in nats/token for each sequence of ``x0`` from ``draws``
    stratified ``(t, x_t)`` draws per sequence (the network runs on ``B * draws`` rows;
    ``across_batch``: the times tile ``[0, 1]`` over the batch, :func:`sample_times`).

    Returns ``{"bound": ...}`` plus, for Neural CTMC, its ``poisson`` and ``direction`` parts
    (the prior term ``KL(q_1 || pi)`` is included in ``bound``).
    """
    batch, length = x0.shape
    vocab = model.vocab_size
    k_t, k_x = jax.random.split(key)
    t, w = sample_times(k_t, batch, draws, eps, method, across_batch)
    t, w = t.reshape(-1), w.reshape(-1)
    x0 = jnp.repeat(x0, draws, axis=0)

    def per_sequence(v):
        return v.reshape(batch, draws).mean(-1)

    if method == "mdlm":
        xt = corrupt_mask(k_x, x0, t, vocab)
        logits, _ = jax.vmap(model)(xt, t)
        nll = -jnp.take_along_axis(jax.nn.log_softmax(logits, -1), x0[..., None], -1)[..., 0]
        per_pos = jnp.where(xt == vocab, nll / t[:, None], 0.0)
        return {"bound": per_sequence(w * per_pos.sum(-1) / length)}
    xt = corrupt_uniform(k_x, x0, t, eps, vocab)
    logits, rate_h = jax.vmap(model)(xt, t)
    tt = jnp.broadcast_to(t[:, None], x0.shape)
    prior = prior_kl_uniform(eps, vocab)
    if method == "neural_ctmc":
        poisson, direction = neural_ctmc_integrand(logits, rate_h, xt, x0, tt, eps)
        poisson = per_sequence(w * poisson.sum(-1) / length)
        direction = per_sequence(w * direction.sum(-1) / length)
        return {"bound": poisson + direction + prior, "poisson": poisson, "direction": direction}
    if method == "sedd":
        integrand = sedd_integrand(logits, xt, x0, tt, eps)
    elif method == "gidd":
        integrand = gidd_integrand(logits, xt, x0, tt, eps)
    else:
        raise ValueError(f"unknown method {method!r}")
    return {"bound": per_sequence(w * integrand.sum(-1) / length) + prior}
