"""Every trainable leaf of Rat NCAP (each interface) and of the MLP baseline moves the motor
output (core.learning): a leaf that got no gradient here would be invisible to the ES too."""

import jax
import jax.numpy as jnp
import pytest

from repro26.core.learning import assert_every_parameter_learns
from repro26.rat_ncap.model import N_JOINTS, N_OBS, MLPPolicy, RatNCAP

DT, STEPS = 0.004, 150


def batches(n=3):
    """Open-loop inputs: joint angles/velocities as phase-shifted sines, random paw loads and
    trunk roll, a commanded speed; one batch per key."""
    out = []
    for i in range(n):
        k1, k2, k3 = jax.random.split(jax.random.PRNGKey(i), 3)
        t = jnp.arange(STEPS)[:, None] * DT
        phase = jax.random.uniform(k1, (N_JOINTS,), maxval=2 * jnp.pi)
        q = 0.3 * jnp.sin(2 * jnp.pi * 3.0 * t + phase)
        qd = 0.3 * 2 * jnp.pi * 3.0 * jnp.cos(2 * jnp.pi * 3.0 * t + phase)
        load = jax.random.uniform(k2, (STEPS, 4))
        roll = 0.2 * jax.random.normal(k3, (STEPS, 2))
        out.append((q, qd, load, roll, jax.random.normal(k3, (2, N_JOINTS))))
    return out


def ncap_loss(policy, batch):
    q, qd, load, roll, w = batch
    q0 = jnp.zeros(N_JOINTS)

    def step(state, x):
        state, (f, e) = policy(state, x[0], x[1], q0, 0.2, DT, None, x[2], x[3])
        return state, w[0] @ f + w[1] @ e

    _, y = jax.lax.scan(step, policy.init_state(jax.random.PRNGKey(0)), (q, qd, load, roll))
    return jnp.mean(y**2)


def mlp_loss(policy, batch):
    q, qd, load, roll, w = batch
    obs = jnp.concatenate([q, 0.1 * qd, load, roll[:, :1], jnp.zeros((STEPS, N_OBS - 2 * N_JOINTS - 5))], axis=1)

    def step(state, o):
        state, (f, e) = policy(state, o)
        return state, w[0] @ f + w[1] @ e

    _, y = jax.lax.scan(step, policy.init_state(jax.random.PRNGKey(0)), obs)
    return jnp.mean(y**2)


@pytest.mark.parametrize("interface", ["torque", "muscle", "ep"])
def test_every_ncap_parameter_learns(interface):
    assert_every_parameter_learns(RatNCAP(interface, True, 0.025, 0.1), ncap_loss, batches())


def test_every_mlp_parameter_learns():
    assert_every_parameter_learns(MLPPolicy((8, 8), "torque", jax.random.PRNGKey(0)), mlp_loss, batches())
