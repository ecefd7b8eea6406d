"""The agentic analogue: reach a target number with calculator tools, one of them fragile.

A problem asks to turn a value into a target modulo ``modulus`` in ``horizon`` tool calls. Only
the distance d = (target − value) mod ``modulus`` matters, so the state is (d, steps left k).
Each step the agent writes two tokens, an operator (+ or −) and an operand in 0..n_operands−1;
the calculator applies ``±operand`` but with probability ``fault`` returns a result off by ±1
(stochastic environment feedback). Operands from ``risky_from`` on are the fast tool: a call of
it crashes the session with probability ``crash``, an irreversible failure into an absorbing dead
state (observation d = ``modulus``) from which no action succeeds. The safe operands alone reach
every problem in time (checked by the config), so the fast tool is never needed.

The reference behaviour (:func:`demonstrator_probs`) is the demonstrators' habit: mostly the
largest operand that moves towards the target (the fast tool whenever the distance allows), and in
the dead state a fixed retry call. So the reference policy is confident exactly at the risky and
the hopeless steps: the setting in which a policy's own confidence is uninformative about which
step ruined an episode.

The agent sees every tool result except the last: the episode ends with the final call and is
verified then (success iff the final distance is 0).

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
    crash: float = 0.0
    risky_from: int | None = None  # first operand of the fast tool (None: no fast tool)

    @property
    def n_actions(self) -> int:
        return N_OPS * self.n_operands

    @property
    def dead(self) -> int:
        """The absorbing state after a crash (an observation of its own)."""
        return self.modulus

    @property
    def n_obs(self) -> int:
        return self.modulus + 1


def risky(spec: TaskSpec, arg):
    """Whether operand ``arg`` is a call of the fast (crashing) tool."""
    if spec.risky_from is None:
        return jnp.zeros_like(arg, bool)
    return arg >= spec.risky_from


def signed_move(op, arg):
    return jnp.where(op == 0, arg, -arg)


def centred(d, modulus: int):
    """Distance mod ``modulus`` mapped to (−modulus/2, modulus/2]."""
    return d - modulus * (d > modulus // 2)


def step_env(spec: TaskSpec, key, d, op, arg):
    """The calculator: d' = d − (±arg) − ε mod m, with ε = ±1 with probability ``fault``; a
    fast-tool call crashes (d' = dead) with probability ``crash``; dead stays dead."""
    k1, k2, k3 = jax.random.split(key, 3)
    faulty = jax.random.bernoulli(k1, spec.fault, d.shape)
    sign = 2 * jax.random.bernoulli(k2, 0.5, d.shape).astype(d.dtype) - 1
    crashed = risky(spec, arg) & jax.random.bernoulli(k3, spec.crash, d.shape)
    moved = (d - signed_move(op, arg) - faulty * sign) % spec.modulus
    return jnp.where((d == spec.dead) | crashed, spec.dead, moved).astype(d.dtype)


def success_probability(spec: TaskSpec, d, op, arg):
    """P(final distance 0 | last state d, last action): exact, over the calculator's noise."""
    rest = centred((d - signed_move(op, arg)) % spec.modulus, spec.modulus)
    hit = jnp.where(rest == 0, 1 - spec.fault, 0.0) + jnp.where(jnp.abs(rest) == 1,
                                                                spec.fault / 2, 0.0)
    survive = jnp.where(risky(spec, arg), 1 - spec.crash, 1.0)
    return jnp.where(d == spec.dead, 0.0, hit * survive)


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


def demonstrator_probs(spec: TaskSpec, d, steps_left, noise: float, habit: float,
                       retry: float | None = None):
    """The demonstrators' action law ``(..., n_actions)``: with probability ``noise`` a uniformly
    random action; otherwise with probability ``habit`` the largest valid operand (the fast tool
    whenever it is valid), else uniformly one of the valid actions (:func:`valid_actions`). In
    the dead state the crashed tool answers every call with the same error and the demonstrators
    loop on the retry call (+, 0) with probability ``retry`` (default 1 − noise), any action
    otherwise."""
    valid = valid_actions(spec, d, steps_left)
    args = jnp.arange(spec.n_actions) % spec.n_operands
    top = valid & (args == jnp.max(jnp.where(valid, args, -1), -1, keepdims=True))
    unif = lambda m: m / jnp.sum(m, -1, keepdims=True)  # noqa: E731
    alive = habit * unif(top.astype(jnp.float32)) + (1 - habit) * unif(valid.astype(jnp.float32))
    alive = noise / spec.n_actions + (1 - noise) * alive
    r = 1 - noise if retry is None else retry
    loop = (1 - r) / spec.n_actions + r * jax.nn.one_hot(0, spec.n_actions)
    return jnp.where((d == spec.dead)[..., None], loop, alive)


def demonstrator_action(spec: TaskSpec, key, d, steps_left, noise: float, habit: float = 0.0,
                        retry: float | None = None):
    """One step of the demonstrators (:func:`demonstrator_probs`): ``(op, arg)``."""
    a = jax.random.categorical(key, jnp.log(demonstrator_probs(spec, d, steps_left, noise, habit,
                                                               retry)))
    return a // spec.n_operands, a % spec.n_operands


def sample_problems(spec: TaskSpec, key, n: int):
    """Initial distances, uniform over 1..modulus−1."""
    return jax.random.randint(key, (n,), 1, spec.modulus)


def rollout(spec: TaskSpec, key, d0, act, start_step=None, prefix=None, crash_at=None):
    """Roll out ``act(key, t, buf) -> (op, arg)`` from ``d0`` for the horizon; ``buf`` holds the
    trajectory so far as ``(batch, horizon)`` buffers ``d, op, arg`` (``d[:, t]`` the current
    distance; later entries are not part of the history). ``crash_at`` (per row, optional): the
    step whose tool call crashes (the environment's outcome conditioned on a crash there).

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
        if crash_at is not None:
            d_next = jnp.where(t == crash_at, spec.dead, d_next).astype(d.dtype)
        return (d_next, buf), None

    (d_final, buf), _ = jax.lax.scan(body, (d0, buf), jnp.arange(spec.horizon))
    return {**buf, "success": d_final == 0}


def markov(spec: TaskSpec, action):
    """An actor for :func:`rollout` from ``action(key, d, steps_left)`` of the Markov state."""
    return lambda key, t, buf: action(key, buf["d"][:, t],
                                      jnp.full(buf["d"].shape[:1], spec.horizon - t))


def risky_call(spec: TaskSpec, key, shape):
    """A fast-tool call: uniformly one of the actions with operand >= ``risky_from``."""
    ops = jax.random.randint(jax.random.fold_in(key, 0), shape, 0, N_OPS)
    args = jax.random.randint(jax.random.fold_in(key, 1), shape, spec.risky_from, spec.n_operands)
    return ops, args


def transition_matrix(spec: TaskSpec):
    """P[d, a, d'] of the calculator over the ``n_obs`` states (a = op · n_operands + arg)."""
    d = jnp.arange(spec.n_obs)[:, None]
    a = jnp.arange(spec.n_actions)[None, :]
    arg = a % spec.n_operands
    mean = (d - signed_move(a // spec.n_operands, arg)) % spec.modulus
    onehot = lambda x: jax.nn.one_hot(x % spec.modulus, spec.n_obs)  # noqa: E731
    moved = ((1 - spec.fault) * onehot(mean) + spec.fault / 2 * (onehot(mean + 1)
                                                                 + onehot(mean - 1)))
    dead = jax.nn.one_hot(spec.dead, spec.n_obs)
    p_crash = jnp.where(risky(spec, arg), spec.crash, 0.0)[..., None]
    alive = (1 - p_crash) * moved + p_crash * dead
    return jnp.where((d == spec.dead)[..., None], dead, alive)


def soft_optimal_advantage(spec: TaskSpec, log_pi_ref, beta: float):
    """A*[k−1, d, a] of the finite-horizon KL-regularised problem (reward 1[final d = 0]):
    V_0(d) = 1[d = 0], Q_k(d, a) = Σ_d' P(d'|d, a) V_{k−1}(d'),
    V_k(d) = β log Σ_a π_ref(a|d, k) exp(Q_k(d, a)/β), A_k = Q_k − V_k.
    ``log_pi_ref[k−1, d, a]`` with k the steps left, d over the ``n_obs`` states."""
    P = transition_matrix(spec)

    def backup(V, lp):
        Q = P @ V
        V_new = beta * jax.scipy.special.logsumexp(Q / beta + lp, axis=-1)
        return V_new, Q - V_new[:, None]

    V0 = (jnp.arange(spec.n_obs) == 0).astype(jnp.float32)
    _, A = jax.lax.scan(backup, V0, log_pi_ref)
    return A


def optimal_q(spec: TaskSpec):
    """Q[k−1, d, a] of the unregularised problem (hard value iteration): the expert's values."""
    P = transition_matrix(spec)

    def backup(V, _):
        Q = P @ V
        return jnp.max(Q, -1), Q

    V0 = (jnp.arange(spec.n_obs) == 0).astype(jnp.float32)
    _, Q = jax.lax.scan(backup, V0, None, length=spec.horizon)
    return Q


def reference_table(spec: TaskSpec, noise: float, habit: float, retry: float | None = None):
    """log π_ref[k−1, d, a] of the demonstrators' law (:func:`demonstrator_probs`)."""
    d = jnp.arange(spec.n_obs)
    return jnp.stack([jnp.log(demonstrator_probs(spec, d, jnp.full_like(d, k), noise, habit,
                                                 retry))
                      for k in range(1, spec.horizon + 1)])
