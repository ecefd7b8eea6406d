"""MindFlow: the arousal curve's shape, states kept in range, reproducible dialogues, and the
need preference vector."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.nemo.simulator import (N_ACTIONS, STATE_HI, STATE_LO, MindFlow, Persona, rollout,
                                    sample_personas)

EFFECTS = jnp.array([[0.15, 0.35], [0.35, 0.2], [0.6, 0.05], [0.35, 0.1], [0.65, 0.02],
                     [0.05, 0.7], [0.02, 0.6], [0.1, 0.1]])
RANGES = {"arousal_peak": (0.2, 0.7), "arousal_width": (0.08, 0.3), "affective_gain": (0.1, 1.0),
          "deliberative_gain": (0.1, 1.0), "reactivity": (0.0, 1.0),
          "baseline_distress": (0.0, 1.0)}


def env(family="mindflow", noise=0.02):
    return MindFlow(EFFECTS, 0.1, noise, 0.05, 0.1, 6, family)


def persona(mu=0.4, sigma=0.15):
    return Persona(*(jnp.asarray(v) for v in (mu, sigma, 0.3, 0.3, 0.2, 0.8)))


@pytest.mark.parametrize("family", ["mindflow", "logit"])
@pytest.mark.parametrize("mu,sigma", [(0.3, 0.1), (0.55, 0.2)])
def test_arousal_curve_is_an_inverted_u_peaking_at_mu(family, mu, sigma):
    grid = jnp.linspace(0, 1, 2001)
    rho = np.asarray(env(family).receptivity(persona(mu, sigma), grid))
    peak = float(grid[np.argmax(rho)])
    assert abs(peak - mu) <= 1e-3 and rho.max() == pytest.approx(1.0, abs=1e-6)
    left, right = rho[grid <= mu], rho[grid >= mu]
    assert np.all(np.diff(left) >= 0) and np.all(np.diff(right) <= 0)  # up, then down
    assert rho[0] < 0.5 and rho[-1] < 0.5
    if family == "mindflow":   # closed form at one width from the peak: exp(-1/2)
        got = env(family).receptivity(persona(mu, sigma), jnp.array([mu - sigma, mu + sigma]))
        np.testing.assert_allclose(got, np.exp(-0.5), rtol=1e-5)
    else:                      # the tent is half-height at σ and zero beyond 2σ
        got = env(family).receptivity(persona(mu, sigma), jnp.array([mu + sigma, mu + 2.1 * sigma]))
        np.testing.assert_allclose(got, [0.5, 0.0], atol=1e-6)


@pytest.mark.parametrize("family", ["mindflow", "logit"])
def test_transitions_keep_states_in_range(family):
    """Extreme personas, states on and inside the box, every strategy, large process noise."""
    key = jax.random.PRNGKey(0)
    n = 4096
    ks = jax.random.split(key, 4)
    personas = sample_personas(ks[0], RANGES, n)
    corners = jax.random.bernoulli(ks[1], 0.5, (n, 5)).astype(jnp.float32)
    inner = jax.random.uniform(ks[2], (n, 5))
    x = STATE_LO + (STATE_HI - STATE_LO) * jnp.where(jnp.arange(n)[:, None] < n // 2, corners, inner)
    actions = jnp.arange(n) % N_ACTIONS
    e = env(family, noise=0.5)
    nxt = jax.jit(jax.vmap(e.transition))(personas, x, actions, jax.random.split(ks[3], n))
    assert np.all(np.isfinite(nxt))
    assert np.all(nxt >= STATE_LO) and np.all(nxt <= STATE_HI)


def random_policy(obs, turn, key):
    action = jax.random.randint(key, (), 0, N_ACTIONS)
    return action, jnp.log(1.0 / N_ACTIONS), jnp.full(N_ACTIONS, 1.0 / N_ACTIONS)


def test_fixed_seed_reproduces_a_dialogue():
    e, p = env(), persona()
    run = jax.jit(lambda k: rollout(e, p, random_policy, k))
    a, b, c = run(jax.random.PRNGKey(3)), run(jax.random.PRNGKey(3)), run(jax.random.PRNGKey(4))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert not np.array_equal(a["states"], c["states"])
    # the return telescopes: rewards sum to the change of the (E, C) scores
    from repro26.nemo.simulator import scores
    np.testing.assert_allclose(a["reward"].sum(0), scores(a["states"][-1]) - scores(a["states"][0]),
                               atol=1e-5)


def test_preference_vector_follows_the_arousal_curve():
    """p sums to 1; a distressed, unclear user needs soothing away from the arousal peak and
    guidance at it."""
    e, p = env(), persona(mu=0.4, sigma=0.1)
    state = lambda a: jnp.array([0.7, -0.5, 0.2, 0.2, a])  # noqa: E731
    at_peak, aroused = e.preference(p, state(0.4)), e.preference(p, state(0.9))
    np.testing.assert_allclose([at_peak.sum(), aroused.sum()], 1.0, rtol=1e-6)
    assert at_peak[1] > at_peak[0] and aroused[0] > aroused[1]


def test_random_baseline_is_exactly_uniform():
    from repro26.nemo.model import Policy, uniform

    policy = uniform(Policy(jax.random.PRNGKey(0), 8))
    obs = jax.random.normal(jax.random.PRNGKey(1), (14,))
    np.testing.assert_allclose(policy.act(obs, 0, jax.random.PRNGKey(2))[2], 1 / N_ACTIONS,
                               rtol=1e-6)
