"""Policies and reward models for the agentic task (Equinox).

A trajectory is a token sequence: per step an observation token (the tool's last result, the
distance d, or the crash), then the step's two action tokens, an operator (+ or −) and an operand, so
π(step | history) = π(op | history) · π(arg | history, op).

* :class:`TransformerPolicy` (the default): a small causal transformer over the trajectory's
  tokens so far (token + learned position embeddings, pre-LayerNorm blocks); both action
  tokens are read from the observation token's output, the operand's head also given the
  operator (one pass per step; the action tokens enter the sequence for the later steps).
* :class:`MLPPolicy` (config ``policy: mlp``): an MLP over the Markov state one-hot(d) ⊕
  one-hot(steps left), which ignores the history (the task is Markov in that state).

Both take a trajectory as ``(horizon,)`` integer buffers ``d, op, arg``; entries after the
current step are ignored (the transformer's causal mask, the MLP's Markov state). The process
reward model scores a step (state, both tokens); the outcome reward model scores a whole
trajectory (every state and token, flattened), or a prefix with the later steps zeroed.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from repro26.progress_advantage.task import N_OPS, TaskSpec


def state_features(spec: TaskSpec, d, steps_left):
    return jnp.concatenate([jax.nn.one_hot(d, spec.n_obs),
                            jax.nn.one_hot(steps_left - 1, spec.horizon)], -1)


def step_features(spec: TaskSpec, d, steps_left, op, arg):
    return jnp.concatenate([state_features(spec, d, steps_left), jax.nn.one_hot(op, N_OPS),
                            jax.nn.one_hot(arg, spec.n_operands)], -1)


class _Policy(eqx.Module):
    """Shared interface: ``step_logprobs`` (token log-probabilities along a trajectory) and
    ``next_tokens`` (the next step's token distributions given the prefix)."""

    def step_logprobs(self, d, op, arg):
        """``(log π(·|h_t) over ops (H, 2), log π(·|h_t, op_t) over operands (H, n_operands))``."""
        raise NotImplementedError

    def next_tokens(self, d, op, arg, t):
        """Step ``t`` given the prefix: ``(log π(op|h_t) (2,), log π(arg|h_t, op) (2, n))``."""
        raise NotImplementedError

    def next_joint(self, d, op, arg, t):
        """log π(op, arg | h_t) for all actions a = op · n_operands + arg."""
        lp_op, lp_arg = self.next_tokens(d, op, arg, t)
        return (lp_op[:, None] + lp_arg).reshape(-1)

    def sample(self, key, t, buf):
        """One step ``(op, arg)`` at step ``t`` for a batch of trajectory buffers ``(batch, H)``."""
        lp = jax.vmap(lambda d, o, a: self.next_joint(d, o, a, t))(buf["d"], buf["op"], buf["arg"])
        a = jax.random.categorical(key, lp)
        n = lp.shape[-1] // N_OPS
        return a // n, a % n


class MLPPolicy(_Policy):
    trunk: eqx.nn.MLP
    op_head: eqx.nn.Linear
    arg_head: eqx.nn.Linear
    spec: TaskSpec = eqx.field(static=True)

    def __init__(self, spec: TaskSpec, hidden: int, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.spec = spec
        self.trunk = eqx.nn.MLP(spec.n_obs + spec.horizon, hidden, hidden, 1,
                                activation=jax.nn.gelu, final_activation=jax.nn.gelu, key=k1)
        self.op_head = eqx.nn.Linear(hidden, N_OPS, key=k2)
        self.arg_head = eqx.nn.Linear(hidden + N_OPS, spec.n_operands, key=k3)

    def _markov(self, d, steps_left):
        h = self.trunk(state_features(self.spec, d, steps_left))
        lp_op = jax.nn.log_softmax(self.op_head(h))
        lp_arg = jax.vmap(lambda o: jax.nn.log_softmax(
            self.arg_head(jnp.concatenate([h, jax.nn.one_hot(o, N_OPS)]))))(jnp.arange(N_OPS))
        return lp_op, lp_arg

    def joint_logprobs(self, d, steps_left):
        """log π(op, arg | d, steps left) for all actions (the Markov policy as a table row)."""
        lp_op, lp_arg = self._markov(d, steps_left)
        return (lp_op[:, None] + lp_arg).reshape(-1)

    def next_tokens(self, d, op, arg, t):
        return self._markov(d[t], self.spec.horizon - t)

    def step_logprobs(self, d, op, arg):
        lp_op, lp_arg = jax.vmap(self._markov)(d, self.spec.horizon - jnp.arange(self.spec.horizon))
        return lp_op, jnp.take_along_axis(lp_arg, op[:, None, None], 1)[:, 0]


class _Block(eqx.Module):
    ln1: eqx.nn.LayerNorm
    attn: eqx.nn.MultiheadAttention
    ln2: eqx.nn.LayerNorm
    mlp: eqx.nn.MLP

    def __init__(self, width: int, heads: int, key):
        k1, k2 = jax.random.split(key)
        self.ln1, self.ln2 = eqx.nn.LayerNorm(width), eqx.nn.LayerNorm(width)
        self.attn = eqx.nn.MultiheadAttention(heads, width, key=k1)
        self.mlp = eqx.nn.MLP(width, width, 2 * width, 1, activation=jax.nn.gelu, key=k2)

    def __call__(self, x, mask):
        h = jax.vmap(self.ln1)(x)
        x = x + self.attn(h, h, h, mask=mask)
        return x + jax.vmap(self.mlp)(jax.vmap(self.ln2)(x))


class TransformerPolicy(_Policy):
    """Causal transformer over [obs_0, op_0, arg_0, obs_1, op_1, arg_1, ...] (3·horizon tokens;
    vocabulary: modulus + 1 observations (the dead state included), 2 operators, n_operands operands)."""

    embed: eqx.nn.Embedding
    pos: jax.Array
    blocks: tuple[_Block, ...]
    ln: eqx.nn.LayerNorm
    op_head: eqx.nn.Linear
    arg_head: eqx.nn.Linear
    spec: TaskSpec = eqx.field(static=True)

    def __init__(self, spec: TaskSpec, width: int, layers: int, heads: int, key):
        keys = jax.random.split(key, layers + 4)
        self.spec = spec
        self.embed = eqx.nn.Embedding(spec.n_obs + N_OPS + spec.n_operands, width, key=keys[0])
        self.pos = 0.02 * jax.random.normal(keys[1], (3 * spec.horizon, width))
        self.blocks = tuple(_Block(width, heads, k) for k in keys[4:])
        self.ln = eqx.nn.LayerNorm(width)
        self.op_head = eqx.nn.Linear(width, N_OPS, key=keys[2])
        self.arg_head = eqx.nn.Linear(width + N_OPS, spec.n_operands, key=keys[3])

    def hidden(self, d, op, arg):
        """Outputs ``(3H, width)`` of the causal transformer; position i sees tokens ≤ i."""
        m = self.spec.n_obs
        ids = jnp.stack([d, m + op, m + N_OPS + arg], -1).reshape(-1)
        x = jax.vmap(self.embed)(ids) + self.pos
        mask = jnp.tril(jnp.ones((x.shape[0], x.shape[0]), bool))
        for block in self.blocks:
            x = block(x, mask)
        return jax.vmap(self.ln)(x)

    def _heads(self, h, op):
        lp_arg = jax.nn.log_softmax(self.arg_head(jnp.concatenate([h, jax.nn.one_hot(op, N_OPS)])))
        return jax.nn.log_softmax(self.op_head(h)), lp_arg

    def step_logprobs(self, d, op, arg):
        return jax.vmap(self._heads)(self.hidden(d, op, arg)[0::3], op)

    def next_tokens(self, d, op, arg, t):
        h = self.hidden(d, op, arg)[3 * t]
        lp_op, lp_arg = jax.vmap(lambda o: self._heads(h, o))(jnp.arange(N_OPS))
        return lp_op[0], lp_arg


def make_policy(spec: TaskSpec, cfg, key) -> _Policy:
    """The policy architecture ``cfg.policy`` selects."""
    if cfg.policy == "mlp":
        return MLPPolicy(spec, cfg.hidden, key)
    return TransformerPolicy(spec, cfg.tf_width, cfg.tf_layers, cfg.tf_heads, key)


class StepRewardModel(eqx.Module):
    """PRM: logit of the probability that the episode succeeds after this step."""

    mlp: eqx.nn.MLP
    spec: TaskSpec = eqx.field(static=True)

    def __init__(self, spec: TaskSpec, hidden: int, key):
        self.spec = spec
        n_in = spec.n_obs + spec.horizon + N_OPS + spec.n_operands
        self.mlp = eqx.nn.MLP(n_in, 1, hidden, 2, activation=jax.nn.gelu, key=key)

    def __call__(self, d, steps_left, op, arg):
        return self.mlp(step_features(self.spec, d, steps_left, op, arg))[0]


class OutcomeRewardModel(eqx.Module):
    """ORM: logit of success from the whole trajectory (states and tokens of every step); on a
    prefix of ``n_steps`` steps the later steps' features are zero (trained on whole ones)."""

    mlp: eqx.nn.MLP
    spec: TaskSpec = eqx.field(static=True)

    def __init__(self, spec: TaskSpec, hidden: int, key):
        self.spec = spec
        n_in = spec.horizon * (spec.n_obs + spec.horizon + N_OPS + spec.n_operands)
        self.mlp = eqx.nn.MLP(n_in, 1, hidden, 2, activation=jax.nn.gelu, key=key)

    def __call__(self, d, op, arg, n_steps=None):
        H = self.spec.horizon
        steps_left = H - jnp.arange(H)
        x = jax.vmap(lambda *a: step_features(self.spec, *a))(d, steps_left, op, arg)
        if n_steps is not None:
            x = x * (jnp.arange(H) < n_steps)[:, None]
        return self.mlp(x.reshape(-1))[0]
