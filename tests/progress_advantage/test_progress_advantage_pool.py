"""The reward models' pool of π_RL episodes, generated on the fly: a fixed finite data set (the
same episode and label at every draw, equal to the materialised pool) drawn from the policy's
law (its mean outcome and mean step-0 label match the policy's exact success probability)."""

import jax
import jax.numpy as jnp
import numpy as np

from repro26.progress_advantage import evaluate as E, model as M, task as T, train

SPEC = T.TaskSpec(modulus=8, horizon=3, n_operands=4, fault=0.1, crash=0.3, risky_from=3)
POLICY = M.MLPPolicy(SPEC, 16, jax.random.PRNGKey(0))
KEY = jax.random.PRNGKey(7)


def test_pool_is_a_fixed_data_set_equal_to_the_materialised_one():
    n, rollouts = 6, 3
    pool = jax.jit(lambda: train.reward_model_data(SPEC, POLICY, KEY, n, rollouts))()
    again = jax.jit(lambda: train.reward_model_data(SPEC, POLICY, KEY, n, rollouts))()
    for k in pool:
        np.testing.assert_array_equal(pool[k], again[k])
    label = jax.jit(lambda i, t: train.step_label(SPEC, POLICY, KEY, i, t, rollouts))
    for i, t in ((0, 0), (4, 2), (5, 1)):
        traj, y = label(i, t)
        assert float(y) == float(pool["label"][i, t])
        np.testing.assert_array_equal(traj["d"], pool["d"][i])
        episode = train.pool_episode(SPEC, POLICY, KEY, i)
        np.testing.assert_array_equal(episode["op"], pool["op"][i])
    outcomes = train.outcome_data(SPEC, POLICY, KEY, n)
    np.testing.assert_array_equal(outcomes["d"], pool["d"])  # the same episodes
    assert np.all(np.asarray(pool["d"][:, 0]) >= 1)  # problems 1..modulus-1
    assert not np.all(np.asarray(pool["d"]) == np.asarray(pool["d"])[0])  # distinct episodes


def test_pool_follows_the_policy_law():
    """E[outcome] and E[label of step 0] over the pool = the policy's exact success."""
    exact = float(E.exact_success(SPEC, E.policy_table(SPEC, POLICY)))
    n = 4000
    outcomes = jax.jit(lambda: train.outcome_data(SPEC, POLICY, KEY, n))()
    success = np.asarray(outcomes["success"], float)
    assert abs(success.mean() - exact) < 4 * np.sqrt(exact * (1 - exact) / n) + 1e-3
    labels = jax.jit(jax.vmap(lambda i: train.step_label(SPEC, POLICY, KEY, i, 0, 2)[1]))(
        jnp.arange(n))
    labels = np.asarray(labels)
    assert abs(labels.mean() - exact) < 4 * labels.std() / np.sqrt(n) + 1e-3
