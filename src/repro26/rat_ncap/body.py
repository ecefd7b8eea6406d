"""The "Rat v2" analogue body: a rat-proportioned quadruped MJX can step in vmapped populations.

Why not the full rodent: dm_control's ``rodent.xml`` (67 DoF, 38 actuators; Merel et al. 2020,
"Deep neuroethology of a virtual rodent", ICLR) loads in CPU MuJoCo, but MJX cannot step it
(ellipsoid-box collisions are not implemented in MJX) and compiling ``mjx.step`` for it takes
minutes. Following the abstract ("an efficient and flexible tool for simulating rat behaviour")
we derive a reduced body from it:

* trunk: one capsule, half-length 0.045 m between the girdles, radius 0.024 m (rodent.xml torso
  ellipsoid half-width 0.024 m), mass 0.25 kg; a head sphere (r = 0.018 m, 0.03 kg). Adult
  rats weigh 0.25-0.40 kg (e.g. Clarke & Parker 1986, Physiol. Behav. 38:345); total mass of
  this body is 0.35 kg (:func:`total_mass`).
* hindlimb, sagittal plane: thigh 0.030 m (rodent.xml hip->knee offset (0.0154, -0.0257) m),
  shank 0.039 m (knee->ankle offset (-0.0323, -0.0221) m); segment masses from rodent.xml's
  capsule sizes and densities (thigh r = 8.7 mm at 1562 kg/m^3 -> 12 g, shank r = 6.6 mm at
  1303 kg/m^3 -> 7 g); hind paw a contact sphere r = 4 mm (4 g, rodent foot density 2041).
* forelimb: humerus 0.024 m, forearm 0.027 m (rat forelimb proportions, rodent.xml scapula/
  humerus/radius chain), 6 g and 4 g, fore paw sphere r = 3.5 mm (2 g).
* joints: hip, knee, shoulder, elbow hinges about the lateral axis with rodent.xml's ranges
  (hip_extend [-1.57, 1.05], knee [-1.22, 1.54], shoulder [-1.31, 0.87], elbow [-1.31, 0.70]
  rad); signs are chosen so that a positive angle is *flexion* at every joint. At each girdle
  attachment a second hinge about the trunk's longitudinal (x) axis gives hip/shoulder
  ab/adduction, positive = abduction on both sides, with rodent.xml-like ranges (its
  ``hip_abduct`` class [-30, 90] deg -> [-0.52, 1.57] rad; the fore limb's abduction sits in
  the scapula, ``scapula_abduct`` [-15, 20] deg -> [-0.26, 0.35] rad). Each joint has a
  passive spring to the nominal posture (0.08 N m/rad) and damping (5e-3 N m s/rad).
* splay: the proximal segments point outward so that the paws sit 1.5x wider than the
  girdle attachments in the nominal pose (fore track 6.6 cm, hind 7.8 cm; rats stand with
  splayed limbs), which gives the support polygon a roll-resisting width. Under the body's
  weight the ab/adduction springs yield (settled abduction 0.11 rad fore, 0.06 rad hind), so
  the settled standing posture (:func:`settled_qpos`) has tracks of 8.2 / 8.3 cm and the
  trunk 5.6 cm above the floor.
* actuators: a flexor and an extensor motor per flexion joint and an abductor and an adductor
  motor per ab/adduction joint (24 in all), each pulling only (ctrl in [0, 1]); gear 0.08 N m
  at every joint (:data:`GEAR`: a few times the static torque of standing; rodent.xml's
  ``gainprm`` of 0.3 N m let one hip hold the whole body).
* contacts: paw spheres against the floor only (``contype``/``conaffinity`` bits); nothing
  else collides. The free trunk has 6 DoF, so the body has nq = 19, nv = 18.

Joint order of every joint vector (:func:`joint_state`, the controllers' ``f``/``e``): limbs
LF, RF, LH, RH, per limb (proximal flexion, distal flexion, ab/adduction); the actuators
follow it (flexor/abductor, extensor/adductor per joint).

``make_env`` puts the model on the device with MJX and returns pure ``reset``/``step``
functions over :class:`mujoco.mjx.Data`; one env step is one physics step of ``dt`` seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from functools import cache

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Float

with contextlib.redirect_stdout(io.StringIO()):  # mjx prints that its optional Warp GPU backend is absent
    from mujoco import mjx

#: Joint order everywhere: limbs LF, RF, LH, RH (left/right fore, left/right hind), three
#: joints each (proximal flexion: shoulder/hip, distal flexion: elbow/knee, ab/adduction).
LIMBS: tuple[str, ...] = ("LF", "RF", "LH", "RH")
JOINTS_PER_LIMB = 3
N_JOINTS = len(LIMBS) * JOINTS_PER_LIMB
N_ACTUATORS = 2 * N_JOINTS
STAND_HEIGHT = 0.062  # trunk height (m) of the nominal pose the body is let go from
SPLAY = 0.5  # outward offset of the proximal segment, fraction of the girdle half-width
#: actuator gear (N m) of the proximal, distal and ab/adduction joints: about 5-8x the static
#: joint torque of the standing posture (0.010 N m hip/shoulder, 0.017 N m knee/elbow, about
#: 0.01 N m ab/adduction: a quarter of the body weight at the paw's 1.1-1.3 cm lateral offset;
#: all carried by the passive springs of the settled body), room for the 2-4x body-weight
#: peaks of ground reaction force in trot and gallop, and far below rodent.xml's 0.3 N m, with
#: which one hip could lift the whole 3.4 N body and a bound (no roll moment) beat every
#: alternating gait
GEAR = (0.08, 0.08, 0.08)


def _limb(name: str, x: float, y: float, fore: bool) -> str:
    """One limb: proximal and distal segment, paw sphere, flexion-positive hinge axes and an
    abduction-positive hinge about x at the girdle. The proximal segment also points outward
    by ``SPLAY`` x |y|, so the paws sit 1.5x wider than the girdle attachments (splayed, as in
    rat stance) and the support polygon resists roll."""
    if fore:  # shoulder/elbow; humerus points down-back, forearm down-forward
        seg1, seg2 = (-0.010, -0.022), (0.006, -0.026)
        m1, m2, r1, r2, paw_r, paw_m = 0.006, 0.004, 0.005, 0.004, 0.0035, 0.002
        j1, j2, rng1, rng2 = "shoulder", "elbow", "-0.87 1.31", "-0.70 1.31"
        ax1, ax2 = "0 -1 0", "0 1 0"
        j3, rng3 = "shoulder_abduct", "-0.26 0.35"
    else:  # hip/knee; thigh points down-forward, shank down-back
        seg1, seg2 = (0.015, -0.026), (-0.032, -0.022)
        m1, m2, r1, r2, paw_r, paw_m = 0.012, 0.007, 0.0087, 0.0066, 0.004, 0.004
        j1, j2, rng1, rng2 = "hip", "knee", "-1.05 1.57", "-1.22 1.54"
        ax1, ax2 = "0 -1 0", "0 1 0"
        j3, rng3 = "hip_abduct", "-0.52 1.57"
    ax3 = "1 0 0" if y > 0 else "-1 0 0"  # abduction lifts the paw away from the midline
    g1, g2, g3 = GEAR
    out = round(SPLAY * y, 4)
    return f"""
      <body name="{name}_upper" pos="{x} {y} -0.010">
        <joint name="{name}_{j3}" axis="{ax3}" range="{rng3}" class="limb"/>
        <joint name="{name}_{j1}" axis="{ax1}" range="{rng1}" class="limb"/>
        <geom type="capsule" fromto="0 0 0 {seg1[0]} {out} {seg1[1]}" size="{r1}" mass="{m1}"/>
        <body name="{name}_lower" pos="{seg1[0]} {out} {seg1[1]}">
          <joint name="{name}_{j2}" axis="{ax2}" range="{rng2}" class="limb"/>
          <geom type="capsule" fromto="0 0 0 {seg2[0]} 0 {seg2[1]}" size="{r2}" mass="{m2}"/>
          <geom name="{name}_paw" class="paw" pos="{seg2[0]} 0 {seg2[1]}" size="{paw_r}" mass="{paw_m}"/>
        </body>
      </body>""", [
        f'<motor name="{name}_{j1}_flex" joint="{name}_{j1}" gear="{g1}"/>',
        f'<motor name="{name}_{j1}_ext" joint="{name}_{j1}" gear="{-g1}"/>',
        f'<motor name="{name}_{j2}_flex" joint="{name}_{j2}" gear="{g2}"/>',
        f'<motor name="{name}_{j2}_ext" joint="{name}_{j2}" gear="{-g2}"/>',
        f'<motor name="{name}_{j3}_ab" joint="{name}_{j3}" gear="{g3}"/>',
        f'<motor name="{name}_{j3}_ad" joint="{name}_{j3}" gear="{-g3}"/>',
    ]


def rat_mjcf(timestep: float = 0.004) -> str:
    """MJCF text of the body (see the module docstring for every number and its source)."""
    limbs, motors = [], []
    for name, x, y, fore in (("LF", 0.045, 0.022, True), ("RF", 0.045, -0.022, True),
                             ("LH", -0.045, 0.026, False), ("RH", -0.045, -0.026, False)):
        body, acts = _limb(name, x, y, fore)
        limbs.append(body)
        motors.extend(acts)
    return f"""<mujoco model="rat_v2_analogue">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{timestep}" iterations="4" ls_iterations="6" integrator="implicitfast">
    <flag eulerdamp="disable"/>
  </option>
  <default>
    <geom contype="0" conaffinity="0" rgba="0.6 0.5 0.45 1"/>
    <motor ctrlrange="0 1"/>
    <default class="limb">
      <joint type="hinge" stiffness="0.08" damping="0.005" armature="2e-4" limited="true"/>
    </default>
    <default class="paw">
      <geom type="sphere" contype="1" conaffinity="0" condim="3" friction="1.0 0.005 0.0001"
            solref="0.01 1" rgba="0.8 0.4 0.4 1"/>
    </default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05" contype="1" conaffinity="1" condim="3"
          friction="1.0 0.005 0.0001"/>
    <body name="trunk" pos="0 0 {STAND_HEIGHT}">
      <freejoint name="root"/>
      <geom name="trunk" type="capsule" fromto="-0.045 0 0 0.045 0 0" size="0.024" mass="0.25"/>
      <geom name="head" type="sphere" pos="0.085 0 0.01" size="0.018" mass="0.03"/>
      {''.join(limbs)}
    </body>
  </worldbody>
  <actuator>
    {chr(10).join('    ' + m for m in motors)}
  </actuator>
</mujoco>"""


@cache
def mj_model(timestep: float = 0.004) -> mujoco.MjModel:
    """The compiled CPU MuJoCo model (cached per timestep)."""
    return mujoco.MjModel.from_xml_string(rat_mjcf(timestep))


def total_mass(timestep: float = 0.004) -> float:
    return float(np.sum(mj_model(timestep).body_mass))


@cache
def joint_addresses() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint ids, ``qpos`` and ``qvel`` addresses of the joints in :data:`LIMBS` order, per limb
    (proximal, distal, ab/adduction); MuJoCo's own order is the tree's (ab/adduction first)."""
    m = mj_model()
    ids = np.array([j for limb in LIMBS for j in
                    (m.actuator_trnid[m.actuator(f"{limb}_{a}").id, 0] for a in _ACTUATOR_STEMS[limb])])
    return ids, m.jnt_qposadr[ids].copy(), m.jnt_dofadr[ids].copy()


_ACTUATOR_STEMS = {limb: (("shoulder_flex", "elbow_flex", "shoulder_abduct_ab") if limb[1] == "F"
                          else ("hip_flex", "knee_flex", "hip_abduct_ab")) for limb in LIMBS}


@dataclasses.dataclass(frozen=True)
class Env:
    """Pure functions of the MJX rat body; ``dt`` seconds per step."""

    model: mjx.Model
    dt: float
    init_qpos: np.ndarray
    gear: np.ndarray  # (N_JOINTS,) flexor/abductor gear (N m) per joint
    joint_range: np.ndarray  # (N_JOINTS, 2)

    @property
    def q0(self) -> np.ndarray:
        """Joint angles of the standing posture, in joint order."""
        return self.init_qpos[joint_addresses()[1]]

    def reset(self, key: jax.Array, noise: float = 0.0) -> mjx.Data:
        """Standing posture; joint angles perturbed by ``noise`` (rad, uniform).

        Only ``qpos`` is set: ``mjx.step`` recomputes every derived quantity (kinematics,
        contacts, forces) from ``qpos``/``qvel`` before it integrates, so running
        ``mjx.forward`` here would add a second copy of the whole pipeline to every compiled
        rollout without changing the trajectory (beyond float rounding)."""
        data = mjx.make_data(self.model)
        dq = noise * jax.random.uniform(key, (N_JOINTS,), minval=-1.0, maxval=1.0)
        return data.replace(qpos=jnp.asarray(self.init_qpos).at[joint_addresses()[1]].add(dq))

    def step(self, data: mjx.Data, ctrl: Float[Array, "24"]) -> mjx.Data:
        return mjx.step(self.model, data.replace(ctrl=ctrl))


def joint_state(data) -> tuple[Float[Array, "12"], Float[Array, "12"]]:
    """Joint angles (rad, flexion/abduction positive) and velocities (rad/s) in joint order
    (LF, RF, LH, RH; proximal, distal, ab/adduction); works on ``mjx.Data`` and ``MjData``."""
    _, qadr, vadr = joint_addresses()
    return data.qpos[qadr], data.qvel[vadr]


def trunk_roll(data) -> tuple[jax.Array, jax.Array]:
    """Trunk roll angle (rad; positive: left side up, rotation about the body x-axis) and roll
    rate (rad/s, body frame): what the vestibular organs sense of a sideways fall."""
    w, x, y, z = (data.qpos[i] for i in range(3, 7))
    roll = jnp.arctan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    return roll, data.qvel[3]


def trunk_state(data: mjx.Data) -> dict[str, jax.Array]:
    """Trunk position, forward velocity, height and upright cosine (z of the body z-axis)."""
    quat = data.qpos[3:7]
    w, x, y, z = quat[0], quat[1], quat[2], quat[3]
    up = 1.0 - 2.0 * (x * x + y * y)  # R[2, 2]: cos of the angle between body z and world z
    heading = 2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)  # body x-axis in world xy
    return {"x": data.qpos[0], "y": data.qpos[1], "height": data.qpos[2], "vx": data.qvel[0],
            "vy": data.qvel[1], "up": up, "heading_x": heading[1], "heading_y": heading[0]}


def paw_heights(data: mjx.Data, paw_ids: jax.Array) -> Float[Array, "4"]:
    """Height (m) of each paw centre above the floor, LF, RF, LH, RH."""
    return data.geom_xpos[paw_ids, 2]


def paw_geom_ids(timestep: float = 0.004) -> np.ndarray:
    m = mj_model(timestep)
    return np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{l}_paw") for l in LIMBS])


def paw_radii(timestep: float = 0.004) -> np.ndarray:
    return mj_model(timestep).geom_size[paw_geom_ids(timestep), 0]


def settled_qpos(timestep: float = 0.004, seconds: float = 4.0) -> np.ndarray:
    """Standing posture: the body let go from the nominal pose under gravity (zero muscle
    activity, passive joint springs) until it settles; x, y reset to 0 (CPU MuJoCo)."""
    m = mj_model(timestep)
    d = mujoco.MjData(m)
    for _ in range(int(round(seconds / timestep))):
        mujoco.mj_step(m, d)
    qpos = d.qpos.copy()
    qpos[:2] = 0.0
    return qpos


@cache
def make_env(timestep: float = 0.004) -> Env:
    """Put the body on the JAX device (MJX); cached so every caller shares one model."""
    m = mj_model(timestep)
    gear = m.actuator_gear[0::2, 0].copy()
    ids = joint_addresses()[0]
    return Env(mjx.put_model(m), timestep, settled_qpos(timestep), gear, m.jnt_range[ids].copy())

