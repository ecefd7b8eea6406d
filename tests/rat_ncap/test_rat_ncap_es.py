"""ES math: gradient estimate on a quadratic, sign constraints after updates, evosax agreement."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.rat_ncap.es import DiagCMAES, OpenAIES, RefinedES, antithetic_gradient, centered_ranks
from repro26.rat_ncap.model import SYNAPSES, RatNCAP, ravel_policy

A = jnp.diag(jnp.array([1.0, 2.0, 3.0, 0.5, 4.0]))
B = jnp.array([0.3, -1.0, 0.5, 2.0, 0.0])


def quadratic(x):
    return -0.5 * jnp.einsum("...i,ij,...j->...", x - B, A, x - B)


def test_antithetic_gradient_matches_analytic_on_quadratic():
    m = jnp.array([1.0, 0.0, -1.0, 0.5, 0.2])
    sigma = 0.3
    eps = jax.random.normal(jax.random.PRNGKey(0), (20000, 5))
    g = antithetic_gradient(eps, quadratic(m + sigma * eps), quadratic(m - sigma * eps), sigma)
    analytic = jax.grad(quadratic)(m)
    assert jnp.linalg.norm(g - analytic) / jnp.linalg.norm(analytic) < 0.03


def test_centered_ranks():
    r = centered_ranks(jnp.array([3.0, -1.0, jnp.nan, 10.0]))
    np.testing.assert_allclose(r, [1 / 6, -1 / 6, -0.5, 0.5], atol=1e-6)


@pytest.mark.parametrize("strategy", [
    OpenAIES(pop_size=32, lr=0.1),
    RefinedES(pop_size=32, lr=0.1, groups=(0, 0, 1, 1, 1), patience=5),
    DiagCMAES(pop_size=16, sigma0=0.5),
])
def test_strategies_solve_quadratic(strategy):
    state = strategy.init(jnp.zeros(5))

    @jax.jit
    def gen(state, key):
        x = strategy.ask(state, key)
        return strategy.tell(state, x, quadratic(x))

    for g in range(150):
        state = gen(state, jax.random.PRNGKey(g))
    assert float(quadratic(strategy.mean(state))) > -0.05


def test_sign_constraints_hold_after_updates():
    """Candidates and ES means anywhere in R^83 unravel to NCAP modules whose effective weights
    keep the presynaptic sign of every synapse type; the unconstrained baseline's do not."""
    policy = RatNCAP("torque", True, 0.025, 0.1)
    unconstrained = RatNCAP("torque", False, 0.025, 0.1)
    flat0, unravel = ravel_policy(policy)
    _, unravel_free = ravel_policy(unconstrained)
    assert flat0.size == 83
    es = RefinedES(pop_size=8, lr=0.5, sigma0=1.0, groups=tuple(int(g) for g in policy.groups()))
    state = es.init(flat0)

    @jax.jit
    def gen(state, key):  # large random steps, random fitness
        x = es.ask(state, key)
        return es.tell(state, x, jax.random.normal(jax.random.fold_in(key, 1), (8,))), x

    for g in range(5):
        state, x = gen(state, jax.random.PRNGKey(g))
    flats = jnp.concatenate([es.mean(state)[None], x])
    w = jax.vmap(lambda f: unravel(f).weights())(flats)
    w_free = jax.vmap(lambda f: unravel_free(f).weights())(flats)
    flipped = False
    for name, (sign, *_) in SYNAPSES.items():
        if sign:
            assert bool(jnp.all(sign * w[name] >= 0)), name
            flipped |= bool(jnp.any(sign * w_free[name] < 0))
    assert bool(jnp.all(w["d0"] >= 0)) and bool(jnp.all(w["d1"] >= 0))
    assert flipped  # the same updates do break the signs of the unconstrained baseline


def test_openai_es_update_matches_evosax():
    pytest.importorskip("evosax")
    import optax
    from evosax.algorithms import Open_ES

    n, pop = 5, 16
    ref = Open_ES(population_size=pop, solution=jnp.zeros(n), optimizer=optax.sgd(1.0),
                  std_schedule=optax.constant_schedule(0.2))
    params = ref.default_params
    ref_state = ref.init(jax.random.PRNGKey(0), jnp.ones(n), params)
    x, ref_state = ref.ask(jax.random.PRNGKey(1), ref_state, params)
    new_ref, _ = ref.tell(jax.random.PRNGKey(2), x, -quadratic(x), ref_state, params)  # evosax minimises
    eps = (x[: pop // 2] - 1.0) / 0.2
    shaped = centered_ranks(quadratic(x))
    g = antithetic_gradient(eps, shaped[: pop // 2], shaped[pop // 2:], 0.2)
    np.testing.assert_allclose(new_ref.mean - 1.0, g, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("strategy", [
    OpenAIES(pop_size=4), RefinedES(pop_size=4, groups=(0, 0, 1, 1, 1)), DiagCMAES(pop_size=4),
])
def test_state_types_are_invariant_under_tell(strategy):
    """``init`` and ``tell`` return states of identical shapes, dtypes and weak types, so the
    training chunk compiles once (a weak-typed initial leaf forced a second compile)."""
    state = strategy.init(jnp.zeros(5))
    new = strategy.tell(state, strategy.ask(state, jax.random.PRNGKey(0)), jnp.arange(4.0))
    avals = lambda s: [jax.typeof(a) for a in jax.tree.leaves(s)]  # noqa: E731
    assert jax.tree.structure(state) == jax.tree.structure(new)
    assert avals(state) == avals(new)


def test_weight_decay_pulls_toward_the_initial_mean_not_zero():
    """With a decay far stronger than the search gradient, one Adam step moves every entry by
    lr toward the initial mean m_0 = 2 (from 1: up), where decay toward 0 would move it down."""
    es = OpenAIES(pop_size=8, lr=0.01, weight_decay=1e6)
    state = es.init(jnp.full(5, 2.0))
    state = eqx_replace_mean(state, jnp.ones(5))
    x = es.ask(state, jax.random.PRNGKey(0))
    new = es.tell(state, x, quadratic(x))
    np.testing.assert_allclose(new.mean, 1.0 + 0.01, rtol=1e-4)


def eqx_replace_mean(state, mean):
    import equinox as eqx

    return eqx.tree_at(lambda s: s.mean, state, mean)


def test_refined_es_replaces_an_elite_that_scores_worse_when_re_evaluated():
    """An elite stored with a lucky score of 10 blocks every candidate scoring 1 unless it is
    re-evaluated on the same episodes (here: 0.5)."""
    es = RefinedES(pop_size=4, patience=100)
    state = es.init(jnp.zeros(5))
    import equinox as eqx

    state = eqx.tree_at(lambda s: s.elite_fitness, state, jnp.asarray(10.0))
    x = es.ask(state, jax.random.PRNGKey(0))
    fitness = jnp.array([1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(es.reevaluate(state), state.elite[None])
    kept = es.tell(state, x, fitness)
    assert int(kept.stall) == 1 and bool(jnp.all(kept.elite == state.elite))
    replaced = es.tell(state, x, fitness, jnp.array([0.5]))
    assert int(replaced.stall) == 0
    np.testing.assert_array_equal(replaced.elite, x[0])


def test_diag_cma_matches_evosax_sep_cma_es():
    """One generation of the diagonal CMA-ES against evosax's separable CMA-ES from the same
    candidates: the same mean, step size and diagonal covariance. evosax keeps the full-CMA
    learning rates c_1, c_mu; Ros & Hansen (2008) scale them by (n + 2) / 3 for the diagonal
    model, so the reference gets ours (the only difference: with its own, C differs by ~8%)."""
    pytest.importorskip("evosax")
    from evosax.algorithms import Sep_CMA_ES

    n, pop = 5, 12
    ref = Sep_CMA_ES(population_size=pop, solution=jnp.zeros(n))
    ours = DiagCMAES(pop_size=pop, sigma0=0.3)
    k = ours._consts(n)
    params = ref.default_params.replace(std_init=0.3, c_1=k["c_1"], c_mu=k["c_mu"])
    ref_state = ref.init(jax.random.PRNGKey(0), jnp.full(n, 0.5), params)
    x, ref_state = ref.ask(jax.random.PRNGKey(1), ref_state, params)
    new_ref, _ = ref.tell(jax.random.PRNGKey(2), x, -quadratic(x), ref_state, params)  # evosax minimises
    new = ours.tell(ours.init(jnp.full(n, 0.5)), x, quadratic(x))
    np.testing.assert_allclose(new.mean, new_ref.mean, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(new.sigma, new_ref.std, rtol=1e-4)
    np.testing.assert_allclose(new.c, new_ref.C, rtol=1e-4)


def test_refined_es_restart_keeps_decay_toward_the_initial_circuit():
    """After a restart from the elite (no candidate beats it for ``patience`` generations), the decay
    anchor is still the initial mean m_0 = 2, not the elite: with a decay far stronger than the
    search gradient the next step moves the mean from the elite (0) up toward 2 by lr."""
    import equinox as eqx

    es = RefinedES(pop_size=4, lr=0.01, weight_decay=1e6, patience=2)
    state = es.init(jnp.full(5, 2.0))
    state = eqx.tree_at(lambda s: (s.elite, s.elite_fitness, s.stall), state,
                        (jnp.zeros(5), jnp.asarray(10.0), jnp.asarray(1, jnp.int32)))
    x = es.ask(state, jax.random.PRNGKey(0))
    restarted = es.tell(state, x, jnp.zeros(4))
    assert int(restarted.restarts) == 1
    np.testing.assert_array_equal(restarted.mean, jnp.zeros(5))
    np.testing.assert_array_equal(restarted.inner.init_mean, jnp.full(5, 2.0))
    x = es.ask(restarted, jax.random.PRNGKey(1))
    moved = es.tell(restarted, x, jnp.zeros(4))
    np.testing.assert_allclose(moved.mean, 0.01, rtol=1e-3)
