r"""The math of pricing by polling, in the algorithm's order.

1. Exact centralities ``C = M⁻¹ (1 ⊗ I_m)`` (n blocks of m × m): the float64 reference (sweeps
   to convergence), dense solve, conjugate gradients, and best-response dynamics (Jacobi)

       C_i^{(k+1)} = Σ_i⁻¹ (I + δ Σ_j g_ij C_j^{(k)}) ,   C^{(0)}_i = Σ_i⁻¹ ,

   whose k-th iterate is exactly the Neumann series ``Σ_{l≤k} (δ D⁻¹ G)^l D⁻¹`` truncated at k.

2. The random-walk estimator of one agent's truncated centrality. Walk ``v_0 = i``, each step to
   a uniform neighbour (probability ``1/d_v``). With ``W^{(0)} = I`` and
   ``W^{(k)} = δ d_{v_{k−1}} W^{(k−1)} Σ_{v_k}⁻¹``,

       Ĉ_i = R_i⁻¹ Σ_{k=0}^{L} W^{(k)} ,   E[Ĉ_i] = C_i^{(L)}  (R_i = Σ_i when truthful),

   because each length-k walk has probability ``Π_t 1/d_{v_t}`` and weight ``Π_t d_{v_t}``.

3. ``Poll``: each round draw i uniformly, run two independent walks (Ŵ¹, Ŵ²), receive i's
   report ``R_i`` of its technology and update by stochastic approximation (step 1/t):

       K̄ ← K̄ + (k̂ − K̄)/t ,  k̂ = ½ R_i⁻¹ (Ŵ¹ + Ŵ²)                    (E k̂ = C_i^{(L)})
       H̄ ← H̄ + (ĥ − H̄)/t ,  ĥ = ½ (Ŵ¹ᵀ R_i⁻¹ Ŵ² + Ŵ²ᵀ R_i⁻¹ Ŵ¹)      (E ĥ = C_iᵀ Σ_i C_i)
       p_t = a − (2K̄ − H̄)⁻¹ K̄ a .

   Two independent walks make ĥ unbiased (one walk would estimate ``E[ĈᵀΣĈ] ≠ CᵀΣC``). The
   rounds' cost does not depend on n; the noise depends on how unequal centralities and
   technologies are across agents.

4. Reports and their checks. The sampled agent is probed with a private price shift
   ``z ~ N(0, s² I)`` and paid its realised probe utility ``zᵀx − ½ xᵀ Σ_i x`` for the response
   ``x = R_i⁻¹ z`` its report commits to; the expected loss of a misreport is the quadratic
   score ``s² · ½ tr((R⁻¹ − Σ⁻¹) Σ (R⁻¹ − Σ⁻¹)) ≥ 0``, zero only at ``R = Σ``. Detection: at
   the status-quo equilibrium x, neighbours met by the walk observe efforts with noise σ, and
   the planner tests the report against agent i's first-order condition
   ``r = R_i x̃_i − q_0 − δ Σ_j g_ij x̃_j`` (zero in mean when truthful), flagging when
   ``rᵀ Cov⁻¹ r > χ²_m(1 − α)``, ``Cov = σ² (R_i R_iᵀ + δ² d_i I)``: false-positive rate α.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from jaxtyping import Array, Float, PRNGKeyArray
from scipy import stats

from repro26.core import timing
from repro26.poll.model import (Kernel, NetworkGame, kernel_from_centralities, kernel_numpy,
                                price_error, welfare_gap)

# ----------------------------------------------------------------------------- 1. exact


def game_matrix(adj: sp.csr_array, sigma: np.ndarray, delta: float) -> sp.csc_array:
    """``M = blockdiag(Σ_i) − δ (G ⊗ I_m)`` (float64, sparse)."""
    m = sigma.shape[-1]
    return sp.csc_array(sp.block_diag(list(sigma), format="csr")
                        - delta * sp.kron(adj, sp.eye(m), format="csr"))


def check_equilibrium_exists(adj: sp.csr_array, sigma: np.ndarray, delta: float) -> dict:
    """Sufficient conditions (checked, not assumed): ``δ ρ(G) < min_i λ_min(Σ_i)`` gives
    ``M ≻ 0`` (unique equilibrium); ``2 δ ρ(G) < min_i λ_min(Σ_i)`` gives ``2K − H ≻ 0``
    (welfare strictly concave, unique optimal price)."""
    from repro26.poll.data import spectral_radius

    rho = spectral_radius(adj)
    lam = float(np.linalg.eigvalsh(sigma)[:, 0].min())
    return {"rho": rho, "lambda_min": lam, "unique_equilibrium": bool(delta * rho < lam),
            "concave_welfare": bool(2 * delta * rho < lam)}


def exact_centralities(adj: sp.csr_array, sigma: np.ndarray, delta: float,
                       tol: float = 1e-13, max_iter: int = 2000) -> np.ndarray:
    """``C = M⁻¹ (1 ⊗ I)``, float64, shape (n, m, m): best-response sweeps
    ``C ← Σ_i⁻¹ (I + δ G C)`` until a sweep changes C by less than ``tol`` (relative). The sweep
    contracts by ``δ ρ(G) / min_i λ_min(Σ_i) < 1`` (the existence condition), so this is the
    exact solve to float64 precision at O(|E| m²) per sweep; a sparse LU fills in on hub-heavy
    graphs (Barabási–Albert) and is cubic there."""
    sinv = np.linalg.inv(sigma)
    c = sinv.copy()
    for _ in range(max_iter):
        new = _best_response_sweep(adj, sinv, c, delta)
        change = np.abs(new - c).max() / np.abs(new).max()
        c = new
        if change < tol:
            return c
    raise ValueError(f"best-response sweeps did not converge (δ = {delta}): no unique equilibrium?")


def truncated_centralities(adj: sp.csr_array, sigma: np.ndarray, delta: float,
                           length: int) -> np.ndarray:
    """``C^{(L)} = Σ_{k≤L} [(δ D⁻¹ G)^k D⁻¹ (1⊗I)]`` by L best-response sweeps, float64."""
    sinv = np.linalg.inv(sigma)
    c = sinv.copy()
    for _ in range(length):
        c = _best_response_sweep(adj, sinv, c, delta)
    return c


def _best_response_sweep(adj: sp.csr_array, sinv: np.ndarray, c: np.ndarray,
                         delta: float) -> np.ndarray:
    """One sweep ``C_i ← Σ_i⁻¹ (I + δ Σ_j G_ij C_j)`` for every agent i."""
    n, m = sinv.shape[0], sinv.shape[-1]
    return np.einsum("nij,njk->nik", sinv,
                     np.eye(m) + delta * (adj @ c.reshape(n, -1)).reshape(n, m, m))


def exact_kernel(adj: sp.csr_array, sigma: np.ndarray, delta: float,
                 length: int | None = None) -> Kernel:
    """``(K/n, H/n)`` from the exact (or, with ``length``, truncated) centralities."""
    c = (exact_centralities(adj, sigma, delta) if length is None
         else truncated_centralities(adj, sigma, delta, length))
    return kernel_numpy(c, sigma)


def equilibrium(adj: sp.csr_array, sigma: np.ndarray, delta: float, q: np.ndarray) -> np.ndarray:
    """Nash equilibrium efforts ``x* = M⁻¹ (1 ⊗ q)``, shape (n, m), float64."""
    n = sigma.shape[0]
    return spla.spsolve(game_matrix(adj, sigma, delta), np.tile(q, n)).reshape(n, -1)


def dense_solve(game: NetworkGame) -> tuple[np.ndarray, float, float]:
    """Exact computation with a dense Cholesky solve of M (float32, JAX) on the (padded) game:
    centralities, multiply-adds of the factorisation and the m pairs of triangular solves for
    the real agents' system, seconds (compile excluded)."""
    n, m = game.n, game.m
    eye = jnp.eye(m)

    @jax.jit
    def solve(g):
        adj = jnp.zeros((n + 1, n)).at[g.rows, g.neighbours].add(1.0)[:n]
        dense = (jnp.einsum("ij,ikl->ikjl", jnp.eye(n), g.sigma)
                 - g.delta * jnp.einsum("ij,kl->ikjl", adj, eye)).reshape(n * m, n * m)
        rhs = jnp.tile(eye, (n, 1))
        return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(dense), rhs)

    solve(game).block_until_ready()
    y, seconds = timing.cpu_timed(solve, game)
    size = int(game.agents) * m
    ops = size**3 / 3 + 2 * size**2 * m
    return np.asarray(y).reshape(n, m, m), ops, seconds


# ----------------------------------------------------------------------------- counting
# Every solver carries a multiply-add counter through its loop; each arithmetic primitive below
# returns its result with the multiply-adds it performed, from its operands' shapes and the
# number of real (non-padding) blocks it touched. Index arithmetic, random draws and the
# evaluation's own error monitoring are not counted.


def counted_products(x: Array, y: Array, active: Array) -> tuple[Array, Array]:
    """Blockwise ``x_b y_b`` over the leading axis, and ``active · p q r`` multiply-adds for
    ``active`` real (p×q)(q×r) blocks."""
    p, q, r = x.shape[-2], x.shape[-1], y.shape[-1]
    return jnp.einsum("...ij,...jk->...ik", x, y), active * (p * q * r)


def counted_axpy(alpha: Array, x: Array, y: Array, active: Array) -> tuple[Array, Array]:
    """``y + α x`` blockwise, and ``active`` blocks of ``x[..., :, :].size`` multiply-adds."""
    return y + alpha * x, active * (x.shape[-2] * x.shape[-1])


def neighbour_sum(game: NetworkGame, y: Float[Array, "n m m"]) -> tuple[Array, Array]:
    """``(G Y)_i = Σ_j g_ij Y_j`` (one message per edge; padding rows are dropped), and its
    additions: one m×m block per real neighbour entry."""
    real = jnp.sum(game.rows < game.n)
    summed = jax.ops.segment_sum(y[game.neighbours], game.rows, num_segments=game.n)
    return summed, real * (y.shape[-2] * y.shape[-1])


def counted_kernel(c: Float[Array, "n m m"], game: NetworkGame) -> tuple[Kernel, Array]:
    """The planner's aggregation ``(mean C_i, mean C_iᵀ Σ_i C_i)`` of the real agents'
    centralities, and its multiply-adds (two products and two sums per agent)."""
    cts, ops_1 = counted_products(jnp.swapaxes(c, -1, -2), game.sigma, game.agents)
    _, ops_2 = counted_products(cts, c, game.agents)
    m = game.m
    return kernel_from_centralities(c, game.sigma, game.mask), ops_1 + ops_2 + 2 * game.agents * m * m


def price_ops(m: int) -> int:
    """Multiply-adds of ``q = (2K − H)⁻¹ K a`` from the kernel: 2K − H and K a (m² each), an
    LU factorisation (m³/3) and two triangular solves (m² together)."""
    return 3 * m * m + m**3 // 3


# ----------------------------------------------------------------------------- iterative


class IterativeResult(eqx.Module):
    """An iterative solver stopped at price error ≤ ε: iterations, counted multiply-adds
    (to a price from the last iterate), final price error."""

    iterations: Array
    ops: Array
    error: Array


def best_response_dynamics(game: NetworkGame, q_star: Array, eps: float,
                           max_iter: int) -> IterativeResult:
    """Distributed baseline: every agent updates ``C_i ← Σ_i⁻¹ (I + δ Σ_j g_ij C_j)`` from its
    neighbours' messages until the planner's price from ``(mean C_i, mean C_iᵀΣ_iC_i)`` is ε-close.
    Counted: each agent's inverse Σ_i⁻¹ (m³, once), per sweep the neighbour sums, the update
    ``I + δ S`` and the product with Σ_i⁻¹, and the planner's aggregation and price at the end."""
    m = game.m

    def error(c):
        kernel, ops = counted_kernel(c, game)
        return price_error(kernel.q(game.a), q_star, game.a), ops

    def body(state):
        c, it, ops, _ = state
        summed, ops_sum = neighbour_sum(game, c)
        rhs, ops_rhs = counted_axpy(game.delta, summed, jnp.eye(m), game.agents)
        c, ops_prod = counted_products(game.sigma_inv, rhs, game.agents)
        err, _ = error(c)
        return c, it + 1, ops + (ops_sum + ops_rhs + ops_prod).astype(jnp.float32), err

    c0 = game.sigma_inv
    state = (c0, jnp.int32(0), (game.agents * m**3).astype(jnp.float32), error(c0)[0])
    c, it, ops, err = jax.lax.while_loop(lambda s: (s[3] > eps) & (s[1] < max_iter), body, state)
    aggregate = (error(c)[1] + price_ops(m)).astype(jnp.float32)
    return IterativeResult(it, ops + aggregate, err)


def conjugate_gradient(game: NetworkGame, q_star: Array, eps: float,
                       max_iter: int) -> IterativeResult:
    """Exact sparse computation: CG on ``M Y = 1 ⊗ I`` (the m columns at once, matrix-free),
    stopped when the price from the iterate is ε-close. Counted per iteration: the product
    with M (Σ_i d_i, the neighbour sums and the δ-axpy), two inner products and three axpys;
    the planner's aggregation and price at the end."""
    m = game.m

    def matvec(y):
        own, ops_own = counted_products(game.sigma, y, game.agents)
        summed, ops_sum = neighbour_sum(game, y)
        out, ops_axpy = counted_axpy(-game.delta, summed, own, game.agents)
        return out, ops_own + ops_sum + ops_axpy

    def dot(u, v):  # per column
        return jnp.einsum("nij,nij->j", u, v), game.agents * m * m

    def error(y):
        kernel, ops = counted_kernel(y, game)
        return price_error(kernel.q(game.a), q_star, game.a), ops

    def body(state):
        y, r, d, rr, it, ops, _ = state
        md, ops_mv = matvec(d)
        d_md, ops_dot = dot(d, md)
        alpha = rr / d_md
        y, ops_y = counted_axpy(alpha, d, y, game.agents)
        r, ops_r = counted_axpy(-alpha, md, r, game.agents)
        rr_new, ops_rr = dot(r, r)
        d, ops_d = counted_axpy(rr_new / rr, d, r, game.agents)
        step = ops_mv + ops_dot + ops_y + ops_r + ops_rr + ops_d
        err, _ = error(y)
        return y, r, d, rr_new, it + 1, ops + step.astype(jnp.float32), err

    b = jnp.broadcast_to(jnp.eye(m), (game.n, m, m))
    y0 = jnp.zeros_like(b)
    rr0, ops0 = dot(b, b)
    state = (y0, b, b, rr0, jnp.int32(0), ops0.astype(jnp.float32), jnp.float32(jnp.inf))
    out = jax.lax.while_loop(lambda s: (s[6] > eps) & (s[4] < max_iter), body, state)
    aggregate = (error(out[0])[1] + price_ops(m)).astype(jnp.float32)
    return IterativeResult(out[4], out[5] + aggregate, out[6])


# ----------------------------------------------------------------------------- 2. walks


def walk_tail(key: PRNGKeyArray, start: Array, game: NetworkGame,
              length: int) -> tuple[Float[Array, "m m"], Array, Array]:
    """``Ŵ = Σ_{k=0}^{L} W^{(k)}`` of one uniform random walk from ``start`` (so that
    ``R⁻¹ Ŵ`` is unbiased for ``C^{(L)}_start``), the number of agents it visited, and the
    multiply-adds its steps made: per visit, the visited agent's inverse Σ_v⁻¹ (m³; agents
    keep no state between visits), the scaling by δ d (m²), the product (m³), the sum (m²)."""
    m = game.m

    def step(carry, k):
        v, w, total, visits, ops = carry
        d = game.degree[v]
        moved = (d > 0).astype(jnp.int32)
        pick = jnp.minimum(jnp.floor(jax.random.uniform(k) * d).astype(jnp.int32), d - 1)
        nxt = jnp.where(d > 0, game.neighbours[game.indptr[v] + jnp.maximum(pick, 0)], v)
        scaled, ops_scale = counted_axpy(game.delta * d, w, jnp.zeros_like(w), moved)
        w, ops_prod = counted_products(scaled, game.sigma_inv[nxt], moved)
        w = jnp.where(d > 0, w, 0.0)
        total, ops_sum = counted_axpy(1.0, w, total, moved)
        ops = ops + moved * m**3 + ops_scale + ops_prod + ops_sum
        return (nxt, w, total, visits + moved, ops), None

    init = (start, jnp.eye(m), jnp.eye(m), jnp.int32(0), jnp.int32(0))
    (_, _, total, visits, ops), _ = jax.lax.scan(step, init, jax.random.split(key, length))
    return total, visits, ops


def centrality_estimate(key: PRNGKeyArray, start: Array, game: NetworkGame,
                        length: int) -> Float[Array, "m m"]:
    """``Ĉ_i = Σ_i⁻¹ Ŵ``, unbiased for the truncated centrality ``C_i^{(L)}``."""
    tail, _, _ = walk_tail(key, start, game, length)
    return game.sigma_inv[start] @ tail


def round_contribution(report_inv: Float[Array, "m m"], w1: Float[Array, "m m"],
                       w2: Float[Array, "m m"]) -> tuple[Array, Array, Array]:
    """``(k̂, ĥ)`` of one polled agent with reported technology ``R`` (``report_inv = R⁻¹``),
    and their multiply-adds (five m×m products, the sums, halvings and symmetrisations)."""
    one = jnp.int32(1)
    both, ops_0 = counted_axpy(1.0, w1, w2, one)
    k, ops_k = counted_products(report_inv, both, one)
    left_1, ops_1 = counted_products(w1.T, report_inv, one)
    h_12, ops_2 = counted_products(left_1, w2, one)
    left_2, ops_3 = counted_products(w2.T, report_inv, one)
    h_21, ops_4 = counted_products(left_2, w1, one)
    m = w1.shape[-1]
    ops = ops_0 + ops_k + ops_1 + ops_2 + ops_3 + ops_4 + 5 * m * m
    k, h = 0.5 * k, 0.5 * (h_12 + h_21)
    return 0.5 * (k + k.T), 0.5 * (h + h.T), ops


# ----------------------------------------------------------------------------- 3. Poll


class Checks(eqx.Module):
    """What the FOC-consistency test needs: status-quo q_0, efforts x (n, m), the neighbour
    sums ``Σ_j g_ij x_j`` (n, m), the observation noise σ, the χ² threshold."""

    q0: Float[Array, " m"]
    x: Float[Array, "n m"]
    neighbour_x: Float[Array, "n m"]
    noise: Float[Array, ""]
    threshold: Float[Array, ""]


def chi2_threshold(m: int, alpha: float) -> float:
    return float(stats.chi2.ppf(1 - alpha, m))


def foc_flag(key: PRNGKeyArray, i: Array, report: Float[Array, "m m"], game: NetworkGame,
             checks: Checks) -> Array:
    """True when agent i's report is inconsistent with its first-order condition at the
    efforts the walk observes (noisy), at level α."""
    k1, k2 = jax.random.split(key)
    m, d = game.m, game.degree[i].astype(jnp.float32)
    x_obs = checks.x[i] + checks.noise * jax.random.normal(k1, (m,))
    nb_obs = checks.neighbour_x[i] + checks.noise * jnp.sqrt(d) * jax.random.normal(k2, (m,))
    r = report @ x_obs - checks.q0 - game.delta * nb_obs
    cov = checks.noise**2 * (report @ report.T + game.delta**2 * d * jnp.eye(m))
    return r @ jnp.linalg.solve(cov, r) > checks.threshold


class PollTrace(eqx.Module):
    """Per round: price error, welfare gap, cumulative queries and multiply-adds (to a price
    from that round's means), whether the polled agent was adversarial and whether its report
    was flagged; the final kernel; the rounds' mean squared linearised price deviation."""

    error: Float[Array, " T"]
    gap: Float[Array, " T"]
    queries: Array
    ops: Array
    adversarial: Array
    flagged: Array
    kernel: Kernel
    variance: Float[Array, ""]


def poll(key: PRNGKeyArray, game: NetworkGame, exact: Kernel, centre: Kernel, rounds: int,
         length: int, checks: Checks, adversarial: Array, attack: float,
         drop_flagged: bool) -> PollTrace:
    r"""``Poll`` for ``rounds`` rounds (one ``lax.scan``). Adversarial agents (boolean mask)
    report ``R = attack · Σ_i``; with ``drop_flagged`` flagged reports are not used.

    Multiply-adds are counted where they happen: the walks' steps, the planner's inverse of the
    report (m³), the round's contribution, the two running-mean updates (2 m² each) and, at
    every round, one price from the means (:func:`price_ops`); the FOC check is not counted.

    ``variance`` is the CLT's asymptotic variance of the price error, measured on the rounds
    themselves: with ``z_t = (k̂_t, ĥ_t)`` iid of mean ``μ = centre`` (the truncated kernel)
    and ``J`` the Jacobian of ``q(K, H)`` at μ, ``√t (q_t − q_L) → N(0, J Cov(z) Jᵀ)``, so
    ``t · E err_t² → mean_t ‖J (z_t − μ)‖² / ‖a − q*‖²`` (``jax.jvp``, one per round)."""
    m = game.m
    q_star = exact.q(game.a)
    scale_star = jnp.sum((game.a - q_star) ** 2)

    def q_of(k, h):
        return Kernel(k, h).q(game.a)

    def one_round(carry, key):
        k_mean, h_mean, used, queries, ops, var = carry
        k_agent, k_w1, k_w2, k_check = jax.random.split(key, 4)
        i = jax.random.randint(k_agent, (), 0, game.agents)
        scale = jnp.where(adversarial[i], attack, 1.0)
        report = scale * game.sigma[i]
        w1, v1, ops_1 = walk_tail(k_w1, i, game, length)
        w2, v2, ops_2 = walk_tail(k_w2, i, game, length)
        k, h, ops_round = round_contribution(game.sigma_inv[i] / scale, w1, w2)
        flagged = foc_flag(k_check, i, report, game, checks)
        use = jnp.logical_not(flagged & drop_flagged)
        used = used + use
        step = jnp.where(use, 1.0 / jnp.maximum(used, 1), 0.0)
        k_mean = k_mean + step * (k - k_mean)
        h_mean = h_mean + step * (h - h_mean)
        queries = queries + 1 + v1 + v2
        ops = ops + ops_1 + ops_2 + m**3 + ops_round + 4 * m * m
        _, dq = jax.jvp(q_of, (centre.k, centre.h), (k - centre.k, h - centre.h))
        var = var + jnp.sum(dq**2) / scale_star
        q = q_of(k_mean, h_mean)
        out = (price_error(q, q_star, game.a), welfare_gap(q, exact, game.a), queries,
               ops + price_ops(m), adversarial[i], flagged)
        return (k_mean, h_mean, used, queries, ops, var), out

    zero = jnp.zeros((m, m))
    init = (zero, zero, jnp.int32(0), jnp.int32(0), jnp.int32(0), jnp.float32(0))
    (k_mean, h_mean, _, _, _, var), (err, gap, queries, ops, adv, flags) = jax.lax.scan(
        one_round, init, jax.random.split(key, rounds))
    return PollTrace(err, gap, queries, ops, adv, flags, Kernel(k_mean, h_mean), var / rounds)


def rounds_to_eps(error: np.ndarray, eps: float) -> int:
    """1 + the last round whose price error exceeds ε (the error stays ≤ ε afterwards); the
    horizon + 1 when it never settles (censored)."""
    bad = np.nonzero(~(np.asarray(error) <= eps))[0]
    return int(bad[-1]) + 2 if bad.size else 1


# ----------------------------------------------------------------------------- 4. incentives


def probe_loss(report: Float[Array, "m m"], sigma: Float[Array, "m m"]) -> Float[Array, ""]:
    """Expected probe-utility loss per unit probe variance of reporting R instead of Σ:
    ``½ tr((R⁻¹ − Σ⁻¹) Σ (R⁻¹ − Σ⁻¹))``."""
    diff = jnp.linalg.inv(report) - jnp.linalg.inv(sigma)
    return 0.5 * jnp.trace(diff @ sigma @ diff)


def misreport(sigma: Float[Array, "m m"], a_sym: Float[Array, "m m"]) -> Float[Array, "m m"]:
    """``R = Σ^{½} exp(A) Σ^{½}`` (A symmetric): every positive-definite report, A = 0 truthful."""
    lam, vec = jnp.linalg.eigh(sigma)
    root = (vec * jnp.sqrt(lam)) @ vec.T
    return root @ jax.scipy.linalg.expm(0.5 * (a_sym + a_sym.T)) @ root


def manipulation_gain(a_sym: Array, sigma_i: Array, c_i: Array, w1: Array, w2: Array,
                      final: Kernel, rounds: int, a: Array, probe_var: float) -> Array:
    """Agent i's net gain from reporting ``R(A)`` in one round, relative to its equilibrium
    utility at the truthful final price: the change of ``u_i(q) = ½ qᵀ C_iᵀ Σ_i C_i q`` through
    the final averages (its round enters them with weight 1/T) minus the probe score loss."""
    report = misreport(sigma_i, a_sym)
    k_true, h_true, _ = round_contribution(jnp.linalg.inv(sigma_i), w1, w2)
    k_rep, h_rep, _ = round_contribution(jnp.linalg.inv(report), w1, w2)
    moved = Kernel(final.k + (k_rep - k_true) / rounds, final.h + (h_rep - h_true) / rounds)
    utility = c_i.T @ sigma_i @ c_i

    def u(kernel):
        q = kernel.q(a)
        return 0.5 * q @ utility @ q

    base = u(final)
    return (u(moved) - base - probe_var * probe_loss(report, sigma_i)) / base
