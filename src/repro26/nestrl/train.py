"""IPPO-style PPO for every learned agent, all seeds and population members of one job vmapped,
driven by ``repro26.core.train.run_loop`` (one PPO update = one step; resumable).

Every rollout is ``num_envs`` whole episodes of ``horizon`` steps, so the GRU starts from zero at
the rollout's start and minibatches are whole sequences (recomputed exactly in the update).
The learner's reward is the shared sparse reward (20 per soup) plus jaxmarl's shaping
scaled by ``1 - (update - start) / (shaped_anneal * updates)`` clipped to [0, 1] (annealed to 0,
as in Carroll et al. 2019; ``start`` = 0 for self-play kinds, the end of the partner curriculum,
``partner_anneal * updates``, for partner-trained learners: :func:`shaped_coef`)
plus, for reward-biased level-0 members, ``bias · events`` (onion into a pot, plate or soup
picked up; never annealed: it is their utility), all of it times ``reward_scale`` (0.05: a soup
is worth 1). The scale leaves the policy term unchanged (normalised advantages) and sets how much
the value loss weighs in the GRU the actor and critic share; unscaled, value targets of tens of
points swamp the policy gradient under global-norm clipping and self-play barely learns (issue 40).

Training kinds (``train_kinds(cfg)``):
* ``level0``: self-play members and reward-biased self-play members (the level-0 population);
  keeps ``fcp_snapshots`` snapshots of every member along training (for FCP);
* ``level<k>``: ``level_size`` learners, each episode paired with a partner drawn uniformly from
  the *level k-1* agents of the same seed, seat drawn uniformly;
* ``fcp``: one learner against the level-0 self-play members and their snapshots (FCP);
* ``mep_pop``: self-play members with the population-entropy bonus
  ``alpha * -log((1/M) sum_m pi_m(a_t | history))`` added to the reward (MEP, Zhao et al. 2023);
* ``mep``: one learner against the final MEP population (uniform, not prioritised sampling);
* ``br``: one learner against the held-out learned partners of its seed (every evaluated learned
  agent of the other seeds), same budget and same scripted share as every learner; one of the
  agents the ideal row's oracle chooses from (``claims.oracle_cell``).

Scripted share (every kind alike, the best response included, issue 40): the last
``round(scripted_share x num_envs)`` episodes of every rollout pair the learner (its seat only)
with a scripted role-switcher (``proxy_onion`` / ``proxy_plate`` alternating, ``train_patience``
and ``train_scripted_eps``, not the held-out proxies' ``patience`` and ``scripted_eps``), the
other episodes are played as above; env and gradient steps per learner are unchanged. Alone, a
role-switcher with a fixed role never delivers (an onion-carrier waits at a full pot, a
plate-carrier at an empty one), so these episodes pay only a learner that works. (Issue 40: the
best response met the held-out proxies here instead; they paid it 1-6 points along all of
training, and at 4 seeds two of its seeds went passive, 0.5 and 0.9 with a random partner.)

Schedule (JaxMARL's IPPO Overcooked, ``baselines/IPPO``): ``epochs`` passes of ``minibatches``
minibatches per update, Adam's learning rate annealed linearly to 0 over the job's gradient steps,
the shaping annealed to 0 over ``shaped_anneal`` of the updates (from the start, or from the end
of the partner curriculum).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core.train import TrainState, init_train_state, run_loop
from repro26.nestrl import losses
from repro26.nestrl.env import N_ACTIONS, SCRIPTED, Game, init_memory, scripted_action
from repro26.nestrl.model import ActorCritic, init_agents


def gradient_steps(cfg) -> int:
    """Optimiser steps per learner over a job: ``updates x epochs x minibatches``."""
    return cfg.updates * cfg.epochs * cfg.minibatches


def optimizer(cfg) -> optax.GradientTransformation:
    """Adam with the learning rate annealed linearly from ``learning_rate`` to 0 over the job's
    gradient steps (JaxMARL's IPPO ``ANNEAL_LR``), after global-norm clipping."""
    lr = optax.linear_schedule(cfg.learning_rate, 0.0, gradient_steps(cfg))
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr))


def shaped_coef(cfg, update, selfplay: bool = True) -> jax.Array:
    """Weight of the shaped reward: 1, then annealed linearly to 0 over ``shaped_anneal`` x
    updates, starting at update 0 for self-play kinds and, for partner-trained learners, when
    the partner curriculum ends (``partner_anneal`` x updates; issue 40: shaping that vanishes
    while the partner is still mostly random leaves some learners passive)."""
    start = 0.0 if selfplay else cfg.partner_anneal * cfg.updates
    return jnp.clip(1.0 - (update - start) / (cfg.shaped_anneal * cfg.updates), 0.0, 1.0)


def _sample(key, logits):
    action = jax.random.categorical(key, logits)
    return action, jax.nn.log_softmax(logits)[action]


# ----------------------------------------------------------------------------- rollouts


def rollout_selfplay(game: Game, cfg, agent: ActorCritic, key, bias, coef, n: int | None = None):
    """The agent in both seats of ``n`` (default ``num_envs``) episodes; both seats are training
    data. Returns sequences with time first: obs[T, 2n, D], actions, logp, values, rewards[T, 2n]
    and the sparse team return per episode [n]."""
    n = cfg.num_envs if n is None else n
    k_reset, k_run = jax.random.split(key)
    obs, state = jax.vmap(game.reset)(jax.random.split(k_reset, n))
    both = jax.vmap(jax.vmap(agent, in_axes=(0, 0)), in_axes=(0, 0))  # envs x seats

    def body(carry, k):
        obs, state, h = carry
        k_act, k_env = jax.random.split(k)
        logits, value, h = both(obs, h)
        action, logp = jax.vmap(jax.vmap(_sample))(jax.random.split(k_act, (n, 2)), logits)
        nobs, state, sparse, shaped, events = jax.vmap(game.step)(
            jax.random.split(k_env, n), state, action)
        reward = sparse[:, None] + coef * shaped + events @ bias
        return (nobs, state, h), (obs, action, logp, value, reward, sparse)

    h0 = jnp.zeros((n, 2, agent.hidden))
    _, (o, a, lp, v, r, sparse) = jax.lax.scan(body, (obs, state, h0),
                                               jax.random.split(k_run, game.horizon))
    flat = lambda x: x.reshape(x.shape[0], 2 * n, *x.shape[3:])
    return {"obs": flat(o), "actions": flat(a), "logp": flat(lp), "values": flat(v),
            "rewards": flat(r)}, sparse.sum(0)


def draw_partners(key, pool: ActorCritic, n: int):
    """``(partners[n], indices[n])``: one partner per episode, uniform over the pool's members
    (the pool holds only the level below, so nothing else can be drawn)."""
    pick = jax.random.randint(key, (n,), 0, jax.tree.leaves(pool)[0].shape[0])
    return jax.tree.map(lambda x: x[pick], pool), pick


def partner_noise(cfg, update) -> jax.Array:
    """Curriculum floor of the partner's random-action probability: 1 (a random partner) at the
    start, annealed linearly to 0 by ``partner_anneal`` x updates (0: no curriculum)."""
    if cfg.partner_anneal <= 0:
        return jnp.float32(0.0)
    return jnp.clip(1.0 - update / (cfg.partner_anneal * cfg.updates), 0.0, 1.0)


def scripted_episodes(cfg) -> int:
    """Episodes per rollout (of ``num_envs``) whose partner is a scripted role-switcher, the same
    number for every learner kind, self-play included (issue 40: learners never met a scripted
    agent and failed with the scripted human proxies)."""
    return int(round(cfg.scripted_share * cfg.num_envs))


def rollout_partner(game: Game, cfg, agent: ActorCritic, pool: ActorCritic | None, key, coef,
                    floor=0.0, *, n_learned: int | None = None, n_scripted: int = 0, bias=None,
                    scripted: tuple[int, float] = (3, 0.1)):
    """The agent in a uniformly drawn seat of ``n_learned + n_scripted`` episodes (default
    ``num_envs`` + 0). In the first ``n_learned`` the partner is drawn uniformly from ``pool``
    (stacked agents, leading axis P); in the last ``n_scripted`` it is a scripted role-switcher,
    ``proxy_onion`` and ``proxy_plate`` alternating, with ``scripted = (patience, eps)``. Only the
    learner's seat is training data; its reward is the sparse reward plus ``coef`` x its shaping
    plus ``bias · events`` (a reward-biased level-0 member).

    Per learned-partner episode a partner noise ``eps`` is drawn uniformly from
    ``cfg.partner_eps``, at least ``floor`` (the curriculum of :func:`partner_noise`); at every
    step the partner's action is replaced by a uniform random one with probability ``eps``
    (``eps = 1``: a random partner, like FCP's initial checkpoint). Scripted episodes get no such
    noise and no curriculum (``eps = 0``): the role-switcher does its half of the work from the
    first update, which a learner can complete (issue 40: with the curriculum on them too, FCP
    seed 1 stayed passive). Returns the rollout, the sparse team return per episode [n] and the
    per-episode ``eps`` [n]."""
    n_l = cfg.num_envs if n_learned is None else n_learned
    n = n_l + n_scripted
    bias = jnp.zeros(2) if bias is None else bias
    patience, s_eps = scripted
    k_reset, k_pick, k_seat, k_run, k_eps = jax.random.split(key, 5)
    seat = jax.random.randint(k_seat, (n,), 0, 2)
    levels = jnp.asarray(cfg.partner_eps, jnp.float32)
    drawn = levels[jax.random.randint(k_eps, (n_l,), 0, levels.shape[0])]
    eps = jnp.concatenate([jnp.maximum(drawn, floor), jnp.zeros(n_scripted)])
    kinds = jnp.asarray([SCRIPTED.index(("proxy_onion", "proxy_plate")[j % 2])
                         for j in range(n_scripted)], jnp.int32)
    obs, state = jax.vmap(game.reset)(jax.random.split(k_reset, n))
    rows = jnp.arange(n)
    partners = draw_partners(k_pick, pool, n_l)[0] if n_l else None
    hp0 = jnp.zeros((n_l, agent.hidden))  # the partners' GRU states (same width as the learner)

    def partner_actions(obs_p, state, hp, mem, k):
        """The partners' actions [n]: learned ones in the first n_l envs, scripted after."""
        k_l, k_s = jax.random.split(k)
        acts = []
        if n_l:
            p_logits, _, hp = jax.vmap(lambda m, o, hh: m(o, hh))(partners, obs_p[:n_l], hp)
            acts.append(jax.random.categorical(k_l, p_logits))
        if n_scripted:
            sub = jax.tree.map(lambda x: x[n_l:], state)
            a_s, mem = jax.vmap(lambda kd, st, s, m, kk: scripted_action(
                game, kd, st, s, m, kk, patience, s_eps))(
                kinds, sub, 1 - seat[n_l:], mem, jax.random.split(k_s, n_scripted))
            acts.append(a_s)
        return jnp.concatenate(acts), hp, mem

    def body(carry, k):
        obs, state, h, hp, mem = carry
        k_a, k_p, k_env, k_n, k_u = jax.random.split(k, 5)
        logits, value, h = jax.vmap(agent)(obs[rows, seat], h)
        action, logp = jax.vmap(_sample)(jax.random.split(k_a, n), logits)
        p_action, hp, mem = partner_actions(obs[rows, 1 - seat], state, hp, mem, k_p)
        p_action = jnp.where(jax.random.uniform(k_n, (n,)) < eps,
                             jax.random.randint(k_u, (n,), 0, N_ACTIONS), p_action)
        joint = jnp.where(seat[:, None] == 0, jnp.stack([action, p_action], 1),
                          jnp.stack([p_action, action], 1))
        nobs, state, sparse, shaped, events = jax.vmap(game.step)(
            jax.random.split(k_env, n), state, joint)
        reward = sparse + coef * shaped[rows, seat] + events[rows, seat] @ bias
        return (nobs, state, h, hp, mem), (obs[rows, seat], action, logp, value, reward, sparse)

    h0 = jnp.zeros((n, agent.hidden))
    mem0 = jax.vmap(init_memory)(kinds)
    _, (o, a, lp, v, r, sparse) = jax.lax.scan(body, (obs, state, h0, hp0, mem0),
                                               jax.random.split(k_run, game.horizon))
    return {"obs": o, "actions": a, "logp": lp, "values": v, "rewards": r}, sparse.sum(0), eps


def population_logp(population: ActorCritic, obs, actions):
    """log of the population's mean policy, log (1/M) sum_m pi_m(a_t | o_{<=t}), along
    sequences obs[T, B, D] (each member's GRU unrolled on the same histories)."""
    def member(m):
        hidden = jnp.zeros(m.cell.hidden_size)
        logits, _ = jax.vmap(m.unroll, in_axes=(1, None), out_axes=1)(obs, hidden)
        return jnp.take_along_axis(jax.nn.log_softmax(logits), actions[..., None], -1)[..., 0]

    logps = jax.vmap(member)(population)  # [M, T, B]
    return jax.nn.logsumexp(logps, 0) - jnp.log(logps.shape[0])


# ----------------------------------------------------------------------------- update


def with_advantages(cfg, traj) -> dict:
    """The rollout with GAE advantages and value targets added."""
    adv, targets = losses.gae(traj["rewards"], traj["values"], cfg.gamma, cfg.gae_lambda)
    return {**traj, "adv": adv, "targets": targets}


def sequence_loss(cfg, model: ActorCritic, batch):
    """``(loss, terms)``: the PPO loss of whole sequences ``batch[T, B, ...]``, the GRU unrolled
    from a zero state on each."""
    h0 = jnp.zeros(model.hidden)
    logits, values = jax.vmap(model.unroll, in_axes=(1, None), out_axes=1)(batch["obs"], h0)
    return losses.ppo_loss(logits, values, batch["actions"], batch["logp"], batch["adv"],
                           batch["targets"], cfg.clip_eps, cfg.vf_coef, cfg.ent_coef)


def ppo_update(cfg, state: TrainState, traj, key, opt) -> tuple[TrainState, dict]:
    """GAE on the rollout, then ``epochs`` passes of ``minibatches`` whole-sequence minibatches."""
    data = with_advantages(cfg, traj)
    n_seq = traj["actions"].shape[1]
    size = n_seq // cfg.minibatches
    loss_fn = lambda model, batch: sequence_loss(cfg, model, batch)

    def minibatch(state, idx):
        batch = jax.tree.map(lambda x: x[:, idx], data)
        (loss, terms), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(state.model, batch)
        updates, opt_state = opt.update(grads, state.opt_state, eqx.filter(state.model, eqx.is_array))
        return TrainState(eqx.apply_updates(state.model, updates), opt_state), {"loss": loss, **terms}

    def epoch(state, k):
        order = jax.random.permutation(k, n_seq)[: size * cfg.minibatches]
        return jax.lax.scan(minibatch, state, order.reshape(cfg.minibatches, size))

    state, terms = jax.lax.scan(epoch, state, jax.random.split(key, cfg.epochs))
    return state, jax.tree.map(jnp.mean, terms)


# ----------------------------------------------------------------------------- jobs

def train_kinds(cfg) -> tuple[str, ...]:
    return ("level0", *(f"level{k}" for k in range(1, cfg.levels + 1)), "fcp", "mep_pop", "mep",
            "br")


def members(cfg, kind: str) -> int:
    """Learners per seed in a job of this kind."""
    if kind == "level0":
        return cfg.sp_members + len(cfg.biases)
    if kind == "mep_pop":
        return cfg.mep_members
    if kind in ("fcp", "mep", "br"):
        return 1
    return cfg.level_size


def level0_biases(cfg) -> np.ndarray:
    """``[M0, 2]`` event weights: zeros for the self-play members, ``cfg.biases`` after them."""
    return np.asarray([[0.0, 0.0]] * cfg.sp_members + [list(b) for b in cfg.biases], np.float32)


def snapshot_updates(cfg) -> np.ndarray:
    """Updates after which level-0 snapshots are kept (the last one is the final agent)."""
    return np.round(np.linspace(0, cfg.updates, cfg.fcp_snapshots + 1)[1:]).astype(int)


def train(cfg, game: Game, kind: str, pool: ActorCritic | None, *, checkpoint=None,
          progress: bool = False):
    """Train one job: every seed (axis 0) times ``members(cfg, kind)`` learners (axis 1).

    ``pool`` (for partner kinds): agents with leading axes [seed, P], the partners of the
    learners of that seed. Returns ``(agents[S, M], snapshots[K, S, M] or None, history)``.
    """
    seeds = np.asarray(cfg.seeds)
    n_members = members(cfg, kind)
    salt = {"level0": 0, "fcp": 101, "mep_pop": 202, "mep": 303, "br": 505}.get(kind, None)
    salt = salt if salt is not None else 400 + int(kind.removeprefix("level"))
    keys = jax.vmap(lambda s: jax.random.split(jax.random.PRNGKey(s * 1000 + salt), n_members))(
        jnp.asarray(seeds))
    agents = init_agents(game.obs_dim, cfg.hidden, N_ACTIONS, keys)
    opt = optimizer(cfg)
    states = eqx.filter_vmap(eqx.filter_vmap(lambda m: init_train_state(m, opt)))(agents)
    biases = jnp.asarray(level0_biases(cfg) if kind == "level0" else
                         np.zeros((n_members, 2), np.float32))
    selfplay = kind in ("level0", "mep_pop")
    snaps_at = jnp.asarray(snapshot_updates(cfg))

    n_s = scripted_episodes(cfg)
    n_l = cfg.num_envs - n_s
    scripted = (cfg.train_patience, cfg.train_scripted_eps)

    def member_update(state, key, seed_pool, population, bias, coef, floor):
        k_roll, k_scr, k_upd = jax.random.split(key, 3)
        if selfplay:
            traj, ret = rollout_selfplay(game, cfg, state.model, k_roll, bias, coef, n=n_l)
            eps = jnp.zeros(n_l)
            if n_s:  # the scripted share: the learner's seat only, no curriculum
                s_traj, s_ret, s_eps = rollout_partner(game, cfg, state.model, None, k_scr, coef,
                                                       n_learned=0, n_scripted=n_s, bias=bias,
                                                       scripted=scripted)
                traj = jax.tree.map(lambda a, b: jnp.concatenate([a, b], 1), traj, s_traj)
                ret, eps = jnp.concatenate([ret, s_ret]), jnp.concatenate([eps, s_eps])
            if kind == "mep_pop":
                mix = population_logp(jax.lax.stop_gradient(population), traj["obs"], traj["actions"])
                traj = {**traj, "rewards": traj["rewards"] - cfg.mep_alpha * mix}
        else:
            traj, ret, eps = rollout_partner(game, cfg, state.model, seed_pool, k_roll, coef,
                                              floor, n_learned=n_l, n_scripted=n_s,
                                              scripted=scripted)
        solo = (eps >= 1.0).at[n_l:].set(False)  # a random learned partner (the curriculum's too)
        mean_or_missing = lambda x, m: jnp.where(m.any(), (x * m).sum() / jnp.maximum(m.sum(), 1),
                                                 -1.0)  # -1: none (metrics must be finite)
        scripted_ep = jnp.arange(cfg.num_envs) >= n_l
        traj = {**traj, "rewards": cfg.reward_scale * traj["rewards"]}
        state, terms = ppo_update(cfg, state, traj, k_upd, opt)
        return state, {**terms, "return": ret[:n_l].mean(),
                       "return_random_partner": mean_or_missing(ret, solo),
                       "return_scripted": mean_or_missing(ret, scripted_ep)}

    def seed_update(states, key, seed_pool, coef, floor):
        population = states.model
        keys = jax.random.split(key, n_members)
        return jax.vmap(member_update, in_axes=(0, 0, None, None, 0, None, None))(
            states, keys, seed_pool, population, biases, coef, floor)

    def step(carry, data, key):
        states, snaps, t = carry["states"], carry["snaps"], carry["t"]
        coef, floor = shaped_coef(cfg, t, selfplay), partner_noise(cfg, t)
        keys = jax.random.split(key, len(seeds))
        states, metrics = jax.vmap(seed_update,
                                   in_axes=(0, 0, 0 if data is not None else None, None, None))(
            states, keys, data, coef, floor)
        if snaps is not None:
            hit = (t + 1) == snaps_at
            snaps = jax.tree.map(
                lambda s, m: jnp.where(hit.reshape(-1, *([1] * m.ndim)), m[None], s),
                snaps, states.model)
        return {"states": states, "snaps": snaps, "t": t + 1}, {**metrics, "shaped_coef": coef}

    snaps = (jax.tree.map(lambda x: jnp.zeros((cfg.fcp_snapshots, *x.shape), x.dtype), agents)
             if kind == "level0" else None)
    carry = {"states": states, "snaps": snaps, "t": jnp.zeros((), jnp.int32)}
    chunk = min(cfg.chunk_updates, cfg.updates)
    carry, history = run_loop(step, carry, pool, key=jax.random.PRNGKey(int(seeds[0]) * 7 + 13),
                              num_steps=cfg.updates, chunk_size=chunk, checkpoint_path=checkpoint,
                              checkpoint_every=chunk if checkpoint is not None else None,
                              desc=f"nestrl {kind}", progress=progress)
    return carry["states"].model, carry["snaps"], history


# ----------------------------------------------------------------------------- files


def save_agents(path, agents: ActorCritic, snapshots: ActorCritic | None) -> None:
    """Leaves of the stacked agents (and snapshots) in one npz."""
    from repro26.core import io

    arrays = {f"agent{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(agents))}
    if snapshots is not None:
        arrays.update({f"snap{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(snapshots))})
    io.write_npz(path, **arrays)


def load_agents(path, cfg, game: Game, prefix: str = "agent") -> ActorCritic:
    """Stacked agents saved by :func:`save_agents` (leading axes as saved)."""
    from repro26.core import io

    arrays = io.read_npz(path)
    template = ActorCritic(game.obs_dim, cfg.hidden, N_ACTIONS, key=jax.random.PRNGKey(0))
    leaves, treedef = jax.tree.flatten(template)
    saved = [arrays[f"{prefix}{i}"] for i in range(len(leaves))]
    if saved[0].shape[-leaves[0].ndim:] != leaves[0].shape:
        from repro26.core.config import UsageError

        raise UsageError(f"--input {path}: agents of another layout or width "
                         f"({saved[0].shape} vs {leaves[0].shape})")
    return jax.tree.unflatten(treedef, [jnp.asarray(a) for a in saved])


def history_rows(cfg, game: Game, kind: str, history: dict) -> list[dict]:
    """Training curve: per update, seed and member the mean sparse episode return with the
    learned (or self-play) partners, with a random learned partner and with the scripted
    role-switchers, the learner's environment and gradient steps so far."""
    rows = []
    ret, ent = history["return"], history["entropy"]
    rnd, scr = history["return_random_partner"], history["return_scripted"]
    for u in range(ret.shape[0]):
        for s_i, seed in enumerate(cfg.seeds):
            for m in range(ret.shape[2]):
                rows.append({"layout": game.name, "kind": kind, "seed": seed, "member": m,
                             "update": u + 1,
                             "env_steps": (u + 1) * cfg.num_envs * game.horizon,
                             "gradient_steps": (u + 1) * cfg.epochs * cfg.minibatches,
                             "obs_dim": game.obs_dim,
                             "return": float(ret[u, s_i, m]), "entropy": float(ent[u, s_i, m]),
                             "return_random_partner": (float(rnd[u, s_i, m]) if rnd[u, s_i, m] >= 0
                                                          else float("nan")),
                             "return_scripted": (float(scr[u, s_i, m]) if scr[u, s_i, m] >= 0
                                                 else float("nan")),
                             "shaped_coef": float(history["shaped_coef"][u])})
    return rows
