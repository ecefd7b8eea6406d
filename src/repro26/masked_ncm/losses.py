"""Exact likelihood, exact interventional query and the constrained bound objective.

For a Masked NCM with mask M, confounder prior pi and mechanisms p_i(v_i | pa_i^M, u) =
softmax(f_i)_{v_i} (Gumbel-max), enumerating the K^d assignments gives exactly

    log P(v)            = logsumexp_u [ log pi_u + sum_i log p_i(v_i | pa_i, u) ]
    NLL(theta)          = - sum_v P_hat(v) log P(v)                     (P_hat: frequencies)
    Q(theta)            = P(Y=y | do(X=x)) = sum_u pi_u sum_{v: v_X=x, v_Y=y} prod_{i != X} p_i(v_i | pa_i, u)

(the do-operator deletes the factor of X and clamps v_X = x in its children's inputs).

Bounds (the abstract's "optimisation objective in the space of Masked NCMs"): for each mask,
minimise s * Q, s in {+1, -1}, subject to the data-fit constraint that the likelihood-ratio
statistic against the fitted model stays below the chi^2_1 critical value,

    g(theta) = ( 2 n (NLL(theta) - NLL_fit) - c ) / c <= 0,     c = chi^2_{1, 1 - alpha},

i.e. theta stays inside the profile-likelihood confidence region of Q; as n -> infinity the
region shrinks to the distributions equal to P, so min/max over masks recover the true bounds.
The constraint is handled with an augmented Lagrangian
L = s Q + (max(0, lambda + rho g)^2 - lambda^2) / (2 rho), lambda <- max(0, lambda + eta g).
"""

from __future__ import annotations

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from repro26.masked_ncm.model import MaskedNCM


def all_assignments(num_nodes: int, card: int) -> Int[np.ndarray, "c d"]:
    """Every assignment of d variables with K values, in C order of a (K,)*d joint table."""
    return np.array(list(itertools.product(range(card), repeat=num_nodes)), dtype=np.int32)


class Problem(eqx.Module):
    """One bound problem: data frequencies, mask, confounding flags, query and direction."""

    freq: Float[Array, " c"]
    mask: Float[Array, "d d"]
    conf: Float[Array, " d"]
    x: Int[Array, ""]
    y: Int[Array, ""]
    n: Float[Array, ""]
    sign: Float[Array, ""]


def conditional_logprobs(model: MaskedNCM, mask: Float[Array, "d d"], conf: Float[Array, " d"],
                         assignments: Int[Array, "c d"]) -> Float[Array, "m c d"]:
    """log p_i(v_i | pa_i^M(v), u) for every confounder state u, assignment v and variable i."""
    def per(values, u):
        logp = jax.nn.log_softmax(model.logits(values, u, mask, conf), axis=-1)
        return jnp.take_along_axis(logp, values[:, None], axis=-1)[:, 0]

    lat = jnp.arange(model.num_latent)
    return jax.vmap(lambda u: jax.vmap(lambda v: per(v, u))(assignments))(lat)


def log_joint(model: MaskedNCM, mask, conf, assignments) -> Float[Array, " c"]:
    lp = conditional_logprobs(model, mask, conf, assignments)
    log_pi = jax.nn.log_softmax(model.latent_logits)
    return jax.nn.logsumexp(log_pi[:, None] + lp.sum(-1), axis=0)


def nll_and_query(model: MaskedNCM, problem: Problem, assignments, x_val: int = 1,
                  y_val: int = 1) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """(NLL, Q) from one pass over the assignments; Q = P(Y=y_val | do(X=x_val))."""
    lp = conditional_logprobs(model, problem.mask, problem.conf, assignments)   # (m, c, d)
    log_pi = jax.nn.log_softmax(model.latent_logits)
    log_p = jax.nn.logsumexp(log_pi[:, None] + lp.sum(-1), axis=0)
    not_x = jnp.arange(lp.shape[-1]) != problem.x
    log_do = jnp.sum(jnp.where(not_x, lp, 0.0), axis=-1)                        # (m, c)
    select = (assignments[:, problem.x] == x_val) & (assignments[:, problem.y] == y_val)
    q = jnp.sum(jnp.exp(log_pi)[:, None] * jnp.where(select, jnp.exp(log_do), 0.0))
    return -jnp.sum(problem.freq * log_p), q


def lr_constraint(nll_value, nll_fit, n, crit: float) -> Float[Array, ""]:
    """g = (2 n (NLL - NLL_fit) - c) / c: <= 0 inside the likelihood-ratio region."""
    return (2.0 * n * (nll_value - nll_fit) - crit) / crit


def augmented_lagrangian(objective, g, lam, rho: float):
    """s Q + (max(0, lambda + rho g)^2 - lambda^2) / (2 rho) (Rockafellar's inequality form)."""
    return objective + (jnp.maximum(0.0, lam + rho * g) ** 2 - lam ** 2) / (2.0 * rho)
