"""The agentic analogue: reach a target number with a calculator tool that sometimes errs.

A problem asks to turn a value into a target modulo ``modulus`` in ``horizon`` tool calls. Only
the distance d = (target − value) mod ``modulus`` matters, so the state is (d, steps left k).
Each step the agent writes two tokens, an operator (+ or −) and an operand in 0..n_operands−1;
the calculator applies ``±operand`` but with probability ``fault`` returns a result off by ±1
(stochastic environment feedback). The agent sees every tool result except the last: the episode
ends with the final call and is verified then (success iff the final distance is 0), so a scorer
of the trajectory cannot read the outcome off it; it can only judge the steps.

Everything here is pure JAX on integer arrays; trajectories are dicts of ``(batch, horizon)``
arrays: ``d`` (the state before each step), ``op``, ``arg`` and the outcome ``success``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

N_OPS = 2  # token 1: '+' (0) or '−' (1)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    modulus: int
    horizon: int
    n_operands: int
    fault: float

    @property
    def n_actions(self) -> int:
        return N_OPS * self.n_operands


def signed_move(op, arg):
    return jnp.where(op == 0, arg, -arg)


def centred(d, modulus: int):
    """Distance mod ``modulus`` mapped to (−modulus/2, modulus/2]."""
    return d - modulus * (d > modulus // 2)


def step_env(spec: TaskSpec, key, d, op, arg):
    """The calculator: d' = d − (±arg) − ε mod m, with ε = ±1 with probability ``fault``."""
    k1, k2 = jax.random.split(key)
    faulty = jax.random.bernoulli(k1, spec.fault, d.shape)
    sign = 2 * jax.random.bernoulli(k2, 0.5, d.shape).astype(d.dtype) - 1
    return (d - signed_move(op, arg) - faulty * sign) % spec.modulus


def success_probability(spec: TaskSpec, d, op, arg):
    """P(final distance 0 | last state d, last action): exact, over the calculator's noise."""
    rest = centred((d - signed_move(op, arg)) % spec.modulus, spec.modulus)
    return jnp.where(rest == 0, 1 - spec.fault, 0.0) + jnp.where(jnp.abs(rest) == 1,
                                                                 spec.fault / 2, 0.0)


def valid_actions(spec: TaskSpec, d, steps_left):
    """Mask ``(..., n_actions)`` of the steps a careful agent may take: move towards the target
    by at most the distance while keeping it reachable in the remaining steps (operand 0 only at
    d = 0); where none is left, the moves that end closest to the target."""
    c = centred(d, spec.modulus)[..., None]
    ops = jnp.arange(spec.n_actions) // spec.n_operands
    args = jnp.arange(spec.n_actions) % spec.n_operands
    after = c - signed_move(ops, args)
    reach = (spec.n_operands - 1) * (steps_left[..., None] - 1)
    towards = (jnp.abs(after) <= jnp.abs(c)) & (jnp.sign(after) * jnp.sign(c) >= 0)
    valid = towards & (jnp.abs(after) <= reach) & ((args > 0) | (c == 0))
    closest = jnp.abs(after) == jnp.min(jnp.abs(after), -1, keepdims=True)
    return jnp.where(valid.any(-1, keepdims=True), valid, closest)


def _uniform_from(key, mask):
    """A uniformly random index among the ``True`` entries of ``mask`` (last axis)."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))


def demonstrator_action(spec: TaskSpec, key, d, steps_left, noise: float):
    """Noisy demonstrations: uniformly one of the valid actions, replaced by a uniformly random
    action with probability ``noise``."""
    k1, k2, k3 = jax.random.split(key, 3)
    good = _uniform_from(k1, valid_actions(spec, d, steps_left))
    rand = jax.random.randint(k2, d.shape, 0, spec.n_actions)
    a = jnp.where(jax.random.bernoulli(k3, noise, d.shape), rand, good)
    return a // spec.n_operands, a % spec.n_operands


def sample_problems(spec: TaskSpec, key, n: int):
    """Initial distances, uniform over 1..modulus−1."""
    return jax.random.randint(key, (n,), 1, spec.modulus)


def rollout(spec: TaskSpec, key, d0, act, start_step=None, prefix=None):
    """Roll out ``act(key, t, buf) -> (op, arg)`` from ``d0`` for the horizon; ``buf`` holds the
    trajectory so far as ``(batch, horizon)`` buffers ``d, op, arg`` (``d[:, t]`` the current
    distance; later entries are not part of the history).

    ``start_step`` (per row, default 0) lets a rollout continue mid-episode: rows keep the
    steps of ``prefix`` (same buffers) and stay at ``d0`` until step ``start_step``. Returns the
    buffers and the outcome ``success``."""
    start = jnp.zeros_like(d0) if start_step is None else start_step
    zeros = jnp.zeros(d0.shape + (spec.horizon,), d0.dtype)
    buf = {k: zeros for k in ("d", "op", "arg")} if prefix is None else {
        k: prefix[k].astype(d0.dtype) for k in ("d", "op", "arg")}

    def body(carry, t):
        d, buf = carry
        ka, ke = jax.random.split(jax.random.fold_in(key, t))
        live = t >= start
        buf = {**buf, "d": buf["d"].at[:, t].set(jnp.where(live, d, buf["d"][:, t]))}
        op, arg = act(ka, t, buf)
        op = jnp.where(live, op, buf["op"][:, t])
        arg = jnp.where(live, arg, buf["arg"][:, t])
        buf = {**buf, "op": buf["op"].at[:, t].set(op), "arg": buf["arg"].at[:, t].set(arg)}
        d_next = jnp.where(live, step_env(spec, ke, d, op, arg), d)
        return (d_next, buf), None

    (d_final, buf), _ = jax.lax.scan(body, (d0, buf), jnp.arange(spec.horizon))
    return {**buf, "success": d_final == 0}


def markov(spec: TaskSpec, action):
    """An actor for :func:`rollout` from ``action(key, d, steps_left)`` of the Markov state."""
    return lambda key, t, buf: action(key, buf["d"][:, t],
                                      jnp.full(buf["d"].shape[:1], spec.horizon - t))


def inject_error(spec: TaskSpec, key, d, steps_left):
    """An erroneous step: uniformly one of the actions that are not valid (:func:`valid_actions`)."""
    a = _uniform_from(key, ~valid_actions(spec, d, steps_left))
    return a // spec.n_operands, a % spec.n_operands


def transition_matrix(spec: TaskSpec):
    """P[d, a, d'] of the calculator (a = op · n_operands + arg)."""
    d = jnp.arange(spec.modulus)[:, None]
    a = jnp.arange(spec.n_actions)[None, :]
    mean = (d - signed_move(a // spec.n_operands, a % spec.n_operands)) % spec.modulus
    onehot = lambda x: jax.nn.one_hot(x % spec.modulus, spec.modulus)  # noqa: E731
    return ((1 - spec.fault) * onehot(mean) + spec.fault / 2 * (onehot(mean + 1)
                                                                + onehot(mean - 1)))


def soft_optimal_advantage(spec: TaskSpec, log_pi_ref, beta: float):
    """A*[k−1, d, a] of the finite-horizon KL-regularised problem (reward 1[final d = 0]):
    V_0(d) = 1[d = 0], Q_k(d, a) = Σ_d' P(d'|d, a) V_{k−1}(d'),
    V_k(d) = β log Σ_a π_ref(a|d, k) exp(Q_k(d, a)/β), A_k = Q_k − V_k.
    ``log_pi_ref[k−1, d, a]`` with k the steps left."""
    P = transition_matrix(spec)

    def backup(V, lp):
        Q = P @ V
        V_new = beta * jax.scipy.special.logsumexp(Q / beta + lp, axis=-1)
        return V_new, Q - V_new[:, None]

    V0 = (jnp.arange(spec.modulus) == 0).astype(jnp.float32)
    _, A = jax.lax.scan(backup, V0, log_pi_ref)
    return A
