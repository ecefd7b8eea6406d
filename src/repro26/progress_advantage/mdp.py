"""Tabular KL-regularised RL: soft value iteration and the progress-advantage identity.

A discounted MDP has transitions ``P[s, a, s']``, expected rewards ``R[s, a]`` and a reference
policy ``π_ref[s, a]``. KL-regularised RL maximises E[Σ_t γ^t (r_t − β KL(π(·|s_t) ‖ π_ref(·|s_t)))].
Its optimal (soft) values solve

    Q*(s, a) = R(s, a) + γ Σ_s' P(s'|s, a) V*(s'),
    V*(s)    = β log Σ_a π_ref(a|s) exp(Q*(s, a)/β),

and the optimal policy is π*(a|s) = π_ref(a|s) exp((Q*(s, a) − V*(s))/β). Hence the identity the
paper calls progress advantage, β log π*(a|s)/π_ref(a|s) = A*(s, a) := Q*(s, a) − V*(s), in any
stochastic MDP. For π* itself it holds by construction; what is measured is how well it holds for a
policy *learned* by a finite number of policy-gradient steps (:func:`train_policy_gradient`).

The slippery gridworld (:func:`slippery_gridworld`): moves succeed with probability 1 − slip and
otherwise go in one of the other three directions; entering the goal pays +1, a pit −1, each move
costs ``step_cost``; goal and pits lead to an absorbing state whose soft value is 0.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float

from repro26.core.train import init_train_state, optax_step, run_loop

MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])  # up, right, down, left


class TabularMDP(eqx.Module):
    P: Float[Array, "S A S"]
    R: Float[Array, "S A"]
    gamma: float = eqx.field(static=True)
    decision: Float[Array, " S"]  # 1 where the action matters (not goal, pit, absorbing)


def slippery_gridworld(width: int, pits: tuple[tuple[int, int], ...], slip: float,
                       step_cost: float, gamma: float) -> TabularMDP:
    """Width x width grid, goal in the bottom-right corner, plus one absorbing state."""
    n_cells = width * width
    absorbing = n_cells
    goal = n_cells - 1
    pit_cells = {r * width + c for r, c in pits}
    cell_reward = np.zeros(n_cells + 1)
    cell_reward[goal] = 1.0
    for p in pit_cells:
        cell_reward[p] = -1.0
    P = np.zeros((n_cells + 1, 4, n_cells + 1))
    R = np.zeros((n_cells + 1, 4))
    decision = np.zeros(n_cells + 1)
    for s in range(n_cells + 1):
        if s == absorbing or s == goal or s in pit_cells:
            P[s, :, absorbing] = 1.0
            continue
        decision[s] = 1.0
        r, c = divmod(s, width)
        for a in range(4):
            for m in range(4):
                prob = 1.0 - slip if m == a else slip / 3.0
                nr, nc = r + MOVES[m, 0], c + MOVES[m, 1]
                if not (0 <= nr < width and 0 <= nc < width):
                    nr, nc = r, c
                P[s, a, nr * width + nc] += prob
            R[s, a] = P[s, a] @ cell_reward - step_cost
    return TabularMDP(jnp.asarray(P, jnp.float32), jnp.asarray(R, jnp.float32), gamma,
                      jnp.asarray(decision, jnp.float32))


def random_reference(key: jax.Array, n_states: int, n_actions: int,
                     mix: float = 0.5) -> Float[Array, "S A"]:
    """π_ref = mix · uniform + (1 − mix) · Dirichlet(1): full support, state-dependent."""
    d = jax.random.dirichlet(key, jnp.ones(n_actions), (n_states,))
    return mix / n_actions + (1.0 - mix) * d


def soft_bellman(mdp: TabularMDP, pi_ref, beta: float, V):
    """One soft Bellman backup: ``(Q, V_new)``."""
    Q = mdp.R + mdp.gamma * mdp.P @ V
    V_new = beta * jax.scipy.special.logsumexp(Q / beta, b=pi_ref, axis=-1)
    return Q, V_new


def soft_value_iteration(mdp: TabularMDP, pi_ref, beta: float, tol: float = 1e-6,
                         max_iter: int = 10_000):
    """``(Q*, V*, A*)`` by iterating the soft Bellman backup (a γ-contraction) to ``tol``."""

    def cond(c):
        _, delta, it = c
        return (delta > tol) & (it < max_iter)

    def body(c):
        V, _, it = c
        _, V_new = soft_bellman(mdp, pi_ref, beta, V)
        return V_new, jnp.max(jnp.abs(V_new - V)), it + 1

    V0 = jnp.zeros(mdp.R.shape[0], mdp.R.dtype)
    V, _, _ = jax.lax.while_loop(cond, body, (V0, jnp.asarray(jnp.inf, V0.dtype), 0))
    Q, _ = soft_bellman(mdp, pi_ref, beta, V)
    return Q, V, Q - V[:, None]


def optimal_policy(pi_ref, A, beta: float):
    """π*(a|s) = π_ref(a|s) exp(A*(s, a)/β) (normalised by construction when A* = Q* − V*)."""
    return pi_ref * jnp.exp(A / beta)


def regularised_objective(mdp: TabularMDP, logits, pi_ref, beta: float, start):
    """Exact J(π) = Σ_s μ0(s) V^π(s), V^π = (I − γ P_π)^{-1}(r_π − β KL(π ‖ π_ref))."""
    log_pi = jax.nn.log_softmax(logits, -1)
    pi = jnp.exp(log_pi)
    kl = jnp.sum(pi * (log_pi - jnp.log(pi_ref)), -1)
    r_pi = jnp.sum(pi * mdp.R, -1) - beta * kl
    P_pi = jnp.einsum("sa,sat->st", pi, mdp.P)
    V = jnp.linalg.solve(jnp.eye(P_pi.shape[0]) - mdp.gamma * P_pi, r_pi)
    return start @ V


def weighted_corr(x, y, w):
    """Pearson correlation of ``x`` and ``y`` over the entries with weight ``w`` (0 or 1)."""
    n = jnp.sum(w)
    mx, my = jnp.sum(w * x) / n, jnp.sum(w * y) / n
    cov = jnp.sum(w * (x - mx) * (y - my))
    return cov / jnp.sqrt(jnp.sum(w * (x - mx) ** 2) * jnp.sum(w * (y - my) ** 2) + 1e-30)


class PGData(eqx.Module):
    pi_ref: Float[Array, "S A"]
    A_star: Float[Array, "S A"]
    kl_coef: Float[Array, ""]


def train_policy_gradient(mdp: TabularMDP, pi_ref, A_star, kl_coef, beta: float, steps: int,
                          lr: float, progress: bool = False):
    """Softmax policies trained from π_ref by Adam on the exact gradient of E_{μ0}[V^π] with KL
    coefficient ``kl_coef`` (β for the regularised run, 0 for the unregularised one); μ0 is
    uniform over decision states. Leading axis of ``pi_ref``, ``A_star``, ``kl_coef``: runs
    (vmapped, one compile). Returns the final logits and the per-step correlation of
    β log π/π_ref with A* over decision state-action pairs (``corr``, steps x runs)."""
    start = mdp.decision / jnp.sum(mdp.decision)
    mask = jnp.broadcast_to(mdp.decision[:, None], mdp.R.shape)
    opt = optax.adam(lr)

    def loss(logits, data: PGData, key):
        J = regularised_objective(mdp, logits, data.pi_ref, data.kl_coef, start)
        log_ratio = beta * (jax.nn.log_softmax(logits, -1) - jnp.log(data.pi_ref))
        return -J, {"corr": weighted_corr(log_ratio, data.A_star, mask)}

    one = optax_step(loss, opt)

    def step(state, data, key):
        return jax.vmap(one, in_axes=(0, 0, None))(state, data, key)

    state = jax.vmap(lambda lg: init_train_state(lg, opt))(jnp.log(pi_ref))
    data = PGData(pi_ref, A_star, jnp.asarray(kl_coef, jnp.float32))
    state, hist = run_loop(step, state, data, key=jax.random.PRNGKey(0), num_steps=steps,
                           chunk_size=min(steps, 500), progress=progress, desc="tabular PG")
    return state.model, hist
