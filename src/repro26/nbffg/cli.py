"""Stages of NBFFG: ``repro26 nbffg <stage>``.

data (per task, seed) -> train (NBFFG residual, per task, seed) -> evaluate (all methods, per
task, seed) ; cost (step time vs tree size) ; fig_* (one per figure) ; claims.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import ConfigError, UsageError


@dataclasses.dataclass(frozen=True)
class ShapesConfig:
    landmarks: int = 10         # k landmarks in 2-D (d = 2k)
    grid: int = 4               # kernel centres on a grid x grid lattice (noise dim 2 grid^2)
    kernel_width: float = 0.5
    kernel_scale: float = 0.15
    root_std: float = 0.02
    obs_std: float = 0.02


@dataclasses.dataclass(frozen=True)
class CTMCConfig:
    states: int = 4             # S
    rate: float = 1.0           # mu: mean jump rate scale
    kappa: float = 1.5          # amplitude of the seasonal rate modulation (0 = proxy exact)
    period: float = 1.0         # period of the modulation in tree-time units
    error: float = 0.05         # emission: P(observed symbol != state)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: int = 300
    chunk: int = 50
    lr: float = 3e-3
    clip: float = 10.0
    batch: int = 8              # forward samples per step
    paths_per_step: int = 4     # root-to-leaf paths per sample; 0 = whole tree
    width: int = 64
    depth: int = 2
    embed_dim: int = 8


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    samples: int = 512          # importance samples (and pCN iterations of the MCMC baseline)
    mcmc_rho: float = 0.9
    mcmc_ref_iters: int = 4000  # per chain, long pCN reference for nonlinear tasks
    mcmc_ref_chains: int = 4


@dataclasses.dataclass(frozen=True)
class CostConfig:
    leaves: tuple[int, ...] = (8, 16, 32, 64, 128)
    paths: int = 4
    batch: int = 4
    repeats: int = 3
    steps_per_timing: int = 5
    dynamics: str = "doublewell"


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    tasks: tuple[str, ...]
    dim: int = 2
    theta: float = 1.0
    sigma: float = 0.5
    alpha: float = 2.0
    gamma: float = 0.6
    root_std: float = 1.0
    obs_std: float = 0.1
    tree_height: float = 2.0
    steps_per_edge: int = 16
    observed_fraction: float = 1.0
    shapes: ShapesConfig = ShapesConfig()
    ctmc: CTMCConfig = CTMCConfig()
    train: TrainConfig = TrainConfig()
    evaluate: EvalConfig = EvalConfig()
    cost: CostConfig = CostConfig()


def _tasks(cfg: Config):
    from repro26.nbffg.data import parse_task

    tasks = [parse_task(t, f"nbffg.tasks[{i}]") for i, t in enumerate(cfg.tasks)]
    for leaves in cfg.cost.leaves:
        parse_task(f"{cfg.cost.dynamics}_balanced_{leaves}", "nbffg.cost.leaves")
    return tasks


def _task(run: Run):
    from repro26.nbffg.data import parse_task

    if run.variant is None or run.seed is None:
        raise UsageError(f"stage '{run.stage}' needs --variant <task> and --seed N")
    task = parse_task(run.variant, "--variant")
    if task.name not in run.cfg.tasks:
        raise UsageError(f"--variant: '{run.variant}' is not in nbffg.tasks {list(run.cfg.tasks)}")
    return task


def _check(cfg: Config) -> None:
    _tasks(cfg)
    if not 0.0 < cfg.observed_fraction <= 1.0:
        raise ConfigError("nbffg.observed_fraction: must be in (0, 1]")
    if cfg.ctmc.states < 2 or not 0.0 < cfg.ctmc.error < 1.0 - 1.0 / cfg.ctmc.states:
        raise ConfigError("nbffg.ctmc: states must be >= 2 and error in (0, 1 - 1/states)")
    if cfg.cost.dynamics == "ctmc":
        raise ConfigError("nbffg.cost.dynamics: must be one of linear, doublewell, statedep, shapes")
    if cfg.train.steps % cfg.train.chunk and cfg.train.steps > cfg.train.chunk:
        raise ConfigError("nbffg.train.steps: must be a multiple of train.chunk")


def stage_data(run: Run) -> None:
    from repro26.nbffg import data as D

    _check(run.cfg)
    task = _task(run)
    arrays = D.generate(run.cfg, task, run.seed)
    D.save(run.out, arrays)


def _history_path(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".eqx") + "_history.csv")


def stage_train(run: Run) -> None:
    from repro26.nbffg import data as D
    from repro26.nbffg import losses as L
    from repro26.nbffg import train as T

    _check(run.cfg)
    task = _task(run)
    problem = L.build_problem(run.cfg, task, D.load(run.input(".npz")))
    model, history = T.train(run.cfg, task, problem, run.seed, run.out, progress=run.progress)
    io.write_table(_history_path(run.out),
                   {"step": np.arange(len(history["elbo"])), "elbo": history["elbo"]},
                   run.meta(task=task.name))
    T.save_model(run.out, model, run.cfg.train.steps)


def stage_evaluate(run: Run) -> None:
    from repro26.nbffg import data as D
    from repro26.nbffg import evaluate as E
    from repro26.nbffg import losses as L
    from repro26.nbffg import train as T

    _check(run.cfg)
    task = _task(run)
    arrays = D.load(run.input(".npz"))
    problem = L.build_problem(run.cfg, task, arrays)
    like = T.init_residual(run.cfg, task, problem, jax.random.key(0))
    model = T.load_model(run.input(".eqx"), like)
    rows, node_rows = E.evaluate(run.cfg, task, arrays, model, run.seed)
    io.write_table(run.out.with_name(run.out.stem + "_nodes.csv"), node_rows, run.meta())
    io.write_table(run.out, rows, run.meta())


def stage_cost(run: Run) -> None:
    from repro26.nbffg import evaluate as E

    _check(run.cfg)
    c = run.cfg.cost
    rows = []
    for leaves in c.leaves:
        depth = int(round(np.log2(leaves)))
        for mode, paths in (("full", 0), ("subsampled", c.paths)):
            for rep, sec in enumerate(E.step_cost(run.cfg, leaves, paths, c.repeats, run.cfg.seeds[0])):
                rows.append({"leaves": leaves, "nodes": 2 * leaves - 1, "path_edges": depth,
                             "mode": mode, "repeat": rep, "sec_per_step": sec})
    io.write_table(run.out, rows, run.meta())


def _figure(name: str):
    def stage(run: Run) -> None:
        from repro26.nbffg import figures

        getattr(figures, name)(run.cfg, list(run.inputs), run.out)

    return stage


def stage_claims(run: Run) -> None:
    from repro26.nbffg import claims

    claims.write(run)


STAGES = {
    "data": stage_data,
    "train": stage_train,
    "evaluate": stage_evaluate,
    "cost": stage_cost,
    "fig_linear": _figure("linear_recovery"),
    "fig_elbo_ess": _figure("elbo_ess"),
    "fig_posterior": _figure("posterior_error"),
    "fig_shapes": _figure("shapes"),
    "fig_cost": _figure("cost"),
    "fig_training": _figure("training"),
    "fig_discrete": _figure("discrete"),
    "claims": stage_claims,
}
