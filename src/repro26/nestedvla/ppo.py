"""Per-task skills by reinforcement learning: PPO (Schulman et al. 2017) on a LoRA adapter of
the frozen base policy, one task per agent (vmapped over tasks and seeds by the caller).

Policy: pi(a | o) = N(mu(o), diag sigma^2) on the suite's action dimensions (``mask``), with
mu(o) = base policy with the adapter's deltas and a learned log sigma; critic V(o) a small MLP
on the observation. Reward: the change of a potential plus a success bonus,

    r_t = Phi(s_{t+1}) - Phi(s_t) + bonus * 1[success(s_{t+1})],

Phi = -(distance still to cover) (:func:`repro26.nestedvla.suites.potential`). One iteration:
``n_envs`` episodes of ``horizon`` steps under the current policy, generalised advantage
estimates (Schulman et al. 2016)

    delta_t = r_t + gamma V(o_{t+1}) - V(o_t),   A_t = delta_t + gamma lambda A_{t+1}

(the episode is cut at the horizon, so V(o_T) bootstraps the last step), then ``epochs``
full-batch Adam steps on the clipped surrogate

    L = -E[min(rho A, clip(rho, 1 - eps, 1 + eps) A)] + c_v E[(V(o) - (A + V_old))^2],

rho = pi(a|o) / pi_old(a|o), advantages normalised per batch.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from repro26.core.train import TrainState
from repro26.nestedvla import suites
from repro26.nestedvla.policy import LoRA, act

VALUE_COEF = 0.5
SUCCESS_BONUS = 0.1


class Agent(eqx.Module):
    """Trainable part of a PPO skill: the adapter, the log standard deviation, the critic."""

    lora: LoRA
    log_std: jax.Array
    critic: eqx.nn.MLP


def init_agent(lora: LoRA, init_std: float, width: int, key) -> Agent:
    return Agent(lora, jnp.full(suites.ACT_DIM, jnp.log(init_std)),
                 eqx.nn.MLP(suites.OBS_DIM, "scalar", width, 2, activation=jnp.tanh, key=key))


def log_prob(mean, log_std, action, mask) -> jax.Array:
    """log N(action; mean, diag exp(2 log_std)) over the dimensions in ``mask``."""
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(mask * (-0.5 * z ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi)))


def collect(suite: str, base, agent: Agent, task, key, n_envs: int, horizon: int):
    """``n_envs`` episodes under the stochastic policy. ``task = (kind, goal, obj0, emb, mask)``.
    Returns per-episode arrays (n_envs, T, ...): obs, action, log-prob, reward, value, and the
    value of the last observation (n_envs,), and success at the end (n_envs,)."""
    kind, goal, obj0, emb, mask = task
    deltas = agent.lora.deltas()

    def episode(k):
        k_reset, k_noise = jax.random.split(k)
        s0 = suites.reset(suite, obj0, k_reset)

        def body(s, k):
            obs = suites.observe(suite, s)
            mean = act(base, deltas, obs, emb)
            a = mean + mask * jnp.exp(agent.log_std) * jax.random.normal(k, (suites.ACT_DIM,))
            s_next = suites.step(suite, s, a, kind)
            ok = suites.success(suite, s_next, kind, goal)
            r = (suites.potential(suite, s_next, kind, goal) - suites.potential(suite, s, kind, goal)
                 + SUCCESS_BONUS * ok)
            return s_next, (obs, a, log_prob(mean, agent.log_std, a, mask), r, agent.critic(obs))

        s, traj = jax.lax.scan(body, s0, jax.random.split(k_noise, horizon))
        last_value = agent.critic(suites.observe(suite, s))
        return (*traj, last_value, suites.success(suite, s, kind, goal))

    return jax.vmap(episode)(jax.random.split(key, n_envs))


def gae(rewards, values, last_value, gamma: float, lam: float):
    """Advantages and returns of one episode (T,), by the backward recursion above."""
    next_values = jnp.concatenate([values[1:], last_value[None]])
    deltas = rewards + gamma * next_values - values

    def back(adv, delta):
        adv = delta + gamma * lam * adv
        return adv, adv

    _, adv = jax.lax.scan(back, jnp.zeros(()), deltas, reverse=True)
    return adv, adv + values


def surrogate(agent: Agent, base, emb, mask, batch, clip: float):
    """Clipped PPO objective (to minimise) on a flat batch (obs, action, old log-prob, adv, ret)."""
    obs, action, old_logp, adv, ret = batch
    deltas = agent.lora.deltas()
    mean = jax.vmap(lambda o: act(base, deltas, o, emb))(obs)
    logp = jax.vmap(lambda m, a: log_prob(m, agent.log_std, a, mask))(mean, action)
    ratio = jnp.exp(logp - old_logp)
    policy = -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip, 1 + clip) * adv))
    value = jnp.mean((jax.vmap(agent.critic)(obs) - ret) ** 2)
    return policy + VALUE_COEF * value, {"policy": policy, "value": value}


def ppo_step(suite: str, cfg, optimizer: optax.GradientTransformation):
    """One PPO iteration ``step(state, (base, task), key) -> (state, metrics)`` for one task and
    seed; metrics include the success rate of the collected episodes."""
    def step(state: TrainState, data, key):
        base, task = data
        _, _, _, emb, mask = task
        obs, action, logp, reward, value, last_value, ok = collect(
            suite, base, state.model, task, key, cfg.ppo_envs, cfg.horizon)
        adv, ret = jax.vmap(lambda r, v, lv: gae(r, v, lv, cfg.ppo_gamma, cfg.ppo_lambda))(
            reward, value, last_value)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        flat = tuple(x.reshape(-1, *x.shape[2:]) for x in (obs, action, logp, adv, ret))

        def epoch(carry, _):
            model, opt_state = carry
            (loss, terms), grads = eqx.filter_value_and_grad(surrogate, has_aux=True)(
                model, base, emb, mask, flat, cfg.ppo_clip)
            updates, opt_state = optimizer.update(grads, opt_state, model)
            return (eqx.apply_updates(model, updates), opt_state), (loss, terms)

        dynamic, static = eqx.partition(state.model, eqx.is_array)

        def epoch_arrays(carry, x):
            (model, opt_state), out = epoch((eqx.combine(carry[0], static), carry[1]), x)
            return (eqx.filter(model, eqx.is_array), opt_state), out

        (dynamic, opt_state), (loss, terms) = jax.lax.scan(
            epoch_arrays, (dynamic, state.opt_state), None, length=cfg.ppo_epochs)
        metrics = {"loss": loss[-1], "success": jnp.mean(ok), "return": jnp.mean(reward.sum(1)),
                   **{k: v[-1] for k, v in terms.items()}}
        return TrainState(eqx.combine(dynamic, static), opt_state), metrics

    return step
