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
* :class:`NetworkHistogram` — network histogram (Olhede & Wolfe 2014) simplified: K equal bins
  along the spectral ordering (the leading non-Perron eigenvector), without the greedy
  label-switching refinement of the original.
* :class:`SpectralBlockMeans` — spectral clustering (top-K eigenvectors by |eigenvalue|, k-means
  from ``ott.tools.k_means``) followed by block means.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.experimental import sparse
from jax.experimental.sparse.linalg import lobpcg_standard
from jaxtyping import Array, Float, Int, PRNGKeyArray
from ott.tools.k_means import k_means

from repro26.srgw import solvers

#: below this many nodes a dense eigendecomposition is cheaper than LOBPCG
_EIGH_MAX_N = 600


class Estimate(eqx.Module):
    """``P_hat`` (n x n) and, for block models, node labels ``z`` and the block matrix ``C``."""

    P_hat: Float[Array, "n n"]
    z: Int[Array, " n"] | None = None
    C: Float[Array, "K K"] | None = None


def top_eigenpairs(
    A: solvers.Adjacency, k: int, key: PRNGKeyArray,
) -> tuple[Float[Array, " k"], Float[Array, "n k"]]:
    """The ``k`` eigenpairs of symmetric ``A`` of largest |eigenvalue|, eigenvalues signed.

    Small graphs: ``jnp.linalg.eigh``. Large ones: LOBPCG (``jax.experimental.sparse.linalg``) on
    :math:`A^2` (positive semi-definite, same eigenvectors, eigenvalues :math:`\\lambda^2`), signs
    recovered from the Rayleigh quotients :math:`v^\\top A v`; only products ``A @ X`` are used,
    so a BCOO ``A`` works.
    """
    n = A.shape[0]
    if n <= _EIGH_MAX_N or 5 * k > n:
        dense = A.todense() if isinstance(A, sparse.BCOO) else A
        lam, V = jnp.linalg.eigh(dense)
        idx = jnp.argsort(-jnp.abs(lam))[:k]
        return lam[idx], V[:, idx]
    X0 = jax.random.normal(key, (n, k), jnp.float32)
    _, V, _ = lobpcg_standard(lambda X: A @ (A @ X), X0, m=200)
    lam = jnp.sum(V * (A @ V), axis=0)
    return lam, V


def spectral_labels(A: solvers.Adjacency, K: int, key: PRNGKeyArray) -> Int[Array, " n"]:
    """Spectral clustering: k-means (k-means++, 10 restarts) on rows of :math:`V|\\Lambda|`."""
    k_eig, k_km = jax.random.split(key)
    lam, V = top_eigenpairs(A, K, k_eig)
    return k_means(V * jnp.abs(lam)[None, :], K, rng=k_km).assignment


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


class SrgwEstimator(eqx.Module):
    """The srGW block model: best of one spectral and ``n_random`` random initial couplings."""

    K: int = eqx.field(static=True)
    n_random: int = eqx.field(static=True, default=2)
    max_iter: int = eqx.field(static=True, default=500)
    tol: float = eqx.field(static=True, default=1e-5)

    def initial_couplings(self, A: solvers.Adjacency, key: PRNGKeyArray) -> Float[Array, "I n K"]:
        """Spectral-clustering assignment plus ``n_random`` Dirichlet(1) rows, each row summing
        to 1/n."""
        k_spec, k_rand = jax.random.split(key)
        return self.couplings_from_labels(spectral_labels(A, self.K, k_spec), k_rand)

    def couplings_from_labels(self, z: Int[Array, " n"], key: PRNGKeyArray) -> Float[Array, "I n K"]:
        """The assignment ``z`` as a coupling, followed by ``n_random`` Dirichlet(1) couplings."""
        n = z.shape[0]
        spec = jax.nn.one_hot(z, self.K, dtype=jnp.float32)
        rand = jax.random.dirichlet(key, jnp.ones(self.K), (self.n_random, n))
        return jnp.concatenate([spec[None], rand.astype(jnp.float32)], axis=0) / n

    def solve(self, A: solvers.Adjacency, T0s: Float[Array, "I n K"]):
        """``(best, all)`` results of the block-coordinate conditional gradient."""
        return solvers.solve_multi(A, T0s, self.max_iter, self.tol)

    def __call__(self, A: solvers.Adjacency, key: PRNGKeyArray) -> Estimate:
        best, _ = self.solve(A, self.initial_couplings(A, key))
        z = solvers.labels(best.T)
        return block_fit(A, z, self.K)


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


class NetworkHistogram(eqx.Module):
    """Equal bins along the leading non-Perron eigenvector (no label-switching refinement)."""

    K: int = eqx.field(static=True)

    def __call__(self, A: Float[Array, "n n"], key: PRNGKeyArray) -> Estimate:
        _, V = top_eigenpairs(A, 2, key)
        return block_fit(A, equal_bins(jnp.argsort(V[:, 1]), self.K), self.K)


class SpectralBlockMeans(eqx.Module):
    """Spectral clustering into K groups, then block means."""

    K: int = eqx.field(static=True)

    def __call__(self, A: Float[Array, "n n"], key: PRNGKeyArray) -> Estimate:
        return block_fit(A, spectral_labels(A, self.K, key), self.K)
