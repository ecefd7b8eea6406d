"""NeMo's learning signal: forward-simulated step-level credit, need-aware aggregation, PPO.

Forward simulation. From the state ``x_t`` of turn ``t``, for every first strategy ``a`` roll the
simulator ``H`` turns (the first with ``a``, the rest with the continuation policy), with the same
random numbers for every ``a`` (common random numbers), and sum the reward vectors:

    G_H(x_t, a) = Σ_{h < H, t+h < T} r_{t+h}   ∈ R²   (emotional relief, cognitive growth).

The step-level credit of the strategy actually chosen is its advantage over the policy's mean,

    c_t = G_H(x_t, a_t) - Σ_a π(a | o_t) G_H(x_t, a),

which turns delayed, two-dimensional feedback (soothing now lets guidance land later) into a
per-turn vector. Aggregation: the scalar advantage is ``w_t · c_t`` with ``w_t = p(x_t)``, the
user's current need preference (NeMo), or a fixed vector (the single-objective and fixed-linear
baselines: the same PPO with different weights).

Plain returns (the same PPO without forward simulation): the need-weighted per-turn reward
``s_t = p(x_t) · r_t`` of the dialogue actually played, its return-to-go ``Σ_{t' >= t} s_{t'}``,
minus its mean over the batch's users at the same turn (the per-turn baseline):

    Â_t = Σ_{t' >= t} s_{t'} - mean_users Σ_{t' >= t} s_{t'}.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

# step_fn(x, action, key) -> (next x, reward vector); policy_fn(x, prev_action, turn, key) -> action
StepFn = Callable[[Array, Array, PRNGKeyArray], tuple[Array, Array]]
ContinuationFn = Callable[[Array, Array, Array, PRNGKeyArray], Array]


def forward_returns(step_fn: StepFn, policy_fn: ContinuationFn, x: Array, turn: Int[Array, ""],
                    key: PRNGKeyArray, n_actions: int, lookahead: int, horizon: int,
                    depth: Int[Array, ""] | int | None = None
                    ) -> tuple[Float[Array, "A k"], Int[Array, ""]]:
    """G_H(x, a) for every first action a (rows), common random numbers across a, and the number
    of simulator turns whose reward entered a sum (counted as they are taken). ``depth``
    (traced, <= ``lookahead``) truncates the sum to its first ``depth`` turns, so that variants
    with different look-aheads share one compiled program."""
    depth = lookahead if depth is None else depth
    keys = jax.random.split(key, lookahead)

    def from_action(first):
        def body(carry, h):
            state, action, total, count = carry
            k_step, k_policy = jax.random.split(keys[h])
            nxt, reward = step_fn(state, action, k_step)
            used = (turn + h < horizon) & (h < depth)
            total = total + jnp.where(used, reward, 0.0)
            return (nxt, policy_fn(nxt, action, turn + h + 1, k_policy), total,
                    count + used), None

        reward_shape = jax.eval_shape(step_fn, x, first, keys[0])[1]
        init = (x, first, jnp.zeros(reward_shape.shape, reward_shape.dtype), jnp.array(0))
        (_, _, total, count), _ = jax.lax.scan(body, init, jnp.arange(lookahead))
        return total, count

    returns, counts = jax.vmap(from_action)(jnp.arange(n_actions))
    return returns, counts.sum()


def step_credit(returns: Float[Array, "A k"], probs: Float[Array, "A"],
                action: Int[Array, ""]) -> Float[Array, "k"]:
    """c = G(a_t) - Σ_a π(a) G(a): the chosen strategy's multi-turn effect over the policy's mean."""
    return returns[action] - probs @ returns


def plain_advantages(weights: Float[Array, "U T k"], rewards: Float[Array, "U T k"]
                     ) -> Float[Array, "U T"]:
    """Â_t: the need-weighted return-to-go of each played dialogue minus its per-turn mean over
    the batch (no forward simulation)."""
    scalar = (weights * rewards).sum(-1)
    to_go = jnp.flip(jnp.cumsum(jnp.flip(scalar, -1), -1), -1)
    return to_go - to_go.mean(0, keepdims=True)


def aggregation_weights(preference: Float[Array, "... 2"], fixed: Float[Array, "2"],
                        need_aware: Bool[Array, ""] | bool) -> Float[Array, "... 2"]:
    """Need-aware: the current preference vector p(x_t); otherwise the fixed weights. (A traced
    switch, so that every method shares one compiled training step.)"""
    return jnp.where(need_aware, preference, jnp.broadcast_to(fixed, preference.shape))


def ppo_loss(logits: Float[Array, "N A"], actions: Int[Array, "N"], old_logp: Float[Array, "N"],
             advantages: Float[Array, "N"], clip_eps: float,
             entropy_coef: float) -> tuple[Float[Array, ""], dict]:
    """Clipped surrogate -E[min(ρ Â, clip(ρ, 1±ε) Â)] - entropy_coef · H[π], ρ = π/π_old,
    with Â the advantages standardised over the batch."""
    logp_all = jax.nn.log_softmax(logits)
    logp = jnp.take_along_axis(logp_all, actions[:, None], axis=1)[:, 0]
    adv = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = jnp.exp(logp - old_logp)
    surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
    loss = -surrogate.mean() - entropy_coef * entropy
    return loss, {"entropy": entropy}
