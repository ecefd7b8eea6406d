"""Acceptance of the body and the initial circuit (issue 15): the *untrained* Rat NCAP with its
initial parameters keeps the body up for 4 s at every commanded speed, on MJX (the training
simulator) and on CPU MuJoCo (an independent implementation of the same model)."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from repro26.rat_ncap import body
from repro26.rat_ncap.cli import EVAL_KEY
from repro26.rat_ncap.losses import LOAD_HEIGHT_M, RewardSpec, rollout
from repro26.rat_ncap.model import RatNCAP, interface_ctrl, ravel_policy

SPEEDS = (0.1, 0.2, 0.3)
SECONDS, DT = 4.0, 0.004
N_STEPS = int(SECONDS / DT)


def _fall_criterion_never_met(up, height):
    return float(np.min(up)) > 0.5 and float(np.min(height)) > 0.03  # the rollout's fall criterion


@pytest.mark.slow
def test_untrained_circuit_walks_4_s_on_mjx():
    """The evaluation episodes (keys of the small run's seeds 0-2, as in the baselines table's
    initial-circuit rows) and three more initial states: 6 x 3 speeds, none falls."""
    env = body.make_env(DT)
    policy = RatNCAP("torque", True, 0.025, 0.1)
    keys = jnp.concatenate([jax.random.split(jax.random.PRNGKey(EVAL_KEY), 3),
                            jax.random.split(jax.random.PRNGKey(1), 3)])
    n = keys.shape[0]
    params = jnp.tile(ravel_policy(policy)[0], (n * len(SPEEDS), 1))
    v_cmd = jnp.tile(jnp.asarray(SPEEDS), n)
    run = jax.jit(lambda p, k, v: rollout(policy, env, p, k, v, N_STEPS, RewardSpec(), None, 10))
    _, trace = run(params, jnp.repeat(keys, len(SPEEDS), axis=0), v_cmd)
    alive = np.asarray(trace["alive"])
    assert alive[:, -1].all(), f"fell: {np.argwhere(~alive[:, -1]).ravel().tolist()} of {alive.shape[0]}"
    hips = np.asarray(trace["q"])[:, 50:, 0::body.JOINTS_PER_LIMB]
    assert np.all(hips.std(axis=1) > 0.03)  # every limb keeps stepping (not a frozen stance)


@pytest.mark.slow
def test_untrained_circuit_walks_4_s_on_cpu_mujoco():
    """CPU MuJoCo: the initial circuit with the torque interface, from the settled posture, at
    every commanded speed; the circuit is stepped by JAX, the body by MuJoCo's C engine."""
    m = body.mj_model(DT)
    policy = RatNCAP("torque", True, 0.025, 0.1)
    standing = body.settled_qpos(DT)
    q0 = jnp.asarray(body.make_env(DT).q0)
    paw_ids, paw_r = body.paw_geom_ids(DT), body.paw_radii(DT)
    speeds = jnp.asarray(SPEEDS)

    @jax.jit
    def control(state, q, qd, load, roll):
        def one(st, q_, qd_, v, ld, rl):
            st, (f, e) = policy(st, q_, qd_, q0, v, DT, None, ld, rl)
            return st, interface_ctrl("torque", f, e, q_, qd_, q0)
        return jax.vmap(one)(state, q, qd, speeds, load, roll)

    datas = [mujoco.MjData(m) for _ in SPEEDS]
    for d in datas:
        d.qpos[:] = standing
        mujoco.mj_forward(m, d)
    state = jax.vmap(policy.init_state)(jax.random.split(jax.random.PRNGKey(0), len(SPEEDS)))
    up, height, hip = [], [], []
    for _ in range(N_STEPS):
        q, qd = (np.stack(a) for a in zip(*(body.joint_state(d) for d in datas)))
        load = np.stack([np.clip(1 - (d.geom_xpos[paw_ids, 2] - paw_r) / LOAD_HEIGHT_M, 0, 1) for d in datas])
        roll = np.stack([np.asarray(body.trunk_roll(d)) for d in datas])
        state, ctrl = control(state, q, qd, load, roll)
        for d, u in zip(datas, np.asarray(ctrl)):
            d.ctrl[:] = u
            mujoco.mj_step(m, d)
        w, x, y, _ = np.stack([d.qpos[3:7] for d in datas]).T
        up.append(1 - 2 * (x * x + y * y))
        height.append([d.qpos[2] for d in datas])
        hip.append(q[:, 0::body.JOINTS_PER_LIMB])
    assert _fall_criterion_never_met(np.asarray(up), np.asarray(height))
    assert np.all(np.asarray(hip)[50:].std(axis=0) > 0.03)  # every limb of every episode steps
