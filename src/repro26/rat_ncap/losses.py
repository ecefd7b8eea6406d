"""Locomotion reward and the episode rollout (the ES fitness).

Per physics step (abstract: "learns to locomote at different speeds without imitation
learning"), while the body is upright:

    r_t = w_track max(0, 1 - |vbar_t - v_cmd| / (tol v_cmd)) - w_energy P_t / (m g v_cmd),

where ``vbar`` is the trunk's forward velocity low-pass filtered with a 0.25 s time constant
(the instantaneous velocity oscillates within a stride), the tracking term falls linearly
from 1 at the commanded speed to 0 at ``tol`` x the commanded speed away from it (``tol`` =
1: standing still earns 0, walking at half the commanded speed earns half), and the energy
term is the mechanical cost of transport: actuator power ``P_t = sum_j |tau_j qdot_j|`` over
body weight ``m g`` times the commanded speed. A fall (trunk height < 3 cm or its up-cosine
< 0.5) ends the episode: no reward after it. The fitness is the *sum* of ``r_t`` over the
upright steps divided by the episode's full length ``T`` (averaged over the commanded speeds).

Why this shape (issue 42): the tracking term is bounded by ``w_track`` per step, so a lunge
that falls at time ``t_f`` earns at most ``w_track t_f / T``, while walking the whole episode
within the success band (``|v - v_cmd| <= v_cmd / 2``) earns at least ``w_track / 2`` less its
energy: with ``t_f <= T / 4`` walking is worth at least twice any lunge. The earlier Gaussian
tracking term (width 0.5 v_cmd) paid a slow walk (a third of the commanded speed) about as
much as a half-second lunge; the linear term also keeps the search gradient at standstill
(reward proportional to forward speed), where the Gaussian's was nearly flat. There is no
survival or upright bonus (standing still earns 0, the do-nothing row).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from repro26.rat_ncap import body
from repro26.rat_ncap.model import MLPPolicy, Policy, interface_ctrl, ravel_policy

GRAVITY = 9.81
LOAD_HEIGHT_M = 3e-3  # paw-load proxy: clip(1 - h / LOAD_HEIGHT_M, 0, 1), h above contact


@dataclasses.dataclass(frozen=True)
class RewardSpec:
    w_track: float = 1.0
    w_energy: float = 0.02
    track_tol: float = 1.0
    reset_noise: float = 0.05


FILTER_S = 0.25  # time constant (s) of the low-pass filtered forward velocity ``vbar``


def reward_update(vbar, alive, total, vx, upright, cot, v_cmd, dt: float, spec: RewardSpec):
    """One step of the reward of the module docstring: filter ``vx`` into ``vbar``, end the
    episode at the first step that is not ``upright`` (``alive`` stays False after it), and
    add the step's reward to ``total`` while alive. Returns ``(vbar, alive, total)``."""
    vbar = vbar + dt / FILTER_S * (vx - vbar)
    alive = alive & upright
    track = jnp.maximum(0.0, 1.0 - jnp.abs(vbar - v_cmd) / (spec.track_tol * v_cmd))
    r = spec.w_track * track - spec.w_energy * cot
    return vbar, alive, total + jnp.where(alive, jnp.nan_to_num(r), 0.0)


def _obs(data, q, qd, q0, v_cmd):
    ts = body.trunk_state(data)
    roll = body.trunk_roll(data)[0]
    return jnp.concatenate([q - q0, 0.1 * qd, jnp.stack([ts["up"], ts["vx"], 10.0 * ts["height"], roll]),
                            0.1 * data.qvel[3:6], jnp.atleast_1d(v_cmd)])


def rollout(policy: Policy, env: body.Env, params: Float[Array, "B P"], keys: jax.Array,
            v_cmd: Float[Array, " B"], n_steps: int, spec: RewardSpec,
            masks: Float[Array, "B 21"] | None = None, record_every: int = 0):
    """Run a batch of ``B`` episodes side by side; returns ``(fitness (B,), trace)``.

    Episode ``b`` runs ``policy`` with its weights replaced by the flat vector ``params[b]``
    (:func:`~repro26.rat_ncap.model.ravel_policy`; unravelled inside the batched step), the key
    ``keys[b]``, the commanded speed ``v_cmd[b]`` and (NCAP only) the population gains
    ``masks[b]`` (ablations).

    Compile-time structure: one ``lax.scan`` over time whose body is the *batched* env step
    (``vmap`` inside the scan). Putting the scan inside nested ``vmap``s instead (one per
    candidate, speed, seed, condition) makes JAX re-trace the MJX step once per batching level
    and fixed-point pass of the scan's batching rule, which dominated trace and compile time.

    ``trace`` (only when ``record_every`` > 0) holds every ``record_every``-th step, leading
    axes (B, T): joint angles ``q`` (12), paw heights above contact ``paw`` (4), trunk ``vx``,
    ``x``, ``up``, the ``alive`` flag, and the cost of transport ``cot`` of that step.
    """
    q0 = jnp.asarray(env.q0)
    paw_ids = jnp.asarray(body.paw_geom_ids(env.dt))
    paw_r = jnp.asarray(body.paw_radii(env.dt))
    masked = masks is not None and not isinstance(policy, MLPPolicy)
    _, unravel = ravel_policy(policy)
    weight = body.total_mass(env.dt) * GRAVITY

    def init(key):
        k_env, k_pol = jax.random.split(key)
        return (env.reset(k_env, spec.reset_noise), policy.init_state(k_pol), jnp.zeros(()),
                jnp.ones((), bool), jnp.zeros(()))

    def one_step(carry, flat, v, mask):
        data, pstate, vbar, alive, total = carry
        q, qd = body.joint_state(data)
        paw = body.paw_heights(data, paw_ids) - paw_r
        pol = unravel(flat)
        if isinstance(pol, MLPPolicy):
            pstate, (f, e) = pol(pstate, _obs(data, q, qd, q0, v))
        else:
            load = jnp.clip(1.0 - paw / LOAD_HEIGHT_M, 0.0, 1.0)
            pstate, (f, e) = pol(pstate, q, qd, q0, v, env.dt, mask, load, jnp.stack(body.trunk_roll(data)))
        ctrl = interface_ctrl(policy.interface, f, e, q, qd, q0)
        data = env.step(data, ctrl)
        ts = body.trunk_state(data)
        finite = jnp.all(jnp.isfinite(data.qpos)) & jnp.all(jnp.isfinite(data.qvel))
        upright = finite & (ts["height"] > 0.03) & (ts["up"] > 0.5)
        power = jnp.sum(jnp.abs(data.qfrc_actuator[6:] * data.qvel[6:]))
        cot = power / (weight * v)
        vbar, alive, total = reward_update(vbar, alive, total, ts["vx"], upright, cot, v, env.dt, spec)
        rec = {"q": q, "paw": paw, "vx": ts["vx"], "x": ts["x"], "up": ts["up"], "alive": alive,
               "cot": cot}
        return (data, pstate, vbar, alive, total), rec

    batched = jax.vmap(one_step, (0, 0, 0, 0 if masked else None))
    mask_arg = masks if masked else None

    def step(carry, _):
        return batched(carry, params, v_cmd, mask_arg)

    carry0 = jax.vmap(init)(keys)
    if record_every:
        def outer(carry, _):
            carry, recs = jax.lax.scan(step, carry, None, length=record_every)
            return carry, jax.tree.map(lambda a: a[-1], recs)

        carry, trace = jax.lax.scan(outer, carry0, None, length=n_steps // record_every)
        trace = jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), trace)
    else:
        carry, _ = jax.lax.scan(lambda c, t: (step(c, t)[0], None), carry0, None, length=n_steps)
        trace = None
    return carry[4] / n_steps, trace


def population_fitness(policy: Policy, env: body.Env, params: Float[Array, "N P"], key: jax.Array,
                       speeds: Float[Array, " S"], n_steps: int, spec: RewardSpec) -> Float[Array, " N"]:
    """Fitness of every candidate: mean episode reward over the commanded ``speeds``.

    All candidates share the episode keys of a generation (common random numbers). The
    ``N x S`` episodes run as one flat batch of :func:`rollout`."""
    n, s = params.shape[0], speeds.shape[0]
    keys = jnp.tile(jax.random.split(key, s), (n, 1))
    fit, _ = rollout(policy, env, jnp.repeat(params, s, axis=0), keys, jnp.tile(speeds, n), n_steps, spec)
    return jnp.mean(fit.reshape(n, s), axis=1)
