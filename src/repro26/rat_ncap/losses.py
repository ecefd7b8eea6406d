"""Locomotion reward and the episode rollout (the ES fitness).

Per physics step (abstract: "learns to locomote at different speeds without imitation
learning"; issue: "track commanded forward speed, stay upright, energy penalty"):

    r_t = w_track exp(-((vbar_t - v_cmd) / sigma_v)^2) + w_up * up_t - w_energy * mean(u_t^2),

where ``vbar`` is the trunk's forward velocity low-pass filtered with a 0.25 s time constant
(the instantaneous velocity oscillates within a stride), ``up`` the cosine between trunk and
world vertical and ``u`` the 16 flexor/extensor motor commands. The episode ends (no further
reward) when the trunk falls: height < 3 cm or up < 0.5. The fitness is the mean of ``r_t``
over the episode's steps, averaged over the commanded speeds.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from repro26.rat_ncap import body
from repro26.rat_ncap.model import MLPPolicy, Policy, interface_ctrl


@dataclasses.dataclass(frozen=True)
class RewardSpec:
    w_track: float = 1.0
    w_up: float = 0.5
    w_energy: float = 0.1
    sigma_v: float = 0.1
    reset_noise: float = 0.05


def _obs(data, q, qd, q0, v_cmd):
    ts = body.trunk_state(data)
    return jnp.concatenate([q - q0, 0.1 * qd, jnp.stack([ts["up"], ts["vx"], 10.0 * ts["height"]]),
                            0.1 * data.qvel[3:6], jnp.atleast_1d(v_cmd)])


def episode(policy: Policy, env: body.Env, flat: Float[Array, " P"], key: jax.Array,
            v_cmd: Float[Array, ""], n_steps: int, spec: RewardSpec, record_every: int = 0):
    """Run one episode; returns ``(fitness, trace)``.

    ``trace`` (only when ``record_every`` > 0) holds every ``record_every``-th step: joint
    angles ``q`` (8), paw heights above contact ``paw`` (4), trunk ``vx``, ``x``, ``up`` and
    the ``alive`` flag.
    """
    k_env, k_pol = jax.random.split(key)
    data = env.reset(k_env, spec.reset_noise)
    q0 = jnp.asarray(env.init_qpos[7:])
    paw_ids = jnp.asarray(body.paw_geom_ids(env.dt))
    paw_r = jnp.asarray(body.paw_radii(env.dt))
    carry0 = (data, policy.init_state(k_pol), jnp.zeros(()), jnp.ones((), bool), jnp.zeros(()))

    def step(carry, t):
        data, pstate, vbar, alive, total = carry
        q, qd = body.joint_state(data)
        if isinstance(policy, MLPPolicy):
            pstate, (f, e) = policy(flat, pstate, _obs(data, q, qd, q0, v_cmd))
        else:
            pstate, (f, e) = policy(flat, pstate, q, qd, q0, v_cmd, env.dt)
        ctrl = interface_ctrl(policy.interface, f, e, q, qd, q0)
        data = env.step(data, ctrl)
        ts = body.trunk_state(data)
        vbar = vbar + env.dt / 0.25 * (ts["vx"] - vbar)
        finite = jnp.all(jnp.isfinite(data.qpos)) & jnp.all(jnp.isfinite(data.qvel))
        alive = alive & finite & (ts["height"] > 0.03) & (ts["up"] > 0.5)
        r = (spec.w_track * jnp.exp(-(((vbar - v_cmd) / spec.sigma_v) ** 2)) + spec.w_up * ts["up"]
             - spec.w_energy * jnp.mean(ctrl**2))
        total = total + jnp.where(alive, jnp.nan_to_num(r), 0.0)
        rec = {"q": q, "paw": body.paw_heights(data, paw_ids) - paw_r, "vx": ts["vx"], "x": ts["x"],
               "up": ts["up"], "alive": alive}
        return (data, pstate, vbar, alive, total), rec

    if record_every:
        def outer(carry, t):
            carry, recs = jax.lax.scan(step, carry, t * record_every + jnp.arange(record_every))
            return carry, jax.tree.map(lambda a: a[-1], recs)

        carry, trace = jax.lax.scan(outer, carry0, jnp.arange(n_steps // record_every))
    else:
        carry, trace = jax.lax.scan(step, carry0, jnp.arange(n_steps))
        trace = None
    return carry[4] / n_steps, trace


def population_fitness(policy: Policy, env: body.Env, params: Float[Array, "N P"], key: jax.Array,
                       speeds: Float[Array, " S"], n_steps: int, spec: RewardSpec) -> Float[Array, " N"]:
    """Fitness of every candidate: mean episode reward over the commanded ``speeds``.

    All candidates share the episode keys of a generation (common random numbers)."""
    keys = jax.random.split(key, speeds.shape[0])

    def one(flat):
        fit, _ = jax.vmap(lambda k, v: episode(policy, env, flat, k, v, n_steps, spec))(keys, speeds)
        return jnp.mean(fit)

    return jax.vmap(one)(params)
