"""Supporter policies over the eight ESConv strategies: the learned softmax policy (NeMo and the
PPO baselines share it) and the two trivial baselines, a uniform random policy and ESConv's
stage schedule (exploration -> comforting -> action)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.nemo.simulator import N_ACTIONS, OBS_DIM, STRATEGIES

# ESConv's stage order (Liu et al., 2021): explore, comfort, then act; repeated over the dialogue.
RULE_SCHEDULE = ("question", "reflection", "affirmation", "restatement", "suggestions",
                 "information", "affirmation", "suggestions", "information", "affirmation")


class Policy(eqx.Module):
    """π(a | o) = softmax(MLP(o)): a two-layer tanh MLP from observations to strategy logits."""

    mlp: eqx.nn.MLP

    def __init__(self, key: PRNGKeyArray, width: int):
        self.mlp = eqx.nn.MLP(OBS_DIM, N_ACTIONS, width, 2, activation=jnp.tanh, key=key)

    def logits(self, obs: Float[Array, "14"]) -> Float[Array, "8"]:
        return self.mlp(obs)

    def act(self, obs: Float[Array, "14"], turn: Int[Array, ""], key: PRNGKeyArray):
        """Sample a strategy: (action, log π(action | o), π(· | o))."""
        logp_all = jax.nn.log_softmax(self.logits(obs))
        action = jax.random.categorical(key, logp_all)
        return action, logp_all[action], jnp.exp(logp_all)


def uniform(policy: Policy) -> Policy:
    """The random baseline: the same network with a zero output layer, so π(a | o) = 1/8 for
    every observation (exactly uniform), evaluated by the same compiled program as the others."""
    last = policy.mlp.layers[-1]
    return eqx.tree_at(lambda p: (p.mlp.layers[-1].weight, p.mlp.layers[-1].bias), policy,
                       (jnp.zeros_like(last.weight), jnp.zeros_like(last.bias)))


def rule_policy(obs, turn, key):
    """The fixed ESConv stage schedule, cycled past its length."""
    schedule = jnp.array([STRATEGIES.index(s) for s in RULE_SCHEDULE])
    action = schedule[turn % len(RULE_SCHEDULE)]
    probs = jax.nn.one_hot(action, N_ACTIONS)
    return action, jnp.array(0.0), probs
