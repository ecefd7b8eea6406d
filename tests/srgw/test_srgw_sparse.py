"""Sparse srgw (issue 18): O(edges) samplers against the dense ones, and the estimator on BCOO
without any n x n array."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from repro26.srgw import data, evaluate, model, solvers

P_FLOOR = 1e-3  # every statistical test below passes at this level (fixed seeds: deterministic)


def _dense(A) -> np.ndarray:
    """A BCOO matrix as a numpy array (numpy: no compile per random edge count)."""
    D = np.zeros(A.shape, np.float32)
    idx = np.asarray(A.indices)
    np.add.at(D, (idx[:, 0], idx[:, 1]), np.asarray(A.data))
    return D


def test_sample_pairs_enumerates_every_pair_exactly_once_at_p1():
    """p = 1 keeps every pair: the index decoding hits each i < j (diagonal block) and each
    (i, j) (rectangle) exactly once."""
    rng = np.random.default_rng(0)
    i, j = data.sample_pairs(rng, 37, 1.0, True)
    assert np.all(i < j) and len(set(zip(i.tolist(), j.tolist()))) == 37 * 36 // 2 == len(i)
    i, j = data.sample_pairs(rng, (5, 7), 1.0, False)
    assert sorted(zip(i.tolist(), j.tolist())) == [(a, b) for a in range(5) for b in range(7)]


@pytest.fixture(scope="module")
def sbm_samples():
    """20 graphs of an unbalanced 3-block SBM (n = 120) from each sampler: block-pair edge
    counts and degrees."""
    spec = data.SBMSpec(0.3, 0.1, (0.5, 0.3, 0.2))
    n, reps = 120, 20
    dense = jax.jit(lambda k: data.sample_sbm(k, n, spec)[::2])
    out = {"sparse": ([], []), "dense": ([], [])}
    for r in range(reps):
        key = jax.random.PRNGKey(r)
        A_s, z_s = data.sample_sbm_sparse(key, n, spec)
        A_d, z_d = dense(jax.random.fold_in(key, 1))
        for name, A, z in (("sparse", _dense(A_s), z_s),
                           ("dense", np.asarray(A_d), np.asarray(z_d))):
            Z = np.eye(3)[z]
            out[name][0].append(Z.T @ A @ Z)
            out[name][1].append(A.sum(1))
    h = np.bincount(z_s, minlength=3)
    pairs = np.outer(h, h) - np.diag(h)  # ordered pairs i != j per block pair
    return spec, reps, pairs, {k: (np.sum(v[0], 0), np.concatenate(v[1])) for k, v in out.items()}


def test_sparse_sbm_is_symmetric_simple_and_matches_block_densities(sbm_samples):
    """Chi-square of the edge count of each unordered block pair (summed over the graphs)
    against Binomial(pairs, B_ab): the sparse sampler has the SBM's block densities."""
    spec, reps, pairs, counts = sbm_samples
    A, _ = data.sample_sbm_sparse(jax.random.PRNGKey(99), 50, spec)
    D = _dense(A)
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0) and set(np.unique(D)) <= {0, 1}
    B = spec.block_matrix()
    iu = np.triu_indices(3)
    E = counts["sparse"][0][iu] / np.where(iu[0] == iu[1], 2, 1)  # unordered edge counts
    N = reps * pairs[iu] / np.where(iu[0] == iu[1], 2, 1)
    chi2 = np.sum((E - N * B[iu]) ** 2 / (N * B[iu] * (1 - B[iu])))
    assert stats.chi2.sf(chi2, df=len(E)) > P_FLOOR, chi2


def test_sparse_sbm_degrees_match_the_dense_sampler(sbm_samples):
    """Two-sample KS test of the pooled degree distributions, sparse vs dense sampler."""
    _, _, _, counts = sbm_samples
    assert stats.ks_2samp(counts["sparse"][1], counts["dense"][1]).pvalue > P_FLOOR


def test_sparse_graphon_matches_the_dense_sampler_and_its_density():
    """Thinning sampler of a graphon: edge count consistent with sum_{i<j} rho W(xi_i, xi_j)
    (normal approximation of the Poisson-binomial) and degrees distributed as the dense
    sampler's (KS), at rho = 1; at rho = 0.05 the count scales with rho."""
    n, reps = 150, 12
    dense = jax.jit(lambda k: data.sample_graphon(k, n, "absdiff")[0])
    deg_s, deg_d = [], []
    for rho in (1.0, 0.05):
        z = []
        for r in range(reps):
            A, xi = data.sample_graphon_sparse(jax.random.PRNGKey(r), n, "absdiff", rho)
            P = rho * np.abs(xi[:, None] - xi[None, :])
            iu = np.triu_indices(n, 1)
            mean, var = P[iu].sum(), (P[iu] * (1 - P[iu])).sum()
            z.append((A.nse / 2 - mean) / np.sqrt(var))
            if rho == 1.0:
                deg_s.append(_dense(A).sum(1))
                deg_d.append(np.asarray(dense(jax.random.PRNGKey(100 + r))).sum(1))
        assert stats.chi2.sf(np.sum(np.square(z)), df=reps) > P_FLOOR, (rho, z)
    assert stats.ks_2samp(np.concatenate(deg_s), np.concatenate(deg_d)).pvalue > P_FLOOR


def test_randomized_eigensolver_on_bcoo_matches_scipy_eigsh():
    """Subspace iteration on a sparse SBM (n = 700, above the dense-eigh cutoff) gives the top-3
    eigenvalues by magnitude of scipy's ARPACK (``eigsh``) to 1e-3, and eigenvectors spanning
    the same subspace; rounding_gap agrees on BCOO and on the dense copy."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import eigsh

    n = 700
    A, _ = data.sample_sbm_sparse(jax.random.PRNGKey(3), n, evaluate.sparse_sbm_spec(n, 30.0, 3, 8.0))
    idx = np.asarray(A.indices)
    ref_lam, ref_V = eigsh(coo_matrix((np.ones(len(idx)), (idx[:, 0], idx[:, 1])), (n, n)), k=3,
                           which="LM")
    lam, V = jax.jit(lambda A, k: model.top_eigenpairs(A, 3, k))(A, jax.random.PRNGKey(0))
    assert np.allclose(np.sort(np.asarray(lam)), np.sort(ref_lam), rtol=1e-3)
    overlap = np.linalg.svd(np.asarray(V, np.float64).T @ ref_V, compute_uv=False)
    assert overlap.min() > 0.99
    T = jax.random.dirichlet(jax.random.PRNGKey(1), jnp.ones(3), (n,)) / n
    gap = jax.jit(solvers.rounding_gap)
    sp, de = gap(A, T), gap(jnp.asarray(_dense(A)), T)
    assert np.allclose([sp.relaxed, sp.rounded], [de.relaxed, de.rounded], rtol=1e-5)


MEMORY_LIMIT_GB = 3


@pytest.mark.slow
def test_sparse_fit_at_n_200k_runs_under_a_memory_limit(repo_root):
    """The whole sparse path (O(edges) sampling, subspace-iteration spectral init, solve,
    rounding, objective) at n = 200,000 in a subprocess whose address space is capped at
    3 GB: any n x n intermediate (160 GB in float32) fails the run. The control — numpy asked
    for an n x n float32 array under the same cap — must raise MemoryError."""
    script = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT_GB} << 30, {MEMORY_LIMIT_GB} << 30))
        import jax, numpy as np
        from repro26.core.cli import enable_compile_cache
        enable_compile_cache()
        from repro26.srgw import data, evaluate, model
        n = 200_000
        A, z = data.sample_sbm_sparse(jax.random.PRNGKey(0), n,
                                      evaluate.sparse_sbm_spec(n, 10.0, 2, 9.0))
        est = model.SrgwEstimator(2, 0, 10, 1e-5, power_iters=8, kmeans_restarts=1)
        fit = jax.jit(est.fit_blocks)(A, jax.random.PRNGKey(1))
        ari = evaluate.adjusted_rand_index(z, np.asarray(fit.z))
        assert np.isfinite(float(fit.result.objective)) and np.isfinite(float(fit.gap.gap))
        try:
            np.ones((n, n), np.float32)
            control = "allocated"
        except MemoryError:
            control = "MemoryError"
        print("RESULT", ari, control)
    """)
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ari, control = proc.stdout.split("RESULT")[1].split()
    assert control == "MemoryError"
    assert float(ari) > 0.7  # sanity: the blocks are found (random labels: 0)


def test_a_program_too_big_for_the_machine_is_refused_before_it_runs(monkeypatch):
    """Every program of a fit or scaling job passes XLA's memory analysis against the memory
    left before it first runs: too big is one line naming the job's size settings."""
    from repro26.core import memory
    from repro26.core.config import UsageError

    run = evaluate.Compiled("the scaling study at n=4 (scaling_ns)")
    x = jnp.ones((256, 256))
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**18)  # below its 256 KB argument + 256 KB output
    with pytest.raises(UsageError, match=r"scaling study at n=4 \(scaling_ns\) \(double\) needs"):
        run("double", lambda a: a @ a, x)
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**30)
    out, seconds = run("double", lambda a: a @ a, x)
    np.testing.assert_allclose(np.asarray(out), 256.0)
    assert seconds >= 0
