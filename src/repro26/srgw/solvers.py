r"""Semi-relaxed Gromov–Wasserstein (srGW) block-model estimation: the math.

Given an adjacency matrix :math:`A \in [0,1]^{n\times n}` (symmetric) and node weights
:math:`p = \mathbf 1/n`, the estimator of the abstract minimises over a *probabilistic coupling*
:math:`T \in \mathcal U(p) = \{T \in \mathbb R_+^{n\times K}: T\mathbf 1_K = p\}` (rows fixed,
columns free: the relaxation of the node-to-block assignment) and a block matrix
:math:`\bar C \in [0,1]^{K\times K}`

.. math::
    F(T, \bar C) = \sum_{ijkl} (A_{ij} - \bar C_{kl})^2\, T_{ik} T_{jl}.

With the square-loss decomposition :math:`(a-b)^2 = f_1(a) + f_2(b) - h_1(a) h_2(b)`
(``ott.problems.quadratic.quadratic_costs.make_square_loss``: :math:`f_1=a^2, f_2=b^2, h_1=a,
h_2=2b`), with :math:`r = T\mathbf 1` and :math:`q = T^\top\mathbf 1`,

.. math::
    F = r^\top f_1(A) r + q^\top f_2(\bar C) q - \langle h_1(A) T h_2(\bar C)^\top, T\rangle,
    \qquad
    \nabla_T F = 2 f_1(A) r \mathbf 1^\top + 2\,\mathbf 1 (f_2(\bar C) q)^\top
                 - 2\, h_1(A) T h_2(\bar C)^\top
    \quad (A, \bar C \text{ symmetric}).

The *block-coordinate conditional gradient* alternates

1. one Frank–Wolfe step on :math:`T`: the linear minimisation oracle over :math:`\mathcal U(p)` is
   the row-wise argmin :math:`S_{ik} = p_i [k = \arg\min_l G_{il}]`; with :math:`D = S - T`
   the objective along the segment is the quadratic :math:`F(T+\gamma D) = F(T) + b\gamma +
   a\gamma^2`, :math:`b = \langle G, D\rangle`, :math:`a = d^\top f_2(\bar C) d -
   \langle h_1(A) D h_2(\bar C)^\top, D\rangle` (:math:`d = D^\top \mathbf 1`), minimised exactly
   over :math:`\gamma\in[0,1]`;
2. the closed-form block update :math:`\bar C = \mathrm{clip}(T^\top A T \oslash q q^\top, 0, 1)`
   (each :math:`\bar C_{kl}` enters :math:`F` as :math:`q_k q_l (\bar C_{kl} - m_{kl})^2 +`
   const, so the clipped ratio is the exact constrained minimiser; for a 0/1 adjacency the ratio
   already lies in [0, 1]).

It stops when the Frank–Wolfe gap :math:`g = \langle G, T - S\rangle \ge 0` (the stationarity
measure of the relaxed problem) falls below ``tol`` times the objective. Several initial
couplings are solved at once with ``jax.vmap`` and the best objective is kept.

*Rounding* maps :math:`T` to the deterministic assignment :math:`z_i = \arg\max_k T_{ik}`
(coupling :math:`p_i e_{z_i}`) and refits :math:`\bar C`; the abstract's optimality gap is
:math:`F(\text{rounded}) - F(\text{relaxed})`, claimed to vanish at rate :math:`O(1/n)`.

``A`` may be a dense array or a ``jax.experimental.sparse.BCOO`` matrix: the solver only touches
it through products ``A @ X`` with thin (n x K) matrices and through :math:`r^\top f_1(A) r`, so
the memory is O(nnz + nK).

ott-jax supplies the square-loss decomposition; it has no semi-relaxed solver (its
``GromovWasserstein`` solves the balanced / unbalanced entropic problem), so the conditional
gradient loop below is written here as a ``lax.while_loop``.
"""

from __future__ import annotations

from typing import Union

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.experimental import sparse
from jaxtyping import Array, Float, Int
from ott.problems.quadratic.quadratic_costs import make_square_loss

Adjacency = Union[Float[Array, "n n"], sparse.BCOO]

SQUARE_LOSS = make_square_loss()
_EPS = 1e-12


def elementwise(fn, A: Adjacency) -> Adjacency:
    """``fn`` applied entrywise; on a BCOO matrix only to stored entries (needs ``fn(0) == 0``)."""
    if isinstance(A, sparse.BCOO):
        return sparse.BCOO((fn(A.data), A.indices), shape=A.shape)
    return fn(A)


def to_bcoo(A: Float[Array, "n n"]) -> sparse.BCOO:
    """Dense adjacency to BCOO (stores only the nonzero entries)."""
    return sparse.BCOO.fromdense(A)


# ----------------------------------------------------------------------------- objective pieces


def objective_const(A: Adjacency, r: Float[Array, " n"]) -> Float[Array, ""]:
    r""":math:`r^\top f_1(A) r`, the part of :math:`F` fixed by the row marginals."""
    fA = elementwise(SQUARE_LOSS.f1.func, A)
    return r @ (fA @ r)


def objective(
    A: Adjacency, T: Float[Array, "n K"], C: Float[Array, "K K"],
    AT: Float[Array, "n K"] | None = None, const: Float[Array, ""] | None = None,
) -> Float[Array, ""]:
    """:math:`F(T, \\bar C)` in O(nnz K). ``AT = A @ T`` and ``const`` (:func:`objective_const`)
    may be passed when already known (h_1 is linear, so h_1(A) T = h_1(A T))."""
    loss = SQUARE_LOSS
    r, q = T.sum(1), T.sum(0)
    hAT = loss.h1.func(A @ T if AT is None else AT)
    const = objective_const(A, r) if const is None else const
    return const + q @ loss.f2.func(C) @ q - jnp.sum((hAT @ loss.h2.func(C).T) * T)


def gradient(
    A: Adjacency, T: Float[Array, "n K"], C: Float[Array, "K K"],
    AT: Float[Array, "n K"] | None = None, fAr: Float[Array, " n"] | None = None,
) -> Float[Array, "n K"]:
    """:math:`\\nabla_T F` for symmetric ``A`` and ``C`` (formula in the module docstring).
    ``AT = A @ T`` and ``fAr`` = :math:`f_1(A) T\\mathbf 1` may be passed when already known."""
    loss = SQUARE_LOSS
    q = T.sum(0)
    fAr = elementwise(loss.f1.func, A) @ T.sum(1) if fAr is None else fAr
    hAT = loss.h1.func(A @ T if AT is None else AT)
    return 2.0 * (fAr[:, None] + (loss.f2.func(C) @ q)[None, :] - hAT @ loss.h2.func(C).T)


def block_update(
    T: Float[Array, "n K"], AT: Float[Array, "n K"], lo: float = 0.0, hi: float = 1.0,
) -> Float[Array, "K K"]:
    r"""Exact minimiser of :math:`F(T, \cdot)` over :math:`[lo, hi]^{K\times K}`:
    :math:`\mathrm{clip}(T^\top A T \oslash q q^\top)`; an empty block pair gets 0."""
    q = T.sum(0)
    qq = jnp.outer(q, q)
    TAT = T.T @ AT
    C = jnp.where(qq > _EPS, TAT / jnp.where(qq > _EPS, qq, 1.0), 0.0)
    C = 0.5 * (C + C.T)
    return jnp.clip(C, lo, hi)


def line_search(a: Float[Array, ""], b: Float[Array, ""]) -> Float[Array, ""]:
    r"""argmin over :math:`\gamma\in[0,1]` of :math:`a\gamma^2 + b\gamma` (possibly non-convex)."""
    convex = jnp.clip(-b / (2.0 * jnp.where(a > 0, a, 1.0)), 0.0, 1.0)
    return jnp.where(a > 0, convex, jnp.where(a + b < 0, 1.0, 0.0))


def lmo(G: Float[Array, "n K"], p: Float[Array, " n"]) -> Float[Array, "n K"]:
    """Linear minimisation oracle over U(p): all of row i's mass on its smallest gradient entry."""
    return p[:, None] * jax.nn.one_hot(jnp.argmin(G, axis=1), G.shape[1], dtype=G.dtype)


def fw_step(
    A: Adjacency, T: Float[Array, "n K"], AT: Float[Array, "n K"], C: Float[Array, "K K"],
    fAr: Float[Array, " n"],
) -> tuple[Float[Array, "n K"], Float[Array, "n K"], Float[Array, ""], Float[Array, ""]]:
    """One Frank–Wolfe step on T for fixed C with exact line search.

    ``fAr`` = :math:`f_1(A) p` is fixed along the run (rows of T keep summing to p). Returns the
    new ``T``, its ``A @ T`` (updated, not recomputed), the step ``gamma`` and the Frank–Wolfe
    gap at the old ``T``.
    """
    loss = SQUARE_LOSS
    G = gradient(A, T, C, AT, fAr)
    S = lmo(G, T.sum(1))
    D = S - T
    AD = A @ S - AT
    d = D.sum(0)
    hC = loss.h2.func(C)
    b = jnp.sum(G * D)
    a = d @ loss.f2.func(C) @ d - jnp.sum((loss.h1.func(AD) @ hC.T) * D)
    gamma = line_search(a, b)
    return T + gamma * D, AT + gamma * AD, gamma, -b


class SrgwResult(eqx.Module):
    """Output of one srGW solve: coupling, block matrix, objective, gap and iteration traces."""

    T: Float[Array, "n K"]
    C: Float[Array, "K K"]
    objective: Float[Array, ""]
    gap: Float[Array, ""]
    n_iter: Int[Array, ""]
    objective_trace: Float[Array, " max_iter"]
    gap_trace: Float[Array, " max_iter"]


def solve(
    A: Adjacency, T0: Float[Array, "n K"], max_iter: int = 500, tol: float = 1e-5,
) -> SrgwResult:
    """Block-coordinate conditional gradient from the coupling ``T0`` (rows summing to p).

    Each iteration: a Frank–Wolfe step on T, then the closed-form C update. Stops when the FW
    gap is at most ``tol * F`` or after ``max_iter`` iterations. Traces hold the objective and
    gap per iteration (NaN after the stop).
    """
    AT0 = A @ T0
    C0 = block_update(T0, AT0)
    p = T0.sum(1)
    fAr = elementwise(SQUARE_LOSS.f1.func, A) @ p
    const = p @ fAr
    nan = jnp.full((max_iter,), jnp.nan, T0.dtype)
    inf = jnp.asarray(jnp.inf, T0.dtype)

    def cond(state):
        _, _, _, it, gap, obj, _, _ = state
        return (it < max_iter) & (gap > tol * jnp.abs(obj))

    def body(state):
        T, AT, C, it, _, _, obj_tr, gap_tr = state
        T, AT, _, gap = fw_step(A, T, AT, C, fAr)
        C = block_update(T, AT)
        obj = objective(A, T, C, AT, const)
        return T, AT, C, it + 1, gap, obj, obj_tr.at[it].set(obj), gap_tr.at[it].set(gap)

    state = (T0, AT0, C0, jnp.asarray(0), inf, objective(A, T0, C0, AT0, const), nan, nan)
    T, AT, C, it, gap, obj, obj_tr, gap_tr = jax.lax.while_loop(cond, body, state)
    return SrgwResult(T, C, obj, gap, it, obj_tr, gap_tr)


def solve_multi(
    A: Adjacency, T0s: Float[Array, "I n K"], max_iter: int = 500, tol: float = 1e-5,
) -> tuple[SrgwResult, SrgwResult]:
    """Solve from every initial coupling in ``T0s`` at once (``jax.vmap``); returns
    ``(best, all)`` where ``best`` has the smallest objective."""
    every = jax.vmap(lambda T0: solve(A, T0, max_iter, tol))(T0s)
    best = jnp.argmin(jnp.where(jnp.isfinite(every.objective), every.objective, jnp.inf))
    return jax.tree.map(lambda x: x[best], every), every


# ----------------------------------------------------------------------------- rounding


def round_coupling(T: Float[Array, "n K"]) -> Float[Array, "n K"]:
    """Deterministic assignment from T: row i's mass p_i moved to its largest entry."""
    return T.sum(1)[:, None] * jax.nn.one_hot(jnp.argmax(T, axis=1), T.shape[1], dtype=T.dtype)


class RoundingGap(eqx.Module):
    """Relaxed vs rounded objective: ``gap = rounded - relaxed``."""

    relaxed: Float[Array, ""]
    rounded: Float[Array, ""]
    gap: Float[Array, ""]
    fractional_rows: Float[Array, ""]


def rounding_gap(A: Adjacency, T: Float[Array, "n K"]) -> RoundingGap:
    r"""Objective of the relaxed solution :math:`(T, \bar C(T))` and of its rounding
    :math:`(T_z, \bar C(T_z))`, their difference, and the fraction of rows of T that are not
    already deterministic (row max below :math:`p_i (1 - 10^{-6})`)."""
    AT = A @ T
    relaxed = objective(A, T, block_update(T, AT), AT)
    Tz = round_coupling(T)
    ATz = A @ Tz
    rounded = objective(A, Tz, block_update(Tz, ATz), ATz)
    frac = jnp.mean(T.max(1) < T.sum(1) * (1 - 1e-6))
    return RoundingGap(relaxed, rounded, rounded - relaxed, frac)


def labels(T: Float[Array, "n K"]) -> Int[Array, " n"]:
    """Block label of each node: the argmax of its row of T."""
    return jnp.argmax(T, axis=1)


def step_matrix(C: Float[Array, "K K"], z: Int[Array, " n"]) -> Float[Array, "n n"]:
    r"""Estimated edge-probability matrix :math:`\hat P_{ij} = \bar C_{z_i z_j}` (the step-function
    graphon :math:`\hat W(u, v) = \bar C_{z(u) z(v)}` evaluated at the nodes)."""
    return C[z[:, None], z[None, :]]
