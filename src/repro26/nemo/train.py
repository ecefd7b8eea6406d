"""Multi-objective PPO on MindFlow, all seeds vmapped, through ``repro26.core.train.run_loop``.

One iteration for one seed: draw ``users_per_batch`` training personas, run one dialogue each
with the current policy (``lax.scan`` over turns), estimate every turn's vector credit by forward
simulation (:mod:`repro26.nemo.losses`), aggregate it with the method's weights, then take
``epochs`` full-batch clipped-PPO steps (Adam). The key of iteration ``s`` for seed ``z`` is
``fold_in(fold_in(PRNGKey(0), s), z)``: a seed's run does not depend on which other seeds share
the job.

Methods (the same PPO, different aggregation weights or look-ahead):
``nemo`` (need-aware weights p(x_t), H-turn forward simulation), ``emotion_only`` (1, 0),
``cognition_only`` (0, 1), ``fixed_linear`` (w, 1 - w), and the ablation ``nemo_one_step``
(need-aware weights, H = 1: no multi-turn forward simulation).
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

def method_weights(method: str, fixed_weight: float) -> tuple[jax.Array, jax.Array]:
    """(fixed (emotion, cognition) weights, need-aware flag) of a trained method."""
    fixed = {"emotion_only": (1.0, 0.0), "cognition_only": (0.0, 1.0),
             "fixed_linear": (fixed_weight, 1 - fixed_weight)}.get(method, (0.5, 0.5))
    return jnp.array(fixed), jnp.array(method in ("nemo", "nemo_one_step"))


def method_depth(method: str, lookahead: int) -> jax.Array:
    """Turns of forward simulation summed into the credit: 1 for the ablation, else H."""
    return jnp.array(1 if method == "nemo_one_step" else lookahead)

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
    """Vector credit c_t (users, turns, 2) by forward simulation from every visited state."""
    n_users, horizon = traj["action"].shape
    keys = jax.random.split(key, n_users * horizon).reshape(n_users, horizon, -1)
    cont = continuation(env, policy)

    def one(persona, x, t, k, probs, action):
        returns = losses.forward_returns(lambda s, a, kk: step(env, persona, s, a, kk), cont,
                                         x, t, k, N_ACTIONS, lookahead, horizon, depth)
        return losses.step_credit(returns, probs, action)

    turns = jnp.arange(horizon)
    per_user = jax.vmap(one, in_axes=(None, 0, 0, 0, 0, 0))
    return jax.vmap(per_user, in_axes=(0, 0, None, 0, 0, 0))(
        personas, traj["states"][:, :-1], turns, keys, traj["probs"], traj["action"])


def make_iteration(env: MindFlow, ranges, ppo):
    """The run_loop step: one PPO iteration for every seed (vmapped); ``data`` is
    ``(seeds, fixed weights, need-aware flag, look-ahead depth)``, so that every method runs
    the same compiled program."""
    opt = optimizer(ppo)

    def one_seed(state: core_train.TrainState, key, fixed, need_aware, depth):
        k_users, k_roll, k_fwd = jax.random.split(key, 3)
        personas = sample_personas(k_users, ranges, ppo.users_per_batch)
        policy = state.model
        traj = jax.vmap(lambda p, k: rollout(env, p, policy.act, k))(
            personas, jax.random.split(k_roll, ppo.users_per_batch))
        credit = credits(env, personas, traj, policy, k_fwd, ppo.lookahead, depth)
        weights = losses.aggregation_weights(traj["preference"], fixed, need_aware)
        adv = (weights * credit).sum(-1)
        obs = traj["obs"].reshape(-1, traj["obs"].shape[-1])
        actions, old_logp, adv = (traj["action"].reshape(-1), traj["logp"].reshape(-1),
                                  adv.reshape(-1))

        dynamic, static = eqx.partition(state, eqx.is_array)

        def epoch(dyn, _):
            st = eqx.combine(dyn, static)

            def loss_fn(model):
                return losses.ppo_loss(jax.vmap(model.logits)(obs), actions, old_logp, adv,
                                       ppo.clip_eps, ppo.entropy_coef)
            (loss, terms), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(st.model)
            params = eqx.filter(st.model, eqx.is_inexact_array)
            updates, opt_state = opt.update(grads, st.opt_state, params)
            new = core_train.TrainState(eqx.apply_updates(st.model, updates), opt_state)
            return eqx.filter(new, eqx.is_array), (loss, terms["entropy"])

        dynamic, (loss, entropy) = jax.lax.scan(epoch, dynamic, None, length=ppo.epochs)
        state = eqx.combine(dynamic, static)
        ret = traj["reward"].sum(1).mean(0)
        return state, {"loss": loss[-1], "entropy": entropy[0], "emo_return": ret[0],
                       "cog_return": ret[1]}

    def iteration(states, data, key):
        seeds, fixed, need_aware, depth = data
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seeds)
        return eqx.filter_vmap(one_seed, in_axes=(eqx.if_array(0), 0, None, None, None))(
            states, keys, fixed, need_aware, depth)

    return iteration


def train_method(env: MindFlow, ranges, ppo, method: str, fixed_weight: float, seeds,
                 checkpoint: Path | None = None, progress: bool = False):
    """Train ``method`` for every seed at once; returns (stacked states, metric history)."""
    iteration = make_iteration(env, ranges, ppo)
    data = (jnp.asarray(seeds), *method_weights(method, fixed_weight),
            method_depth(method, ppo.lookahead))
    return core_train.run_loop(
        iteration, init_states(seeds, ppo), data, key=jax.random.PRNGKey(0),
        num_steps=ppo.iterations, chunk_size=min(ppo.chunk_size, ppo.iterations),
        checkpoint_path=checkpoint, checkpoint_every=ppo.chunk_size if checkpoint else None,
        desc=method, progress=progress)

def learning_rows(method: str, seeds, history: dict[str, np.ndarray]) -> list[dict]:
    """Tidy learning curve: one row per (seed, iteration)."""
    rows = []
    for i, seed in enumerate(seeds):
        for it in range(history["loss"].shape[0]):
            rows.append({"method": method, "seed": int(seed), "iteration": it,
                         **{k: float(history[k][it, i]) for k in
                            ("emo_return", "cog_return", "entropy", "loss")}})
    return rows
