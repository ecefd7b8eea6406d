"""The ideal row's planner against exhaustive search, and every policy parameter learns under
each trained method's PPO signal."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.core.learning import assert_every_parameter_learns
from repro26.nemo import solvers, train
from repro26.nemo.simulator import N_ACTIONS, MindFlow, Persona, rollout

EFFECTS = jnp.array([[0.15, 0.35], [0.35, 0.2], [0.6, 0.05], [0.35, 0.1], [0.65, 0.02],
                     [0.05, 0.7], [0.02, 0.6], [0.1, 0.1]])
RANGES = {"arousal_peak": (0.3, 0.6), "arousal_width": (0.12, 0.25),
          "affective_gain": (0.2, 0.4), "deliberative_gain": (0.2, 0.4),
          "reactivity": (0.1, 0.3), "baseline_distress": (0.6, 0.9)}


def env(horizon=3, noise=0.0):
    return MindFlow(EFFECTS, 0.1, noise, 0.05, 0.1, horizon, "mindflow")


PERSONA = Persona(*(jnp.asarray(v) for v in (0.45, 0.18, 0.3, 0.3, 0.2, 0.8)))


def replay_value(e, plan, objective, key):
    """The objective of playing ``plan`` from the opening state of ``key`` (a loop over the
    turns, independent of the beam search)."""
    x = e.reset(PERSONA, jax.random.split(key)[0])
    total = 0.0
    for t in range(plan.shape[0]):
        nxt = e.transition(PERSONA, x, plan[t].astype(jnp.int32), jax.random.PRNGKey(0))
        total += solvers.turn_value(e, PERSONA, x, nxt, objective)
        x = nxt
    return total


def brute_force_values(e, objective, key):
    """The replayed objective of every plan of ``N_ACTIONS ** 3`` (vmapped, one compile)."""
    plans = jnp.array(list(itertools.product(range(N_ACTIONS), repeat=3)))
    return jax.jit(jax.vmap(lambda p: replay_value(e, p, objective, key)))(plans)


@pytest.mark.parametrize("objective", solvers.OBJECTIVES)
def test_exhaustive_beam_finds_the_brute_force_optimum(objective):
    e, key = env(horizon=3), jax.random.PRNGKey(5)
    x0 = e.reset(PERSONA, jax.random.split(key)[0])
    plan, value = jax.jit(solvers.beam_plan, static_argnums=(3, 4))(
        e, PERSONA, x0, objective, N_ACTIONS ** 3)
    brute = float(brute_force_values(e, objective, key).max())
    assert float(value) == pytest.approx(brute, abs=1e-5)
    assert float(replay_value(e, jnp.asarray(plan), objective, key)) == pytest.approx(brute,
                                                                                      abs=1e-5)
    # a narrow beam is a lower bound
    _, narrow = solvers.beam_plan(e, PERSONA, x0, objective, 2)
    assert float(narrow) <= brute + 1e-6


def test_plan_policy_plays_the_plan():
    e = env(horizon=4, noise=0.02)
    plan = jnp.array([2, 4, 5, 6])
    traj = rollout(e, PERSONA, solvers.plan_policy(plan), jax.random.PRNGKey(1))
    np.testing.assert_array_equal(traj["action"], plan)


class PPO:
    users_per_batch, epochs, learning_rate, clip_eps, entropy_coef = 4, 2, 3e-3, 0.2, 0.01
    width, lookahead, iterations, chunk_size = 8, 2, 2, 2


def _loss(policy, batch):
    return train.batch_loss(policy, batch, PPO)[0]


# one compile of the batch for every method: the method enters as arrays (weights, flag, depth)
_ppo_batch = eqx.filter_jit(lambda policy, key, fixed, need_aware, depth: train.ppo_batch(
    env(horizon=4, noise=0.02), RANGES, PPO, policy, key, fixed, need_aware, depth)[0])


@pytest.mark.parametrize("method", train.TRAINED)
def test_every_policy_parameter_learns(method):
    policy = train.Policy(jax.random.PRNGKey(0), PPO.width)
    fixed, need_aware = train.method_weights(method)
    depth = train.method_depth(method, PPO.lookahead)
    batches = [_ppo_batch(policy, jax.random.PRNGKey(k), fixed, need_aware, depth)
               for k in range(3)]
    assert_every_parameter_learns(policy, _loss, batches)
