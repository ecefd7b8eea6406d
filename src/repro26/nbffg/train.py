"""NBFFG training: maximise the ELBO of the residual ``u_theta`` (drift residual, or jump-rate
correction for discrete traits) with the core training loop."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import numpy as np
import optax

from repro26.core import io, memory
from repro26.core.train import init_train_state, optax_step, run_loop
from repro26.nbffg import data as D
from repro26.nbffg import losses as L
from repro26.nbffg import model as M


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
    """Optimizer and training step of one ``TrainConfig``, built once per process so that the
    seeds of a task (one job) share the compiled chunk (core ``run_loop`` caches it per step
    function)."""
    optimizer = optax.chain(optax.clip_by_global_norm(t.clip), optax.adam(t.lr))
    return optimizer, optax_step(L.make_loss(t.batch, t.paths_per_step), optimizer)


def train(cfg, task: D.Task, problem: L.Problem, seed: int, out: Path, progress: bool = True):
    """Adam on ``-ELBO`` (full tree if ``paths_per_step == 0``, else pathwise subsampling).

    Returns the trained residual and the metric history (one row per step).
    """
    t = cfg.train
    k_init, k_train = jax.random.split(jax.random.key(seed))
    model = init_residual(cfg, task, problem, k_init)
    # the activations one step keeps for its gradient, sized from shapes before XLA compiles the
    # chunk: at the paper's largest tasks compiling alone can exhaust the machine
    paths = f"{t.paths_per_step} paths" if t.paths_per_step else "the whole tree"
    memory.require(memory.vjp_bytes(L.make_loss(t.batch, t.paths_per_step), model, problem,
                                    k_train),
                   f"nbffg {task.name}: one training step's gradient ({t.batch} samples of "
                   f"{paths}, {cfg.steps_per_edge} steps per edge, width {t.width})")
    optimizer, step = _optimizer_and_step(t)
    state, history = run_loop(step, init_train_state(model, optimizer), problem, key=k_train,
                              num_steps=t.steps, chunk_size=t.chunk,
                              checkpoint_path=Path(str(out) + ".ckpt"),
                              checkpoint_every=t.chunk, desc=f"nbffg {task.name}", progress=progress)
    return state.model, history


def save_model(path: Path, model, steps: int) -> None:
    io.save_checkpoint(path, model, steps)


def load_model(path: Path, like):
    return io.load_model(path, like)
