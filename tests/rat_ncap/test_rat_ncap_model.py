"""Rat NCAP: rhythm generator period, interfaces, ablation masks, MLP parameter counts."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from repro26.rat_ncap.model import (
    IAF, MNE, MNF, N_NEURONS, RGE, RGF, SYNAPSES, V0D, V0V, V3, MLPPolicy, RatNCAP, interface_ctrl,
    matsuoka_period, mlp_hidden_for, silence_mask,
)

TAU, T_ADAPT, BETA, W, BIAS = 0.025, 0.1, 2.5, 2.0, 0.5


def _rg_only_params(policy):
    """Every weight zero except the half-centre RG: bias, reciprocal inhibition, adaptation."""
    tree = {k: jnp.zeros_like(v) for k, v in policy.init_tree().items()}
    tree.update(b_rgf=jnp.full(2, BIAS), b_rge=jnp.full(2, BIAS), rgf_rge=jnp.full(2, W),
                rge_rgf=jnp.full(2, W), adapt=jnp.full(2, BETA))
    return jax.flatten_util.ravel_pytree(tree)[0]


def _period(t, d):
    idx = np.nonzero((d[:-1] < 0) & (d[1:] >= 0))[0]
    return float(np.median(np.diff(t[idx])))


def test_rhythm_generator_without_input_oscillates_with_predicted_period():
    policy = RatNCAP("torque", True, TAU, T_ADAPT)
    flat = _rg_only_params(policy)
    dt, n = 5e-4, 10000
    q0 = jnp.zeros(8)

    def step(state, _):
        state, _ = policy(flat, state, q0, q0, q0, 0.0, dt)  # no afferent, no drive
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
    assert mask[V0D] == mask[V0V] == mask[V3] == 0 and mask.sum() == N_NEURONS - 3
    assert silence_mask(("Ia",))[IAF[0]] == 0


def test_silenced_v0_has_no_effect_on_output_when_its_weights_are_zero():
    policy = RatNCAP("torque", True, TAU, T_ADAPT)
    tree = policy.init_tree()
    tree.update(v0d_rgf=jnp.zeros(2), ini_rgf=jnp.zeros(2))
    flat = jax.flatten_util.ravel_pytree(tree)[0]
    ablated = RatNCAP("torque", True, TAU, T_ADAPT, mask=jnp.asarray(silence_mask(("V0",))))
    q = jnp.linspace(-0.2, 0.2, 8)

    def run(pol):
        step = lambda s, _: (lambda out: (out[0], out[1][0]))(pol(flat, s, q, 0.0 * q, 0.0 * q, 0.2, 0.004))  # noqa: E731
        return jax.lax.scan(step, policy.init_state(jax.random.PRNGKey(1)), None, length=50)[1]

    np.testing.assert_allclose(jax.jit(lambda: run(policy))(), jax.jit(lambda: run(ablated))(), atol=1e-6)
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
    ncap = RatNCAP("torque", True, TAU, T_ADAPT)
    n = ncap.num_params()
    assert n == ncap.init_params().size == ncap.groups().size
    eq = MLPPolicy((mlp_hidden_for(n),), "torque")
    assert abs(eq.num_params() - n) <= 23 + 1 + 16
    big = MLPPolicy((128, 128), "torque")
    assert big.num_params() == 23 * 128 + 128 + 128 * 128 + 128 + 128 * 16 + 16
    assert big.init_params_key(jax.random.PRNGKey(0)).size == big.num_params()
