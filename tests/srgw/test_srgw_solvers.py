"""srgw math against brute force, finite differences and POT's solver."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import ot
import pytest
from jax.experimental import enable_x64

from repro26.srgw import data, evaluate, model, solvers


@eqx.filter_jit
def _estimate(est, A, key):
    """Shared compiled estimator (spectral + random initial couplings, vmapped solve); returns
    ``(best, initial couplings)``."""
    T0s = est.initial_couplings(A, key)
    return est.solve(A, T0s)[0], T0s


def _instance(rng, n=7, K=3):
    A = rng.random((n, n))
    A = (A + A.T) / 2
    np.fill_diagonal(A, 0.0)
    C = rng.random((K, K))
    C = (C + C.T) / 2
    T = rng.random((n, K))
    T = T / T.sum(1, keepdims=True) / n
    return A, C, T


def _brute(A, C, T):
    return jnp.einsum("ijkl,ik,jl->", (A[:, :, None, None] - C[None, None]) ** 2, T, T)


def test_objective_and_gradient_match_brute_force_einsum():
    with enable_x64():
        A, C, T = map(jnp.asarray, _instance(np.random.default_rng(0)))
        assert np.allclose(solvers.objective(A, T, C), _brute(A, C, T), rtol=1e-12)
        # the gradient off the feasible set too (rows not summing to p)
        T2 = T * jnp.linspace(0.5, 1.5, T.shape[0])[:, None]
        assert np.allclose(solvers.gradient(A, T2, C), jax.grad(_brute, argnums=2)(A, C, T2),
                           rtol=1e-10, atol=1e-12)


def test_sparse_bcoo_adjacency_matches_dense():
    rng = np.random.default_rng(1)
    A, C, T = _instance(rng, n=12)
    A = (A > 0.6).astype(np.float32)
    A, C, T = jnp.asarray(A), jnp.asarray(C, jnp.float32), jnp.asarray(T, jnp.float32)
    As = solvers.to_bcoo(A)
    assert np.allclose(solvers.objective(As, T, C), solvers.objective(A, T, C), rtol=1e-5)
    assert np.allclose(solvers.gradient(As, T, C), solvers.gradient(A, T, C), atol=1e-6)
    dense, sparse = solvers.solve(A, T, 50, 1e-6), solvers.solve(As, T, 50, 1e-6)
    assert np.allclose(dense.objective, sparse.objective, rtol=1e-5)


def test_block_update_is_exact_minimiser_finite_differences():
    with enable_x64():
        A, _, T = map(jnp.asarray, _instance(np.random.default_rng(2), n=9, K=3))
        C = solvers.block_update(T, A @ T)
        assert float(C.min()) > 0 and float(C.max()) < 1  # interior: gradient must vanish
        f = lambda C: solvers.objective(A, T, C)
        assert np.allclose(jax.grad(f)(C), 0.0, atol=1e-12)
        eps, f0 = 1e-4, f(C)
        for k, l in [(0, 0), (0, 2), (1, 2)]:
            E = jnp.zeros_like(C).at[k, l].set(eps).at[l, k].set(eps)
            central = (f(C + E) - 2 * f0 + f(C - E)) / eps**2
            assert f(C + E) > f0 and f(C - E) > f0 and central > 0
            assert abs(float(f(C + E) - f(C - E))) < 1e-12  # first-order term is zero


def test_line_search_minimises_the_quadratic_on_unit_interval():
    grid = jnp.linspace(0.0, 1.0, 10001)
    for a, b in [(1.0, -0.5), (1.0, -3.0), (1.0, 0.5), (-1.0, 0.3), (-1.0, 1.5), (0.0, -1.0)]:
        g = solvers.line_search(jnp.asarray(a), jnp.asarray(b))
        best = jnp.min(a * grid**2 + b * grid)
        assert float(a * g**2 + b * g) <= float(best) + 1e-6


def test_fw_step_decreases_objective_and_gap_is_nonnegative():
    with enable_x64():
        A, C, T = map(jnp.asarray, _instance(np.random.default_rng(3), n=10))
        fAr = (A * A) @ T.sum(1)
        T1, AT1, gamma, gap = solvers.fw_step(A, T, A @ T, C, fAr)
        assert float(gap) >= 0 and 0 <= float(gamma) <= 1
        assert float(solvers.objective(A, T1, C)) <= float(solvers.objective(A, T, C)) + 1e-15
        assert np.allclose(AT1, A @ T1)
        assert np.allclose(T1.sum(1), T.sum(1))


def test_noiseless_sbm_blocks_recovered_exactly():
    """A = P off the diagonal (no Bernoulli noise): the estimator (spectral + random initial
    couplings, best objective) recovers the blocks, ARI = 1, and the block matrix."""
    n, spec = 60, data.SBMSpec(0.7, 0.2, (0.5, 0.3, 0.2))
    z = np.asarray(data.block_labels(jax.random.PRNGKey(0), n, spec.sizes))
    P = spec.block_matrix()[z[:, None], z[None, :]]
    np.fill_diagonal(P, 0.0)
    est = model.SrgwEstimator(3, n_random=2, max_iter=300, tol=1e-7)
    A = jnp.asarray(P, jnp.float32)
    best, _ = _estimate(est, A, jax.random.PRNGKey(1))
    assert evaluate.adjusted_rand_index(z, np.asarray(solvers.labels(best.T))) == 1.0
    fit = model.block_fit(jnp.asarray(P, jnp.float32), solvers.labels(best.T), 3)
    # zero diagonal of A: block k's mean is p_in (m_k - 1) / m_k, off-diagonal blocks p_out
    z_hat = np.asarray(fit.z)
    m = np.bincount(z_hat, minlength=3)
    assert np.allclose(np.diag(fit.C), 0.7 * (m - 1) / m, atol=1e-5)
    assert np.allclose(fit.C[~np.eye(3, dtype=bool)], 0.2, atol=1e-5)


def test_t_step_agrees_with_pot_semirelaxed_gromov_wasserstein():
    """Fixed C: our conditional gradient and POT's follow the same iterates to the same plan
    (the last instance has a fractional row, where FW converges sublinearly)."""
    rng = np.random.default_rng(4)
    for trial in range(3):
        n, K = 40, 3
        A = np.triu((rng.random((n, n)) < 0.3).astype(float), 1)
        A = A + A.T
        C = rng.random((K, K))
        C = (C + C.T) / 2
        T0 = rng.random((n, K))
        T0 = T0 / T0.sum(1, keepdims=True) / n
        T_pot, log = ot.gromov.semirelaxed_gromov_wasserstein(
            A, C, np.full(n, 1 / n), symmetric=True, G0=T0, log=True, tol_rel=1e-12,
            tol_abs=1e-14)
        with enable_x64():
            Aj, Cj, T = jnp.asarray(A), jnp.asarray(C), jnp.asarray(T0)
            fAr = (Aj * Aj) @ T.sum(1)
            step = jax.jit(solvers.fw_step)
            for _ in range(3000):
                T_new, _, _, gap = step(Aj, T, Aj @ T, Cj, fAr)
                if gap <= 1e-14:
                    break
                T = T_new
            ours = float(solvers.objective(Aj, T, Cj))
        assert np.isclose(ours, log["srgw_dist"], rtol=1e-6), trial
        assert np.allclose(np.asarray(T), T_pot, atol=1e-4), trial


def test_block_model_agrees_with_pot_on_random_instances():
    """Whole estimator (FW + C updates) vs POT's solver in the same block-coordinate loop."""
    for seed in range(3):
        A, _, _, K = evaluate.sample(_SmallCfg(), "sbm", 60, seed)
        est = model.SrgwEstimator(K, n_random=2, max_iter=300, tol=1e-7)
        best, T0s = _estimate(est, A, jax.random.PRNGKey(seed))
        A64 = np.asarray(A, float)
        ours = evaluate._np_objective(A64, np.asarray(best.T, float), np.asarray(best.C, float))
        pot = min(evaluate.pot_block_model(A64, np.asarray(T0, float), 1e-7, 300)[2]
                  for T0 in np.asarray(T0s))
        assert ours <= pot * (1 + 1e-3), (seed, ours, pot)


class _SmallCfg:
    sbms = {"sbm": type("S", (), {"p_in": 0.5, "p_out": 0.1, "sizes": (1.0, 1.0, 1.0)})()}
    graphons = ()


def test_rounding_of_a_deterministic_coupling_has_zero_gap():
    rng = np.random.default_rng(5)
    A = jnp.asarray(np.triu(rng.random((20, 20)) < 0.4, 1).astype(np.float32))
    A = A + A.T
    z = jnp.asarray(rng.integers(0, 3, 20))
    T = jax.nn.one_hot(z, 3) / 20
    g = solvers.rounding_gap(A, T)
    assert float(g.gap) == 0.0 and float(g.fractional_rows) == 0.0
    # a fractional coupling: rounding gap is reported relative to the same C-refit objective
    T2 = 0.5 * T + 0.5 * jnp.full((20, 3), 1 / 60)
    assert float(solvers.rounding_gap(A, T2).fractional_rows) == 1.0


def test_adjusted_rand_index_against_pair_counting():
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 3, 40), rng.integers(0, 4, 40)
    assert evaluate.adjusted_rand_index(a, (a + 1) % 3) == 1.0  # label permutation
    # pair counting: ARI = (RI - E[RI]) / (max RI - E[RI]) in the Hubert-Arabie form
    same_a = a[:, None] == a[None, :]
    same_b = b[:, None] == b[None, :]
    iu = np.triu_indices(40, 1)
    n11 = np.sum(same_a[iu] & same_b[iu])
    pa, pb, pairs = same_a[iu].sum(), same_b[iu].sum(), len(iu[0])
    expected = pa * pb / pairs
    ari = (n11 - expected) / (0.5 * (pa + pb) - expected)
    assert np.isclose(evaluate.adjusted_rand_index(a, b), ari)


def test_randomized_eigenpairs_match_eigh():
    """Above the dense cutoff: the two signal eigenpairs of a 2-block SBM (asked for k = 3, the
    third lies in the noise bulk) match a float64 dense eigendecomposition."""
    n = 640  # above the dense-eigh cutoff: randomized subspace iteration
    A, _, _ = data.sample_sbm(jax.random.PRNGKey(0), n, data.SBMSpec(0.1, 0.4, (1, 1)))
    lam, V = model.top_eigenpairs(A, 3, jax.random.PRNGKey(1))
    ref, U = np.linalg.eigh(np.asarray(A, float))
    top = np.argsort(-np.abs(ref))[:2]
    assert np.allclose(np.asarray(lam[:2]), ref[top], rtol=1e-4)
    assert np.all(np.abs(np.sum(np.asarray(V[:, :2]) * U[:, top], axis=0)) > 0.999)
    assert np.allclose(np.asarray(V.T @ V), np.eye(3), atol=1e-5)


def test_graphons_are_symmetric_probabilities():
    u = jnp.linspace(0, 1, 11)
    for name, W in data.GRAPHONS.items():
        vals = W(u[:, None], u[None, :])
        assert np.allclose(vals, vals.T), name
        assert float(vals.min()) >= 0 and float(vals.max()) <= 1, name


@pytest.mark.parametrize("name", list(data.REAL_NETWORKS))
def test_real_networks_load(name):
    A, nodes, ref = data.real_network(name)
    assert A.shape == (len(nodes), len(nodes)) and np.allclose(A, A.T) and A.diagonal().sum() == 0


def _loglik64(A, z, K):
    """Bernoulli block-model profile log-likelihood in float64 numpy (brute force)."""
    A = np.asarray(A, float)
    Z = np.eye(K)[np.asarray(z)]
    h = Z.sum(0)
    E, N = Z.T @ A @ Z, np.outer(h, h) - np.diag(h)
    xlogx = lambda x: np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)
    return 0.5 * np.sum(xlogx(E) + xlogx(N - E) - xlogx(N))


_switch = jax.jit(model.label_switching, static_argnums=(2, 4, 5, 6))


def test_swap_gains_match_brute_force_loglik():
    A, _, _ = data.sample_sbm(jax.random.PRNGKey(2), 30, data.SBMSpec(0.6, 0.2, (1, 1, 1)))
    z = jnp.arange(30) % 3
    M, E, N = model.bin_counts(A, z, 3)
    i, j = jnp.array([0, 1, 4, 3]), jnp.array([1, 5, 8, 6])  # the last pair shares a bin
    gains = model.swap_gains(A, z, M, E, N, i, j)
    base = _loglik64(A, z, 3)
    assert np.isclose(float(model.profile_loglik(E, N)), base, rtol=1e-5)
    for b, (ii, jj) in enumerate(zip(np.asarray(i), np.asarray(j))):
        z2 = np.asarray(z).copy()
        z2[ii], z2[jj] = z2[jj], z2[ii]
        assert np.isclose(float(gains[b]), _loglik64(A, z2, 3) - base, atol=1e-3), b


def test_label_switching_never_decreases_likelihood():
    A, _, _ = data.sample_graphon(jax.random.PRNGKey(3), 80, "absdiff")
    z0 = jnp.arange(80) % 4
    z, trace = _switch(A, z0, 4, jax.random.PRNGKey(0), 32, 400, 20)
    trace = np.asarray(trace)
    trace = trace[np.isfinite(trace)]
    assert np.all(np.diff(trace) >= 0) and trace[-1] > 0
    # the accumulated gains are the exact likelihood change; bin sizes are unchanged
    assert np.isclose(trace[-1], _loglik64(A, z, 4) - _loglik64(A, z0, 4), rtol=1e-4)
    assert np.array_equal(np.bincount(np.asarray(z)), np.bincount(np.asarray(z0)))


def test_label_switching_recovers_noiseless_sbm_from_random_bins():
    n, spec = 60, data.SBMSpec(0.7, 0.2, (1, 1, 1))
    z_true = np.asarray(data.block_labels(jax.random.PRNGKey(0), n, spec.sizes))
    P = spec.block_matrix()[z_true[:, None], z_true[None, :]]
    np.fill_diagonal(P, 0.0)
    z0 = jax.random.permutation(jax.random.PRNGKey(3), jnp.arange(n) % 3)
    assert evaluate.adjusted_rand_index(z_true, np.asarray(z0)) < 0.2
    z, _ = _switch(jnp.asarray(P, jnp.float32), z0, 3, jax.random.PRNGKey(1), 64, 2000, 30)
    assert evaluate.adjusted_rand_index(z_true, np.asarray(z)) == 1.0


def test_heldout_validation_prefers_true_k_on_sbm():
    """Held-out edge error of the K-block fit is smallest at the true K (= 3) of an SBM."""
    A, _, _ = data.sample_sbm(jax.random.PRNGKey(4), 150, data.SBMSpec(0.5, 0.1, (1, 1, 1)))
    heldout = jax.jit(evaluate.heldout_error, static_argnums=(2, 3, 4, 5))
    err = {K: float(heldout(A, jax.random.PRNGKey(5), K, 0.1, 100, 1e-5)) for K in (1, 3)}
    assert err[3] < err[1]
