"""Dynamics on tree edges (the true SDEs), their linear-Gaussian proxies, and the residual nets.

Every dynamics module has ``drift(x) -> (d,)`` and ``diffusion(x) -> (d, m)`` (time-homogeneous)
and ``proxy()`` giving the linear-Gaussian process ``dX~ = (B X~ + beta)dt + sigma~ dW`` used by
the backward filter. ``Residual`` is the neural correction ``u_theta(s, x, a~ r, node)`` of the
guided drift (NBFFG); ``ZeroResidual`` gives plain BFFG.

Discrete traits: ``SeasonalCTMC`` (time-dependent rates ``rates(t)`` and the constant proxy
``proxy_rates()``), ``RateCorrection`` (the positive multiplicative correction ``exp(u_theta)`` of
the guided jump rates) and ``ZeroCorrection`` (BFFG).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.nbffg.solvers import Proxy


class LinearSDE(eqx.Module):
    """``dX = (B X + beta)dt + sigma dW``: its own proxy, so BFFG is exact (experiment 1)."""

    B: Float[Array, "d d"]
    beta: Float[Array, " d"]
    sigma: Float[Array, "d m"]

    def drift(self, x):
        return self.B @ x + self.beta

    def diffusion(self, x):
        return self.sigma

    def proxy(self) -> Proxy:
        return Proxy(self.B, self.beta, self.sigma)


class DoubleWell(eqx.Module):
    """Independent double wells ``dX_i = alpha X_i (1 - X_i^2) dt + sigma dW_i``.

    Proxy: Brownian motion with the same diffusion (``B = 0``).
    """

    alpha: float
    sigma: float
    d: int = eqx.field(static=True)

    def drift(self, x):
        return self.alpha * x * (1.0 - x**2)

    def diffusion(self, x):
        return self.sigma * jnp.eye(self.d, dtype=x.dtype)

    def proxy(self) -> Proxy:
        eye = jnp.eye(self.d)
        return Proxy(0.0 * eye, jnp.zeros(self.d), self.sigma * eye)


class StateDependentOU(eqx.Module):
    """OU with state-dependent diffusion ``dX_i = -theta X_i dt + sigma0 (1 + gamma tanh X_i) dW_i``.

    Proxy: the OU with constant ``sigma~ = sigma0``.
    """

    theta: float
    sigma0: float
    gamma: float
    d: int = eqx.field(static=True)

    def drift(self, x):
        return -self.theta * x

    def diffusion(self, x):
        return jnp.diag(self.sigma0 * (1.0 + self.gamma * jnp.tanh(x)))

    def proxy(self) -> Proxy:
        eye = jnp.eye(self.d)
        return Proxy(-self.theta * eye, jnp.zeros(self.d), self.sigma0 * eye)


class KunitaFlow(eqx.Module):
    """Landmark shapes under a Kunita flow ``dX_i = sum_k K(X_i, c_k) dW_k`` (no drift).

    ``x`` stacks ``k`` 2-D landmarks (``d = 2k``); ``W_k`` are 2-D Brownian motions at the
    centres ``c_k``; ``K(x, c) = scale exp(-|x - c|^2 / (2 width^2))``. Proxy: the same flow with
    the kernel frozen at a reference shape (the root prior mean).
    """

    centres: Float[Array, "M 2"]
    width: float
    scale: float
    reference: Float[Array, " d"]

    def drift(self, x):
        return jnp.zeros_like(x)

    def diffusion(self, x):
        pts = x.reshape(-1, 2)
        sq = jnp.sum((pts[:, None, :] - self.centres[None, :, :]) ** 2, -1)
        k = self.scale * jnp.exp(-0.5 * sq / self.width**2)  # (landmarks, M)
        return jnp.kron(k, jnp.eye(2, dtype=x.dtype))         # (2 landmarks, 2 M)

    def proxy(self) -> Proxy:
        d = self.reference.shape[0]
        return Proxy(jnp.zeros((d, d)), jnp.zeros(d), self.diffusion(self.reference))


def linearised_proxy(dynamics, anchors: Float[Array, "n1 d"]) -> Proxy:
    """Per-edge proxy linearising the true SDE around an anchor state of each edge's end node
    (the "fair BFFG" baseline): ``B = Db(x*)``, ``beta = b(x*) - B x*``, ``sigma~ = sigma(x*)``.

    The symmetric part of ``Db`` is clipped at 0 (eigenvalues ``min(lambda, 0)``): a repelling
    linearisation (the double well between its wells, where ``anchors`` average leaves of both
    wells) is not a usable guide, so there the proxy falls back to Brownian motion. For the
    double well at an observation ``y ~ +-1`` this is an OU process pulled to ``y``
    (``B = alpha (1 - 3 y^2) < 0``); for the state-dependent OU the diffusion is frozen at
    ``x*``; for a linear SDE with a contracting drift it is the SDE itself.
    """
    J = jax.vmap(jax.jacfwd(dynamics.drift))(anchors)
    sym, skew = 0.5 * (J + jnp.swapaxes(J, 1, 2)), 0.5 * (J - jnp.swapaxes(J, 1, 2))
    w, V = jnp.linalg.eigh(sym)
    B = jnp.einsum("nij,nj,nkj->nik", V, jnp.minimum(w, 0.0), V) + skew
    beta = jax.vmap(dynamics.drift)(anchors) - jnp.einsum("nij,nj->ni", B, anchors)
    return Proxy(B, beta, jax.vmap(dynamics.diffusion)(anchors))


class Residual(eqx.Module):
    """``u_theta(s, x, a~ r, node)``: MLP on (edge time, state, soft-signed guiding term, node
    embedding); output in noise coordinates (drift correction ``sigma u``, cost ``1/2 |u|^2``).

    The last layer starts at zero, so training starts from BFFG. ``x_scale`` (the largest
    absolute observation) is an array leaf under ``stop_gradient``: a constant of the data, not a
    parameter, and the same compiled function serves every seed whatever its value.
    """

    mlp: eqx.nn.MLP
    embed: Float[Array, "n1 e"]
    x_scale: Float[Array, ""]

    def __init__(self, d: int, m: int, num_nodes: int, width: int, depth: int, embed_dim: int,
                 x_scale: float, *, key: PRNGKeyArray):
        k1, k2 = jax.random.split(key)
        mlp = eqx.nn.MLP(1 + 2 * d + embed_dim, m, width, depth, activation=jax.nn.silu, key=k1)
        last = mlp.layers[-1]
        mlp = eqx.tree_at(lambda t: (t.layers[-1].weight, t.layers[-1].bias), mlp,
                          (jnp.zeros_like(last.weight), jnp.zeros_like(last.bias)))
        self.mlp = mlp
        self.embed = 0.1 * jax.random.normal(k2, (num_nodes, embed_dim))
        self.x_scale = jnp.asarray(x_scale, self.embed.dtype)

    def __call__(self, s: Float[Array, ""], x: Float[Array, " d"], guide: Float[Array, " d"],
                 node: Int[Array, ""]) -> Float[Array, " m"]:
        g = guide / (1.0 + jnp.abs(guide))
        inp = jnp.concatenate([jnp.atleast_1d(s), x / jax.lax.stop_gradient(self.x_scale), g, self.embed[node]])
        return self.mlp(inp)


class ZeroResidual(eqx.Module):
    """``u = 0``: plain BFFG (and, with a zero guide, the unconditioned forward process)."""

    m: int = eqx.field(static=True)

    def __call__(self, s, x, guide, node):
        return jnp.zeros(self.m, x.dtype)


def _generator(off: Float[Array, "S S"]) -> Float[Array, "S S"]:
    """Rate matrix with off-diagonal ``off`` and rows summing to zero."""
    off = off * (1.0 - jnp.eye(off.shape[0], dtype=off.dtype))
    return off - jnp.diag(jnp.sum(off, -1))


class SeasonalCTMC(eqx.Module):
    """S-state trait whose rate of jumping *into* state y oscillates along the tree's time axis
    ("seasonal" selection, a nonlinear-in-time target CTMC):

        Q_t(x, y) = mu / (S - 1) * exp(kappa cos(2 pi t / period + 2 pi y / S)),   y != x,

    with ``t`` the distance from the root. Proxy: its time average
    ``Q~(x, y) = mu / (S - 1) * I_0(kappa)`` (a Jukes–Cantor chain); ``kappa = 0`` makes the
    target equal to the proxy (bitwise). Root prior: uniform.
    """

    states: int = eqx.field(static=True)
    rate: float
    kappa: float
    period: float

    def rates(self, t: Float[Array, ""]) -> Float[Array, "S S"]:
        phase = 2 * jnp.pi * jnp.arange(self.states) / self.states
        into = self.rate / (self.states - 1) * jnp.exp(self.kappa * jnp.cos(2 * jnp.pi * t / self.period
                                                                           + phase))
        return _generator(jnp.broadcast_to(into, (self.states, self.states)))

    def proxy_rates(self) -> Float[Array, "S S"]:
        into = self.rate / (self.states - 1) * float(scipy.special.i0(self.kappa))
        return _generator(jnp.full((self.states, self.states), into, jnp.float32))

    def log_prior(self) -> Float[Array, " S"]:
        return jnp.full(self.states, -np.log(self.states), jnp.float32)


class RateCorrection(eqx.Module):
    """``u_theta(s, t, x, log h~_next, node) in R^S``: the guided probability of jumping to ``y``
    is multiplied by ``exp(u_y)`` (``y != x``) and renormalised. Input: edge time ``s``, tree time
    ``t / height``, one-hot ``x``, the squashed log h~ ahead, a node embedding. The last layer
    starts at zero, so training starts from BFFG.
    """

    mlp: eqx.nn.MLP
    embed: Float[Array, "n1 e"]
    height: float

    def __init__(self, states: int, num_nodes: int, width: int, depth: int, embed_dim: int,
                 height: float, *, key: PRNGKeyArray):
        k1, k2 = jax.random.split(key)
        mlp = eqx.nn.MLP(2 + 2 * states + embed_dim, states, width, depth, activation=jax.nn.silu,
                         key=k1)
        last = mlp.layers[-1]
        self.mlp = eqx.tree_at(lambda t: (t.layers[-1].weight, t.layers[-1].bias), mlp,
                               (jnp.zeros_like(last.weight), jnp.zeros_like(last.bias)))
        self.embed = 0.1 * jax.random.normal(k2, (num_nodes, embed_dim))
        self.height = height

    def __call__(self, s, t, x: Int[Array, ""], logh: Float[Array, " S"], node: Int[Array, ""]):
        S = logh.shape[0]
        g = logh / (1.0 + jnp.abs(logh))
        inp = jnp.concatenate([jnp.atleast_1d(jnp.asarray(s, logh.dtype)),
                               jnp.atleast_1d(t / self.height).astype(logh.dtype),
                               jax.nn.one_hot(x, S, dtype=logh.dtype), g, self.embed[node]])
        return self.mlp(inp)


class ZeroCorrection(eqx.Module):
    """``u = 0``: plain BFFG for the chain."""

    states: int = eqx.field(static=True)

    def __call__(self, s, t, x, logh, node):
        return jnp.zeros(self.states, logh.dtype)
