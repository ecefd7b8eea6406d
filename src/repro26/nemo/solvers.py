"""The ideal row: a planner that knows the user's persona, opening state and the noise-free
simulator, and picks a fixed sequence of ``T`` strategies for one objective.

Objectives of a played dialogue ``x_0, a_0, x_1, ..., x_T`` with reward vectors
``r_t = (ΔE_t, ΔC_t)`` and the user's need ``p_t = p(x_t)`` at each turn:

* ``emo``:  Σ_t r_t[0] = E_T - E_0;
* ``cog``:  Σ_t r_t[1] = C_T - C_0;
* ``need``: Σ_t p_t · r_t, the need-weighted satisfaction (the user-side metric of the claims).

Each is a sum of per-turn terms, so beam search applies: keep the ``B`` best partial sequences by
their partial sum, extend each by every one of the 8 strategies, keep the best ``B`` of the
``8 B`` (``jax.lax.top_k``), ``T`` times. With ``B >= 8^T`` it is exhaustive search; below that
it is a lower bound on the optimum over open-loop plans. (Open-loop plans on the noise-free
simulator are themselves a lower bound on the best closed-loop policy; the row is the best
plan found, which no learned policy that sees only noisy observations is expected to beat.)
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.nemo.simulator import N_ACTIONS, MindFlow, Persona, scores

Objective = Literal["emo", "cog", "need"]
OBJECTIVES: tuple[str, ...] = ("emo", "cog", "need")


def turn_value(env: MindFlow, persona: Persona, x: Float[Array, "5"], nxt: Float[Array, "5"],
               objective: Objective) -> Float[Array, ""]:
    """The per-turn term of ``objective`` for the turn ``x -> nxt``."""
    reward = scores(nxt) - scores(x)
    if objective == "emo":
        return reward[0]
    if objective == "cog":
        return reward[1]
    return env.preference(persona, x) @ reward


def beam_plan(env: MindFlow, persona: Persona, x0: Float[Array, "5"], objective: Objective,
              beam: int) -> tuple[Int[Array, "T"], Float[Array, ""]]:
    """The best strategy sequence found by beam search of width ``beam`` on the noise-free
    simulator from ``x0``, and its planned objective value."""
    horizon = env.horizon
    zero_key = jax.random.PRNGKey(0)  # unused: process noise is zero below
    clean = MindFlow(env.effects, env.obs_noise, 0.0, env.reappraisal, env.balance_temperature,
                     horizon, env.family)
    states = jnp.broadcast_to(x0, (beam, 5))
    # only the first beam entry is live at the start (the others would duplicate it)
    values = jnp.where(jnp.arange(beam) == 0, 0.0, -jnp.inf)
    plans = jnp.zeros((beam, horizon), jnp.int32)

    def expand(carry, t):
        states, values, plans = carry
        actions = jnp.arange(N_ACTIONS)
        nxt = jax.vmap(lambda x: jax.vmap(
            lambda a: clean.transition(persona, x, a, zero_key))(actions))(states)
        gain = jax.vmap(lambda x, ns: jax.vmap(
            lambda n: turn_value(clean, persona, x, n, objective))(ns))(states, nxt)
        cand = (values[:, None] + gain).reshape(-1)
        best, idx = jax.lax.top_k(cand, beam)
        parent, action = idx // N_ACTIONS, idx % N_ACTIONS
        plans = plans[parent].at[:, t].set(action)
        return (nxt.reshape(-1, 5)[idx], best, plans), None

    (_, values, plans), _ = jax.lax.scan(expand, (states, values, plans), jnp.arange(horizon))
    return plans[0], values[0]


def plan_policy(plan: Int[Array, "T"]):
    """The open-loop plan as a policy (it ignores the observation)."""
    def act(obs, turn: Int[Array, ""], key: PRNGKeyArray):
        action = plan[turn]
        return action, jnp.array(0.0), jax.nn.one_hot(action, N_ACTIONS)
    return act
