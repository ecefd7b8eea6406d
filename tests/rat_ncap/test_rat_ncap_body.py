"""The Rat v2 analogue MJCF: loads, stands still under gravity, MJX agrees with CPU MuJoCo."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from repro26.rat_ncap import body


def test_mjcf_loads_with_rat_proportions():
    m = body.mj_model()
    assert (m.nq, m.nv, m.nu) == (19, 18, 24)
    assert 0.25 <= body.total_mass() <= 0.45  # adult rat body mass range (kg)
    # only the four paws collide (with the floor)
    colliding = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, i) for i in range(m.ngeom) if m.geom_contype[i]]
    assert sorted(colliding) == sorted(["floor", "LF_paw", "RF_paw", "LH_paw", "RH_paw"])


def test_stands_still_under_gravity_for_one_second():
    env = body.make_env()
    m = body.mj_model()
    d = mujoco.MjData(m)
    d.qpos[:] = env.init_qpos
    for _ in range(int(1.0 / m.opt.timestep)):
        mujoco.mj_step(m, d)  # zero muscle activity
    assert np.linalg.norm(d.qpos[:3] - env.init_qpos[:3]) < 2e-3  # trunk moved < 2 mm
    assert abs(d.qpos[2] - env.init_qpos[2]) < 1e-3  # and did not sink
    # only the slow creep of MuJoCo's soft paw contacts remains (~0.04 rad/s at the joints)
    assert np.abs(d.qvel).max() < 0.05
    assert d.qpos[2] > 0.04 and d.ncon == 4  # standing on four paws

    @jax.jit
    def mjx_second(key):  # the same second in MJX
        data = env.reset(key, 0.0)
        return jax.lax.scan(lambda s, _: (env.step(s, jnp.zeros(body.N_ACTUATORS)), None), data, None,
                            length=int(1.0 / env.dt))[0].qpos

    np.testing.assert_allclose(np.asarray(mjx_second(jax.random.PRNGKey(0))), d.qpos, atol=2e-3)
