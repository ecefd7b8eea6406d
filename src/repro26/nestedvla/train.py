"""Behaviour cloning of the base policy, the per-task adapters, the multi-task adapter and the
nested hypernetwork, every seed at once (models stacked on a leading seed axis, adapters also
on a task axis) through :func:`repro26.core.train.run_loop`.

Demonstrations are ``obs (n_tasks, N, OBS_DIM)``, ``acts (n_tasks, N, ACT_DIM)``, task tokens
``emb (n_tasks, EMB_DIM)`` and action masks ``mask (n_tasks, ACT_DIM)`` of the training tasks.
Each step draws ``per_task`` samples of every task in the step (uniform, with replacement);
seed s folds its index into the step key.
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core import train as core_train
from repro26.nestedvla.policy import (PLANAR, BasePolicy, LoRA, NestedHypernetwork, bc_loss,
                                     init_lora)
from repro26.nestedvla.suites import ACT_DIM, EMB_DIM


def optimizer(lr: float, steps: int) -> optax.GradientTransformation:
    """Adam with cosine decay to lr/10 and global-norm clipping at 1."""
    return optax.chain(optax.clip_by_global_norm(1.0),
                       optax.adam(optax.cosine_decay_schedule(lr, max(steps, 1), alpha=0.1)))


def _sample(key, obs, acts, per_task: int):
    idx = jax.random.randint(key, (per_task,), 0, obs.shape[0])
    return obs[idx], acts[idx]


def _tasks_loss(base, deltas_of, obs, acts, emb, mask, key, per_task):
    """Mean over tasks of the BC loss with deltas ``deltas_of(task index, emb)``."""
    keys = jax.random.split(key, obs.shape[0])

    def one(t, o, a, e, m, k):
        o, a = _sample(k, o, a, per_task)
        return bc_loss(base, deltas_of(t, e), o, e, a, m)

    return jnp.mean(jax.vmap(one)(jnp.arange(obs.shape[0]), obs, acts, emb, mask, keys))


def base_loss(base: BasePolicy, data, key, per_task: int):
    """Pretraining loss of the base policy: mean over tasks of the BC loss, no adapter;
    ``data = (obs, acts, emb, mask)`` of all pretraining tasks."""
    o, a, e, m = data
    return _tasks_loss(base, lambda t, e: None, o, a, e, m, key, per_task), {}


def adapter_loss(adapter: LoRA, data, key, samples: int):
    """One task's adapter on the frozen base: the BC loss of ``samples`` draws of that task;
    ``data = (base, obs, acts, emb, mask)`` of the task."""
    base, o, a, e, m = data
    o, a = _sample(key, o, a, samples)
    return bc_loss(base, adapter.deltas(), o, e, a, m), {}


def joint_loss(adapter: LoRA, data, key, per_task: int):
    """Multi-task joint training: one adapter, mean over tasks of the BC loss;
    ``data = (base, obs, acts, emb, mask)`` of all training tasks."""
    base, o, a, e, m = data
    deltas = adapter.deltas()
    return _tasks_loss(base, lambda t, e: deltas, o, a, e, m, key, per_task), {}


def nested_loss(hyper: NestedHypernetwork, data, key, per_task: int, weight: float):
    """NestedVLA's loss: mean over tasks of the BC loss of the generated adapter plus ``weight``
    times the mean relative reconstruction error of the generated deltas against the per-task
    adapters' (:func:`reconstruction_error`); ``data = (base, targets, obs, acts, emb, mask)``."""
    base, targets, o, a, e, m = data
    generated = jax.vmap(hyper.deltas)(e)
    rec = jnp.mean(jax.vmap(reconstruction_error)(generated, targets))
    bc = _tasks_loss(base, lambda t, e: jax.tree.map(lambda g: g[t], generated),
                     o, a, e, m, key, per_task)
    return bc + weight * rec, {"bc": bc, "reconstruction": rec}


def _fit(step, state, data, seeds, *, steps, chunk_size, checkpoint, desc, progress, extra_axes=0):
    """Run the seed-vmapped ``step`` (state stacked on seeds [and tasks])."""
    state, history = core_train.run_loop(
        step, state, (data, jnp.asarray(seeds, jnp.uint32)), key=jax.random.PRNGKey(0),
        num_steps=steps, chunk_size=min(chunk_size, steps), checkpoint_path=checkpoint,
        checkpoint_every=min(chunk_size, steps) if checkpoint is not None else None, desc=desc,
        progress=progress)
    return state.model, history["loss"]


def _seed_step(single, in_axes):
    """Vmap a per-seed optax step over seeds; ``data = (per-seed data, seeds)``."""
    def step(state, data, key):
        data, seeds = data
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seeds)
        return eqx.filter_vmap(single, in_axes=(eqx.if_array(0), in_axes, 0))(state, data, keys)
    return step


def init_bases(cfg, seeds, layout=PLANAR, act_dim: int = ACT_DIM) -> BasePolicy:
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    return eqx.filter_vmap(lambda k: BasePolicy(cfg.width, cfg.depth, cfg.heads, layout, act_dim,
                                                key=k))(keys)


def train_base(cfg, seeds, obs, acts, emb, mask, checkpoint: Path | None, progress: bool,
               layout=PLANAR):
    """Pretrain the base policy by BC on the pretraining tasks of every suite, per seed
    (``layout``: the tokens of the suite's observation and instruction)."""
    opt = optimizer(cfg.base_lr, cfg.base_steps)
    step = _seed_step(core_train.optax_step(lambda m, d, k: base_loss(m, d, k, cfg.per_task), opt),
                      None)
    state = eqx.filter_vmap(lambda m: core_train.init_train_state(m, opt))(
        init_bases(cfg, seeds, layout, acts.shape[-1]))
    data = tuple(jnp.asarray(x) for x in (obs, acts, emb, mask))
    return _fit(step, state, data, seeds, steps=cfg.base_steps, chunk_size=cfg.chunk_size,
                checkpoint=checkpoint, desc="base", progress=progress)


def init_adapters(cfg, seeds, shapes, n_tasks: int) -> LoRA:
    """LoRA adapters stacked (seed, task); task t of seed s starts from key (s, t)."""
    def one(s, t):
        return init_lora(shapes, cfg.rank, jax.random.fold_in(jax.random.PRNGKey(1000 + s), t))
    return eqx.filter_vmap(lambda s: eqx.filter_vmap(lambda t: one(s, t))(jnp.arange(n_tasks)))(
        jnp.asarray(seeds))


def train_adapters(cfg, seeds, bases, obs, acts, emb, mask, checkpoint, progress):
    """One LoRA adapter per training task on the frozen base (BC on that task's data only),
    vmapped over tasks and seeds."""
    opt = optimizer(cfg.adapter_lr, cfg.adapter_steps)
    n_tasks = obs.shape[0]
    single = core_train.optax_step(lambda m, d, k: adapter_loss(m, d, k, cfg.per_task * 4), opt)

    def per_seed(state, data, key):
        base, o, a, e, m = data
        keys = jax.random.split(key, n_tasks)
        return eqx.filter_vmap(single, in_axes=(eqx.if_array(0), (None, 0, 0, 0, 0), 0))(
            state, (base, o, a, e, m), keys)

    step = _seed_step(per_seed, (eqx.if_array(0), None, None, None, None))
    adapters = init_adapters(cfg, seeds, _shapes(bases), n_tasks)
    state = eqx.filter_vmap(eqx.filter_vmap(
        lambda m: core_train.init_train_state(m, opt)))(adapters)
    data = (bases, *(jnp.asarray(x) for x in (obs, acts, emb, mask)))
    return _fit(step, state, data, seeds, steps=cfg.adapter_steps, chunk_size=cfg.chunk_size,
                checkpoint=checkpoint, desc="adapters", progress=progress)


def _shapes(bases) -> tuple:
    return tuple(w.shape[1:] for w in bases.weights)


def init_joint(cfg, seeds, shapes) -> LoRA:
    return eqx.filter_vmap(lambda s: init_lora(shapes, cfg.rank, jax.random.PRNGKey(2000 + s)))(
        jnp.asarray(seeds))


def train_joint(cfg, seeds, bases, obs, acts, emb, mask, checkpoint, progress):
    """Multi-task joint training: one LoRA adapter on all training tasks (BC), same steps,
    learning rate and samples per step as the nested hypernetwork."""
    opt = optimizer(cfg.adapter_lr, cfg.nested_steps)
    step = _seed_step(core_train.optax_step(lambda m, d, k: joint_loss(m, d, k, cfg.per_task), opt),
                      (eqx.if_array(0), None, None, None, None))
    state = eqx.filter_vmap(lambda m: core_train.init_train_state(m, opt))(
        init_joint(cfg, seeds, _shapes(bases)))
    data = (bases, *(jnp.asarray(x) for x in (obs, acts, emb, mask)))
    return _fit(step, state, data, seeds, steps=cfg.nested_steps, chunk_size=cfg.chunk_size,
                checkpoint=checkpoint, desc="joint", progress=progress)


def init_nested(cfg, seeds, shapes, emb_dim: int = EMB_DIM) -> NestedHypernetwork:
    return eqx.filter_vmap(lambda s: NestedHypernetwork(
        shapes, cfg.rank, cfg.code_dim, cfg.inner_width, cfg.outer_width, emb_dim,
        key=jax.random.PRNGKey(3000 + s)))(jnp.asarray(seeds))


def reconstruction_error(generated, target) -> jax.Array:
    """sum_l ||dW_gen,l - dW_l||^2 / sum_l ||dW_l||^2 (relative squared error of the deltas)."""
    num = sum(jnp.sum((g - t) ** 2) for g, t in zip(generated, target))
    den = sum(jnp.sum(t ** 2) for t in target)
    return num / jnp.maximum(den, 1e-12)


def train_nested(cfg, seeds, bases, adapters, obs, acts, emb, mask, checkpoint, progress):
    """NestedVLA: fit the nested hypernetwork to reproduce every training task's adapter deltas
    (relative squared error, weight ``reconstruction_weight``) plus the BC loss of the
    generated adapter on that task."""
    opt = optimizer(cfg.adapter_lr, cfg.nested_steps)

    def loss_fn(hyper, data, key):
        return nested_loss(hyper, data, key, cfg.per_task, cfg.reconstruction_weight)

    targets = eqx.filter_vmap(eqx.filter_vmap(lambda ad: ad.deltas()))(adapters)
    step = _seed_step(core_train.optax_step(loss_fn, opt),
                      (eqx.if_array(0), 0, None, None, None, None))
    state = eqx.filter_vmap(lambda m: core_train.init_train_state(m, opt))(
        init_nested(cfg, seeds, _shapes(bases), emb.shape[-1]))
    data = (bases, targets, *(jnp.asarray(x) for x in (obs, acts, emb, mask)))
    return _fit(step, state, data, seeds, steps=cfg.nested_steps, chunk_size=cfg.chunk_size,
                checkpoint=checkpoint, desc="nested", progress=progress)


def loss_table(name: str, seeds, loss: np.ndarray) -> list[dict]:
    """Training loss rows (every chunk's last step), for the record."""
    loss = np.asarray(loss).reshape(loss.shape[0], len(seeds), -1).mean(-1)
    every = max(1, loss.shape[0] // 20)
    return [{"model": name, "step": int(i + 1), "seed": int(s), "loss": float(loss[i, j])}
            for i in range(every - 1, loss.shape[0], every) for j, s in enumerate(seeds)]


def train_adapters_ppo(cfg, seeds, bases, suite_tasks, checkpoint, progress):
    """One LoRA adapter per training task on the frozen base by PPO (:mod:`ppo`), vmapped over
    the tasks of a suite and seeds, suite after suite; adapters start as in
    :func:`init_adapters` (the base policy). ``suite_tasks``: [(suite, Tasks)] in task order.
    Returns the adapters stacked (seed, task) and the per-iteration mean episode success."""
    from repro26.nestedvla import ppo, suites

    opt = optimizer(cfg.ppo_lr, cfg.ppo_iterations * cfg.ppo_epochs)
    n_total = sum(len(t) for _, t in suite_tasks)
    adapters = init_adapters(cfg, seeds, _shapes(bases), n_total)
    out, curves, offset = [], [], 0
    for i, (suite, tasks) in enumerate(suite_tasks):
        n = len(tasks)
        mask = (jnp.arange(suites.ACT_DIM) < suites.ACT_USED[suite]).astype(jnp.float32)
        task = (jnp.asarray(tasks.kind), jnp.asarray(tasks.goal), jnp.asarray(tasks.obj),
                jnp.asarray(tasks.embedding()), jnp.tile(mask, (n, 1)))
        single = ppo.ppo_step(suite, cfg, opt)

        def per_seed(state, data, key, single=single, n=n):
            base, task = data
            return eqx.filter_vmap(single, in_axes=(eqx.if_array(0), (None, 0), 0))(
                state, (base, task), jax.random.split(key, n))

        step = _seed_step(per_seed, (eqx.if_array(0), None))
        own = jax.tree.map(lambda x: x[:, offset:offset + n], adapters)
        agents = eqx.filter_vmap(lambda s, lora: eqx.filter_vmap(
            lambda t, l: ppo.init_agent(l, cfg.ppo_std, cfg.width,
                                        jax.random.fold_in(jax.random.PRNGKey(4000 + s), t)))(
            jnp.arange(n), lora))(jnp.asarray(seeds), own)
        state = eqx.filter_vmap(eqx.filter_vmap(
            lambda m: core_train.init_train_state(m, opt)))(agents)
        ckpt = None if checkpoint is None else checkpoint.with_name(f"{checkpoint.name}.{suite}")
        state, history = core_train.run_loop(
            step, state, ((bases, task), jnp.asarray(seeds, jnp.uint32)),
            key=jax.random.PRNGKey(5000 + i), num_steps=cfg.ppo_iterations,
            chunk_size=min(cfg.chunk_size, cfg.ppo_iterations), checkpoint_path=ckpt,
            checkpoint_every=min(cfg.chunk_size, cfg.ppo_iterations) if ckpt else None,
            desc=f"ppo {suite}", progress=progress)
        out.append(state.model.lora)
        curves.append(np.asarray(history["success"]))
        offset += n
    lora = jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *out)
    return lora, np.concatenate(curves, axis=-1)
