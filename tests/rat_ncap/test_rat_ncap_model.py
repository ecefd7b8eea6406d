"""Rat NCAP: rhythm generator period, interfaces, ablation masks, parameter counts and the
flat-vector boundary of the evolution strategies."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from repro26.rat_ncap.model import (
    DRIVE0, IAF, LPND, MNE, MNF, N_NEURONS, N_OBS, RGE, RGF, SYNAPSES, V0D, V0V, V3, MLPPolicy, RatNCAP,
    initial_theta, interface_ctrl, matsuoka_period, mlp_hidden_for, num_params, ravel_policy,
    silence_mask,
)

TAU, T_ADAPT, BETA, W, BIAS = 0.025, 0.1, 2.5, 2.0, 0.5


def _rg_only():
    """Rat NCAP with every weight zero except the half-centre RG: bias, reciprocal inhibition,
    adaptation."""
    theta = {k: jnp.zeros_like(v) for k, v in initial_theta().items()}
    theta.update(b_rgf=jnp.full(2, BIAS), b_rge=jnp.full(2, BIAS), rgf_rge=jnp.full(2, W),
                 rge_rgf=jnp.full(2, W), adapt=jnp.full(2, BETA))
    return RatNCAP("torque", True, TAU, T_ADAPT, theta)


def _period(t, d):
    idx = np.nonzero((d[:-1] < 0) & (d[1:] >= 0))[0]
    return float(np.median(np.diff(t[idx])))


def test_rhythm_generator_without_input_oscillates_with_predicted_period():
    policy = _rg_only()
    dt, n = 5e-4, 10000
    q0 = jnp.zeros(12)

    def step(state, _):
        state, _ = policy(state, q0, q0, q0, 0.0, dt)  # no afferent, no drive
        return state, state.x[0, RGF] - state.x[0, RGE]

    _, d = jax.lax.scan(step, policy.init_state(jax.random.PRNGKey(0)), None, length=n)
    t = dt * np.arange(1, n + 1)
    keep = t > 2.0
    ours = _period(t[keep], np.asarray(d)[keep])

    def matsuoka(_, s):  # independent reference: the same ODE with scipy's adaptive RK45
        x1, x2, v1, v2 = s
        y1, y2 = np.clip(x1, 0, 1), np.clip(x2, 0, 1)
        return [(-x1 - W * y2 - BETA * v1 + BIAS) / TAU, (-x2 - W * y1 - BETA * v2 + BIAS) / TAU,
                (-v1 + y1) / T_ADAPT, (-v2 + y2) / T_ADAPT]

    sol = solve_ivp(matsuoka, (0, 5), [0.6, 0.0, 0.0, 0.0], max_step=1e-3, rtol=1e-8, atol=1e-10,
                    dense_output=True)
    tt = np.linspace(2, 5, 30001)
    x = sol.sol(tt)
    reference = _period(tt, x[0] - x[1])
    assert abs(ours - reference) / reference < 0.02
    # closed form of the linearised Matsuoka oscillator (within 5% at these constants)
    assert abs(ours - matsuoka_period(TAU, T_ADAPT, BETA, W)) / ours < 0.05
    assert float(np.ptp(np.asarray(d)[keep])) > 0.3  # a real oscillation, not a fixed point


def test_silencing_masks_populations():
    mask = silence_mask(("V0", "V3"))
    assert mask[V0D] == mask[V0V] == mask[LPND] == mask[V3] == 0 and mask.sum() == N_NEURONS - 4
    assert silence_mask(("Ia",))[IAF[0]] == 0


def test_silenced_v0_has_no_effect_on_output_when_its_weights_are_zero():
    theta = {**initial_theta(), "v0d_rgf": jnp.zeros(2), "ini_rgf": jnp.zeros(2), "lpnd_rgf": jnp.zeros(2)}
    policy = RatNCAP("torque", True, TAU, T_ADAPT, theta)
    q = jnp.linspace(-0.2, 0.2, 12)

    def run(mask):
        step = lambda s, _: (lambda out: (out[0], out[1][0]))(policy(s, q, 0.0 * q, 0.0 * q, 0.2, 0.004, mask))  # noqa: E731
        return jax.lax.scan(step, policy.init_state(jax.random.PRNGKey(1)), None, length=50)[1]

    ablated = jnp.asarray(silence_mask(("V0",)))
    np.testing.assert_allclose(jax.jit(lambda: run(None))(), jax.jit(lambda: run(ablated))(), atol=1e-6)
    assert len(MNF) == len(MNE) == 2


def test_interfaces():
    f, e = jnp.array([0.8, 0.2, 0.5]), jnp.array([0.1, 0.6, 0.5])
    q0 = jnp.zeros(3)
    u = interface_ctrl("torque", f, e, q0, q0, q0).reshape(3, 2)
    np.testing.assert_allclose(u[:, 0] - u[:, 1], f - e)
    # muscle: joint stiffness -d(tau)/d(theta) = kappa (f + e), growing with co-contraction
    torque = lambda a, b, th: (lambda u: u[0] - u[1])(interface_ctrl("muscle", a, b, th, 0.0, 0.0))  # noqa: E731
    for a in (0.2, 0.6, 1.0):
        stiffness = -jax.grad(lambda th: torque(jnp.array(a), jnp.array(a), th))(0.05)
        np.testing.assert_allclose(stiffness, 2 * a * 1.0, rtol=1e-5)
    # equilibrium point: zero torque at the target theta* = theta_0 + 0.8 (f - e)
    target = 0.8 * (0.7 - 0.2)
    u = interface_ctrl("ep", jnp.array([0.7]), jnp.array([0.2]), jnp.array([target]), jnp.zeros(1), jnp.zeros(1))
    np.testing.assert_allclose(u, 0.0, atol=1e-6)
    assert set(SYNAPSES)  # the synapse table is non-empty


def test_parameter_counts():
    """NCAP has 83 parameters: 34 per-girdle synapse types and biases (x 2 girdles; 4 of them
    the ab/adduction posture pathway), 3 per-flexion-joint ones (x 2 joints x 2 girdles), the 2
    brainstem-drive gains and the adaptation speed-up. The MLP sees 32 inputs (12 joint angles
    and velocities, 7 trunk signals, v_cmd) and drives all 24 motors."""
    ncap = RatNCAP("torque", True, TAU, T_ADAPT)
    per_joint = sum(1 for *_, shape in SYNAPSES.values() if shape)
    assert (len(SYNAPSES), per_joint, len(DRIVE0)) == (37, 3, 3)
    assert num_params(ncap) == 2 * (37 - 3) + 2 * 2 * 3 + 3 == 83
    assert ravel_policy(ncap)[0].size == ncap.groups().size == 83
    assert N_OBS == 32
    eq = MLPPolicy((mlp_hidden_for(83),), "torque", jax.random.PRNGKey(0))
    assert abs(num_params(eq) - 83) <= 32 + 1 + 24
    big = MLPPolicy((128, 128), "torque", jax.random.PRNGKey(0))
    assert num_params(big) == 32 * 128 + 128 + 128 * 128 + 128 + 128 * 24 + 24
    assert big.groups().tolist() == [0] * (32 * 128 + 128) + [1] * (128 * 128 + 128) + [2] * (128 * 24 + 24)
    with pytest.raises(ValueError, match="equal"):
        MLPPolicy((64, 32), "torque", jax.random.PRNGKey(0))


def test_ncap_groups_follow_the_flat_order():
    """groups()[i] is the SYNAPSES group of flat entry i: set one synapse type in the module,
    ravel, and the changed entries are exactly those of its group id."""
    ncap = RatNCAP("torque", True, TAU, T_ADAPT)
    names = sorted({g for _, g, _, _ in SYNAPSES.values()})
    for name in ("pff_mn", "v0d_rgf", "b_rge"):
        theta = {**ncap.theta, name: ncap.theta[name] + 1.0}
        changed = ravel_policy(RatNCAP("torque", True, TAU, T_ADAPT, theta))[0] != ravel_policy(ncap)[0]
        assert int(changed.sum()) == ncap.theta[name].size
        assert set(ncap.groups()[np.asarray(changed)].tolist()) == {names.index(SYNAPSES[name][1])}


@pytest.mark.parametrize("make", [
    lambda: RatNCAP("muscle", True, TAU, T_ADAPT),
    lambda: MLPPolicy((8, 8), "torque", jax.random.PRNGKey(3)),
])
def test_ravel_policy_round_trips(make):
    """The ES boundary: unravel(ravel(policy)) is the policy, and a vector put in comes back out."""
    policy = make()
    flat, unravel = ravel_policy(policy)
    back = unravel(flat)
    assert eqx.tree_equal(back, policy)
    other = jax.random.normal(jax.random.PRNGKey(1), flat.shape)
    np.testing.assert_array_equal(ravel_policy(unravel(other))[0], other)


def test_mlp_policy_matches_a_hand_written_forward_pass():
    """eqx.nn.MLP with tanh hidden layers and a sigmoid output, initial W ~ N(0, 1/fan_in), b = 0."""
    policy = MLPPolicy((16, 16), "torque", jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (N_OBS,))
    h = obs
    for i, lin in enumerate(policy.mlp.layers):
        assert not np.any(np.asarray(lin.bias))
        h = lin.weight @ h + lin.bias
        h = jnp.tanh(h) if i < len(policy.mlp.layers) - 1 else jax.nn.sigmoid(h)
    _, (f, e) = policy(None, obs)
    np.testing.assert_allclose(jnp.concatenate([f, e]), h, rtol=1e-6)
    w = np.concatenate([np.asarray(lin.weight * np.sqrt(lin.in_features)).ravel()
                        for lin in policy.mlp.layers])
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05
