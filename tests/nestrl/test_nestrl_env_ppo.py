"""Overcooked wrapper, scripted agents, PPO math and level-k partner sampling of nestrl."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.nestrl import env as E
from repro26.nestrl import losses, train
from repro26.nestrl.cli import partner_inputs
from repro26.nestrl.model import init_agents


@pytest.fixture(scope="module")
def game():
    return E.game("cramped_room", 96)


@pytest.fixture(scope="module")
def solo_run(game):
    """The scripted subtask agent in seat 0 (a random action with probability 0.2, which takes it
    around its partner: in cramped room the partner's cell (3, 1) is on the shortest path to the
    serving counter), its partner standing still, 96 steps."""

    @jax.jit
    def run(key):
        _, state = game.reset(key)
        mem = E.init_memory(jnp.int32(1))

        def body(carry, k):
            state, mem = carry
            k_a, k_env = jax.random.split(k)
            a0, mem = E.scripted_action(game, jnp.int32(1), state, 0, mem, k_a, 3, 0.2)
            _, state, reward, shaped, events = game.step(k_env, state, jnp.stack([a0, E.STAY]))
            return (state, mem), (reward, shaped, events)

        return jax.lax.scan(body, (state, mem), jax.random.split(key, game.horizon))[1]

    return run(jax.random.PRNGKey(0))


def test_step_is_deterministic_for_a_fixed_key(game):
    key = jax.random.PRNGKey(0)
    obs, state = game.reset(key)
    actions = jnp.array([E.RIGHT, E.INTERACT])
    first = game.step(jax.random.PRNGKey(1), state, actions)
    second = game.step(jax.random.PRNGKey(1), state, actions)
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(second)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert obs.shape == (2, game.obs_dim) == (2, 4 * 5 * 26)
    # agent 0 at (1, 1) moves right onto the free cell (2, 1)
    assert np.asarray(first[1].agent_pos[0]).tolist() == [2, 1]


def test_scripted_trajectory_delivers_a_soup_with_the_right_reward(solo_run):
    reward, shaped, events = (np.asarray(x) for x in solo_run)
    first = int(np.argmax(reward > 0))
    assert reward[first] == 20.0  # DELIVERY_REWARD, shared by the team
    assert set(np.unique(reward)) <= {0.0, 20.0}
    # before the first delivery: 3 onions in the pot (3 each), a useful plate (3), the soup (5)
    assert shaped[: first + 1, 0].sum() == 3 * 3 + 3 + 5
    assert shaped[: first + 1, 1].sum() == 0  # the partner stood still
    assert events[: first + 1, 0].sum(0).tolist() == [3.0, 2.0]
    # cooking takes 20 steps after the third onion: no soup before step 3 + 20
    assert first > 23


def test_path_tables_agree_with_manhattan_distance_in_the_open_room(game):
    """In cramped room every free cell sees its targets without detours: the BFS distance to
    'next to a pot' is the Manhattan distance to the nearest free cell adjacent to the pot."""
    dist = np.asarray(game.dist[E.POT])
    pot_neighbours = [(2, 1)]  # the pot at (2, 0) has one free neighbour
    for y, x in zip(*np.nonzero(dist >= 0)):
        manhattan = min(abs(x - px) + abs(y - py) for px, py in pot_neighbours)
        assert dist[y, x] == manhattan


def test_gae_matches_the_recursion_by_hand():
    r = np.array([1.0, 0.0, 2.0])
    v = np.array([0.5, 0.2, 1.0])
    gamma, lam = 0.9, 0.8
    d = [r[0] + gamma * v[1] - v[0], r[1] + gamma * v[2] - v[1], r[2] - v[2]]
    a2 = d[2]
    a1 = d[1] + gamma * lam * a2
    a0 = d[0] + gamma * lam * a1
    adv, target = losses.gae(jnp.asarray(r), jnp.asarray(v), gamma, lam)
    np.testing.assert_allclose(adv, [a0, a1, a2], rtol=1e-6)
    np.testing.assert_allclose(target, np.array([a0, a1, a2]) + v, rtol=1e-6)


def test_ppo_loss_matches_a_hand_computed_example():
    logits = np.array([[0.0, 1.0], [2.0, 0.0]])
    actions = np.array([1, 0])
    old_logp = np.array([-0.5, -0.2])
    adv = np.array([1.0, -1.0])
    values, targets = np.array([0.0, 1.0]), np.array([1.0, 1.0])
    logp_all = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    logp = logp_all[[0, 1], actions]
    a = (adv - adv.mean()) / (adv.std() + 1e-8)
    ratio = np.exp(logp - old_logp)
    surr = np.minimum(ratio * a, np.clip(ratio, 0.8, 1.2) * a)
    entropy = -(np.exp(logp_all) * logp_all).sum(1).mean()
    expected = -surr.mean() + 0.5 * np.mean((values - targets) ** 2) - 0.01 * entropy
    loss, terms = losses.ppo_loss(jnp.asarray(logits), jnp.asarray(values), jnp.asarray(actions),
                                  jnp.asarray(old_logp), jnp.asarray(adv), jnp.asarray(targets),
                                  0.2, 0.5, 0.01)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)
    np.testing.assert_allclose(float(terms["entropy"]), entropy, rtol=1e-5)
    # the clip binds here: ratio of the first sample is exp(log sigmoid(1) + 0.5) > 1.2
    assert ratio[0] > 1.2


def test_level_k_trains_against_level_k_minus_1_only():
    assert partner_inputs("level0", 3) == []
    assert [partner_inputs(f"level{k}", 3) for k in (1, 2, 3)] == [["level0"], ["level1"], ["level2"]]
    # the drawn partners are members of the pool (marked by their critic bias), all of them
    pool = init_agents(8, 4, E.N_ACTIONS, jax.random.split(jax.random.PRNGKey(0), 3))
    pool = eqx.tree_at(lambda p: p.critic.bias, pool, jnp.arange(3.0)[:, None] + 100.0)
    partners, pick = train.draw_partners(jax.random.PRNGKey(1), pool, 64)
    np.testing.assert_array_equal(np.asarray(partners.critic.bias[:, 0]), np.asarray(pick) + 100.0)
    assert set(np.asarray(pick).tolist()) == {0, 1, 2}


def test_population_logp_is_the_log_of_the_mean_policy():
    pop = init_agents(6, 4, E.N_ACTIONS, jax.random.split(jax.random.PRNGKey(2), 2))
    obs = jax.random.normal(jax.random.PRNGKey(3), (5, 3, 6))
    actions = jax.random.randint(jax.random.PRNGKey(4), (5, 3), 0, E.N_ACTIONS)
    got = train.population_logp(pop, obs, actions)
    probs = []
    for m in range(2):
        member = jax.tree.map(lambda x: x[m], pop)
        for b in range(3):
            logits, _ = member.unroll(obs[:, b], jnp.zeros(4))
            probs.append(np.asarray(jax.nn.softmax(logits))[np.arange(5), np.asarray(actions[:, b])])
    mean = (np.stack(probs[:3], 1) + np.stack(probs[3:], 1)) / 2
    np.testing.assert_allclose(np.asarray(got), np.log(mean), rtol=1e-5)


@pytest.mark.parametrize("kind", ["selfplay", "partner"])
def test_every_parameter_learns_under_the_ppo_loss(game, kind):
    """Self-play (level 0, MEP population) and partner rollouts (every NestRL level, FCP, MEP,
    the best response) train the same actor-critic under the same loss: every leaf gets gradient
    in the first PPO steps on real Overcooked rollouts (tiny shapes)."""
    from types import SimpleNamespace

    from repro26.core.learning import assert_every_parameter_learns

    cfg = SimpleNamespace(num_envs=2, gamma=0.99, gae_lambda=0.95, clip_eps=0.2, vf_coef=0.5,
                          ent_coef=0.01, partner_eps=(0.0, 1.0))
    short = E.game("cramped_room", 16)
    agents = init_agents(short.obs_dim, 4, E.N_ACTIONS, jax.random.split(jax.random.PRNGKey(5), 3))
    model = jax.tree.map(lambda x: x[0], agents)
    keys = jax.random.split(jax.random.PRNGKey(6), 3)
    if kind == "selfplay":
        rollout = jax.jit(lambda k: train.rollout_selfplay(short, cfg, model, k, jnp.zeros(2), 1.0)[0])
    else:
        pool = jax.tree.map(lambda x: x[1:], agents)
        rollout = jax.jit(lambda k: train.rollout_partner(short, cfg, model, pool, k, 1.0)[0])
    batches = [train.with_advantages(cfg, rollout(k)) for k in keys]
    assert_every_parameter_learns(model, lambda m, b: train.sequence_loss(cfg, m, b)[0], batches)


def test_partner_curriculum_shaping_schedule_and_per_episode_levels():
    """The lazy-agent fix (issue 40): the partner's random-action floor falls linearly from 1 to 0
    over ``partner_anneal`` of the updates (0 turns it off); per episode the noise is a level of
    ``partner_eps``, at least the floor; with noise 1 the partner's actions do not depend on the
    partner (two different pools give the same rollout under the same key)."""
    from types import SimpleNamespace

    cfg = SimpleNamespace(updates=100, partner_anneal=0.5)
    got = [float(train.partner_noise(cfg, u)) for u in (0, 25, 50, 99)]
    np.testing.assert_allclose(got, [1.0, 0.5, 0.0, 0.0], atol=1e-6)
    assert float(train.partner_noise(SimpleNamespace(updates=100, partner_anneal=0.0), 0)) == 0.0
    # shaping: annealed over shaped_anneal of the updates from the start for self-play, from the
    # curriculum's end for partner-trained learners
    sched = SimpleNamespace(updates=100, partner_anneal=0.5, shaped_anneal=0.5)
    at = lambda selfplay: [float(train.shaped_coef(sched, u, selfplay)) for u in (0, 25, 50, 75, 99)]
    np.testing.assert_allclose(at(True), [1.0, 0.5, 0.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(at(False), [1.0, 1.0, 1.0, 0.5, 0.02], atol=1e-6)

    short = E.game("cramped_room", 8)
    agents = init_agents(short.obs_dim, 4, E.N_ACTIONS, jax.random.split(jax.random.PRNGKey(8), 3))
    model = jax.tree.map(lambda x: x[0], agents)
    pool_a, pool_b = (jax.tree.map(lambda x: x[i:i + 1], agents) for i in (1, 2))
    run = lambda c, pool, floor: train.rollout_partner(short, c, model, pool,
                                                       jax.random.PRNGKey(9), 1.0, floor)
    mixed = SimpleNamespace(num_envs=32, partner_eps=(0.0, 1.0))
    eps = np.asarray(run(mixed, pool_a, 0.0)[2])
    assert set(eps.tolist()) == {0.0, 1.0}
    np.testing.assert_array_equal(np.asarray(run(mixed, pool_a, 1.0)[2]), 1.0)
    random = SimpleNamespace(num_envs=4, partner_eps=(1.0,))
    ta, tb = run(random, pool_a, 0.0)[0], run(random, pool_b, 0.0)[0]
    np.testing.assert_array_equal(np.asarray(ta["obs"]), np.asarray(tb["obs"]))
    tc = run(SimpleNamespace(num_envs=4, partner_eps=(0.0,)), pool_b, 0.0)[0]
    assert not np.array_equal(np.asarray(ta["obs"]), np.asarray(tc["obs"]))
    # the scripted share: with 4 learned + 2 scripted episodes the scripted ones get no noise
    # level and no curriculum (eps 0 at floor 1, where every learned partner is random) and their
    # partner is the scripted
    # role-switcher, not the pool: the same rollout with either pool, another one when the
    # scripted partner acts at random (its own noise 1)
    sc = lambda pool, s_eps: train.rollout_partner(short, random, model, pool, jax.random.PRNGKey(9),
                                                   1.0, 1.0, n_learned=4, n_scripted=2,
                                                   scripted=(6, s_eps))
    (sa, _, eps_s), (sb, _, _), (sr, _, _) = sc(pool_a, 0.0), sc(pool_b, 0.0), sc(pool_a, 1.0)
    np.testing.assert_array_equal(np.asarray(eps_s), [1, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(np.asarray(sa["obs"]), np.asarray(sb["obs"]))
    assert not np.array_equal(np.asarray(sa["obs"][:, 4:]), np.asarray(sr["obs"][:, 4:]))


def test_reward_scale_leaves_the_policy_term_and_scales_the_value_term():
    """``reward_scale`` s (issue 40): GAE is linear, so with values scaled alike the advantages
    and targets scale by s; the policy term (normalised advantages) and the entropy are
    unchanged and the value term scales by s^2 -- the scale sets only how much the value loss
    weighs against the policy gradient in the shared GRU."""
    k = jax.random.split(jax.random.PRNGKey(7), 4)
    rewards = 20.0 * jax.random.bernoulli(k[0], 0.1, (12, 5)).astype(jnp.float32)
    values = 10.0 * jax.random.uniform(k[1], (12, 5))
    logits = jax.random.normal(k[2], (12, 5, E.N_ACTIONS))
    actions = jax.random.randint(k[3], (12, 5), 0, E.N_ACTIONS)
    # old log-probabilities off by up to +-0.3 (some ratios clipped, the policy term nonzero)
    old_logp = (jax.nn.log_softmax(logits)[jnp.arange(12)[:, None], jnp.arange(5), actions]
                + 0.3 * jax.random.uniform(jax.random.PRNGKey(8), (12, 5), minval=-1, maxval=1))
    s = 0.05
    adv, tgt = losses.gae(rewards, values, 0.99, 0.95)
    adv_s, tgt_s = losses.gae(s * rewards, s * values, 0.99, 0.95)
    np.testing.assert_allclose(np.asarray(adv_s), s * np.asarray(adv), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tgt_s), s * np.asarray(tgt), rtol=1e-5, atol=1e-6)
    _, t = losses.ppo_loss(logits, values, actions, old_logp, adv, tgt, 0.2, 0.5, 0.01)
    _, t_s = losses.ppo_loss(logits, s * values, actions, old_logp, adv_s, tgt_s, 0.2, 0.5, 0.01)
    assert abs(float(t["policy"])) > 1e-3
    np.testing.assert_allclose(float(t_s["policy"]), float(t["policy"]), rtol=1e-4)
    np.testing.assert_allclose(float(t_s["entropy"]), float(t["entropy"]), rtol=1e-6)
    np.testing.assert_allclose(float(t_s["value"]), s**2 * float(t["value"]), rtol=1e-4)
