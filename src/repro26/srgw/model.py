r"""Estimators of the edge-probability matrix :math:`P` (equivalently of the graphon at the nodes):
the srGW block model of the abstract and its baselines, side by side.

Every estimator is an ``eqx.Module`` called as ``est(A, key) -> Estimate``; block-model
estimators also return node labels. ``A`` is a dense symmetric 0/1 matrix (the srGW estimator
also accepts a ``BCOO`` one).

* :class:`SrgwEstimator` — semi-relaxed GW block model (``solvers.solve_multi``), initialised by
  spectral clustering and by random couplings, all solved at once with ``vmap``, then rounded.
* :class:`USVT` — universal singular value thresholding (Chatterjee 2015), threshold
  :math:`(2+\eta)\sqrt{n\hat\rho}` as in Xu (2018).
* :class:`SortAndSmooth` — sorting-and-smoothing (Chan & Airoldi 2014): order by degree, block
  averages over K equal bins (the total-variation smoothing step is omitted).
* :class:`NetworkHistogram` — network histogram (Olhede & Wolfe 2014): K equal bins along the
  spectral ordering (the leading non-Perron eigenvector), refined by greedy label switching that
  increases the block-model profile likelihood until no improving swap is found.
* :class:`SpectralBlockMeans` — spectral clustering (top-K eigenvectors by |eigenvalue|, k-means
  from ``ott.tools.k_means``) followed by block means.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.experimental import sparse
from jaxtyping import Array, Float, Int, PRNGKeyArray
from ott.tools.k_means import k_means

from repro26.srgw import solvers

#: below this many nodes a dense eigendecomposition is cheaper than subspace iteration
_EIGH_MAX_N = 600
#: extra columns and power iterations of the randomized eigensolver (``top_eigenpairs``)
_OVERSAMPLE = 10
_POWER_ITERS = 12
#: k-means++ restarts of spectral clustering (each restart costs a full Lloyd run)
_KMEANS_RESTARTS = 3


class Estimate(eqx.Module):
    """``P_hat`` (n x n) and, for block models, node labels ``z`` and the block matrix ``C``."""

    P_hat: Float[Array, "n n"]
    z: Int[Array, " n"] | None = None
    C: Float[Array, "K K"] | None = None


def orthonormalize(Y: Float[Array, "n l"]) -> Float[Array, "n l"]:
    r"""Orthonormal basis of the columns of a tall ``Y`` by Cholesky-QR applied twice (CholQR2:
    :math:`R = \mathrm{chol}(Y^\top Y)`, :math:`Q = Y R^{-1}`; the second pass restores
    orthogonality lost to :math:`\kappa(Y)^2`). Used instead of ``jnp.linalg.qr`` because XLA's
    CPU QR inside a loop is ~10x slower than the l x l Gram matrix, Cholesky and triangular solve;
    the columns fed here (:math:`AQ` with orthonormal Q) have condition number
    :math:`|\lambda_1/\lambda_\ell|`, far inside float32's range once squared."""

    def once(Y):
        G = Y.T @ Y
        G = G + 1e-7 * jnp.trace(G) / G.shape[0] * jnp.eye(G.shape[0], dtype=G.dtype)
        L = jnp.linalg.cholesky(G)
        return jax.scipy.linalg.solve_triangular(L, Y.T, lower=True).T

    return once(once(Y))


def top_eigenpairs(
    A: solvers.Adjacency, k: int, key: PRNGKeyArray, power_iters: int = _POWER_ITERS,
    oversample: int = _OVERSAMPLE,
) -> tuple[Float[Array, " k"], Float[Array, "n k"]]:
    """The ``k`` eigenpairs of symmetric ``A`` of largest |eigenvalue|, eigenvalues signed.

    Small graphs: ``jnp.linalg.eigh``. Large ones: randomized subspace iteration (Halko,
    Martinsson & Tropp 2011, Alg. 4.4 with the Rayleigh–Ritz step of their Alg. 5.3): with
    :math:`\ell = k +` ``oversample`` Gaussian columns, ``power_iters`` rounds of
    :math:`Q \leftarrow \mathrm{qr}(AQ)` converge to the top-:math:`|\lambda|` invariant
    subspace, then the eigenpairs of :math:`Q^\top A Q` (:math:`\ell\times\ell`) give the Ritz
    pairs. The cost is ``power_iters + 2`` products ``A @ X`` with thin n x l matrices (so a
    BCOO ``A`` works) instead of the :math:`O(n^3)` full decomposition; ``usvt_k_max`` and K bound
    the rank that is ever needed. Hand-written because JAX's LOBPCG needs many more products
    for the same accuracy on these spectra and scipy's ``eigsh`` would leave the device.
    """
    n = A.shape[0]
    if n <= _EIGH_MAX_N or 5 * k > n:
        dense = A.todense() if isinstance(A, sparse.BCOO) else A
        lam, V = jnp.linalg.eigh(dense)
        idx = jnp.argsort(-jnp.abs(lam))[:k]
        return lam[idx], V[:, idx]
    ell = min(k + oversample, n)
    Q = orthonormalize(A @ jax.random.normal(key, (n, ell), jnp.float32))
    Q = jax.lax.fori_loop(0, power_iters, lambda _, Q: orthonormalize(A @ Q), Q)
    lam, U = jnp.linalg.eigh(Q.T @ (A @ Q))
    idx = jnp.argsort(-jnp.abs(lam))[:k]
    return lam[idx], Q @ U[:, idx]


def spectral_labels(
    A: solvers.Adjacency, K: int, key: PRNGKeyArray, power_iters: int = _POWER_ITERS,
    restarts: int = _KMEANS_RESTARTS,
) -> Int[Array, " n"]:
    """Spectral clustering: k-means (k-means++, ``restarts`` restarts) on rows of
    :math:`V|\\Lambda|` (top-K eigenpairs by ``power_iters`` rounds of subspace iteration)."""
    k_eig, k_km = jax.random.split(key)
    lam, V = top_eigenpairs(A, K, k_eig, power_iters)
    return k_means(V * jnp.abs(lam)[None, :], K, rng=k_km, n_init=restarts).assignment


def block_fit(A: solvers.Adjacency, z: Int[Array, " n"], K: int) -> Estimate:
    """Block means for the labels ``z`` (the closed-form C update for a deterministic coupling)."""
    n = z.shape[0]
    T = jax.nn.one_hot(z, K, dtype=jnp.float32) / n
    C = solvers.block_update(T, A @ T)
    return Estimate(solvers.step_matrix(C, z), z, C)


def equal_bins(order: Int[Array, " n"], K: int) -> Int[Array, " n"]:
    """Labels putting the nodes, taken in ``order``, into K consecutive bins of (near) equal size."""
    n = order.shape[0]
    rank = jnp.zeros(n, jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))
    return (rank * K) // n


class BlockFit(eqx.Module):
    """A block model without its n x n matrix: labels ``z``, block matrix ``C`` (the rounded
    coupling's closed-form update), the relaxed solve and the rounding gap."""

    z: Int[Array, " n"]
    C: Float[Array, "K K"]
    result: solvers.SrgwResult
    gap: solvers.RoundingGap


class SrgwEstimator(eqx.Module):
    """The srGW block model: best of one spectral and ``n_random`` random initial couplings.

    :meth:`fit_blocks` touches ``A`` only through products with n x K (or n x (K + 10))
    matrices, so on a BCOO ``A`` it runs in O(nnz + nK) memory; ``__call__`` adds the n x n
    :math:`\\hat P` for the dense experiments."""

    K: int = eqx.field(static=True)
    n_random: int = eqx.field(static=True, default=2)
    max_iter: int = eqx.field(static=True, default=500)
    tol: float = eqx.field(static=True, default=1e-5)
    power_iters: int = eqx.field(static=True, default=_POWER_ITERS)
    kmeans_restarts: int = eqx.field(static=True, default=_KMEANS_RESTARTS)

    def initial_couplings(self, A: solvers.Adjacency, key: PRNGKeyArray) -> Float[Array, "I n K"]:
        """Spectral-clustering assignment plus ``n_random`` Dirichlet(1) rows, each row summing
        to 1/n."""
        k_spec, k_rand = jax.random.split(key)
        z = spectral_labels(A, self.K, k_spec, self.power_iters, self.kmeans_restarts)
        return self.couplings_from_labels(z, k_rand)

    def couplings_from_labels(self, z: Int[Array, " n"], key: PRNGKeyArray) -> Float[Array, "I n K"]:
        """The assignment ``z`` as a coupling, followed by ``n_random`` Dirichlet(1) couplings."""
        n = z.shape[0]
        spec = jax.nn.one_hot(z, self.K, dtype=jnp.float32)
        rand = jax.random.dirichlet(key, jnp.ones(self.K), (self.n_random, n))
        return jnp.concatenate([spec[None], rand.astype(jnp.float32)], axis=0) / n

    def solve(self, A: solvers.Adjacency, T0s: Float[Array, "I n K"]):
        """``(best, all)`` results of the block-coordinate conditional gradient."""
        return solvers.solve_multi(A, T0s, self.max_iter, self.tol)

    def fit_blocks(self, A: solvers.Adjacency, key: PRNGKeyArray) -> BlockFit:
        """Initialise, solve, round: labels, block matrix and rounding gap, no n x n array."""
        best, _ = self.solve(A, self.initial_couplings(A, key))
        z = solvers.labels(best.T)
        Tz = jax.nn.one_hot(z, self.K, dtype=jnp.float32) / z.shape[0]
        return BlockFit(z, solvers.block_update(Tz, A @ Tz), best, solvers.rounding_gap(A, best.T))

    def __call__(self, A: solvers.Adjacency, key: PRNGKeyArray) -> Estimate:
        fit = self.fit_blocks(A, key)
        return Estimate(solvers.step_matrix(fit.C, fit.z), fit.z, fit.C)


class USVT(eqx.Module):
    """Universal singular value thresholding; eigenvalues beyond the ``k_max`` largest in
    magnitude are treated as below the threshold (``Estimate.z`` is None)."""

    eta: float = eqx.field(static=True, default=0.01)
    k_max: int = eqx.field(static=True, default=20)

    def rank(self, A: Float[Array, "n n"], key: PRNGKeyArray) -> Int[Array, ""]:
        lam, _ = top_eigenpairs(A, min(self.k_max, A.shape[0]), key)
        return jnp.sum(jnp.abs(lam) >= self.threshold(A))

    def threshold(self, A: Float[Array, "n n"]) -> Float[Array, ""]:
        n = A.shape[0]
        rho = jnp.sum(A) / (n * (n - 1))
        return (2.0 + self.eta) * jnp.sqrt(n * rho)

    def __call__(self, A: Float[Array, "n n"], key: PRNGKeyArray) -> Estimate:
        lam, V = top_eigenpairs(A, min(self.k_max, A.shape[0]), key)
        keep = jnp.abs(lam) >= self.threshold(A)
        P = (V * jnp.where(keep, lam, 0.0)[None, :]) @ V.T
        return Estimate(jnp.clip(P, 0.0, 1.0))


class SortAndSmooth(eqx.Module):
    """Degree sorting, then block means over K equal bins."""

    K: int = eqx.field(static=True)

    def __call__(self, A: Float[Array, "n n"], key: PRNGKeyArray) -> Estimate:
        return block_fit(A, equal_bins(jnp.argsort(A.sum(1)), self.K), self.K)


def _xlogx_step(x: Array, delta: Array) -> Array:
    r""":math:`(x+\delta)\log(x+\delta) - x\log x` without cancellation:
    :math:`x\,\mathrm{log1p}(\delta/x) + \delta\log(x+\delta)` (0 where :math:`\delta = 0`)."""
    safe_x = jnp.where(x > 0, x, 1.0)
    first = jnp.where(x > 0, x * jnp.log1p(delta / safe_x), 0.0)
    after = x + delta
    second = delta * jnp.log(jnp.where(after > 0, after, 1.0))
    return jnp.where(delta == 0, 0.0, first + second)


def bin_counts(
    A: Float[Array, "n n"], z: Int[Array, " n"], K: int,
) -> tuple[Float[Array, "n K"], Float[Array, "K K"], Float[Array, "K K"]]:
    r"""``(M, E, N)``: node-to-bin edge counts :math:`M = AZ`, ordered edge counts between bins
    :math:`E = Z^\top A Z` and ordered pair counts :math:`N_{ab} = h_a h_b - \delta_{ab} h_a`
    (:math:`Z` the one-hot labels, :math:`h` the bin sizes)."""
    Z = jax.nn.one_hot(z, K, dtype=jnp.float32)
    M = A @ Z
    h = Z.sum(0)
    return M, Z.T @ M, jnp.outer(h, h) - jnp.diag(h)


def profile_loglik(E: Float[Array, "K K"], N: Float[Array, "K K"]) -> Float[Array, ""]:
    r"""Bernoulli block-model profile log-likelihood at the MLE :math:`\hat\theta = E/N`:
    :math:`\tfrac12\sum_{ab} E_{ab}\log\hat\theta_{ab} + (N_{ab}-E_{ab})\log(1-\hat\theta_{ab})`
    (ordered counts, so every unordered pair enters once)."""
    xlogx = lambda x: jnp.where(x > 0, x * jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)
    return 0.5 * jnp.sum(xlogx(E) + xlogx(N - E) - xlogx(N))


def swap_gains(
    A: Float[Array, "n n"], z: Int[Array, " n"], M: Float[Array, "n K"], E: Float[Array, "K K"],
    N: Float[Array, "K K"], i: Int[Array, " B"], j: Int[Array, " B"],
) -> Float[Array, " B"]:
    r"""Exact change of :func:`profile_loglik` when nodes ``i`` (bin a) and ``j`` (bin b) exchange
    bins, for a batch of pairs. With :math:`w = e_b - e_a` and :math:`d = M_i - M_j`,
    :math:`E' = E + \Delta`, :math:`\Delta = w d^\top + d w^\top - 2A_{ij} w w^\top` (bin sizes,
    hence N, unchanged). :math:`\Delta` is symmetric and lives on rows and columns a, b:
    row a is :math:`-d + (d_a + 2A_{ij}) w`, row b is :math:`d + (d_b - 2A_{ij}) w`, so the sum
    over its support is twice the two row sums minus the {a, b} x {a, b} block: O(K) per pair.
    Pairs in the same bin gain 0."""
    K = E.shape[0]
    a, b = z[i], z[j]
    w = jax.nn.one_hot(b, K, dtype=E.dtype) - jax.nn.one_hot(a, K, dtype=E.dtype)
    d = M[i] - M[j]
    Aij = A[i, j][:, None]
    da = jnp.take_along_axis(d, a[:, None], 1)
    db = jnp.take_along_axis(d, b[:, None], 1)
    rows = jnp.stack([-d + (da + 2.0 * Aij) * w, d + (db - 2.0 * Aij) * w], 1)  # B x 2 x K
    ab = jnp.stack([a, b], 1)
    Er, Nr = E[ab], N[ab]  # B x 2 x K
    f = _xlogx_step(Er, rows) + _xlogx_step(Nr - Er, -rows)
    block = jnp.take_along_axis(f, jnp.broadcast_to(ab[:, None, :], f.shape[:2] + (2,)), 2)
    gain = 0.5 * (2.0 * jnp.sum(f, axis=(1, 2)) - jnp.sum(block, axis=(1, 2)))
    return jnp.where(a == b, 0.0, gain)


def label_switching(
    A: Float[Array, "n n"], z0: Int[Array, " n"], K: int, key: PRNGKeyArray,
    batch: int = 256, max_steps: int = 1000, patience: int = 10,
) -> tuple[Int[Array, " n"], Float[Array, " max_steps"]]:
    r"""Greedy label switching of the network histogram (Olhede & Wolfe 2014, Sec. 4): starting
    from the bins ``z0``, repeatedly draw ``batch`` random node pairs, compute the exact
    profile-likelihood gain of exchanging each pair's bins (:func:`swap_gains`) and apply the best
    one if it gains; bin sizes never change. Stops at a fixed point — ``patience`` consecutive
    batches without an improving swap — or after ``max_steps`` batches (a ``lax.while_loop``).
    Returns the labels and the cumulative log-likelihood gain after each batch (non-decreasing by
    construction; NaN after the stop)."""
    n = z0.shape[0]
    M, E, N = bin_counts(A, z0, K)
    trace0 = jnp.full((max_steps,), jnp.nan, jnp.float32)

    def cond(state):
        _, _, _, step, idle, _, _ = state
        return (step < max_steps) & (idle < patience)

    def body(state):
        z, M, E, step, idle, total, trace = state
        ki, kj = jax.random.split(jax.random.fold_in(key, step))
        i = jax.random.randint(ki, (batch,), 0, n)
        j = jax.random.randint(kj, (batch,), 0, n)
        gains = swap_gains(A, z, M, E, N, i, j)
        best = jnp.argmax(gains)
        accept = gains[best] > 0
        bi, bj = i[best], j[best]
        za, zb = z[bi], z[bj]
        acc = accept.astype(E.dtype)
        w = jax.nn.one_hot(zb, K, dtype=E.dtype) - jax.nn.one_hot(za, K, dtype=E.dtype)
        d = M[bi] - M[bj]
        E = E + acc * (jnp.outer(w, d) + jnp.outer(d, w) - 2.0 * A[bi, bj] * jnp.outer(w, w))
        # M = AZ: column b gains A's column bi minus column bj (= rows, A symmetric), a loses it
        col = acc * (A[bi] - A[bj])
        M = M.at[:, zb].add(col).at[:, za].add(-col)
        z = jnp.where(accept, z.at[bi].set(zb).at[bj].set(za), z)
        total = total + jnp.where(accept, gains[best], 0.0)
        idle = jnp.where(accept, 0, idle + 1)
        return z, M, E, step + 1, idle, total, trace.at[step].set(total)

    state = (z0, M, E, jnp.asarray(0), jnp.asarray(0), jnp.asarray(0.0, jnp.float32), trace0)
    z, _, _, _, _, _, trace = jax.lax.while_loop(cond, body, state)
    return z, trace


class NetworkHistogram(eqx.Module):
    """Network histogram (Olhede & Wolfe 2014): K equal bins along the leading non-Perron
    eigenvector, refined by greedy label switching (:func:`label_switching`) that raises the
    block-model likelihood, then block means. ``steps_per_node`` x n bounds the switching
    batches."""

    K: int = eqx.field(static=True)
    batch: int = eqx.field(static=True, default=256)
    steps_per_node: float = eqx.field(static=True, default=2.0)
    patience: int = eqx.field(static=True, default=10)

    def __call__(self, A: Float[Array, "n n"], key: PRNGKeyArray) -> Estimate:
        k_eig, k_switch = jax.random.split(key)
        _, V = top_eigenpairs(A, 2, k_eig)
        z0 = equal_bins(jnp.argsort(V[:, 1]), self.K)
        n = A.shape[0]
        z, _ = label_switching(A, z0, self.K, k_switch, min(self.batch, n),
                               max(1, int(self.steps_per_node * n)), self.patience)
        return block_fit(A, z, self.K)


class SpectralBlockMeans(eqx.Module):
    """Spectral clustering into K groups, then block means."""

    K: int = eqx.field(static=True)

    def __call__(self, A: Float[Array, "n n"], key: PRNGKeyArray) -> Estimate:
        return block_fit(A, spectral_labels(A, self.K, key), self.K)
