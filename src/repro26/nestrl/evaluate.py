"""Play every (ego, partner) pair and write one tidy table, ``pairs.csv``.

An *actor* is a learned agent (GRU; a learned ego takes its most likely action when
``ego_actions`` is ``greedy``, else a draw from its policy; a learned partner always draws) or a
scripted one (``env.SCRIPTED``, memory kept across episodes). Each pair plays ``eval_envs``
episodes in parallel (half with the ego in seat 0, half in seat 1), ``eval_repeats`` times in a
row with the same partner, and that twice with the same keys: the ego's recurrent state reset at
every episode start, and carried over from the previous episode. Per pair the table holds the mean
team return (20 per soup, reset), its quarters, the return of each repeated episode (reset,
``episode<j>``; carried, ``carried<j>``) and the adaptability over the repeats,
``adapt = mean_{j >= 2} (carried_j - episode_j)``: what the ego gains from remembering the partner.
Both runs start each episode from the same empty kitchen, so the wait for a first soup is the
same in both and cancels. The reset returns are also kept per half of the envs
(``episode<j>_half<k>``, each half with both seats), two independent estimates from which the
claims cross-fit the partner-aware oracle of the ideal row (``claims.oracle_cell``). A pair with
a scripted role-switching proxy is played ``proxy_replicas`` times with independent keys and
fresh memories and its row holds the mean over them: the two proxies weigh as much in the
held-out return as all learned held-out partners together, so their evaluation noise would
otherwise dominate it (issue 40).

Egos: the self-play agent (level-0 self-play member 0), FCP, MEP, the level-k agents (member 0),
the best response ``br`` (trained against the held-out learned partners of its seed), and the
trivial baselines ``random`` and ``subtask``, each per seed. Partners: every learned agent above
but ``br`` of every seed and the four scripted agents. ``partner_group`` says how a partner
relates to the ego: ``self`` (the ego itself), ``same_seed`` (same seed, other agent),
``heldout_learned`` (any learned agent of another seed: self-play, FCP, MEP, every level), ``proxy``
(the scripted role-switching human proxies), ``other`` (the scripted random and subtask agents).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from repro26.nestrl import env as E
from repro26.nestrl.model import ActorCritic
from repro26.nestrl.names import BEST_RESPONSE, PROXIES, TRIVIAL, ego_types

def partner_group(ego_type, ego_seed, partner_type, partner_seed) -> str:
    if partner_type in PROXIES:
        return "proxy"
    if partner_type == ego_type and partner_seed == ego_seed:
        return "self"
    if partner_seed == ego_seed and partner_seed >= 0:
        return "same_seed"
    if partner_seed >= 0 and partner_seed != ego_seed:
        return "heldout_learned"
    return "other"


def play_pairs(cfg, game: E.Game, agents: ActorCritic, pairs: np.ndarray, key):
    """Returns per pair ``(quarters[R, 4], episode returns[R], carried episode returns[R],
    episode returns per half of the envs[R, 2])``, means over envs (or each half's).

    ``pairs[i] = (ego kind, ego index, partner kind, partner index)`` where kind 0 is a learned
    agent (its index into the stacked ``agents``) and kind 1 + j is ``SCRIPTED[j]``. Each pair
    plays its ``R = eval_repeats`` episodes twice with the same keys: once with the ego's
    recurrent state reset to 0 at every episode start (``quarters`` and the episode returns),
    once with it carried over from the previous episode (the carried returns); the partner is
    treated alike in both (a learned partner reset, a scripted proxy's role kept)."""
    n, horizon, repeats = cfg.eval_envs, game.horizon, cfg.eval_repeats
    seat = (jnp.arange(n) % 2).astype(jnp.int32)  # the ego's seat
    rows = jnp.arange(n)

    def act(kind, model, obs, h, mem, state, seats, key, greedy: bool):
        """Actions of one actor in every env (learned and scripted computed, kind selects);
        a learned actor takes ``argmax`` of its logits when ``greedy``, else samples them."""
        k_pi, k_s = jax.random.split(key)
        logits, _, h = jax.vmap(model)(obs, h)
        learned = (jnp.argmax(logits, -1) if greedy
                   else jax.random.categorical(k_pi, logits))
        scripted, mem = jax.vmap(lambda st, s, m, k: E.scripted_action(
            game, jnp.maximum(kind - 1, 0), st, s, m, k, cfg.patience, cfg.scripted_eps))(
            state, seats, mem, jax.random.split(k_s, n))
        return jnp.where(kind == 0, learned, scripted), h, mem

    def one_pair(pair, key):
        ego_kind, ego_idx, p_kind, p_idx = pair[0], pair[1], pair[2], pair[3]
        ego = jax.tree.map(lambda x: x[ego_idx], agents)
        partner = jax.tree.map(lambda x: x[p_idx], agents)
        mem0 = jax.vmap(lambda _: E.init_memory(jnp.maximum(ego_kind - 1, 0)))(rows)
        mem1 = jax.vmap(lambda _: E.init_memory(jnp.maximum(p_kind - 1, 0)))(rows)
        h0 = jnp.zeros((n, ego.hidden))

        def episodes(carry_ego: bool):
            def episode(carry, k):
                m_ego, m_p, h_last = carry
                k_reset, k_run = jax.random.split(k)
                obs, state = jax.vmap(game.reset)(jax.random.split(k_reset, n))
                h_start = h_last if carry_ego else h0

                def step(carry, k):
                    obs, state, h_e, h_p, m_e, m_p = carry
                    k_e, k_p, k_env = jax.random.split(k, 3)
                    a_e, h_e, m_e = act(ego_kind, ego, obs[rows, seat], h_e, m_e, state, seat, k_e,
                                        cfg.ego_actions == "greedy")
                    a_p, h_p, m_p = act(p_kind, partner, obs[rows, 1 - seat], h_p, m_p, state,
                                        1 - seat, k_p, False)
                    joint = jnp.where(seat[:, None] == 0, jnp.stack([a_e, a_p], 1),
                                      jnp.stack([a_p, a_e], 1))
                    obs, state, reward, _, _ = jax.vmap(game.step)(jax.random.split(k_env, n),
                                                                  state, joint)
                    return (obs, state, h_e, h_p, m_e, m_p), reward

                (_, _, h_end, _, m_ego, m_p), rewards = jax.lax.scan(
                    step, (obs, state, h_start, h0, m_ego, m_p), jax.random.split(k_run, horizon))
                quarters = rewards.reshape(4, horizon // 4, n).sum(1).mean(-1)
                halves = rewards.sum(0).reshape(2, n // 2).mean(-1)
                return (m_ego, m_p, h_end), (quarters, halves)

            return jax.lax.scan(episode, (mem0, mem1, h0), jax.random.split(key, repeats))[1]

        (quarters, halves), (carried, _) = episodes(False), episodes(True)
        return quarters, quarters.sum(-1), carried.sum(-1), halves

    keys = jax.random.split(key, len(pairs))
    run = jax.jit(lambda p, k: jax.lax.map(lambda pk: one_pair(*pk), (p, k),
                                           batch_size=cfg.eval_batch))
    return tuple(map(np.asarray, run(jnp.asarray(pairs, jnp.int32), keys)))


def actor_table(cfg, trained: dict[str, ActorCritic]):
    """The evaluated actors: ``(names, seeds, kinds, indices, stacked learned agents)``.

    ``trained[type]`` holds agents with leading axis [seed], for every type of
    :func:`ego_types` and the best response ``br``."""
    names, seeds, kinds, index, stacked = [], [], [], [], []
    for t in (*ego_types(cfg), BEST_RESPONSE):
        for s_i, seed in enumerate(cfg.seeds):
            names.append(t), seeds.append(seed), kinds.append(0), index.append(len(stacked))
            stacked.append(jax.tree.map(lambda x: x[s_i], trained[t]))
    for j, name in enumerate(E.SCRIPTED):
        names.append(name), seeds.append(-1), kinds.append(1 + j), index.append(0)
    agents = jax.tree.map(lambda *xs: jnp.stack(xs), *stacked)
    return names, seeds, kinds, index, agents


def evaluate(cfg, game: E.Game, trained: dict[str, ActorCritic], key) -> list[dict]:
    """Rows of ``pairs.csv`` for one layout."""
    names, seeds, kinds, index, agents = actor_table(cfg, trained)
    learned = [i for i, k in enumerate(kinds) if k == 0]
    egos = [(i, names[i], seeds[i]) for i in learned]
    egos += [(names.index(t), t, s) for t in TRIVIAL for s in cfg.seeds]  # trivial egos per seed
    partners = [i for i in range(len(names)) if names[i] != BEST_RESPONSE]
    spec, meta, owner = [], [], []
    for e, e_name, e_seed in egos:
        for p in partners:
            meta.append((e_name, e_seed, names[p], seeds[p]))
            for _ in range(cfg.proxy_replicas if names[p] in PROXIES else 1):
                spec.append((kinds[e], index[e], kinds[p], index[p]))
                owner.append(len(meta) - 1)
    owner = np.asarray(owner)
    counts = np.bincount(owner, minlength=len(meta))

    def pair_mean(x):  # mean over each pair's replicas
        sums = np.zeros((len(meta), *x.shape[1:]))
        np.add.at(sums, owner, x)
        return sums / counts.reshape(-1, *([1] * (x.ndim - 1)))

    quarters, returns, carried, halves = map(pair_mean, play_pairs(cfg, game, agents,
                                                                   np.asarray(spec), key))
    rows = []
    for (e_name, e_seed, p_name, p_seed), q, r, c, h in zip(meta, quarters, returns, carried,
                                                            halves):
        row = {"layout": game.name, "ego": e_name, "seed": e_seed, "partner": p_name,
               "partner_seed": p_seed,
               "partner_group": partner_group(e_name, e_seed, p_name, p_seed),
               "return": float(r.mean()), "adapt": float(np.mean(c[1:] - r[1:]))}
        row.update({f"q{i + 1}": float(q[:, i].mean()) for i in range(4)})
        row.update({f"episode{j + 1}": float(r[j]) for j in range(len(r))})
        row.update({f"carried{j + 1}": float(c[j]) for j in range(len(c))})
        row.update({f"episode{j + 1}_half{k + 1}": float(h[j, k])
                    for j in range(len(h)) for k in range(2)})
        rows.append(row)
    return rows
