"""PPO with generalised advantage estimation (Schulman et al. 2016, 2017).

GAE over one episode of length T (terminal after step T-1, so V(s_T) = 0):
    delta_t = r_t + gamma V(s_{t+1}) - V(s_t),   A_t = sum_l (gamma lambda)^l delta_{t+l},
    target_t = A_t + V(s_t).
Clipped surrogate with probability ratio rho_t = pi(a_t|s_t) / pi_old(a_t|s_t) and advantages
normalised over the batch:
    L = -E[min(rho A, clip(rho, 1-eps, 1+eps) A)] + c_v E[(V - target)^2] - c_H E[H(pi)].
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gae(rewards, values, gamma: float, lam: float):
    """``(advantages, targets)`` for ``rewards[T, ...]``, ``values[T, ...]`` of one whole episode."""

    def body(next_adv_value, rv):
        next_adv, next_value = next_adv_value
        r, v = rv
        delta = r + gamma * next_value - v
        adv = delta + gamma * lam * next_adv
        return (adv, v), adv

    zero = jnp.zeros_like(values[0])
    _, adv = jax.lax.scan(body, (zero, zero), (rewards, values), reverse=True)
    return adv, adv + values


def ppo_loss(logits, values, actions, old_logp, advantages, targets, clip_eps: float,
             vf_coef: float, ent_coef: float):
    """``(loss, terms)`` of the clipped PPO objective (advantages normalised here)."""
    logp_all = jax.nn.log_softmax(logits)
    logp = jnp.take_along_axis(logp_all, actions[..., None], -1)[..., 0]
    adv = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = jnp.exp(logp - old_logp)
    surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    policy = -surrogate.mean()
    value = jnp.mean((values - targets) ** 2)
    entropy = -jnp.mean(jnp.sum(jnp.exp(logp_all) * logp_all, -1))
    loss = policy + vf_coef * value - ent_coef * entropy
    return loss, {"policy": policy, "value": value, "entropy": entropy}
