"""The math of progress_advantage against hand computations and independent references."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from repro26.progress_advantage import mdp, scores as S, task as T


@pytest.fixture(scope="module")
def grid():
    return mdp.slippery_gridworld(4, ((1, 1), (2, 3)), 0.2, 0.02, 0.9)


def test_soft_value_iteration_is_a_fixed_point(grid):
    pi_ref = mdp.random_reference(jax.random.PRNGKey(0), *grid.R.shape)
    Q, V, A = mdp.soft_value_iteration(grid, pi_ref, 0.1, tol=1e-7)
    Q2, V2 = mdp.soft_bellman(grid, pi_ref, 0.1, V)
    np.testing.assert_allclose(V2, V, atol=1e-5)
    np.testing.assert_allclose(Q2, Q, atol=1e-5)
    # π* = π_ref exp(A*/β) is a distribution, and β log π*/π_ref = A*
    pi_star = mdp.optimal_policy(pi_ref, A, 0.1)
    np.testing.assert_allclose(pi_star.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(0.1 * jnp.log(pi_star / pi_ref), A, atol=1e-5)
    # as β → 0 the soft values approach the hard (max) values of ordinary value iteration
    V_hard = jnp.zeros_like(V)
    for _ in range(400):
        V_hard = jnp.max(grid.R + grid.gamma * grid.P @ V_hard, -1)
    _, V_cold, _ = mdp.soft_value_iteration(grid, pi_ref, 1e-3, tol=1e-7)
    np.testing.assert_allclose(V_cold, V_hard, atol=0.02)


def test_identity_on_a_two_state_stochastic_mdp_by_hand():
    """State 1: both actions end the episode with rewards r1 = (1, 0). State 0: action a moves to
    state 1 with probability p_a (reward 0), else ends with reward c_a. The absorbing state 2
    has value 0. By hand: V1 = β log Σ π_ref(a|1) e^{r1_a/β}, Q0_a = (1 − p_a) c_a + γ p_a V1,
    V0 = β log Σ π_ref(a|0) e^{Q0_a/β}, A* = Q − V."""
    beta, gamma = 0.5, 0.9
    p, c, r1 = np.array([0.7, 0.2]), np.array([0.0, 0.4]), np.array([1.0, 0.0])
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2))
    for a in range(2):
        P[0, a, 1], P[0, a, 2] = p[a], 1 - p[a]
        R[0, a] = (1 - p[a]) * c[a]
        P[1, a, 2] = 1.0
        R[1, a] = r1[a]
    P[2, :, 2] = 1.0
    m = mdp.TabularMDP(jnp.asarray(P, jnp.float32), jnp.asarray(R, jnp.float32), gamma,
                       jnp.asarray([1.0, 1.0, 0.0]))
    pi_ref = np.array([[0.3, 0.7], [0.6, 0.4], [0.5, 0.5]])
    V1 = beta * np.log(pi_ref[1] @ np.exp(r1 / beta))
    Q0 = (1 - p) * c + gamma * p * V1
    V0 = beta * np.log(pi_ref[0] @ np.exp(Q0 / beta))
    A_hand = np.array([Q0 - V0, r1 - V1])
    Q, V, A = mdp.soft_value_iteration(m, jnp.asarray(pi_ref, jnp.float32), beta, tol=1e-8)
    np.testing.assert_allclose(V[:2], [V0, V1], atol=1e-5)
    np.testing.assert_allclose(A[:2], A_hand, atol=1e-5)
    pi_star = pi_ref[:2] * np.exp(A_hand / beta)
    np.testing.assert_allclose(pi_star.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(beta * np.log(pi_star / pi_ref[:2]), A_hand, atol=1e-6)


def test_exact_policy_gradient_approaches_the_identity(grid):
    """Training from π_ref raises the regularised objective to J* = μ0·V* and the correlation
    of β log π/π_ref with A* towards 1; without the KL term it stays well below."""
    beta = 0.1
    pi_ref = mdp.random_reference(jax.random.PRNGKey(1), *grid.R.shape)[None]
    _, V, A = jax.vmap(lambda p: mdp.soft_value_iteration(grid, p, beta))(pi_ref)
    logits, hist = mdp.train_policy_gradient(
        grid, jnp.concatenate([pi_ref, pi_ref]), jnp.concatenate([A, A]), jnp.asarray([beta, 0.0]),
        beta, 400, 0.1)
    start = grid.decision / grid.decision.sum()
    J = mdp.regularised_objective(grid, logits[0], pi_ref[0], beta, start)
    assert float(V[0] @ start - J) < 5e-3
    assert hist["corr"][-1, 0] > 0.97 > hist["corr"][-1, 1]


TINY = T.TaskSpec(modulus=6, horizon=2, n_operands=3, fault=0.2, crash=0.3, risky_from=2)


def _outcomes(d, a):
    """Independent enumeration of the calculator's law: [(d', prob)] (dead = 6)."""
    if d == 6:
        return [(6, 1.0)]
    arg = a % 3
    s = arg if a // 3 == 0 else -arg
    p_crash = 0.3 if arg >= 2 else 0.0
    out = [((d - s) % 6, 0.8 * (1 - p_crash)), ((d - s - 1) % 6, 0.1 * (1 - p_crash)),
           ((d - s + 1) % 6, 0.1 * (1 - p_crash))]
    return out + ([(6, p_crash)] if p_crash else [])


def test_transition_law_and_absorbing_crash():
    P = np.asarray(T.transition_matrix(TINY))
    assert P.shape == (7, 6, 7)
    np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-6)
    for d, a in itertools.product(range(7), range(6)):
        ref = np.zeros(7)
        for d2, pr in _outcomes(d, a):
            ref[d2] += pr
        np.testing.assert_allclose(P[d, a], ref, atol=1e-6)
    np.testing.assert_array_equal(P[6, :, 6], 1.0)  # the dead state is absorbing
    # sampled steps follow the law (crash rate of the fast tool, nothing leaves the dead state)
    n = 20000
    d = jnp.full((n,), 3)
    d2 = np.asarray(T.step_env(TINY, jax.random.PRNGKey(0), d, jnp.zeros(n, int), jnp.full(n, 2)))
    assert abs(np.mean(d2 == 6) - 0.3) < 0.015
    assert abs(np.mean(d2 == 1) - 0.7 * 0.8) < 0.015
    dead = T.step_env(TINY, jax.random.PRNGKey(1), jnp.full((n,), 6), jnp.zeros(n, int),
                      jnp.ones(n, int))
    assert (np.asarray(dead) == 6).all()
    # exact success probability = the transition law's mass on d' = 0
    dd, a = jnp.arange(7).repeat(6), jnp.tile(jnp.arange(6), 7)
    sp = T.success_probability(TINY, dd, a // 3, a % 3)
    np.testing.assert_allclose(np.asarray(sp).reshape(7, 6), P[:, :, 0], atol=1e-6)


def test_task_soft_advantage_and_optimal_policy_match_brute_force():
    """A* at both steps recomputed by enumerating outcomes; π* = π_ref e^{A*/β} attains the
    regularised objective J(π) = E[R − β Σ_t KL(π ‖ π_ref)(s_t)], evaluated by enumerating all
    trajectories, at its soft value, and no perturbed policy does better."""
    lp = jax.nn.log_softmax(jax.random.normal(jax.random.PRNGKey(0), (2, 7, 6)), -1)
    beta = 0.3
    A = np.asarray(T.soft_optimal_advantage(TINY, lp, beta))
    lp = np.asarray(lp, np.float64)
    Q1 = np.array([[sum(pr for d2, pr in _outcomes(d, a) if d2 == 0) for a in range(6)]
                   for d in range(7)])
    V1 = beta * np.log(np.sum(np.exp(lp[0] + Q1 / beta), -1))
    Q2 = np.array([[sum(pr * V1[d2] for d2, pr in _outcomes(d, a)) for a in range(6)]
                   for d in range(7)])
    V2 = beta * np.log(np.sum(np.exp(lp[1] + Q2 / beta), -1))
    np.testing.assert_allclose(A[0], Q1 - V1[:, None], atol=1e-5)
    np.testing.assert_allclose(A[1], Q2 - V2[:, None], atol=1e-5)
    np.testing.assert_allclose(A[:, 6], 0.0, atol=1e-6)  # nothing matters once dead

    def J(pi, d0):  # pi[k−1, d, a], enumeration over (a0, d1, a1, d2)
        kl = lambda k, d: np.sum(pi[k, d] * (np.log(pi[k, d]) - lp[k, d]))  # noqa: E731
        total = -beta * kl(1, d0)
        for a0 in range(6):
            for d1, p1 in _outcomes(d0, a0):
                total += pi[1, d0, a0] * p1 * -beta * kl(0, d1)
                for a1 in range(6):
                    for d2, p2 in _outcomes(d1, a1):
                        total += pi[1, d0, a0] * p1 * pi[0, d1, a1] * p2 * (d2 == 0)
        return total

    pi_star = np.exp(lp + A / beta)
    np.testing.assert_allclose(pi_star.sum(-1), 1.0, atol=1e-5)
    rng = np.random.default_rng(0)
    for d0 in (1, 3):
        j_star = J(pi_star, d0)
        assert j_star == pytest.approx(V2[d0], abs=1e-5)
        for _ in range(5):
            other = pi_star * np.exp(0.3 * rng.normal(size=pi_star.shape))
            assert J(other / other.sum(-1, keepdims=True), d0) < j_star


def test_demonstrator_law_and_fast_tool_calls():
    spec = T.TaskSpec(modulus=12, horizon=4, n_operands=5, fault=0.1, crash=0.3, risky_from=3)
    d = jnp.arange(13).repeat(4)
    sl = jnp.tile(jnp.arange(1, 5), 13)
    valid = np.asarray(T.valid_actions(spec, d, sl))
    assert valid.any(1).all()
    p = np.asarray(T.demonstrator_probs(spec, d, sl, 0.2, 0.8, 0.99))
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
    dead = np.asarray(d) == 12
    np.testing.assert_allclose(p[dead, 0], 0.99 + 0.01 / 10, atol=1e-6)  # the retry loop
    # alive: the habit puts 0.8 · 0.8 on the largest valid operand (the fast tool when valid)
    args = np.arange(10) % 5
    top = valid & (args == np.where(valid, args, -1).max(1, keepdims=True))
    assert np.all(p[~dead][top[~dead] & (top[~dead].sum(1, keepdims=True) == 1)] >= 0.64)
    # sampled demonstrator actions follow the law
    n = 40000
    a = T.demonstrator_action(spec, jax.random.PRNGKey(0), jnp.full((n,), 7), jnp.full((n,), 4),
                              0.2, 0.8, 0.99)
    freq = np.bincount(np.asarray(a[0] * 5 + a[1]), minlength=10) / n
    np.testing.assert_allclose(freq, p[7 * 4 + 3], atol=0.01)
    op, arg = T.risky_call(spec, jax.random.PRNGKey(1), (1000,))
    assert (np.asarray(arg) >= 3).all() and set(np.asarray(op).tolist()) == {0, 1}
    # with one step left the valid actions land exactly on the target whenever it is reachable
    c = np.asarray(T.centred(d, 12))
    last = (np.asarray(sl) == 1) & (np.abs(c) <= 4) & ~dead
    ops = np.arange(10) // 5
    lands = (c[:, None] - np.where(ops == 0, args, -args)[None]) == 0
    np.testing.assert_array_equal(valid[last], lands[last])


def test_rollout_crash_is_irreversible_and_exact_success_matches_monte_carlo():
    from repro26.progress_advantage.evaluate import exact_success

    lp = jax.nn.log_softmax(jax.random.normal(jax.random.PRNGKey(2), (2, 7, 6)), -1)

    def act(key, t, buf):
        a = jax.random.categorical(key, lp[TINY.horizon - t - 1, buf["d"][:, t]])
        return a // 3, a % 3

    n = 40000
    d0 = T.sample_problems(TINY, jax.random.PRNGKey(3), n)
    tr = T.rollout(TINY, jax.random.PRNGKey(4), d0, act)
    assert abs(float(tr["success"].mean()) - float(exact_success(TINY, lp))) < 0.01
    forced = T.rollout(TINY, jax.random.PRNGKey(5), d0[:100], act, crash_at=jnp.zeros(100, int))
    assert (np.asarray(forced["d"][:, 1]) == 6).all() and not forced["success"].any()


def test_auroc_matches_brute_force_and_mann_whitney():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=60), 1)  # ties on purpose
    labels = rng.random(60) < 0.4
    pos, neg = scores[labels], scores[~labels]
    brute = np.mean([(p > n) + 0.5 * (p == n) for p, n in itertools.product(pos, neg)])
    assert S.auroc(scores, labels) == pytest.approx(brute)
    u = mannwhitneyu(pos, neg).statistic
    assert S.auroc(scores, labels) == pytest.approx(u / (len(pos) * len(neg)))
    assert S.auroc([0.1, 0.2, 0.9, 0.8], [0, 0, 1, 1]) == 1.0
    assert S.auroc([0.9, 0.8, 0.1, 0.2], [0, 0, 1, 1]) == 0.0


def test_attribution_and_best_of_n_on_constructed_examples():
    rng = np.random.default_rng(0)
    steps = np.array([[0.0, -1.0, 0.5], [-2.0, 0.0, 0.0], [0.3, 0.2, -0.1], [1.0, 1.0, 1.0]])
    first = np.array([1, 0, 1, 0])
    # rows 0, 1 right; row 2 wrong; row 3 a three-way tie: right with probability 1/3
    accs = [S.attribution_accuracy(steps, first, rng) for _ in range(3000)]
    assert np.mean(accs) == pytest.approx((2 + 1 / 3) / 4, abs=0.01)
    sc = np.array([[0.1, 0.9, 0.5], [0.3, 0.3, 0.0]])
    val = np.array([[0.0, 1.0, 0.5], [0.2, 0.6, 1.0]])
    out = [S.best_of_n(sc, val, [1, 2, 3], rng) for _ in range(2000)]
    assert out[0][1] == pytest.approx(0.1)
    assert np.mean([o[2] for o in out]) == pytest.approx((1.0 + 0.4) / 2, abs=0.01)
    assert np.mean([o[3] for o in out]) == pytest.approx((1.0 + 0.4) / 2, abs=0.01)
