"""The reward on scripted rollouts: walking the whole episode is worth clearly more than any
lunge that falls early (issue 42), and standing still earns nothing."""

import jax
import jax.numpy as jnp
import numpy as np

from repro26.rat_ncap.losses import RewardSpec, reward_update

DT = 0.004
SPEC = RewardSpec(w_track=1.0, w_energy=0.02, track_tol=1.0)


@jax.jit
def fitness(vx, upright, cot, v_cmd):
    """Fitness of scripted episodes ``(B, T)``: the rollout's per-step update, summed over the
    upright steps and divided by the episode length (as :func:`~repro26.rat_ncap.losses.rollout`)."""

    def step(carry, x):
        return reward_update(*carry, *x, v_cmd, DT, SPEC), None

    b, n = vx.shape
    carry = (jnp.zeros(b), jnp.ones(b, bool), jnp.zeros(b))
    (_, _, total), _ = jax.lax.scan(step, carry, (vx.T, upright.T, cot.T))
    return total / n


def episodes(speed_factor, fall_s, cot, v_cmd, seconds):
    """Episodes moving at ``speed_factor`` x ``v_cmd`` from the start, upright until ``fall_s``."""
    t = np.arange(int(round(seconds / DT))) * DT
    vx = np.asarray(speed_factor, np.float32)[:, None] * v_cmd * np.ones_like(t)[None]
    upright = t[None] < np.asarray(fall_s)[:, None]
    return fitness(jnp.asarray(vx), jnp.asarray(upright), jnp.full(vx.shape, cot, jnp.float32), v_cmd)


def test_walking_the_whole_episode_beats_every_early_lunge():
    for v_cmd in (0.1, 0.3):
        for seconds in (2.0, 4.0):  # the small scale's training and evaluation episodes
            # the slowest and fastest walks in the success band, at a high cost of transport
            walk = episodes([0.5, 1.0, 1.5], [np.inf] * 3, 2.0, v_cmd, seconds)
            # lunges at any speed up to 5x the command, falling within the first quarter, for free
            grid = np.array([(u, f) for u in np.linspace(0.0, 5.0, 21)
                             for f in np.linspace(0.1, seconds / 4, 8)])
            lunge = episodes(grid[:, 0], grid[:, 1], 0.0, v_cmd, seconds)
            assert float(jnp.min(walk)) >= 2.0 * float(jnp.max(lunge)), (v_cmd, seconds)


def test_standing_still_earns_nothing_and_a_fall_ends_the_reward():
    stand = episodes([0.0], [np.inf], 0.0, 0.2, 3.0)
    assert abs(float(stand[0])) < 1e-6
    on, fallen = episodes([1.0, 1.0], [np.inf, 1.5], 0.0, 0.2, 3.0)
    # same motion; the fallen episode keeps only (about) the first half of the reward
    assert 0.4 * float(on) < float(fallen) < 0.5 * float(on)
    # and a faster-than-commanded gait earns less than the commanded one
    fast = episodes([1.8], [np.inf], 0.0, 0.2, 3.0)
    assert float(fast[0]) < float(on)
