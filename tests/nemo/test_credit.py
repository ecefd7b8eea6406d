"""Forward-simulation credit against Monte Carlo on a deterministic toy, need-aware weights,
and the 2-D hypervolume against brute-force grid counting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.nemo import losses
from repro26.nemo.evaluate import hypervolume_2d


def toy_step(x, a, key):
    """Deterministic chain: x' = 0.5 x + a; rewards (a - x, x a / 3)."""
    xf, af = x.astype(jnp.float32), a.astype(jnp.float32)
    return 0.5 * xf + af, jnp.stack([af - xf, xf * af / 3])


def toy_policy(x, prev, turn, key):
    return ((x * 3).astype(jnp.int32) + turn) % 4


def mc_return(x, t, first, lookahead, horizon):
    """Plain Python: H turns from x with `first`, then the toy policy; rewards past T dropped."""
    total, a = np.zeros(2), first
    for h in range(lookahead):
        nx, r = toy_step(jnp.float32(x), jnp.int32(a), None)
        if t + h < horizon:
            total += np.asarray(r)
        x = float(nx)
        a = int(toy_policy(jnp.float32(x), a, t + h + 1, None))
    return total


@pytest.mark.parametrize("t", [0, 3, 5])
def test_credit_equals_monte_carlo_return_difference(t):
    horizon, lookahead, x0 = 6, 3, 0.7
    probs = jnp.array([0.1, 0.2, 0.3, 0.4])
    G, count = losses.forward_returns(toy_step, toy_policy, jnp.float32(x0), jnp.int32(t),
                                      jax.random.PRNGKey(0), 4, lookahead, horizon)
    mc = np.stack([mc_return(x0, t, a, lookahead, horizon) for a in range(4)])
    np.testing.assert_allclose(G, mc, rtol=1e-5, atol=1e-6)
    assert int(count) == 4 * min(lookahead, horizon - t)  # turns whose reward entered a sum
    for chosen in range(4):
        credit = losses.step_credit(G, probs, jnp.int32(chosen))
        expected = mc[chosen] - (np.asarray(probs)[:, None] * mc).sum(0)
        np.testing.assert_allclose(credit, expected, rtol=1e-5, atol=1e-6)
    # the credit is an advantage: its mean under the policy is zero
    mean = sum(probs[a] * losses.step_credit(G, probs, jnp.int32(a)) for a in range(4))
    np.testing.assert_allclose(mean, 0.0, atol=1e-6)


def test_plain_advantages_are_centred_need_weighted_returns_to_go():
    rng = np.random.default_rng(0)
    w = rng.dirichlet([1, 1], (6, 5))
    r = rng.normal(size=(6, 5, 2))
    got = np.asarray(losses.plain_advantages(jnp.asarray(w), jnp.asarray(r)))
    s = (w * r).sum(-1)
    to_go = np.array([[s[u, t:].sum() for t in range(5)] for u in range(6)])
    np.testing.assert_allclose(got, to_go - to_go.mean(0), rtol=1e-5, atol=1e-6)


def test_need_aware_weights_follow_the_preference_vector():
    pref = jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(1), (5, 7, 2)), -1)
    fixed_w = jnp.array([0.3, 0.7])
    np.testing.assert_array_equal(losses.aggregation_weights(pref, fixed_w, True), pref)
    fixed = losses.aggregation_weights(pref, fixed_w, False)
    np.testing.assert_allclose(fixed, np.broadcast_to([0.3, 0.7], pref.shape), rtol=1e-6)
    # a soothing strategy (credit (1, 0)) outranks a guiding one ((0, 1)) exactly when the
    # user's current need is mostly soothing
    soothe, guide = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])
    w = losses.aggregation_weights(pref, fixed_w, jnp.array(True))
    np.testing.assert_array_equal((w * soothe).sum(-1) > (w * guide).sum(-1), pref[..., 0] > 0.5)


def brute_force_hv(points, ref, n=1000):
    """Count the cells of an n x n grid over [ref, max] dominated by some point."""
    pts = np.asarray(points)
    hi = pts.max(0)
    xs = ref[0] + (np.arange(n) + 0.5) * (hi[0] - ref[0]) / n
    ys = ref[1] + (np.arange(n) + 0.5) * (hi[1] - ref[1]) / n
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    dom = np.zeros_like(X, bool)
    for px, py in pts:
        dom |= (X <= px) & (Y <= py)
    return dom.mean() * (hi[0] - ref[0]) * (hi[1] - ref[1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hypervolume_matches_grid_counting(seed):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 1, (12, 2))
    ref = np.array([0.1, 0.05])
    assert hypervolume_2d(pts, ref) == pytest.approx(brute_force_hv(pts, ref), rel=5e-3)


def test_hypervolume_closed_forms():
    assert hypervolume_2d([[0.3, 0.2]], (0, 0)) == pytest.approx(0.06)
    assert hypervolume_2d([[-0.1, 0.5]], (0, 0)) == 0.0                     # does not dominate
    assert hypervolume_2d([[1, 1], [0.5, 0.5]], (0, 0)) == pytest.approx(1)  # dominated point
