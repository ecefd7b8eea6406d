"""Full-rodent transfer (dm_control's rodent.xml): joint map, servo targets, standing still."""

import jax
import mujoco
import numpy as np

from repro26.rat_ncap import body, rodent


def _paw_shift(m, d0, qadr, paw_pos, signs):
    """Shift of each limb's paw (trunk frame) when its joint turns by +0.05 analogue rad: fore-aft
    for the flexion joints, away from the midline for the ab/adduction joints."""
    torso = 1  # the free body right under the world in both models
    shifts = []
    for j, (adr, sign) in enumerate(zip(qadr, signs)):
        d = mujoco.MjData(m)
        d.qpos[:] = d0.qpos
        d.qpos[adr] += sign * 0.05
        mujoco.mj_forward(m, d)
        limb = j // body.JOINTS_PER_LIMB
        shift = d0.xmat[torso].reshape(3, 3).T @ (paw_pos(d, limb) - paw_pos(d0, limb))
        abduction = j % body.JOINTS_PER_LIMB == 2
        shifts.append(shift[1] * (1 if limb in (0, 2) else -1) if abduction else shift[0])
    return np.array(shifts)


def test_joint_map_moves_paws_the_same_way_in_both_bodies():
    m = rodent.rodent_model()
    rmap = rodent.RodentMap(m)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    paws = [m.body(n).id for n in ("hand_L", "hand_R", "foot_L", "foot_R")]
    ours = _paw_shift(m, d, rmap.qadr, lambda dd, limb: dd.xpos[paws[limb]], rmap.sign)

    ma = body.mj_model()
    da = mujoco.MjData(ma)
    da.qpos[:] = body.settled_qpos()
    mujoco.mj_forward(ma, da)
    gid = body.paw_geom_ids()
    analogue = _paw_shift(ma, da, body.joint_addresses()[1], lambda dd, limb: dd.geom_xpos[gid[limb]],
                          np.ones(body.N_JOINTS))
    # flexion-positive convention: proximal flexion swings the paw forward, distal flexion back;
    # abduction moves it away from the midline
    assert np.all(np.sign(ours) == np.sign(analogue)) and np.all(np.abs(ours) > 1e-4)
    assert np.all(analogue[0::3] > 0) and np.all(analogue[1::3] < 0) and np.all(analogue[2::3] > 0)


def test_servo_commands_hold_the_target_angle():
    rmap = rodent.RodentMap(rodent.rodent_model())
    theta = np.linspace(-0.3, 0.3, rmap.gain.size)
    u = rmap.ctrl_for_targets(theta)
    inside = np.abs(u) < 1
    force = rmap.gain * u + rmap.b0 + rmap.b1 * theta  # MuJoCo's affine position servo at theta
    np.testing.assert_allclose(force[inside], 0.0, atol=1e-9)
    assert inside[rmap.act].any()


def test_rodent_holds_its_standing_posture():
    (row,) = rodent.run_transfer(None, np.zeros((1, 1)), (), 0.3, 0.004, jax.random.PRNGKey(0))
    assert row["upright_frac"] == 1.0 and not row["fell"]
    assert abs(row["distance_m"]) < 5e-3
