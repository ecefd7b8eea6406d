"""The game, the welfare kernel and the estimators against closed forms, brute force and scipy."""

import itertools

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from scipy import stats

from repro26.poll import data, model, solvers

M = 2
A = np.array([1.0, 1.5])


def small_game(n=7, seed=0, het=1.0, kappa=0.4, graph=None):
    g = graph if graph is not None else nx.gnp_random_graph(n, 0.5, seed=seed)
    adj = data.adjacency(g)
    sigma = data.technologies(jax.random.PRNGKey(seed), adj.shape[0], M, het)
    delta = kappa / data.spectral_radius(adj)
    return adj, sigma, delta


def utility(i, x, p, adj, sigma, delta):
    """u_i = (a − p)ᵀx_i − ½ x_iᵀΣ_i x_i + δ Σ_j g_ij x_iᵀx_j, computed term by term."""
    peer = sum(adj[i, j] * x[i] @ x[j] for j in range(len(x)))
    return (A - p) @ x[i] - 0.5 * x[i] @ sigma[i] @ x[i] + delta * peer


def test_equilibrium_is_every_agents_best_response():
    adj, sigma, delta = small_game()
    adj_d = adj.toarray()
    p = np.array([0.2, -0.1])
    x = solvers.equilibrium(adj, sigma, delta, A - p)
    for i in range(len(x)):
        foc = (A - p) - sigma[i] @ x[i] + delta * adj_d[i] @ x
        np.testing.assert_allclose(foc, 0, atol=1e-10)

        def neg_u(xi, i=i):
            y = x.copy()
            y[i] = xi
            return -utility(i, y, p, adj_d, sigma, delta)

        best = so.minimize(neg_u, np.zeros(M), method="BFGS", options={"gtol": 1e-10}).x
        np.testing.assert_allclose(best, x[i], atol=1e-5)


def test_existence_conditions_are_checked():
    adj, sigma, _ = small_game()
    rho = data.spectral_radius(adj)
    lam = np.linalg.eigvalsh(sigma)[:, 0].min()
    ok = solvers.check_equilibrium_exists(adj, sigma, 0.4 * lam / rho)
    assert ok["unique_equilibrium"] and ok["concave_welfare"]
    mid = solvers.check_equilibrium_exists(adj, sigma, 0.7 * lam / rho)
    assert mid["unique_equilibrium"] and not mid["concave_welfare"]
    # the sufficient condition agrees with M's smallest eigenvalue on this graph
    m_dense = solvers.game_matrix(adj, sigma, 0.4 * lam / rho).toarray()
    assert np.linalg.eigvalsh(m_dense)[0] > 0


def test_welfare_kernel_decomposition_matches_direct_welfare():
    """n · (aᵀKq − qᵀKq + ½qᵀHq) = Σ_i u_i(x*) + pᵀ Σ_i x_i* with K, H summed agent by agent."""
    adj, sigma, delta = small_game()
    adj_d = adj.toarray()
    c = solvers.exact_centralities(adj, sigma, delta)
    k = c.sum(0)
    np.testing.assert_allclose(k, k.T, atol=1e-10)  # K = (1ᵀ⊗I) M⁻¹ (1⊗I) is symmetric
    kernel = model.kernel_numpy(c, sigma)
    for p in (np.zeros(M), np.array([0.3, -0.2])):
        q = A - p
        x = solvers.equilibrium(adj, sigma, delta, q)
        np.testing.assert_allclose(x, c @ q, atol=1e-10)  # x_i = C_i q
        direct = sum(utility(i, x, p, adj_d, sigma, delta) for i in range(len(x))) + p @ x.sum(0)
        formula = len(x) * float(kernel.welfare(jnp.asarray(q), jnp.asarray(A)))
        np.testing.assert_allclose(formula, direct, rtol=1e-5)


def test_optimal_price_matches_scipy_optimiser():
    adj, sigma, delta = small_game(n=9, seed=3)
    adj_d = adj.toarray()

    def neg_welfare(p):
        x = solvers.equilibrium(adj, sigma, delta, A - p)
        return -(sum(utility(i, x, p, adj_d, sigma, delta) for i in range(len(x))) + p @ x.sum(0))

    best = so.minimize(neg_welfare, np.zeros(M), method="BFGS", options={"gtol": 1e-9}).x
    kernel = solvers.exact_kernel(adj, sigma, delta)
    np.testing.assert_allclose(np.asarray(kernel.price(jnp.asarray(A))), best, atol=1e-4)
    assert np.all(best < 0)  # strategic complements: the planner subsidises


def test_no_peer_effect_means_no_price():
    adj, sigma, _ = small_game()
    kernel = solvers.exact_kernel(adj, sigma, 0.0)
    np.testing.assert_allclose(kernel.price(jnp.asarray(A)), 0, atol=1e-6)


def test_regular_graph_identical_agents_closed_form():
    """Cycle, Σ_i = S: C_i = (S − 2δ I)⁻¹, p* = (2C − CSC)⁻¹ (C − CSC) a."""
    g = nx.cycle_graph(6)
    adj = data.adjacency(g)
    s = np.array([[2.0, 0.3], [0.3, 1.0]])
    sigma = np.broadcast_to(s, (6, M, M)).copy()
    delta = 0.2
    c = np.linalg.inv(s - 2 * delta * np.eye(M))
    np.testing.assert_allclose(solvers.exact_centralities(adj, sigma, delta), np.broadcast_to(c, (6, M, M)),
                               atol=1e-10)
    h = c @ s @ c
    p = np.linalg.solve(2 * c - h, (c - h) @ A)
    kernel = solvers.exact_kernel(adj, sigma, delta)
    np.testing.assert_allclose(kernel.price(jnp.asarray(A)), p, atol=1e-5)


def test_truncated_series_is_neumann_sum_of_matrix_powers():
    adj, sigma, delta = small_game()
    n = adj.shape[0]
    d_inv = np.linalg.inv(sp.block_diag(list(sigma)).toarray())
    step = delta * d_inv @ np.kron(adj.toarray(), np.eye(M))
    b = np.kron(np.ones((n, 1)), np.eye(M))
    total, term = np.zeros((n * M, M)), d_inv @ b
    for _ in range(4):
        total += term
        term = step @ term
    np.testing.assert_allclose(solvers.truncated_centralities(adj, sigma, delta, 3),
                               total.reshape(n, M, M), atol=1e-12)


def _walk_expectation_brute_force(adj, sigma, delta, start, length):
    """E[Ĉ_start] by enumerating every walk of ``length`` steps with its probability."""
    adj_d = adj.toarray()
    sinv = np.linalg.inv(sigma)
    nbrs = [np.nonzero(adj_d[v])[0] for v in range(len(adj_d))]
    expectation = np.zeros((M, M))
    for choice in itertools.product(*[range(len(adj_d))] * length):
        path, prob, ok = [start], 1.0, True
        for v in choice:
            if v not in nbrs[path[-1]]:
                ok = False
                break
            prob /= len(nbrs[path[-1]])
            path.append(v)
        if not ok:
            continue
        w, tail = np.eye(M), np.eye(M)
        for prev, v in zip(path, path[1:]):
            w = delta * len(nbrs[prev]) * w @ sinv[v]
            tail += w
        expectation += prob * sinv[start] @ tail
    return expectation


def test_walk_estimator_is_unbiased_for_truncated_series():
    g = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)])
    adj, sigma, delta = small_game(graph=g)
    length = 3
    truncated = solvers.truncated_centralities(adj, sigma, delta, length)
    for start in (0, 2, 4):
        np.testing.assert_allclose(_walk_expectation_brute_force(adj, sigma, delta, start, length),
                                   truncated[start], atol=1e-12)
    # the JAX estimator: Monte Carlo mean within 4 standard errors of the truncated series
    game = model.NetworkGame.from_arrays(adj, sigma, delta, A)
    draws = 20000
    est = jax.jit(jax.vmap(lambda k: solvers.centrality_estimate(k, jnp.int32(2), game, length)))(
        jax.random.split(jax.random.PRNGKey(0), draws))
    est = np.asarray(est, np.float64)
    se = est.std(0) / np.sqrt(draws)
    assert np.all(np.abs(est.mean(0) - truncated[2]) < 4 * se + 1e-6)


def test_iterative_solvers_and_dense_reach_the_exact_price():
    adj, sigma, delta = small_game(n=20, seed=1)
    game = model.NetworkGame.from_arrays(adj, sigma, delta, A)
    padded = game.pad(64, 512)
    exact = solvers.exact_kernel(adj, sigma, delta)
    q_star = exact.q(game.a)
    for solve in (solvers.conjugate_gradient, solvers.best_response_dynamics):
        res = jax.jit(solve, static_argnums=(2, 3))(padded, q_star, 1e-3, 500)
        assert float(res.error) <= 1e-3 and 0 < int(res.iterations) < 500
    c, ops, _ = solvers.dense_solve(padded)
    np.testing.assert_allclose(c[:20], solvers.exact_centralities(adj, sigma, delta), atol=1e-4)
    assert ops == pytest.approx((20 * M) ** 3 / 3 + 2 * (20 * M) ** 2 * M)
    # padding changes neither the baselines nor the population means
    for baseline in (model.mean_field_kernel, model.degree_kernel):
        np.testing.assert_allclose(baseline(padded).k, baseline(game).k, rtol=1e-5)


def test_foc_check_false_positive_rate_is_alpha_and_misreports_are_flagged():
    adj, sigma, delta = small_game(n=30, seed=2)
    game = model.NetworkGame.from_arrays(adj, sigma, delta, A)
    c = solvers.exact_centralities(adj, sigma, delta)
    x = c @ A
    alpha = 0.1
    checks = solvers.Checks(jnp.asarray(A, jnp.float32), jnp.asarray(x, jnp.float32),
                            jnp.asarray(adj @ x, jnp.float32), jnp.float32(0.05),
                            jnp.float32(solvers.chi2_threshold(M, alpha)))
    draws = 4000
    keys = jax.random.split(jax.random.PRNGKey(1), draws)
    agents = jax.random.randint(jax.random.PRNGKey(2), (draws,), 0, 30)
    flag = jax.jit(jax.vmap(lambda k, i, s: solvers.foc_flag(k, i, s * game.sigma[i], game, checks),
                            in_axes=(0, 0, None)))
    truthful = np.asarray(flag(keys, agents, 1.0))
    lo, hi = stats.binomtest(int(truthful.sum()), draws).proportion_ci(0.999)
    assert lo <= alpha <= hi
    assert np.asarray(flag(keys, agents, 0.5)).mean() > 0.99


def test_probe_score_is_minimised_only_by_the_truth():
    s = np.array([[2.0, 0.4], [0.4, 1.0]], np.float32)
    assert float(solvers.probe_loss(jnp.asarray(s), jnp.asarray(s))) == pytest.approx(0, abs=1e-6)
    np.testing.assert_allclose(solvers.misreport(jnp.asarray(s), jnp.zeros((2, 2))), s, atol=1e-5)

    def loss(theta):
        a_sym = np.array([[theta[0], theta[1]], [theta[1], theta[2]]], np.float32)
        return float(solvers.probe_loss(solvers.misreport(jnp.asarray(s), jnp.asarray(a_sym)),
                                        jnp.asarray(s)))

    best = so.minimize(loss, np.array([0.5, -0.3, 0.4]), method="Nelder-Mead",
                       options={"xatol": 1e-6, "fatol": 1e-12}).x
    np.testing.assert_allclose(best, 0, atol=1e-3)
    assert loss(np.array([0.1, 0.0, 0.0])) > 0


def test_rounds_to_eps_counts_the_last_excursion():
    err = np.array([0.9, 0.04, 0.2, 0.03, 0.01])
    assert solvers.rounds_to_eps(err, 0.05) == 4  # settles from round 4 on
    assert solvers.rounds_to_eps(np.array([0.01, 0.02]), 0.05) == 1
    assert solvers.rounds_to_eps(np.array([0.01, 0.2]), 0.05) == 3  # censored: horizon + 1


def _padded_game(n=20, seed=1):
    adj, sigma, delta = small_game(n=n, seed=seed)
    return adj, sigma, delta, model.NetworkGame.from_arrays(adj, sigma, delta, A).pad(64, 512)


def test_solvers_count_their_operations_where_they_happen():
    """The counters carried through the loops equal a hand count of the same arithmetic."""
    adj, sigma, delta, game = _padded_game()
    n, e = 20, int(adj.nnz)
    q_star = solvers.exact_kernel(adj, sigma, delta).q(game.a)
    res = jax.jit(solvers.best_response_dynamics, static_argnums=(2, 3))(game, q_star, 1e-3, 500)
    sweep = e * M * M + n * M * M + n * M**3  # neighbour sums, I + δS, Σ⁻¹ × (·)
    aggregate = 2 * n * M**3 + 2 * n * M * M + solvers.price_ops(M)
    assert float(res.ops) == pytest.approx(n * M**3 + int(res.iterations) * sweep + aggregate)
    # a walk: per visited agent its inverse, the scaling, the product and the sum
    _, visits, ops = jax.jit(solvers.walk_tail, static_argnums=3)(
        jax.random.PRNGKey(0), jnp.int32(3), game, 5)
    assert int(visits) == 5 and int(ops) == 5 * (2 * M**3 + 2 * M * M)


def test_poll_operations_and_clt_variance():
    """Poll's counted operations per round match walks + report inverse + contribution +
    means; its per-round variance predicts T · E err_T² over independent runs."""
    adj, sigma, delta, game = _padded_game()
    exact = solvers.exact_kernel(adj, sigma, delta)
    length = 4
    centre = solvers.exact_kernel(adj, sigma, delta, length)
    x = solvers.exact_centralities(adj, sigma, delta) @ A
    x = np.concatenate([x, np.zeros((game.n - 20, M))])
    checks = solvers.Checks(jnp.asarray(A, jnp.float32), jnp.asarray(x, jnp.float32),
                            jnp.zeros_like(jnp.asarray(x, jnp.float32)), jnp.float32(0.05),
                            jnp.float32(10.0))
    rounds, runs = 512, 256
    honest = jnp.zeros(game.n, bool)
    trace = jax.jit(jax.vmap(lambda k: solvers.poll(k, game, exact, centre, rounds, length,
                                                    checks, honest, 1.0, False)))(
        jax.random.split(jax.random.PRNGKey(4), runs))
    visits = np.asarray(trace.queries[:, -1]) - rounds  # every agent of this graph has d > 0
    per_round = M**3 + 5 * M**3 + 6 * M * M + 4 * M * M  # inverse, contribution, means
    expected = visits * (2 * M**3 + 2 * M * M) + rounds * per_round + solvers.price_ops(M)
    np.testing.assert_array_equal(np.asarray(trace.ops[:, -1]), expected)
    predicted = float(np.mean(trace.variance))
    measured = np.asarray(rounds * trace.error[:, -1] ** 2, np.float64)
    # truncation error (L = 4) is far below the sampling error at T = 512
    assert abs(measured.mean() - predicted) < 4 * measured.std() / np.sqrt(runs)
    assert np.std(trace.variance) < 0.2 * predicted  # low variance: one number per run
