"""Config and stages of ``repro26 kernel_bandits <stage>``.

Stages (one Snakemake rule each; ``--variant`` takes ``key=value,...``):

* ``data``      --variant kernel=K,grid=G        arms, Gram, exact features, γ_t  -> .npz + .gamma.csv
* ``tune``      --variant adversary=A            η-scale sweep of exp_weights on held-out seeds -> csv
* ``simulate``  --variant algo=..,adversary=..,kernel=..,grid=..,study=scaling|fixed
                one algorithm against one adversary, all seeds vmapped, every horizon -> csv
* ``timing``    CPU seconds per round, exact vs Nyström, interleaved rounds with a control -> csv
* ``evaluate_scaling`` / ``evaluate_fixed``   tidy per-seed regret tables

The ``figure`` stages (``figures.FIGURES``) and ``claims`` (``claims.CLAIMS``) come from core.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Literal

import numpy as np

from repro26.core import io, memory
from repro26.core.cli import Run
from repro26.core.config import ConfigError, Count, NonNegative, NonNegativeInt, OpenUnit, Positive, Probability, UsageError
from repro26.core.method import stage

KernelName = Literal["matern12", "matern32", "matern52", "se"]
AdversaryName = Literal["drift", "switch", "adaptive", "bump"]
AlgorithmName = Literal["exp_weights", "exp_weights_tuned", "exp3", "gp_ucb", "gp_ts", "uniform"]
SamplerName = Literal["uniform", "leverage"]


def _positive(where: str, *values) -> None:
    for v in values:
        if v <= 0:
            raise ConfigError(f"{where}: must be positive, got {v}")


@dataclasses.dataclass(frozen=True)
class AdversaryConfig:
    """Reward sequences: f_t = background + peak; observations y_t = f_t(x_t) + noise·ξ."""

    noise: NonNegative
    peak_height: Positive
    background_scale: NonNegative
    background_centres: NonNegativeInt
    drift_period: Count
    drift_radius: Probability
    switch_period: Count
    adaptive_candidates: Count
    bump_noise: NonNegative

    def __post_init__(self):
        if self.peak_height + self.background_scale > 1.0:
            raise ConfigError("adversary.peak_height + adversary.background_scale: must be at most 1 "
                              "(rewards lie in [-1, 1])")
        _positive("adversary", self.background_centres, self.drift_period, self.switch_period,
                  self.bump_noise)
        if self.adaptive_candidates < 2:
            raise ConfigError(f"adversary.adaptive_candidates: must be at least 2, got {self.adaptive_candidates}")


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
    fw_iters: Count
    gp_noise: NonNegative
    gp_delta: OpenUnit
    gp_ts_samples: Count
    tune_scales: tuple[Positive, ...]
    tune_seeds: tuple[int, ...]
    tune_horizon: Count

    def __post_init__(self):
        _positive("learner", self.fw_iters, self.gp_noise, self.gp_delta, self.gp_ts_samples, self.tune_horizon,
                  *self.tune_scales)
        if not self.tune_scales or not self.tune_seeds:
            raise ConfigError("learner.tune_scales / learner.tune_seeds: must not be empty")


@dataclasses.dataclass(frozen=True)
class NystromConfig:
    """Experiment 3: Nyström exp_weights with m inducing arms vs the exact learner."""

    grid: Count
    m: tuple[Count, ...]
    samplers: tuple[SamplerName, ...]
    claim_sampler: SamplerName
    timing_rounds: Count  # game rounds per timed call
    timing_repeats: Count  # interleaved timing rounds (core.timing; at least 3)

    def __post_init__(self):
        if self.timing_repeats < 3 or self.timing_rounds < 1:
            raise ConfigError(f"kernel_bandits.nystrom.timing_repeats: at least 3 interleaved "
                              f"rounds (and timing_rounds >= 1), got {self.timing_repeats}")


@dataclasses.dataclass(frozen=True)
class ArmsConfig:
    """Experiment 4: regret against the number of arms."""

    grids: tuple[Count, ...]
    algorithms: tuple[AlgorithmName, ...]


@dataclasses.dataclass(frozen=True)
class Config:
    """Every value is set by config/methods/kernel_bandits.yaml (common + the scale)."""

    seeds: tuple[int, ...]
    dim: Count
    grid: Count
    kernel: KernelName
    lengthscale: Positive
    kernels: tuple[KernelName, ...]
    gamma_kernels: tuple[KernelName, ...]
    adversaries: tuple[AdversaryName, ...]
    algorithms: tuple[AlgorithmName, ...]
    horizons: tuple[Count, ...]
    fixed_horizon: Count
    fixed_adversary: AdversaryName
    gamma_noise: NonNegative
    chunk_size: Count
    checkpoint_every: Count
    adversary: AdversaryConfig
    learner: LearnerConfig
    nystrom: NystromConfig
    arms: ArmsConfig

    def __post_init__(self):
        if not self.seeds:
            raise ConfigError("seeds: must not be empty")
        if self.dim not in (1, 2):
            raise ConfigError(f"dim: {self.dim} is not allowed; use 1 or 2")
        _positive("config", self.lengthscale, self.gamma_noise, self.fixed_horizon, self.chunk_size)
        if len(self.horizons) < 2 or list(self.horizons) != sorted(set(self.horizons)) or self.horizons[0] < 2:
            raise ConfigError(f"horizons: need at least two increasing values >= 2, got {list(self.horizons)}")
        if self.checkpoint_every % self.chunk_size:
            raise ConfigError(f"checkpoint_every: must be a multiple of chunk_size ({self.chunk_size})")
        if self.kernel not in self.kernels:
            raise ConfigError(f"kernels: must contain the main kernel '{self.kernel}'")
        if "bump" in self.adversaries and not self.kernel.startswith("matern"):
            raise ConfigError(f"kernel: the bump adversary needs a Matérn kernel, got '{self.kernel}'")
        for grid in (self.grid, self.nystrom.grid, *self.arms.grids):
            if grid < 2:
                raise ConfigError(f"grid sizes: need at least 2 points per axis, got {grid}")
        n_nys = self.nystrom.grid ** self.dim
        if not self.nystrom.m or max(self.nystrom.m) > n_nys or min(self.nystrom.m) < 1:
            raise ConfigError(f"nystrom.m: values must lie in 1..{n_nys} (nystrom.grid^dim)")
        if self.nystrom.claim_sampler not in self.nystrom.samplers:
            raise ConfigError("nystrom.claim_sampler: must be one of nystrom.samplers")


# ----------------------------------------------------------------------------- stage helpers


def _positive_grid(grid: int) -> int:
    if grid < 1:
        raise UsageError(f"--variant grid: expected a positive integer, got {grid}")
    return grid


def _load_problem(path: Path, kernel: str, lengthscale: float):
    from repro26.kernel_bandits.data import problem_from_arrays

    return problem_from_arrays(io.read_npz(path), kernel, lengthscale)


def gamma_rounds(cfg: Config) -> np.ndarray:
    """Rounds at which γ_t is tabulated: a log grid plus every horizon used."""
    t_max = max(max(cfg.horizons), cfg.fixed_horizon)
    grid = np.unique(np.round(np.logspace(0, math.log10(t_max), 40)).astype(int))
    return np.union1d(grid, [*cfg.horizons, cfg.fixed_horizon])


def gamma_table_path(npz: Path) -> Path:
    return Path(npz).with_suffix(".gamma.csv")


def best_eta_scale(tune_table: Path) -> float:
    table = io.read_table(tune_table)
    scales = np.unique(table["eta_scale"])
    means = [table["regret"][table["eta_scale"] == s].mean() for s in scales]
    return float(scales[int(np.argmin(means))])


# ----------------------------------------------------------------------------- stages


@stage({"kernel": KernelName, "grid": int},
       reads=("dim", "lengthscale", "gamma_noise", "horizons", "fixed_horizon"))
def data_stage(run: Run) -> None:
    """Problem instance (arms, Gram, exact features) and greedy γ_t for one kernel and grid."""
    from repro26.kernel_bandits import solvers
    from repro26.kernel_bandits.data import make_problem

    cfg: Config = run.cfg
    kernel, grid = run.variant["kernel"], _positive_grid(run.variant["grid"])
    # Gram matrix, its eigenvectors and eigh's workspace: about three n x n float32 arrays
    memory.require(3 * 4 * (grid ** cfg.dim) ** 2, f"--variant grid={grid} ({grid ** cfg.dim} arms)")
    problem = make_problem(cfg.dim, grid, kernel, cfg.lengthscale)
    rounds = gamma_rounds(cfg)
    gamma, _ = solvers.greedy_information_gain(problem.features, cfg.gamma_noise, int(rounds[-1]))
    gamma = np.asarray(gamma)[rounds - 1]
    meta = run.meta(kernel=kernel, grid=grid, n_arms=problem.n_arms)
    io.write_npz(run.out, arms=np.asarray(problem.arms), gram=np.asarray(problem.gram),
                 features=np.asarray(problem.features), gamma_t=rounds, gamma=gamma)
    io.write_table(gamma_table_path(run.out), {
        "kernel": [kernel] * len(rounds), "n_arms": [problem.n_arms] * len(rounds),
        "t": rounds, "gamma": gamma,
    }, meta | {"gamma_noise": cfg.gamma_noise, "method": "greedy log-det"})


@stage({"adversary": AdversaryName})
def tune_stage(run: Run) -> None:
    """Sweep the η scale of exp_weights on held-out seeds; the best mean regret wins."""
    from repro26.kernel_bandits import train

    cfg: Config = run.cfg
    adversary = run.variant["adversary"]
    if adversary not in cfg.adversaries:
        raise UsageError(f"--variant adversary: {adversary!r} is not allowed; use one of "
                         f"{', '.join(cfg.adversaries)}")
    problem = _load_problem(run.input(".npz"), cfg.kernel, cfg.lengthscale)
    regret = train.tune_eta_scale(problem, adversary, cfg, progress=run.progress)
    rows = [{"adversary": adversary, "eta_scale": scale, "seed": seed, "regret": float(regret[i, j])}
            for i, scale in enumerate(cfg.learner.tune_scales) for j, seed in enumerate(cfg.learner.tune_seeds)]
    io.write_table(run.out, rows, run.meta(adversary=adversary, horizon=cfg.learner.tune_horizon))


@stage({"algo": str, "adversary": AdversaryName, "kernel": KernelName, "grid": int,
        "study": Literal["scaling", "fixed"]})
def simulate_stage(run: Run) -> None:
    """One algorithm against one adversary, every seed at once (vmapped), at every horizon."""
    from repro26.kernel_bandits import train

    cfg: Config = run.cfg
    v = run.variant
    try:
        train.parse_algorithm(v["algo"])
    except ValueError as err:
        raise UsageError(f"--variant algo: {err}") from None
    algo, adversary, kernel, study = v["algo"], v["adversary"], v["kernel"], v["study"]
    grid = _positive_grid(v["grid"])
    horizons = list(cfg.horizons) if study == "scaling" else [cfg.fixed_horizon]
    eta_scale = best_eta_scale(run.input(".csv")) if algo == "exp_weights_tuned" else 1.0
    problem = _load_problem(run.input(".npz"), kernel, cfg.lengthscale)
    if problem.n_arms != grid**cfg.dim:
        raise UsageError(f"--input: {run.input('.npz')} has {problem.n_arms} arms, grid={grid} needs "
                         f"{grid ** cfg.dim}")
    seeds = [run.seed] if run.seed is not None else list(cfg.seeds)  # --seed: one seed by hand
    rows = []
    ckpts = {h: Path(f"{run.out}.{run.cfg_hash}.T{h}.ckpt") for h in horizons}
    for horizon in horizons:
        learners = train.build_learners(algo, problem, horizon, seeds, cfg, eta_scale)
        adversaries, bounds = train.build_adversaries(adversary, problem, horizon, seeds, cfg)
        curve = train.play(learners, adversaries, seeds, problem.n_arms, horizon,
                           chunk_size=cfg.chunk_size, checkpoint=ckpts[horizon],
                           checkpoint_every=cfg.checkpoint_every if horizon >= cfg.chunk_size else None,
                           progress=run.progress, desc=f"{algo} {adversary} T={horizon}")
        eta = getattr(learners, "eta", None)
        gamma = getattr(learners, "gamma", None)
        for t in train.record_rounds(horizon):
            for j, seed in enumerate(seeds):
                rows.append({
                    "kernel": kernel, "adversary": adversary, "algo": algo, "study": study,
                    "n_arms": problem.n_arms, "horizon": horizon, "seed": seed, "t": int(t),
                    "regret": float(curve[t - 1, j]),
                    "eta": float(np.asarray(eta)[j]) if eta is not None else float("nan"),
                    "explore": float(np.asarray(gamma)[j]) if gamma is not None else float("nan"),
                    "rkhs_bound": float(bounds[j]),
                })
    io.write_table(run.out, rows, run.meta(eta_scale=eta_scale, grid=grid))
    for ckpt in ckpts.values():  # the job is done; a rerun starts afresh
        ckpt.unlink(missing_ok=True)
        Path(f"{ckpt}.history.npz").unlink(missing_ok=True)


@stage()
def timing_stage(run: Run) -> None:
    """CPU seconds per round of exact and every Nyström exp_weights, in interleaved rounds with
    a control (exact timed against itself): ``repro26.core.timing``."""
    from repro26.core.timing import interleaved_cpu_times
    from repro26.kernel_bandits import train

    cfg: Config = run.cfg
    problem = _load_problem(run.input(".npz"), cfg.kernel, cfg.lengthscale)
    seeds, horizon = list(cfg.seeds), cfg.fixed_horizon
    adversaries, _ = train.build_adversaries(cfg.fixed_adversary, problem, horizon, seeds, cfg)
    variants = {"exp_weights": ("exact", problem.n_arms)} | {
        train.nystrom_name(s, m): (s, m) for s in cfg.nystrom.samplers for m in cfg.nystrom.m}
    rounds = cfg.nystrom.timing_rounds
    programs = {algo: train.round_program(train.build_learners(algo, problem, horizon, seeds, cfg),
                                          adversaries, seeds, problem.n_arms, rounds)
                for algo in variants}
    t = interleaved_cpu_times(programs, "exp_weights", rounds=cfg.nystrom.timing_repeats)
    control = t["ratio"]["control"]["median"]
    rows = []
    for algo, (sampler, m) in variants.items():
        ratio = t["ratio"].get(algo, {"median": 1.0, "interval": [1.0, 1.0]})
        rows.append({"algo": algo, "sampler": sampler, "m": m, "n_arms": problem.n_arms,
                     "seeds_per_round": len(seeds),
                     "cpu_seconds_per_round": float(np.median(t["seconds"][algo])) / rounds,
                     "ratio_to_exact": ratio["median"], "ratio_lo": ratio["interval"][0],
                     "ratio_hi": ratio["interval"][1], "noise_floor": t["noise_floor"],
                     "timing_rounds": t["rounds"], "control_ratio": control})
    io.write_table(run.out, rows, run.meta(rounds=rounds, repeats=t["rounds"]))


@stage()
def evaluate_scaling_stage(run: Run) -> None:
    """Per-seed R_T, γ_T and R_T / √(T γ_T) of experiments 1-2 (runs and γ tables in)."""
    from repro26.kernel_bandits import evaluate

    evaluate.scaling_table(run)


@stage()
def evaluate_fixed_stage(run: Run) -> None:
    """Per-seed regret at the fixed horizon of experiments 3-4."""
    from repro26.kernel_bandits import evaluate

    evaluate.fixed_table(run)


STAGES = {
    "data": data_stage,
    "tune": tune_stage,
    "simulate": simulate_stage,
    "timing": timing_stage,
    "evaluate_scaling": evaluate_scaling_stage,
    "evaluate_fixed": evaluate_fixed_stage,
}
