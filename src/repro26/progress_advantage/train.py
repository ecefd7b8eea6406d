"""Training, every seed at once (models stacked on a leading seed axis, steps vmapped), each run
through ``repro26.core.train.run_loop``.

* π_ref: supervised fine-tuning, −log π(op, arg | s) on noisy demonstrations.
* π_RL: KL-regularised policy gradient, GRPO-style. Each step samples ``rl_group`` rollouts of
  ``rl_problems`` problems from the current policy π_old, takes the group baseline
  Â = R − mean_group(R) (outcome reward R ∈ {0, 1}, no std normalisation, so the objective stays
  E[R] − β KL) and makes ``rl_inner_epochs`` Adam updates of

      L(θ) = −E_{h,a}[min(ρ Â, clip(ρ, 1 ± ε) Â)] + β E[Σ_tokens KL(π_θ(·|prefix) ‖ π_ref(·|prefix))],
      ρ = π_θ(a|h)/π_old(a|h) per step, the KL exact over each token's vocabulary at the sampled
      prefixes (the per-token KL of LLM RL; its sum over a trajectory has the trajectory KL as
      expectation under π).

  ``kl_coef`` = β; the clipping-only variant sets it to 0.
* PRM: binary cross-entropy on Monte Carlo step labels (success rate of ``rm_rollouts``
  continuations by π_RL after each step of π_RL's trajectories); ORM: binary cross-entropy on the
  outcomes of π_RL's trajectories. Each learns from a fixed pool of as many episodes as RL
  sampled (``cli.rm_budget``; the PRM's split into trajectories and their continuations). The
  pool is not stored (at ``paper`` it is ~20M episodes a seed): episode ``i`` is drawn from a
  key of ``i`` alone, and each training step regenerates the rows its minibatch draws, so the
  model sees the same finite data set as if it had been materialised.
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from repro26.core.train import TrainState, init_train_state, optax_step, run_loop
from repro26.progress_advantage import task as T
from repro26.progress_advantage.model import OutcomeRewardModel, StepRewardModel, make_policy


def stacked(make, seeds, salt: int):
    """One model per seed, stacked; the seed's key is fold_in(PRNGKey(seed), salt)."""
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(s), salt))(jnp.asarray(seeds))
    return eqx.filter_vmap(make)(keys)


def _vmapped(one_step, seeds):
    """Per-seed step: each seed draws its own key from the loop's key."""
    seed_ids = jnp.asarray(seeds)

    def step(state, data, key):
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seed_ids)
        return eqx.filter_vmap(one_step)(state, data, keys)

    return step


def _fit(one_step, state, data, seeds, steps, chunk, ckpt, desc, progress):
    state, hist = run_loop(_vmapped(one_step, seeds), state, data, key=jax.random.PRNGKey(1),
                           num_steps=steps, chunk_size=min(chunk, steps),
                           checkpoint_path=ckpt, checkpoint_every=None if ckpt is None else
                           min(chunk, steps), desc=desc, progress=progress)
    return state.model, hist


# ------------------------------------------------------------------------------ data


def demonstrations(spec: T.TaskSpec, key, n: int, noise: float, habit: float, retry: float):
    """``n`` demonstration episodes of :func:`task.demonstrator_probs`: ``(n, horizon)`` buffers
    ``d, op, arg``."""
    k1, k2 = jax.random.split(key)
    traj = T.rollout(spec, k2, T.sample_problems(spec, k1, n), T.markov(
        spec, lambda k, d, sl: T.demonstrator_action(spec, k, d, sl, noise, habit, retry)))
    return {k: traj[k] for k in ("d", "op", "arg")}


# ------------------------------------------------------------------------------ π_ref


def step_logprob(policy, d, op, arg):
    """log π(op_t, arg_t | h_t) of every step of a batch of trajectories ``(batch, H)``."""
    def one(d, op, arg):
        lp_op, lp_arg = policy.step_logprobs(d, op, arg)
        return (jnp.take_along_axis(lp_op, op[:, None], 1)[:, 0]
                + jnp.take_along_axis(lp_arg, arg[:, None], 1)[:, 0])
    return jax.vmap(one)(d, op, arg)


def train_reference(spec, cfg, demos, seeds, ckpt: Path | None, progress: bool):
    """SFT: mean over steps of −log π(op, arg | history) on demonstration episodes."""
    opt = optax.adam(cfg.sft_lr)

    def loss(policy, demos, key):
        idx = jax.random.randint(key, (cfg.sft_batch,), 0, demos["d"].shape[0])
        rows = {k: v[idx] for k, v in demos.items()}
        return -jnp.mean(step_logprob(policy, rows["d"], rows["op"], rows["arg"])), {}

    nets = stacked(lambda k: make_policy(spec, cfg, k), seeds, 1)
    state = eqx.filter_vmap(lambda m: init_train_state(m, opt))(nets)
    return _fit(optax_step(loss, opt), state, demos, seeds, cfg.sft_steps, cfg.chunk_size, ckpt,
                "sft π_ref", progress)


# ------------------------------------------------------------------------------ π_RL


def _token_kl(lp, lq):
    return jnp.sum(jnp.exp(lp) * (lp - lq), -1)


def token_kl(policy, ref_logprobs, d, op, arg):
    """Σ over a step's tokens of KL(π(·|prefix) ‖ π_ref(·|prefix)), exact over each token's
    vocabulary at the trajectory's prefixes, ``(batch, H)``; ``ref_logprobs``: π_ref's
    ``step_logprobs`` of the same trajectories."""
    p_op, p_arg = jax.vmap(policy.step_logprobs)(d, op, arg)
    q_op, q_arg = ref_logprobs
    return _token_kl(p_op, q_op) + _token_kl(p_arg, q_arg)


def rl_schedule(cfg):
    """Learning rate of RL per Adam update: linear warm-up over rl_warmup steps, then cosine
    decay to a tenth of rl_lr at the last step (rl_inner_epochs updates per step)."""
    e, total = cfg.rl_inner_epochs, cfg.rl_steps * cfg.rl_inner_epochs
    if cfg.rl_warmup == 0:
        return optax.cosine_decay_schedule(cfg.rl_lr, total, alpha=0.1)
    warm = cfg.rl_warmup * e
    return optax.warmup_cosine_decay_schedule(0.0, cfg.rl_lr, warm, max(total, warm + 1),
                                              cfg.rl_lr / 10)


def train_rl(spec, cfg, ref, seeds, kl_coef: float, ckpt: Path | None, progress: bool):
    """π_RL initialised at π_ref (per seed), trained as in the module docstring."""
    opt = optax.adam(rl_schedule(cfg))
    B, G = cfg.rl_problems, cfg.rl_group

    def one_step(state: TrainState, data, key):
        ref, kl_coef = data  # β as data: rl_kl and rl_clip share one compiled program
        kp, kr = jax.random.split(key)
        d0 = jnp.repeat(T.sample_problems(spec, kp, B), G)
        traj = T.rollout(spec, kr, d0, state.model.sample)
        R = traj["success"].astype(jnp.float32).reshape(B, G)
        adv = (R - R.mean(1, keepdims=True)).reshape(-1, 1)
        tokens = (traj["d"], traj["op"], traj["arg"])
        old = jax.lax.stop_gradient(step_logprob(state.model, *tokens))
        ref_lp = jax.vmap(ref.step_logprobs)(*tokens)

        def loss(policy):
            ratio = jnp.exp(step_logprob(policy, *tokens) - old)
            clipped = jnp.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps)
            surrogate = jnp.mean(jnp.minimum(ratio * adv, clipped * adv))
            kl = jnp.mean(token_kl(policy, ref_lp, *tokens))
            return -surrogate + kl_coef * kl, kl

        dyn, static = eqx.partition(state, eqx.is_array)

        def inner(dyn, _):
            st = eqx.combine(dyn, static)
            (_, kl), g = eqx.filter_value_and_grad(loss, has_aux=True)(st.model)
            upd, opt_state = opt.update(g, st.opt_state, eqx.filter(st.model, eqx.is_inexact_array))
            new = TrainState(eqx.apply_updates(st.model, upd), opt_state)
            return eqx.filter(new, eqx.is_array), kl

        dyn, kl = jax.lax.scan(inner, dyn, None, length=cfg.rl_inner_epochs)
        return eqx.combine(dyn, static), {"loss": -R.mean(), "kl": kl[-1], "reward": R.mean()}

    state = eqx.filter_vmap(lambda m: init_train_state(m, opt))(ref)
    data = (ref, jnp.full((len(seeds),), kl_coef, jnp.float32))
    return _fit(one_step, state, data, seeds, cfg.rl_steps, cfg.chunk_size, ckpt,
                f"rl (kl={kl_coef:g})", progress)


# ------------------------------------------------------------------------------ reward models


def pool_episode(spec, policy, pool_key, i):
    """Episode ``i`` of a reward model's pool of π_RL episodes: a random problem and π_RL's
    rollout from it, both drawn from ``fold_in(pool_key, i)``, as ``(horizon,)`` buffers
    ``d, op, arg`` and the outcome ``success``. The pool is a fixed, finite data set (episode
    ``i`` is the same at every draw) that is never stored: a training step regenerates the
    episodes its minibatch draws."""
    k1, k2, _ = jax.random.split(jax.random.fold_in(pool_key, i), 3)
    traj = T.rollout(spec, k2, T.sample_problems(spec, k1, 1), policy.sample)
    return {k: v[0] for k, v in traj.items()}


def step_label(spec, policy, pool_key, i, t, rollouts: int):
    """The Monte Carlo label of step ``t`` of pool episode ``i``: the fraction of ``rollouts``
    continuations by π_RL after that step that succeed (each continuation keeps the episode's
    history up to step ``t`` and draws its own tool result of step ``t``), from keys of
    ``(i, t)`` alone, so the label too is the same at every draw."""
    traj = pool_episode(spec, policy, pool_key, i)
    k3, k4 = jax.random.split(jax.random.fold_in(jax.random.split(
        jax.random.fold_in(pool_key, i), 3)[2], t))
    H = spec.horizon
    prefix = {k: jnp.broadcast_to(traj[k], (rollouts, H)) for k in ("d", "op", "arg")}
    d_after = T.step_env(spec, k3, prefix["d"][:, t], prefix["op"][:, t], prefix["arg"][:, t])
    start = jnp.full((rollouts,), t + 1, d_after.dtype)
    cont = T.rollout(spec, k4, d_after, policy.sample, start_step=start, prefix=prefix)
    return traj, jnp.mean(cont["success"].astype(jnp.float32))


def reward_model_data(spec, policy, pool_key, n: int, rollouts: int):
    """The PRM's whole pool, materialised (tests and small pools only): ``n`` π_RL episodes
    (:func:`pool_episode`) and the Monte Carlo label of each of their steps
    (:func:`step_label`), the rows a PRM training step draws from."""
    i = jnp.repeat(jnp.arange(n), spec.horizon)
    t = jnp.tile(jnp.arange(spec.horizon), n)
    traj, labels = jax.vmap(lambda i, t: step_label(spec, policy, pool_key, i, t, rollouts))(i, t)
    return {**{k: v[::spec.horizon] for k, v in traj.items()},
            "label": labels.reshape(n, spec.horizon)}


def outcome_data(spec, policy, pool_key, n: int):
    """The ORM's whole pool, materialised (tests and small pools only): ``n`` episodes."""
    return jax.vmap(lambda i: pool_episode(spec, policy, pool_key, i))(jnp.arange(n))


def _bce(logit, y):
    return jnp.mean(optax.sigmoid_binary_cross_entropy(logit, y))


def pool_keys(seeds, salt: int):
    """Each seed's pool key, ``fold_in(fold_in(PRNGKey(seed), 5), salt)`` (PRM 0, ORM 1)."""
    return jax.vmap(lambda s: jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(s), 5),
                                                 salt))(jnp.asarray(seeds))


def train_prm(spec, cfg, rl, n: int, seeds, ckpt, progress):
    """BCE on the step labels of rows (episode, step) drawn uniformly from a pool of ``n``
    π_RL episodes (``rl``: π_RL stacked over seeds), ``rm_batch`` rows a step, each row's
    episode and label generated inside the step (:func:`step_label`)."""
    opt = optax.adam(cfg.rm_lr)
    H = spec.horizon

    def loss(prm, data, key):
        policy, pool_key = data
        idx = jax.random.randint(key, (cfg.rm_batch,), 0, n * H)
        i, t = idx // H, idx % H
        traj, label = jax.vmap(lambda i, t: step_label(spec, policy, pool_key, i, t,
                                                       cfg.rm_rollouts))(i, t)
        at = lambda x: jnp.take_along_axis(x, t[:, None], 1)[:, 0]  # noqa: E731
        logit = jax.vmap(prm)(at(traj["d"]), H - t, at(traj["op"]), at(traj["arg"]))
        return _bce(logit, label), {}

    nets = stacked(lambda k: StepRewardModel(spec, cfg.rm_hidden, k), seeds, 3)
    state = eqx.filter_vmap(lambda m: init_train_state(m, opt))(nets)
    return _fit(optax_step(loss, opt), state, (rl, pool_keys(seeds, 0)), seeds, cfg.rm_steps,
                cfg.chunk_size, ckpt, "prm", progress)


def train_orm(spec, cfg, rl, n: int, seeds, ckpt, progress):
    """BCE on the outcomes of episodes drawn uniformly from a pool of ``n`` π_RL episodes,
    ``rm_batch`` a step, each generated inside the step (:func:`pool_episode`)."""
    opt = optax.adam(cfg.rm_lr)

    def loss(orm, data, key):
        policy, pool_key = data
        idx = jax.random.randint(key, (cfg.rm_batch,), 0, n)
        traj = jax.vmap(lambda i: pool_episode(spec, policy, pool_key, i))(idx)
        logit = jax.vmap(orm)(traj["d"], traj["op"], traj["arg"])
        return _bce(logit, traj["success"].astype(jnp.float32)), {}

    nets = stacked(lambda k: OutcomeRewardModel(spec, cfg.rm_hidden, k), seeds, 4)
    state = eqx.filter_vmap(lambda m: init_train_state(m, opt))(nets)
    return _fit(optax_step(loss, opt), state, (rl, pool_keys(seeds, 1)), seeds, cfg.rm_steps,
                cfg.chunk_size, ckpt, "orm", progress)
