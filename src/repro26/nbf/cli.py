"""Stages of ``repro26 nbf <stage>`` and the method's typed config.

data (belief pool + episodes) -> train (one GDE per dimension, seeds vmapped) -> filter (one
job per scenario: k evaders, dynamics, N particles; every filter, every seed) -> evaluate
(gather tables); the figure and claims stages come from core.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated
from pathlib import Path

from repro26.core import io, memory
from repro26.core.cli import Run
from repro26.core.config import (
    Bounds, ConfigError, Count, NonNegative, NonNegativeInt, OpenUnit, Positive, UsageError,
)
from repro26.core.method import stage
from repro26.nbf.data import Dynamics


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    grid: Count  # arena of grid x grid cells
    horizon: Count  # filter steps per episode
    episodes: Count  # evaluation episodes per seed and scenario
    evaders: tuple[Count, ...]  # k values of the dimension sweep (d = 2k)
    particles: Count  # N of the tracking, dimension and zero-shot experiments
    particle_grid: tuple[Count, ...]  # N values of the error-vs-N experiment
    dynamics: dict[str, Dynamics]  # evader policies by name
    held_in: str
    held_out: tuple[str, ...]
    pool_episodes: Count  # held-in episodes whose exact beliefs train the GDE
    train_steps: Count
    batch_size: Count
    set_size: Count
    target_size: Count
    hidden: Count
    embed_dim: Count
    flow_layers: Count
    learning_rate: Positive  # peak of the warmup-cosine schedule
    encoder_features: NonNegativeInt = 128  # Fourier set encoder with this many frequencies (0: DeepSets)
    spline_knots: NonNegativeInt = 8  # bins of the rational-quadratic spline couplings (0: affine)
    warmup_steps: NonNegativeInt = 200
    ema_decay: Annotated[float, Bounds(0, 1, high_open=True)] = 0.999  # weight averaging of the GDE iterates
    fov_radius: Positive = 2.5
    p_detect: OpenUnit = 0.9
    obs_sigma: Positive = 0.5
    patrol_radius: NonNegative = 0.25  # fraction of the grid size (converted in `arena`)
    patrol_period: Count = 24
    pf_multiplier: Count = 10
    gmm_components: Count = 4
    gmm_iters: Count = 10
    reference_samples: Count = 512
    eval_every: Count = 2
    sinkhorn_epsilon: Positive = 0.01
    mmd_bandwidth: Positive = 0.1


def check(cfg: Config) -> None:
    """Cross-field checks the types cannot express (one line each)."""
    names = ", ".join(sorted(cfg.dynamics))
    for name in (cfg.held_in, *cfg.held_out):
        if name not in cfg.dynamics:
            raise ConfigError(f"nbf.held_in/held_out: '{name}' is not in dynamics ({names})")
    if cfg.held_in in cfg.held_out:
        raise ConfigError(f"nbf.held_out: '{cfg.held_in}' is the held-in dynamics")
    if not cfg.evaders or min(cfg.evaders) < 1 or 1 not in cfg.evaders:
        raise ConfigError(f"nbf.evaders: positive k values including 1, got {list(cfg.evaders)}")
    if cfg.particles not in cfg.particle_grid:
        raise ConfigError(f"nbf.particles: {cfg.particles} must be on particle_grid "
                          f"{list(cfg.particle_grid)}")
    if cfg.grid < 4 or cfg.horizon < cfg.eval_every:
        raise ConfigError("nbf.grid: at least 4 cells and horizon >= eval_every")
    if not 0 <= cfg.warmup_steps < cfg.train_steps:
        raise ConfigError(f"nbf.warmup_steps: must lie in [0, train_steps), got "
                          f"{cfg.warmup_steps}")
    if min(cfg.particle_grid) < cfg.gmm_components:
        raise ConfigError("nbf.particle_grid: every N must be at least gmm_components")


def _scenario(run: Run) -> tuple[int, str, int]:
    from repro26.nbf import evaluate

    key = (run.variant["evaders"], run.variant["dynamics"], run.variant["particles"])
    allowed = evaluate.scenarios(run.cfg)
    if key not in allowed:
        raise UsageError("--variant: evaders,dynamics,particles must be a configured scenario: "
                         + "; ".join(f"{k},{d},{n}" for k, d, n in allowed))
    return key


@stage()
def data_stage(run: Run) -> None:
    """Exact-belief pool (GDE training family) and the evaluation episodes of every scenario."""
    from repro26.nbf import evaluate

    # the exact filter's per-step transition matrices: horizon x (grid^2)^2 float32, twice
    memory.require(2 * 4 * run.cfg.horizon * run.cfg.grid ** 4, f"nbf.grid={run.cfg.grid}")
    out = Path(run.out)
    io.write_npz(out / "pool.npz", beliefs=evaluate.belief_pool(run.cfg))
    arrays = {}
    for k, dyn in dict.fromkeys((k, dyn) for k, dyn, _ in evaluate.scenarios(run.cfg)):
        cells, obs = evaluate.simulate_episodes(run.cfg, dyn, k)
        arrays[f"cells_{dyn}_k{k}"], arrays[f"obs_{dyn}_k{k}"] = cells, obs
    io.write_npz(out / "episodes.npz", compressed=True, **arrays)
    io.write_json(out / "manifest.json", {"scenarios": evaluate.scenarios(run.cfg),
                                          "meta": run.meta()})


@stage({"evaders": int})
def train_stage(run: Run) -> None:
    """Train the GDEs of dimension 2k for every seed (vmapped); write models and loss curve."""
    import numpy as np

    from repro26.nbf import losses, train

    k = run.variant["evaders"]
    if k not in run.cfg.evaders:
        raise UsageError(f"--variant evaders: {k} is not in evaders {list(run.cfg.evaders)}")
    pool = io.read_npz(run.input("pool.npz"))["beliefs"]
    out = Path(run.out)
    models, history = train.train_gdes(run.cfg, pool, k, checkpoint=out.with_suffix(".ckpt"),
                                       progress=run.progress)
    io.save_checkpoint(out, models, len(history["nll"]))
    nll = np.asarray(history["nll"])  # (steps, seeds), the training iterates
    final = train.heldout_nll(run.cfg, models, pool, k)  # the averaged models, fresh batches
    entropy = float(losses.exact_entropy(pool, k, run.cfg.grid))
    params = train.parameter_count(models)
    rows = [{"evaders": k, "dim": 2 * k, "seed": s, "step": i + 1, "nll": float(nll[i, j]),
             "nll_final": float(final[j]), "entropy": entropy, "parameters": params}
            for i in range(0, len(nll), max(1, len(nll) // 50)) for j, s in
            enumerate(run.cfg.seeds)]
    io.write_table(out.with_suffix(".csv"), rows, run.meta())


@stage({"evaders": int, "dynamics": str, "particles": int})
def filter_stage(run: Run) -> None:
    """Every filter on one scenario's episodes (all seeds): per-step and per-seed tables."""
    from repro26.nbf import evaluate, train

    k, dyn, n = _scenario(run)
    like = train.make_models(run.cfg, k, run.cfg.seeds)
    models = io.load_model(run.input(f"gde_k{k}.eqx"), like)
    episodes = io.read_npz(run.input("episodes.npz"))
    cells, obs = episodes[f"cells_{dyn}_k{k}"], episodes[f"obs_{dyn}_k{k}"]
    pool = io.read_npz(run.input("pool.npz"))["beliefs"]
    per_step, summary = evaluate.run_scenario(run.cfg, models, cells, obs, k, dyn, n, pool)
    out = Path(run.out)
    io.write_table(out, summary, run.meta())
    io.write_table(out.with_name(out.stem + "_steps.csv"), per_step, run.meta())


@stage()
def evaluate_stage(run: Run) -> None:
    """Gather the scenario tables into tables/filtering.csv, tables/steps.csv and the GDE
    training curves into tables/training.csv."""
    from repro26.core import tables

    groups = {"filtering.csv": [], "steps.csv": [], "training.csv": []}
    for path in run.inputs:
        name = ("training.csv" if path.parent.name == "models" else
                "steps.csv" if path.stem.endswith("_steps") else "filtering.csv")
        groups[name].append(tables.read(path))
    if not groups["filtering.csv"]:
        raise UsageError("--input: the evaluate stage needs the filter tables")
    out = Path(run.out)
    for name, parts in groups.items():
        io.write_table(out / name, tables.concat(parts) if parts else {}, run.meta())


STAGES = {
    "data": data_stage,
    "train": train_stage,
    "filter": filter_stage,
    "evaluate": evaluate_stage,
}
