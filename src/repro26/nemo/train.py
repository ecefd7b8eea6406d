"""Multi-objective PPO on MindFlow, all seeds vmapped, through ``repro26.core.train.run_loop``.

One iteration for one seed: draw ``users_per_batch`` training personas, run one dialogue each
with the current policy (``lax.scan`` over turns), estimate every turn's vector credit by forward
simulation (:mod:`repro26.nemo.losses`), aggregate it with the method's weights, then take
``epochs`` full-batch clipped-PPO steps (Adam). The key of iteration ``s`` for seed ``z`` is
``fold_in(fold_in(PRNGKey(0), s), z)``: a seed's run does not depend on which other seeds share
the job.

Methods (the same PPO, different aggregation weights or credit):
``nemo`` (need-aware weights p(x_t), H-turn forward simulation), ``emotion_only`` (1, 0),
``cognition_only`` (0, 1), ``fixed_25``/``fixed_50``/``fixed_75`` (w, 1 - w) with emotion weight
w = 0.25/0.5/0.75 (with the two single-objective runs: the front of fixed scalarisations),
the ablation ``nemo_one_step`` (need-aware, H = 1), and ``nemo_plain``: the same need-aware PPO
without forward simulation, on plain returns-to-go of the need-weighted reward
(:func:`repro26.nemo.losses.plain_advantages`). Each iteration records the simulator turns it
took (dialogues played plus forward-simulation turns, counted where they are taken).
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core import train as core_train
from repro26.nemo import losses
from repro26.nemo.model import Policy
from repro26.nemo.simulator import N_ACTIONS, MindFlow, rollout, sample_personas, step

NEED_AWARE = ("nemo", "nemo_one_step", "nemo_plain")
# emotion weight of each fixed scalarisation (w, 1 - w)
FIXED = {"emotion_only": 1.0, "fixed_75": 0.75, "fixed_50": 0.5, "fixed_25": 0.25,
         "cognition_only": 0.0}
TRAINED = (*NEED_AWARE, *FIXED)


def method_weights(method: str) -> tuple[jax.Array, jax.Array]:
    """(fixed (emotion, cognition) weights, need-aware flag) of a trained method."""
    w = FIXED.get(method, 0.5)
    return jnp.array([w, 1 - w]), jnp.array(method in NEED_AWARE)


def method_depth(method: str, lookahead: int) -> jax.Array:
    """Turns of forward simulation summed into the credit: 1 for the ablation, 0 (plain
    returns, no forward simulation) for ``nemo_plain``, else H."""
    return jnp.array({"nemo_one_step": 1, "nemo_plain": 0}.get(method, lookahead))


def optimizer(ppo) -> optax.GradientTransformation:
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(ppo.learning_rate))

def init_states(seeds, ppo) -> core_train.TrainState:
    """One policy and optimiser state per seed, stacked on a leading axis."""
    opt = optimizer(ppo)
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(1), s))(jnp.asarray(seeds))
    return eqx.filter_vmap(
        lambda k: core_train.init_train_state(Policy(k, ppo.width), opt))(keys)

def continuation(env: MindFlow, policy: Policy):
    """The forward simulation's continuation: the policy acting on a noisy observation."""
    def act(x, prev, turn, key):
        k_obs, k_act = jax.random.split(key)
        return policy.act(env.observe(x, prev, turn, k_obs), turn, k_act)[0]
    return act

def credits(env: MindFlow, personas, traj, policy: Policy, key, lookahead: int, depth):
    """Vector credit c_t (users, turns, 2) by forward simulation from every visited state, and
    the number of simulator turns the forward simulation took."""
    n_users, horizon = traj["action"].shape
    keys = jax.random.split(key, n_users * horizon).reshape(n_users, horizon, -1)
    cont = continuation(env, policy)

    def one(persona, x, t, k, probs, action):
        returns, count = losses.forward_returns(lambda s, a, kk: step(env, persona, s, a, kk),
                                                cont, x, t, k, N_ACTIONS, lookahead, horizon,
                                                depth)
        return losses.step_credit(returns, probs, action), count

    turns = jnp.arange(horizon)
    per_user = jax.vmap(one, in_axes=(None, 0, 0, 0, 0, 0))
    credit, counts = jax.vmap(per_user, in_axes=(0, 0, None, 0, 0, 0))(
        personas, traj["states"][:, :-1], turns, keys, traj["probs"], traj["action"])
    return credit, counts.sum()


def ppo_batch(env: MindFlow, ranges, ppo, policy: Policy, key, fixed, need_aware, depth):
    """One batch of PPO data for one seed: ``users_per_batch`` dialogues played with ``policy``,
    their advantages (forward-simulated credit aggregated with the method's weights; plain
    returns when ``depth`` is 0), flattened over (users, turns), and the batch's metrics."""
    k_users, k_roll, k_fwd = jax.random.split(key, 3)
    personas = sample_personas(k_users, ranges, ppo.users_per_batch)
    traj = jax.vmap(lambda p, k: rollout(env, p, policy.act, k))(
        personas, jax.random.split(k_roll, ppo.users_per_batch))
    weights = losses.aggregation_weights(traj["preference"], fixed, need_aware)

    def forward(_):
        credit, count = credits(env, personas, traj, policy, k_fwd, ppo.lookahead, depth)
        return (weights * credit).sum(-1), count

    def plain(_):
        return losses.plain_advantages(weights, traj["reward"]), jnp.array(0)

    adv, sim_turns = jax.lax.cond(depth > 0, forward, plain, None)
    batch = (traj["obs"].reshape(-1, traj["obs"].shape[-1]), traj["action"].reshape(-1),
             traj["logp"].reshape(-1), adv.reshape(-1))
    ret = traj["reward"].sum(1).mean(0)
    metrics = {"emo_return": ret[0], "cog_return": ret[1],
               "need_return": (traj["preference"] * traj["reward"]).sum((1, 2)).mean(),
               "env_steps": traj["action"].size + sim_turns,
               "dialogues": jnp.array(personas.arousal_peak.shape[0])}
    return batch, metrics


def batch_loss(policy: Policy, batch, ppo) -> tuple[jax.Array, dict]:
    """The clipped-PPO loss of ``policy`` on one :func:`ppo_batch`."""
    obs, actions, old_logp, adv = batch
    return losses.ppo_loss(jax.vmap(policy.logits)(obs), actions, old_logp, adv, ppo.clip_eps,
                           ppo.entropy_coef)


def make_iteration(env: MindFlow, ranges, ppo):
    """The run_loop step: one PPO iteration for every seed (vmapped); ``data`` is
    ``(seeds, fixed weights, need-aware flag, look-ahead depth)``, so that every method runs
    the same compiled program (depth 0: plain returns, the forward simulation skipped by
    ``lax.cond``)."""
    opt = optimizer(ppo)

    def one_seed(state: core_train.TrainState, key, fixed, need_aware, depth):
        batch, metrics = ppo_batch(env, ranges, ppo, state.model, key, fixed, need_aware, depth)
        dynamic, static = eqx.partition(state, eqx.is_array)

        def epoch(dyn, _):
            st = eqx.combine(dyn, static)
            (loss, terms), grads = eqx.filter_value_and_grad(batch_loss, has_aux=True)(
                st.model, batch, ppo)
            params = eqx.filter(st.model, eqx.is_inexact_array)
            updates, opt_state = opt.update(grads, st.opt_state, params)
            new = core_train.TrainState(eqx.apply_updates(st.model, updates), opt_state)
            return eqx.filter(new, eqx.is_array), (loss, terms["entropy"])

        dynamic, (loss, entropy) = jax.lax.scan(epoch, dynamic, None, length=ppo.epochs)
        state = eqx.combine(dynamic, static)
        return state, {"loss": loss[-1], "entropy": entropy[0], **metrics,
                       "optimiser_steps": jnp.array(ppo.epochs)}

    def iteration(states, data, key):
        seeds, fixed, need_aware, depth = data
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seeds)
        return eqx.filter_vmap(one_seed, in_axes=(eqx.if_array(0), 0, None, None, None))(
            states, keys, fixed, need_aware, depth)

    return iteration


def train_method(env: MindFlow, ranges, ppo, method: str, seeds,
                 checkpoint: Path | None = None, progress: bool = False):
    """Train ``method`` for every seed at once; returns (stacked states, metric history)."""
    iteration = make_iteration(env, ranges, ppo)
    data = (jnp.asarray(seeds), *method_weights(method),
            method_depth(method, ppo.lookahead))
    return core_train.run_loop(
        iteration, init_states(seeds, ppo), data, key=jax.random.PRNGKey(0),
        num_steps=ppo.iterations, chunk_size=min(ppo.chunk_size, ppo.iterations),
        checkpoint_path=checkpoint, checkpoint_every=ppo.chunk_size if checkpoint else None,
        desc=method, progress=progress)

LEARNING_COLUMNS = ("emo_return", "cog_return", "need_return", "entropy", "loss", "env_steps",
                    "dialogues", "optimiser_steps")


def parameter_count(policies, n_seeds: int) -> int:
    """Trainable parameters of one seed's policy (``policies`` stacked over seeds)."""
    leaves = jax.tree_util.tree_leaves(eqx.filter(policies, eqx.is_inexact_array))
    return sum(leaf.size for leaf in leaves) // n_seeds


def learning_rows(method: str, seeds, history: dict[str, np.ndarray],
                  parameters: int) -> list[dict]:
    """Tidy learning curve: one row per (seed, iteration)."""
    rows = []
    for i, seed in enumerate(seeds):
        for it in range(history["loss"].shape[0]):
            rows.append({"method": method, "seed": int(seed), "iteration": it,
                         "parameters": parameters,
                         **{k: float(history[k][it, i]) for k in LEARNING_COLUMNS}})
    return rows
