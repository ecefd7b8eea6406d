"""Fictive locomotion (circuit without body) of the untrained Rat NCAP: left-right alternation
intact, synchrony with V0 (and the diagonal V0-type LPN) silenced, alternation kept with V3
silenced (Danner et al. 2017; Talpalar et al. 2013, Nature 500:85); the rhythm speeds up
with the commanded speed; the untrained circuit keeps the body upright for 4 s."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from repro26.core import tables
from repro26.rat_ncap import body
from repro26.rat_ncap.evaluate import coordination, fictive_rows
from repro26.rat_ncap.losses import LOAD_HEIGHT_M
from repro26.rat_ncap.model import RatNCAP, interface_ctrl, ravel_policy

SPEEDS = (0.1, 0.2, 0.3)
SEEDS = (0, 1, 2, 3)


@pytest.fixture(scope="module")
def fictive():
    policy = RatNCAP("torque", True, 0.025, 0.1)
    params = np.tile(np.asarray(ravel_policy(policy)[0]), (len(SEEDS), 1))
    rows = fictive_rows(policy, params, SEEDS, SPEEDS, 6.0, 0.004, jax.random.PRNGKey(7), "initial")
    return tables.concat([{k: np.asarray([v]) for k, v in r.items()} for r in rows])


def _distance_from_0(t, condition):
    lag = t["lr_hind"][t["condition"] == condition]
    assert np.isfinite(lag).all()  # every run has a rhythm
    return float(tables.circular_distance(tables.circular_mean(lag), 0.0))


def test_fictive_lags_intact_v0_v3(fictive):
    intact, v0, v3 = (_distance_from_0(fictive, c) for c in ("intact", "V0", "V3"))
    assert intact > 0.4  # left-right alternation (lag ~0.5)
    assert v0 < 0.15  # synchrony (hopping)
    assert abs(v3 - intact) < 0.1  # unchanged
    locked = fictive["plv_lr_hind"][fictive["condition"] == "intact"]
    assert np.median(locked) > 0.9  # phase-locked, not drifting


def test_fictive_rhythm_speeds_up_with_commanded_speed(fictive):
    intact = fictive["condition"] == "intact"
    freq = [np.mean(fictive["stride_freq"][intact & (fictive["v_cmd"] == v)]) for v in SPEEDS]
    assert freq[0] < freq[1] < freq[2] and freq[2] / freq[0] > 1.2


def test_coordination_recovers_known_lags():
    """Four sine 'limbs' at 3 Hz with set lags: the measured lags and frequency match."""
    dt, lags = 0.002, np.array([0.0, 0.5, 0.25, 0.75])  # LF, RF, LH, RH phase delays
    t = np.arange(0, 4, dt)
    signals = np.sin(2 * np.pi * (3.0 * t[:, None] - lags[None]))
    out = coordination(signals, dt)
    assert abs(out["stride_freq"] - 3.0) < 0.01
    assert tables.circular_distance(out["lr_hind"], 0.5) < 0.01  # RH after LH by 0.5
    assert tables.circular_distance(out["homolateral"], 0.75) < 0.01  # LF after LH by 0.75
    assert out["plv_lr_hind"] > 0.99


@pytest.mark.slow
def test_untrained_circuit_keeps_the_body_upright_for_4_s():
    """CPU MuJoCo: the initial circuit with the torque interface, at every commanded speed."""
    m = body.mj_model(0.004)
    policy = RatNCAP("torque", True, 0.025, 0.1)
    q0 = jnp.asarray(body.settled_qpos(0.004)[7:])
    paw_ids, paw_r = body.paw_geom_ids(0.004), body.paw_radii(0.004)
    speeds = jnp.asarray(SPEEDS)

    @jax.jit
    def control(state, q, qd, load):
        def one(st, q_, qd_, v, ld):
            st, (f, e) = policy(st, q_, qd_, q0, v, 0.004, None, ld)
            return st, interface_ctrl("torque", f, e, q_, qd_, q0)
        return jax.vmap(one)(state, q, qd, speeds, load)

    datas = [mujoco.MjData(m) for _ in SPEEDS]
    for d in datas:
        d.qpos[:] = body.settled_qpos(0.004)
        mujoco.mj_forward(m, d)
    state = jax.vmap(policy.init_state)(jax.random.split(jax.random.PRNGKey(0), len(SPEEDS)))
    lowest_up, lowest_height = 1.0, 1.0
    for _ in range(1000):  # 4 s
        q = np.stack([d.qpos[7:] for d in datas])
        qd = np.stack([d.qvel[6:] for d in datas])
        load = np.stack([np.clip(1 - (d.geom_xpos[paw_ids, 2] - paw_r) / LOAD_HEIGHT_M, 0, 1) for d in datas])
        state, ctrl = control(state, q, qd, load)
        for d, u in zip(datas, np.asarray(ctrl)):
            d.ctrl[:] = u
            mujoco.mj_step(m, d)
            w, x, y, _ = d.qpos[3:7]
            lowest_up = min(lowest_up, 1 - 2 * (x * x + y * y))
            lowest_height = min(lowest_height, d.qpos[2])
    assert lowest_up > 0.5 and lowest_height > 0.03  # the rollout's fall criterion, never met
