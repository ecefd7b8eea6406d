r"""The multi-activity network game and the pricing rules compared on it.

n agents on a graph G (adjacency ``g_ij``), m activities. Agent i chooses effort
``x_i ∈ R^m`` and has a private technology ``Σ_i ≻ 0``; under the non-discriminatory price
``p ∈ R^m`` its utility is

    u_i = (a − p)ᵀ x_i − ½ x_iᵀ Σ_i x_i + δ Σ_j g_ij x_iᵀ x_j .

Every first-order condition ``Σ_i x_i − δ Σ_j g_ij x_j = a − p`` together give the unique Nash
equilibrium ``x* = M⁻¹ (1 ⊗ q)``, ``q = a − p``, ``M = blockdiag(Σ_i) − δ (G ⊗ I_m)`` (M ≻ 0).
Block i of ``M⁻¹(1 ⊗ I_m)`` is agent i's matrix Bonacich centrality ``C_i`` (``x_i* = C_i q``);
as a Neumann series ``C_i = Σ_k [(δ D⁻¹ (G ⊗ I))^k D⁻¹ (1 ⊗ I)]_i`` with ``D = blockdiag(Σ_i)``,
i.e. a sum over walks from i of ``δ^k Σ_{v0}⁻¹ Σ_{v1}⁻¹ ⋯ Σ_{vk}⁻¹``: centrality in the network
reweighted by the agents' technologies.

Welfare (total utility plus the price revenue, which the planner hands back):

    W(q) = Σ_i u_i + pᵀ Σ_i x_i = aᵀ K q − qᵀ K q + ½ qᵀ H q ,
    K = Σ_i C_i  (the welfare kernel (1ᵀ⊗I) M⁻¹ (1⊗I)),   H = Σ_i C_iᵀ Σ_i C_i ,

(from ``xᵀ M x = qᵀ K q`` and ``δ xᵀ (G⊗I) x = xᵀ D x − xᵀ M x``). Its maximiser is

    q* = (2K − H)⁻¹ K a ,    p* = a − q* = (2K − H)⁻¹ (K − H) a ,

and agent i contributes ``C_i`` to K and ``C_iᵀ Σ_i C_i`` — its squared, technology-weighted
centrality — to H. Both are population sums, so ``K/n`` and ``H/n`` are means over a uniformly
drawn agent: what ``Poll`` estimates. With δ = 0, ``C_i = Σ_i⁻¹``, ``K = H`` and ``p* = 0``.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jaxtyping import Array, Float, Int


class NetworkGame(eqx.Module):
    """One game instance: CSR graph, technologies (and their inverses), δ, activity values a."""

    indptr: Int[Array, " n1"]
    neighbours: Int[Array, " e"]
    rows: Int[Array, " e"]  # row of each neighbour entry (n on padding)
    degree: Int[Array, " n"]
    sigma: Float[Array, "n m m"]
    sigma_inv: Float[Array, "n m m"]
    delta: Float[Array, ""]
    a: Float[Array, " m"]
    agents: Int[Array, ""]  # real agents; nodes agents..n-1 are isolated padding (Σ = I)

    @classmethod
    def from_arrays(cls, adj: sp.csr_array, sigma: np.ndarray, delta: float,
                    a: np.ndarray) -> "NetworkGame":
        adj = sp.csr_array(adj)
        return cls(
            indptr=jnp.asarray(adj.indptr, jnp.int32),
            neighbours=jnp.asarray(adj.indices, jnp.int32),
            rows=jnp.asarray(np.repeat(np.arange(adj.shape[0]), np.diff(adj.indptr)), jnp.int32),
            degree=jnp.asarray(np.diff(adj.indptr), jnp.int32),
            sigma=jnp.asarray(sigma, jnp.float32),
            sigma_inv=jnp.asarray(np.linalg.inv(sigma), jnp.float32),
            delta=jnp.asarray(delta, jnp.float32),
            a=jnp.asarray(a, jnp.float32),
            agents=jnp.asarray(adj.shape[0], jnp.int32),
        )

    @property
    def n(self) -> int:
        return self.degree.shape[-1]

    @property
    def m(self) -> int:
        return self.a.shape[-1]

    @property
    def edges(self) -> Array:
        """Number of (directed) neighbour entries, 2|E|, padding excluded."""
        return jnp.sum(self.degree)

    @property
    def mask(self) -> Array:
        """True for real agents (False for padding nodes)."""
        return jnp.arange(self.n) < self.agents

    def pad(self, nodes: int, width: int) -> "NetworkGame":
        """The same game on ``nodes`` nodes (the extra ones isolated, never polled, left out of
        every mean) with neighbour lists of ``width`` entries (padding entries sit in row
        ``nodes``, which segment sums drop): games of similar size share one compiled program."""
        extra, pad = nodes - self.n, width - self.neighbours.shape[0]
        eye = jnp.broadcast_to(jnp.eye(self.m), (extra, self.m, self.m))
        return NetworkGame(
            indptr=jnp.pad(self.indptr, (0, extra), mode="edge"),
            neighbours=jnp.pad(self.neighbours, (0, pad)),
            rows=jnp.pad(self.rows, (0, pad), constant_values=nodes),
            degree=jnp.pad(self.degree, (0, extra)),
            sigma=jnp.concatenate([self.sigma, eye]),
            sigma_inv=jnp.concatenate([self.sigma_inv, eye]),
            delta=self.delta, a=self.a, agents=self.agents)


class Kernel(eqx.Module):
    """The welfare kernel's two population means ``K/n`` and ``H/n`` (what prices depend on)."""

    k: Float[Array, "m m"]
    h: Float[Array, "m m"]

    def q(self, a: Float[Array, " m"]) -> Float[Array, " m"]:
        """Welfare-maximising ``q* = (2K − H)⁻¹ K a`` (scale-free in n)."""
        return jnp.linalg.solve(2 * self.k - self.h, self.k @ a)

    def price(self, a: Float[Array, " m"]) -> Float[Array, " m"]:
        return a - self.q(a)

    def welfare(self, q: Float[Array, " m"], a: Float[Array, " m"]) -> Float[Array, ""]:
        """``W(q)/n = aᵀ K q − qᵀ K q + ½ qᵀ H q`` (per agent)."""
        return a @ self.k @ q - q @ self.k @ q + 0.5 * q @ self.h @ q


def kernel_from_centralities(c: Float[Array, "n m m"], sigma: Float[Array, "n m m"],
                             mask: Array | None = None) -> Kernel:
    """``K/n = mean_i C_i`` and ``H/n = mean_i C_iᵀ Σ_i C_i`` (the per-agent decomposition),
    over the agents where ``mask`` is true (all by default)."""
    w = jnp.ones(c.shape[0]) if mask is None else mask.astype(c.dtype)
    w = w / jnp.sum(w)
    k = jnp.einsum("n,nij->ij", w, c)
    h = jnp.einsum("n,nji,njk,nkl->il", w, c, sigma, c)
    return Kernel(0.5 * (k + k.T), 0.5 * (h + h.T))


def _population_means(game: NetworkGame) -> tuple[Array, Array]:
    """Average technology Σ̄ and mean degree d̄ over the real agents."""
    w = game.mask.astype(jnp.float32) / game.agents
    return jnp.einsum("n,nij->ij", w, game.sigma), w @ game.degree.astype(jnp.float32)


@eqx.filter_jit
def mean_field_kernel(game: NetworkGame) -> Kernel:
    """Trivial baseline 1 (one uniform price, no network structure): every agent has the
    population-average technology Σ̄ and the mean degree d̄, ``C = (Σ̄ − δ d̄ I)⁻¹``."""
    sbar, dbar = _population_means(game)
    c = jnp.linalg.inv(sbar - game.delta * dbar * jnp.eye(game.m))
    return Kernel(0.5 * (c + c.T), c.T @ sbar @ c)


@eqx.filter_jit
def degree_kernel(game: NetworkGame) -> Kernel:
    """Trivial baseline 2 (degree-centrality heuristic): average technology Σ̄, own degree d_i,
    first-order centrality ``C_i = Σ̄⁻¹ (I + δ d_i Σ̄⁻¹)``."""
    sbar, _ = _population_means(game)
    sinv = jnp.linalg.inv(sbar)
    d = game.degree.astype(jnp.float32)
    c = sinv[None] + game.delta * d[:, None, None] * (sinv @ sinv)[None]
    return kernel_from_centralities(c, jnp.broadcast_to(sbar, game.sigma.shape), game.mask)


def kernel_numpy(c: np.ndarray, sigma: np.ndarray) -> Kernel:
    """:func:`kernel_from_centralities` in float64 NumPy (references, any n without compiling)."""
    k = c.mean(0)
    h = np.einsum("nji,njk,nkl->il", c, sigma, c, optimize=True) / c.shape[0]
    return Kernel(jnp.asarray(0.5 * (k + k.T), jnp.float32), jnp.asarray(0.5 * (h + h.T), jnp.float32))


def no_price_q(game: NetworkGame) -> Float[Array, " m"]:
    """Trivial baseline 3: no intervention, ``p = 0`` (``q = a``)."""
    return game.a


def price_error(q: Float[Array, " m"], q_star: Float[Array, " m"],
                a: Float[Array, " m"]) -> Float[Array, ""]:
    """``‖p − p*‖ / ‖p*‖`` (= ``‖q − q*‖ / ‖a − q*‖``): 1 for no intervention, 0 at the optimum."""
    return jnp.linalg.norm(q - q_star) / jnp.linalg.norm(a - q_star)


def welfare_gap(q: Float[Array, " m"], exact: Kernel, a: Float[Array, " m"]) -> Float[Array, ""]:
    """``(W(q*) − W(q)) / (W(q*) − W(a))``: the share of the optimal policy's welfare gain that
    ``q`` forgoes (W is quadratic with Hessian ``H − 2K``, so both are exact quadratic forms)."""
    q_star = exact.q(a)
    hess = 2 * exact.k - exact.h
    return ((q - q_star) @ hess @ (q - q_star)) / ((a - q_star) @ hess @ (a - q_star))
