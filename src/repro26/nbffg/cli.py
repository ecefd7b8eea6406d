"""Stages of NBFFG, ``repro26 nbffg <stage>``, and the method's typed config.

data -> train (NBFFG residual) -> evaluate (all methods), one job per task that runs the
configured seeds in one process, ``seed_batch`` of them per vmapped program; cost (step time
vs tree size). The figures (``figures.FIGURES``) and claims
(``claims.CLAIMS``) stages come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (ConfigError, Count, NonNegative, NonNegativeInt, Positive,
                                 Probability, UsageError)
from repro26.core.method import stage


@dataclasses.dataclass(frozen=True)
class ShapesConfig:
    landmarks: Count              # k landmarks in 2-D (d = 2k)
    grid: Count                   # kernel centres on a grid x grid lattice (noise dim 2 grid^2)
    kernel_width: Positive = 0.5
    kernel_scale: Positive = 0.15
    root_std: Positive = 0.02
    obs_std: Positive = 0.02


@dataclasses.dataclass(frozen=True)
class CTMCConfig:
    states: Count                 # S
    rate: Positive                 # mu: mean jump rate scale
    kappa: float                # amplitude of the seasonal rate modulation (0 = proxy exact)
    period: Positive               # period of the modulation in tree-time units
    error: Probability                # emission: P(observed symbol != state)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: Count
    chunk: Count
    batch: Count                  # forward samples per step
    paths_per_step: NonNegativeInt  # root-to-leaf paths per sample; 0 = whole tree
    lr: Positive = 3e-3
    clip: Positive = 10.0
    width: Count = 64
    depth: Count = 2
    embed_dim: Count = 8


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    samples: Count                # importance samples (and pCN iterations of the MCMC baseline)
    mcmc_rho: Probability
    mcmc_ref_iters: Count         # per chain, long pCN reference for nonlinear tasks
    mcmc_ref_chains: Count


@dataclasses.dataclass(frozen=True)
class CostConfig:
    leaves: tuple[Count, ...]
    paths: Count
    batch: Count
    repeats: Count
    steps_per_timing: Count
    grad_keys: Count              # independent keys per repeat for the gradient variance
    dynamics: Literal["linear", "doublewell", "statedep", "shapes"]


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    seed_batch: Count             # seeds trained / evaluated in one vmapped program (memory x it)
    tasks: tuple[str, ...]
    dim: Count
    theta: float
    sigma: Positive
    alpha: NonNegative
    gamma: Probability
    root_std: Positive
    obs_std: Positive
    tree_height: Positive
    steps_per_edge: Count
    observed_fraction: Probability
    shapes: ShapesConfig
    ctmc: CTMCConfig
    train: TrainConfig
    evaluate: EvalConfig
    cost: CostConfig


def _tasks(cfg: Config):
    from repro26.nbffg.data import parse_task

    tasks = [parse_task(t, f"nbffg.tasks[{i}]") for i, t in enumerate(cfg.tasks)]
    for leaves in cfg.cost.leaves:
        parse_task(f"{cfg.cost.dynamics}_balanced_{leaves}", "nbffg.cost.leaves")
    return tasks


def _task(run: Run):
    from repro26.nbffg.data import parse_task

    task = parse_task(run.variant["task"], "--variant task")
    if task.name not in run.cfg.tasks:
        raise UsageError(f"--variant task: '{task.name}' is not in nbffg.tasks {list(run.cfg.tasks)}")
    return task


def check(cfg: Config) -> None:
    _tasks(cfg)
    if not 0.0 < cfg.observed_fraction <= 1.0:
        raise ConfigError("nbffg.observed_fraction: must be in (0, 1]")
    if cfg.ctmc.states < 2 or not 0.0 < cfg.ctmc.error < 1.0 - 1.0 / cfg.ctmc.states:
        raise ConfigError("nbffg.ctmc: states must be >= 2 and error in (0, 1 - 1/states)")
    if cfg.train.steps % cfg.train.chunk and cfg.train.steps > cfg.train.chunk:
        raise ConfigError("nbffg.train.steps: must be a multiple of train.chunk")
    positive = {"sigma": cfg.sigma, "root_std": cfg.root_std, "obs_std": cfg.obs_std,
                "tree_height": cfg.tree_height, "ctmc.rate": cfg.ctmc.rate,
                "ctmc.period": cfg.ctmc.period, "train.lr": cfg.train.lr,
                **{f"shapes.{k}": v for k, v in dataclasses.asdict(cfg.shapes).items()}}
    counts = {"dim": cfg.dim, "steps_per_edge": cfg.steps_per_edge, "train.steps": cfg.train.steps,
              "train.chunk": cfg.train.chunk, "train.batch": cfg.train.batch,
              "train.width": cfg.train.width, "train.embed_dim": cfg.train.embed_dim,
              "evaluate.mcmc_ref_chains": cfg.evaluate.mcmc_ref_chains,
              "cost.paths": cfg.cost.paths, "cost.batch": cfg.cost.batch,
              "cost.steps_per_timing": cfg.cost.steps_per_timing}
    if cfg.cost.grad_keys < 2:
        raise ConfigError("nbffg.cost.grad_keys: at least 2 (a variance over keys)")
    for name, value in {**positive, **counts}.items():
        if value <= 0:
            raise ConfigError(f"nbffg.{name}: must be positive, got {value}")
    if not 0.0 <= cfg.gamma < 1.0 or not 0.0 <= cfg.evaluate.mcmc_rho < 1.0:
        raise ConfigError("nbffg.gamma and evaluate.mcmc_rho: must lie in [0, 1)")
    if cfg.evaluate.samples < 2 or cfg.evaluate.mcmc_ref_iters < 2:
        raise ConfigError("nbffg.evaluate.samples and evaluate.mcmc_ref_iters: must be at least "
                          "2 (spread over samples)")
    if cfg.cost.repeats < 3:
        raise ConfigError(f"nbffg.cost.repeats: at least 3 interleaved timing rounds, got "
                          f"{cfg.cost.repeats}")
    if cfg.shapes.landmarks < 3:
        raise ConfigError(f"nbffg.shapes.landmarks: at least 3, got {cfg.shapes.landmarks}")
    if len(cfg.cost.leaves) < 2 or cfg.train.paths_per_step < 0 or cfg.train.depth < 0:
        raise ConfigError("nbffg.cost.leaves: at least 2 tree sizes; train.paths_per_step and "
                          "train.depth: non-negative")
    if sorted(set(cfg.cost.leaves)) != sorted(cfg.cost.leaves):
        raise ConfigError(f"nbffg.cost.leaves: tree sizes must be distinct, got {list(cfg.cost.leaves)}")
    if cfg.seed_batch < 1:
        raise ConfigError(f"nbffg.seed_batch: at least 1 seed per batch, got {cfg.seed_batch}")
    if not cfg.seeds or min(cfg.seeds) < 0:
        raise ConfigError("nbffg.seeds: need a non-empty list of non-negative integers")


def _seed_file(folder: Path, seed: int, suffix: str) -> Path:
    return folder / f"seed{seed}{suffix}"


def _folder(run: Run) -> Path:
    """--out of a per-task stage: the task's folder, one ``seed<s>`` file per configured seed."""
    if run.out.suffix:
        raise UsageError(f"--out: a per-task stage writes one file per seed into a folder "
                         f"(results/<scale>/nbffg/<stage>/<task>), got {run.out}")
    run.out.mkdir(parents=True, exist_ok=True)
    return run.out


def _batches(cfg: Config) -> list[tuple[int, ...]]:
    """The configured seeds in consecutive batches of ``seed_batch`` (one vmapped program each)."""
    return [cfg.seeds[i:i + cfg.seed_batch] for i in range(0, len(cfg.seeds), cfg.seed_batch)]


@stage({"task": str})
def data_stage(run: Run) -> None:
    """Tree, true states and leaf observations of one task, every configured seed, simulated in
    one batched program (``<out>/seed<s>.npz``)."""
    from repro26.nbffg import data as D

    task, folder = _task(run), _folder(run)
    for seed, arrays in zip(run.cfg.seeds, D.generate(run.cfg, task, run.cfg.seeds)):
        D.save(_seed_file(folder, seed, ".npz"), arrays)


def _history_path(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".eqx") + "_history.csv")


def _load_data(run: Run, task) -> dict[int, dict]:
    from repro26.nbffg import data as D

    return {seed: D.load(run.input(f"{task.name}/seed{seed}.npz"), run.cfg, task)
            for seed in run.cfg.seeds}


@stage({"task": str}, matches=("task",))
def train_stage(run: Run) -> None:
    """Train NBFFG's neural residual on one task, every configured seed in this one process:
    ``seed_batch`` seeds at a time in one vmapped program (one compilation for the task).

    --input the task's data ``seed<s>.npz``; writes ``<out>/seed<s>.eqx`` and its ELBO history
    ``<out>/seed<s>_history.csv``."""
    from repro26.nbffg import losses as L
    from repro26.nbffg import solvers as S
    from repro26.nbffg import train as T

    task, folder = _task(run), _folder(run)
    data = _load_data(run, task)
    shape = L.tree_shape(list(data.values()))
    for seeds in _batches(run.cfg):
        problems = L.build_problems(run.cfg, task, [data[s] for s in seeds], shape)
        models, history = T.train(run.cfg, task, problems, seeds,
                                  folder / f"seeds{'_'.join(map(str, seeds))}", progress=run.progress)
        for i, seed in enumerate(seeds):
            model_path = _seed_file(folder, seed, ".eqx")
            elbo = history["elbo"][:, i]
            io.write_table(_history_path(model_path),
                           {"step": np.arange(len(elbo)), "elbo": elbo},
                           run.meta(task=task.name, seed=seed))
            T.save_model(model_path, S.unstack(models, i), run.cfg.train.steps)


@stage({"task": str}, matches=("task",))
def evaluate_stage(run: Run) -> None:
    """NBFFG, BFFG, naive and pCN MCMC on one task, every configured seed in this one process
    (``seed_batch`` at a time, vmapped): ELBO, ESS, evidence, posteriors.

    --input the data ``seed<s>.npz`` and models ``seed<s>.eqx``; writes the metrics
    ``<out>/seed<s>.csv`` and the internal-node posteriors ``<out>/seed<s>_nodes.csv``."""
    import jax

    from repro26.nbffg import evaluate as E
    from repro26.nbffg import losses as L
    from repro26.nbffg import solvers as S
    from repro26.nbffg import train as T

    task, folder = _task(run), _folder(run)
    data = _load_data(run, task)
    shape = L.tree_shape(list(data.values()))
    for seeds in _batches(run.cfg):
        arrays = [data[s] for s in seeds]
        problems = L.build_problems(run.cfg, task, arrays, shape)
        models = S.stack([T.load_model(run.input(f"{task.name}/seed{s}.eqx"),
                                       T.init_residual(run.cfg, task, S.unstack(problems, i),
                                                       jax.random.key(0)))
                          for i, s in enumerate(seeds)])
        results = E.evaluate(run.cfg, task, arrays, problems, models, seeds, shape)
        for seed, (rows, node_rows) in zip(seeds, results):
            io.write_table(_seed_file(folder, seed, "_nodes.csv"), node_rows, run.meta(seed=seed))
            io.write_table(_seed_file(folder, seed, ".csv"), rows, run.meta(seed=seed))


@stage()
def cost_stage(run: Run) -> None:
    """CPU seconds per training step and ELBO-gradient variance (absolute and relative) vs tree
    size, whole tree vs pathwise subsampling. Every (tree, mode) step program is timed in the
    same interleaved rounds by CPU time (:mod:`repro26.core.timing`), one round per repeat; the
    control ratio's spread is the noise floor."""
    from repro26.core import timing
    from repro26.nbffg import evaluate as E

    c = run.cfg.cost
    programs, variances, shape = {}, {}, {}
    for leaves in c.leaves:
        for mode, paths in (("full", 0), ("subsampled", c.paths)):
            name = f"{mode}_{leaves}"
            programs[name], variances[name] = E.step_program(run.cfg, leaves, paths, run.cfg.seeds[0])
            shape[name] = (leaves, mode)
    baseline = f"full_{c.leaves[0]}"
    t = timing.interleaved_cpu_times(programs, baseline, rounds=c.repeats, min_seconds=0.05)
    rows = []
    for name, (leaves, mode) in shape.items():
        for rep, sec in enumerate(t["seconds"][name]):
            var, rel = variances[name](rep)
            rows.append({"leaves": leaves, "nodes": 2 * leaves - 1,
                         "path_edges": int(round(np.log2(leaves))), "mode": mode, "repeat": rep,
                         "cpu_sec_per_step": sec / c.steps_per_timing, "grad_var": var,
                         "grad_rel_var": rel, "noise_floor": t["noise_floor"]})
    io.write_table(run.out, rows, run.meta())


STAGES = {
    "data": data_stage,
    "train": train_stage,
    "evaluate": evaluate_stage,
    "cost": cost_stage,
}
