"""NBFFG training: maximise the ELBO of the residual ``u_theta`` (drift residual, or jump-rate
correction for discrete traits) with the core training loop."""

from __future__ import annotations

import functools
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core import io, memory
from repro26.core.train import init_train_state, optax_step, run_loop
from repro26.nbffg import data as D
from repro26.nbffg import losses as L
from repro26.nbffg import model as M
from repro26.nbffg import solvers as S


def init_residual(cfg, task: D.Task, problem: L.Problem | L.CTMCProblem, key):
    """The NBFFG network at initialisation (zero output: BFFG): drift residual, or rate
    correction for discrete traits."""
    t = cfg.train
    if isinstance(problem, L.CTMCProblem):
        return M.RateCorrection(problem.states, problem.tree.n + 1, t.width, t.depth, t.embed_dim,
                                cfg.tree_height, key=key)
    d = problem.obs.shape[1]
    x_scale = float(np.abs(np.asarray(problem.obs)).max()) or 1.0
    return M.Residual(d, problem.m, problem.tree.n + 1, t.width, t.depth, t.embed_dim, x_scale,
                      key=key)


@functools.lru_cache(maxsize=8)
def _optimizer_and_step(t):
    """Optimizer and the training step of one ``TrainConfig`` for a batch of seeds, built once per
    process so that the batches of a task (one job) share the compiled chunk (core ``run_loop``
    caches it per step function).

    The step is ``optax_step`` vmapped over the seed axis of the state and the problems. Its
    data are ``(problems, seed_keys)``: seed ``s`` takes the step key
    ``fold_in(seed_key_s, bits(fold_in(key, step)))`` (``run_loop``'s key is the same for every
    batch), so a seed's training does not depend on which seeds share its batch, and a resumed
    run reaches the parameters of an uninterrupted one."""
    optimizer = optax.chain(optax.clip_by_global_norm(t.clip), optax.adam(t.lr))
    step = optax_step(L.make_loss(t.batch, t.paths_per_step), optimizer)

    def batched(state, data, key):
        problems, seed_keys = data
        bits = jax.random.bits(key, dtype=jnp.uint32)
        keys = jax.vmap(lambda k: jax.random.fold_in(k, bits))(seed_keys)
        return eqx.filter_vmap(step)(state, problems, keys)

    return optimizer, batched


def train(cfg, task: D.Task, problems, seeds, out: Path, progress: bool = True):
    """Adam on ``-ELBO`` (full tree if ``paths_per_step == 0``, else pathwise subsampling) for
    the seeds ``seeds`` at once: ``problems`` stacked on a leading seed axis
    (``losses.build_problems``), one network per seed (initialised from ``key(seed)``), one
    compiled program that steps them all (``jax.vmap``).

    Returns the trained residuals (stacked) and the ELBO history ``(steps, seeds)``.
    """
    t = cfg.train
    keys = [jax.random.split(jax.random.key(seed)) for seed in seeds]
    models = S.stack([init_residual(cfg, task, S.unstack(problems, i), k_init)
                      for i, (k_init, _) in enumerate(keys)])
    seed_keys = jnp.stack([k_train for _, k_train in keys])
    # the activations one step keeps for its gradient, sized from shapes before XLA compiles the
    # chunk: at the paper's largest tasks compiling alone can exhaust the machine
    paths = f"{t.paths_per_step} paths" if t.paths_per_step else "the whole tree"
    loss = eqx.filter_vmap(L.make_loss(t.batch, t.paths_per_step))
    memory.require(memory.vjp_bytes(loss, models, problems, seed_keys),
                   f"nbffg {task.name}: one training step's gradient ({len(seeds)} seeds x "
                   f"{t.batch} samples of {paths}, {cfg.steps_per_edge} steps per edge, width "
                   f"{t.width}; nbffg.seed_batch sets the seeds per batch)")
    optimizer, step = _optimizer_and_step(t)
    state = eqx.filter_vmap(lambda m: init_train_state(m, optimizer))(models)
    state, history = run_loop(step, state, (problems, seed_keys), key=jax.random.key(0),
                              num_steps=t.steps, chunk_size=t.chunk,
                              checkpoint_path=Path(str(out) + ".ckpt"),
                              checkpoint_every=t.chunk, desc=f"nbffg {task.name} seeds {list(seeds)}",
                              progress=progress)
    return state.model, history


def save_model(path: Path, model, steps: int) -> None:
    io.save_checkpoint(path, model, steps)


def load_model(path: Path, like):
    return io.load_model(path, like)
