"""Transfer of a learned Rat NCAP circuit to dm_control's full rodent, without retraining.

The controller is trained on the "Rat v2" analogue (:mod:`repro26.rat_ncap.body`); here the
same circuit and parameters drive the full rodent of Merel et al. (2020, "Deep neuroethology
of a virtual rodent", ICLR; dm_control ``locomotion/walkers/assets/rodent.xml``: 38 actuators,
a 0.34 kg body with spine, tail, head and five-segment limbs) in CPU MuJoCo. The XML is loaded
directly with :class:`mujoco.MjSpec` (dm_control's ``Rat()`` wrapper crashes with mujoco 4);
we add the free joint of the torso and a floor plane, as dm_control's arena would.

Mapping (a rhythm transfer, not a retrained policy):

* joints: the analogue's proximal/distal/ab-adduction joint of each limb is the rodent's
  ``shoulder_{L,R}``/``elbow_{L,R}``/``scapula_{L,R}_abduct`` (fore) and
  ``hip_{L,R}_extend``/``knee_{L,R}``/``hip_{L,R}_abduct`` (hind); the sign ``s_j`` matches
  the sense of rotation about the lateral axis (flexion joints) or the longitudinal axis
  (ab/adduction): ``s_j = sign(a_c^rodent) sign(a_c^analogue)`` with ``a_c`` the y- (x-)
  component of the joint axis in the world frame at the standing posture;
* vestibular input: the torso's roll angle and rate, as on the analogue;
* afferents: the circuit sees ``q_j - q0_j = s_j (theta_j - theta_j^stand)`` and
  ``s_j dtheta_j`` (rodent joint angles relative to its settled standing posture);
* motor output: the rodent's actuators are position servos (``force = g u + b0 + b1 theta``,
  ``u`` in [-1, 1]), so every variant is transferred through the equilibrium-point interface:
  target ``theta_j^* = s_j Delta (f_j - e_j)`` with the analogue's ``Delta`` (``DELTA_EP``),
  ``u_j = clip((-b1 theta_j^* - b0) / g, -1, 1)``; all other 26 actuators hold the standing
  targets ``theta = 0``;
* time: the circuit steps every ``cfg.timestep`` seconds (as in training), the rodent's
  physics at its own 2 ms step in between.

Before every episode the rodent settles for 1 s holding the standing targets. A ``hold``
baseline (no circuit, standing targets only) shows what the body does on its own. Gait
statistics reuse :func:`repro26.rat_ncap.evaluate.gait_stats`, with paw contact read from
MuJoCo's contacts between the floor and the distal limb segments (foot/toe, hand/finger).
"""

from __future__ import annotations

import pathlib
from functools import cache

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from repro26.rat_ncap.body import N_JOINTS
from repro26.rat_ncap.evaluate import CONTACT_M, gait_stats
from repro26.rat_ncap.model import DELTA_EP, RatNCAP, ravel_policy

#: analogue joint order (LF, RF, LH, RH; proximal, distal, ab/adduction) -> rodent joint names
RODENT_JOINTS: tuple[str, ...] = ("shoulder_L", "elbow_L", "scapula_L_abduct",
                                  "shoulder_R", "elbow_R", "scapula_R_abduct",
                                  "hip_L_extend", "knee_L", "hip_L_abduct",
                                  "hip_R_extend", "knee_R", "hip_R_abduct")
#: world-frame axis component that carries each joint's sense (y: flexion, x: ab/adduction)
AXIS_COMPONENT = np.array([1, 1, 0] * 4)
#: that component's sign in the analogue (proximal "0 -1 0", distal "0 1 0", ab/adduction
#: "1 0 0" on the left and "-1 0 0" on the right)
ANALOGUE_AXIS_SIGN = np.array([-1, 1, 1, -1, 1, -1] * 2, float)
#: distal bodies whose floor contacts count as paw contact, LF, RF, LH, RH
PAW_BODIES: tuple[tuple[str, ...], ...] = (("hand_L", "finger_L"), ("hand_R", "finger_R"),
                                           ("foot_L", "toe_L"), ("foot_R", "toe_R"))
SETTLE_S = 1.0


@cache
def rodent_model() -> mujoco.MjModel:
    """dm_control's rodent (its package ships ``rodent.xml``) with a free torso joint on a floor
    plane (CPU MuJoCo)."""
    import dm_control

    path = pathlib.Path(dm_control.__file__).parent / "locomotion/walkers/assets/rodent.xml"
    spec = mujoco.MjSpec.from_file(str(path))
    spec.body("torso").add_freejoint()
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05],
                            contype=1, conaffinity=1)
    return spec.compile()


class RodentMap:
    """Joint/actuator indices, servo parameters and signs of the analogue -> rodent mapping."""

    def __init__(self, m: mujoco.MjModel):
        self.jnt = np.array([m.joint(n).id for n in RODENT_JOINTS])
        self.qadr = m.jnt_qposadr[self.jnt]
        self.vadr = m.jnt_dofadr[self.jnt]
        act_joint = {int(m.actuator_trnid[a, 0]): a for a in range(m.nu)
                     if m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT}
        self.act = np.array([act_joint[j] for j in self.jnt])
        self.gain = m.actuator_gainprm[:, 0].copy()
        self.b0, self.b1 = m.actuator_biasprm[:, 0].copy(), m.actuator_biasprm[:, 1].copy()
        self.floor = m.geom("floor").id
        body_limb = {m.body(b).id: i for i, names in enumerate(PAW_BODIES) for b in names}
        self.geom_limb = np.array([body_limb.get(int(b), -1) for b in m.geom_bodyid])
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        self.sign = np.sign(d.xaxis[self.jnt, AXIS_COMPONENT]) * ANALOGUE_AXIS_SIGN

    def ctrl_for_targets(self, theta: np.ndarray) -> np.ndarray:
        """Servo commands whose equilibrium is the joint angle ``theta`` (per actuator)."""
        return np.clip((-self.b1 * theta - self.b0) / self.gain, -1.0, 1.0)

    def paw_contact(self, d: mujoco.MjData) -> np.ndarray:
        touch = np.zeros(4, bool)
        for c in d.contact[: d.ncon]:
            for g, other in ((c.geom1, c.geom2), (c.geom2, c.geom1)):
                if other == self.floor and self.geom_limb[g] >= 0:
                    touch[self.geom_limb[g]] = True
        return touch


def _trunk(d: mujoco.MjData) -> tuple[float, float, float]:
    """Torso x (m), height (m) and upright cosine."""
    w, x, y, z = d.qpos[3:7]
    return float(d.qpos[0]), float(d.qpos[2]), float(1.0 - 2.0 * (x * x + y * y))


def _roll(d: mujoco.MjData) -> np.ndarray:
    """Torso roll angle (rad, left side up positive) and roll rate (rad/s, torso frame)."""
    w, x, y, z = d.qpos[3:7]
    return np.array([np.arctan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y)), d.qvel[3]])


def run_transfer(policy: RatNCAP | None, params: np.ndarray, speeds, seconds: float, dt: float,
                 key: jax.Array) -> list[dict]:
    """Episodes of the rodent driven by ``policy`` with the weights of each row of ``params``
    (flat vectors, :func:`~repro26.rat_ncap.model.ravel_policy`) at each speed.

    ``policy=None`` runs the ``hold`` baseline (standing targets, one episode). Returns rows
    with distance travelled, uprightness and gait statistics per (params row, speed).
    """
    m = rodent_model()
    rmap = RodentMap(m)
    n_sub = max(1, int(round(dt / m.opt.timestep)))
    dt_ctrl = n_sub * m.opt.timestep
    n_ctrl = int(round(seconds / dt_ctrl))
    hold = rmap.ctrl_for_targets(np.zeros(m.nu))
    jobs = [(i, v) for i in range(params.shape[0]) for v in speeds] if policy is not None else [(0, 0.0)]
    datas = []
    for _ in jobs:
        d = mujoco.MjData(m)
        d.ctrl[:] = hold
        for _ in range(int(round(SETTLE_S / m.opt.timestep))):
            mujoco.mj_step(m, d)
        datas.append(d)
    stand = np.stack([d.qpos[rmap.qadr] for d in datas])
    n = len(jobs)
    if policy is not None:
        flat = jnp.asarray(params)[jnp.array([i for i, _ in jobs])]
        v_cmd = jnp.asarray([v for _, v in jobs], jnp.float32)
        state = jax.vmap(policy.init_state)(jax.random.split(key, n))
        q0 = jnp.zeros(N_JOINTS)
        _, unravel = ravel_policy(policy)
        step = jax.jit(jax.vmap(lambda fl, st, q, qd, v, rl: unravel(fl)(st, q, qd, q0, v, dt_ctrl, None, None, rl)))
    sign = rmap.sign
    rec = {"q": np.zeros((n, n_ctrl, N_JOINTS)), "paw": np.zeros((n, n_ctrl, 4)), "x": np.zeros((n, n_ctrl)),
           "alive": np.zeros((n, n_ctrl), bool), "up": np.zeros((n, n_ctrl))}
    x0 = np.array([_trunk(d)[0] for d in datas])
    alive = np.ones(n, bool)
    for t in range(n_ctrl):
        q = np.stack([sign * (d.qpos[rmap.qadr] - s) for d, s in zip(datas, stand)])
        qd = np.stack([sign * d.qvel[rmap.vadr] for d in datas])
        if policy is not None:
            roll = jnp.asarray(np.stack([_roll(d) for d in datas]), jnp.float32)
            state, (f, e) = step(flat, state, jnp.asarray(q, jnp.float32), jnp.asarray(qd, jnp.float32), v_cmd,
                                 roll)
            target = sign * DELTA_EP * (np.asarray(f) - np.asarray(e))
        for b, d in enumerate(datas):
            ctrl = hold.copy()
            if policy is not None:
                theta = np.zeros(m.nu)
                theta[rmap.act] = target[b]
                ctrl[rmap.act] = rmap.ctrl_for_targets(theta)[rmap.act]
            d.ctrl[:] = ctrl
            for _ in range(n_sub):
                mujoco.mj_step(m, d)
            x, height, up = _trunk(d)
            alive[b] &= bool(np.all(np.isfinite(d.qpos))) and height > 0.03 and up > 0.5
            rec["q"][b, t] = q[b]
            rec["paw"][b, t] = np.where(rmap.paw_contact(d), 0.0, 1.0)
            rec["x"][b, t], rec["up"][b, t], rec["alive"][b, t] = x, up, alive[b]
    rows = []
    for b, (i, v) in enumerate(jobs):
        st = gait_stats(rec["q"][b], rec["paw"][b] * 2 * CONTACT_M, rec["x"][b], rec["alive"][b], dt_ctrl)
        rows.append({"params_row": i, "v_cmd": float(v), "distance_m": float(rec["x"][b, -1] - x0[b]),
                     "upright_frac": float(np.mean(rec["alive"][b])), "final_up": float(rec["up"][b, -1]),
                     **st})
    return rows
