"""Policies and reward models for the agentic task (tiny Equinox MLPs).

The policy writes a step as two tokens: π(op, arg | s) = π(op | s) · π(arg | s, op). Its state
encoding is one-hot(d) ⊕ one-hot(steps left); the task is Markov in that state, so the policy
needs no history. The process reward model scores a step (state, both tokens); the outcome
reward model scores a whole trajectory (every state and token, flattened).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from repro26.progress_advantage.task import N_OPS, TaskSpec


def state_features(spec: TaskSpec, d, steps_left):
    return jnp.concatenate([jax.nn.one_hot(d, spec.modulus),
                            jax.nn.one_hot(steps_left - 1, spec.horizon)], -1)


def step_features(spec: TaskSpec, d, steps_left, op, arg):
    return jnp.concatenate([state_features(spec, d, steps_left), jax.nn.one_hot(op, N_OPS),
                            jax.nn.one_hot(arg, spec.n_operands)], -1)


class Policy(eqx.Module):
    trunk: eqx.nn.MLP
    op_head: eqx.nn.Linear
    arg_head: eqx.nn.Linear
    spec: TaskSpec = eqx.field(static=True)

    def __init__(self, spec: TaskSpec, hidden: int, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.spec = spec
        self.trunk = eqx.nn.MLP(spec.modulus + spec.horizon, hidden, hidden, 1,
                                activation=jax.nn.gelu, final_activation=jax.nn.gelu, key=k1)
        self.op_head = eqx.nn.Linear(hidden, N_OPS, key=k2)
        self.arg_head = eqx.nn.Linear(hidden + N_OPS, spec.n_operands, key=k3)

    def token_logits(self, d, steps_left, op):
        """Log-probabilities of both tokens for one state (``op``: the first token)."""
        h = self.trunk(state_features(self.spec, d, steps_left))
        lp_op = jax.nn.log_softmax(self.op_head(h))
        lp_arg = jax.nn.log_softmax(self.arg_head(jnp.concatenate([h, jax.nn.one_hot(op, N_OPS)])))
        return lp_op, lp_arg

    def joint_logprobs(self, d, steps_left):
        """log π(op, arg | s) for all actions a = op · n_operands + arg."""
        h = self.trunk(state_features(self.spec, d, steps_left))
        lp_op = jax.nn.log_softmax(self.op_head(h))
        lp_arg = jax.vmap(lambda o: jax.nn.log_softmax(
            self.arg_head(jnp.concatenate([h, jax.nn.one_hot(o, N_OPS)]))))(jnp.arange(N_OPS))
        return (lp_op[:, None] + lp_arg).reshape(-1)

    def sample(self, key, d, steps_left):
        """One step ``(op, arg)`` for a batch of states."""
        lp = jax.vmap(self.joint_logprobs)(d, jnp.broadcast_to(steps_left, d.shape))
        a = jax.random.categorical(key, lp)
        return a // self.spec.n_operands, a % self.spec.n_operands


class StepRewardModel(eqx.Module):
    """PRM: logit of the probability that the episode succeeds after this step."""

    mlp: eqx.nn.MLP
    spec: TaskSpec = eqx.field(static=True)

    def __init__(self, spec: TaskSpec, hidden: int, key):
        self.spec = spec
        n_in = spec.modulus + spec.horizon + N_OPS + spec.n_operands
        self.mlp = eqx.nn.MLP(n_in, 1, hidden, 2, activation=jax.nn.gelu, key=key)

    def __call__(self, d, steps_left, op, arg):
        return self.mlp(step_features(self.spec, d, steps_left, op, arg))[0]


class OutcomeRewardModel(eqx.Module):
    """ORM: logit of success from the whole trajectory (states and tokens of every step)."""

    mlp: eqx.nn.MLP
    spec: TaskSpec = eqx.field(static=True)

    def __init__(self, spec: TaskSpec, hidden: int, key):
        self.spec = spec
        n_in = spec.horizon * (spec.modulus + spec.horizon + N_OPS + spec.n_operands)
        self.mlp = eqx.nn.MLP(n_in, 1, hidden, 2, activation=jax.nn.gelu, key=key)

    def __call__(self, d, op, arg):
        steps_left = self.spec.horizon - jnp.arange(self.spec.horizon)
        x = jax.vmap(lambda *a: step_features(self.spec, *a))(d, steps_left, op, arg)
        return self.mlp(x.reshape(-1))[0]
