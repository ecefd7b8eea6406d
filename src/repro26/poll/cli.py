"""Stages of ``repro26 poll <stage>`` and the method's typed config.

data, poll (every n and heterogeneity, seeds vmapped) and exact each one job per graph family,
+ adversary -> evaluate; the figures (``figures.FIGURES``) and
claims (``claims.CLAIMS``) stages come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (
    Bounds, ConfigError, Count, NonNegative, OpenUnit, Positive, Probability, UsageError,
)
from repro26.core.method import stage


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    families: tuple[str, ...]  # synthetic graph families (repro26.poll.data.SYNTHETIC)
    ns: tuple[Count, ...]
    real_networks: tuple[str, ...]  # networkx's (repro26.poll.data.REAL)
    sweep_families: tuple[str, ...]  # families whose heterogeneity sweep runs at sweep_n
    sweep_n: Count
    heterogeneities: tuple[NonNegative, ...]
    rounds: Count  # Poll's horizon T
    activities: Count = 3  # m
    activity_values: tuple[float, ...] = (1.0, 1.5, 2.0)  # a
    mean_degree: Positive = 6.0
    sbm_ratio: Positive = 8.0  # within/between edge odds of the two-block SBM
    peer_strength: Annotated[float, Bounds(0, 0.5, high_open=True)] = 0.4  # κ = δ ρ(G) (< ½ so that welfare is strictly concave)
    heterogeneity: NonNegative = 1.0  # h in Σ_i = I + h W Wᵀ/m (default of every non-sweep job)
    walk_length: Count = 8  # L
    eps: Positive = 0.05  # target relative price error ‖p − p*‖/‖p*‖
    checkpoints: Count = 40
    dense_max_n: Count = 300  # exact dense solve only up to this n
    max_iter: Count = 1000  # CG / best-response iteration cap
    obs_noise: NonNegative = 0.05  # σ of observed efforts, relative to their RMS
    alpha: OpenUnit = 0.05  # level of the FOC-consistency test
    adversary_family: str = "er"
    adversary_n: Count = 300
    adversary_fraction: Probability = 0.1
    attacks: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95, 1.25, 2.0)  # R = κ Σ_i
    probe_var: Positive = 0.01  # s²: variance of the probe price shift
    incentive_samples: Count = 16
    incentive_starts: Count = 4
    incentive_steps: Count = 150
    incentive_radius: Positive = 2.0  # ‖A‖_F ≤ radius for R = Σ^½ exp(A) Σ^½
    incentive_horizons: tuple[Count, ...] = ()  # T of the truthful runs the misreports are
    # searched against (the predicted rate: best gain × T² bounded across them)


def check(cfg: Config) -> None:
    """Every value in range; one line naming the field otherwise."""
    from repro26.poll.data import REAL, SYNTHETIC

    for fam in (*cfg.families, *cfg.sweep_families, cfg.adversary_family):
        if fam not in SYNTHETIC:
            raise ConfigError(f"poll.families: '{fam}' is unknown; allowed: {', '.join(SYNTHETIC)}")
    for name in cfg.real_networks:
        if name not in REAL:
            raise ConfigError(f"poll.real_networks: '{name}' is unknown; allowed: "
                              f"{', '.join(REAL)}")
    if any(n < 20 for n in (*cfg.ns, cfg.sweep_n, cfg.adversary_n)):
        raise ConfigError(f"poll.ns: every n must be at least 20, got {list(cfg.ns)}")
    if len(cfg.activity_values) != cfg.activities:
        raise ConfigError(f"poll.activity_values: needs {cfg.activities} values (activities), "
                          f"got {len(cfg.activity_values)}")
    if not 0 <= cfg.peer_strength < 0.5:
        raise ConfigError(f"poll.peer_strength: δρ(G) must lie in [0, 0.5), got "
                          f"{cfg.peer_strength}")
    if cfg.heterogeneity < 0 or any(h < 0 for h in cfg.heterogeneities):
        raise ConfigError("poll.heterogeneities: must be non-negative")
    if not 0 < cfg.eps < 1 or not 0 < cfg.alpha < 1 or not 0 <= cfg.adversary_fraction < 1:
        raise ConfigError("poll.eps, poll.alpha, poll.adversary_fraction: must lie in (0, 1)")
    if cfg.rounds < 16 or cfg.walk_length < 1:
        raise ConfigError("poll.rounds: at least 16; poll.walk_length: at least 1")
    if len(set(cfg.incentive_horizons)) < 2 or min(cfg.incentive_horizons) < 16:
        raise ConfigError(f"poll.incentive_horizons: at least two distinct horizons >= 16, got "
                          f"{list(cfg.incentive_horizons)}")


def real_size(name: str) -> int:
    from repro26.poll.data import REAL_SIZES

    return REAL_SIZES[name]


def poll_jobs(cfg: Config) -> list[tuple[str, int, float]]:
    """(family, n, heterogeneity) of every Poll job: each family × n at the default h, the
    sweep families × heterogeneities at sweep_n, the real networks at the default h."""
    jobs = [(f, n, cfg.heterogeneity) for f in cfg.families for n in cfg.ns]
    jobs += [(f, cfg.sweep_n, h) for f in cfg.sweep_families for h in cfg.heterogeneities
             if (f, cfg.sweep_n, h) not in jobs]
    jobs += [(r, real_size(r), cfg.heterogeneity) for r in cfg.real_networks]
    return jobs


def graph_jobs(cfg: Config) -> dict[str, list[int]]:
    """family -> the sizes n of its graphs file: Poll's, the exact jobs' and the adversary's."""
    jobs: dict[str, list[int]] = {}
    for f, n, _ in poll_jobs(cfg):
        jobs.setdefault(f, [])
        if n not in jobs[f]:
            jobs[f].append(n)
    jobs.setdefault(cfg.adversary_family, [])
    if cfg.adversary_n not in jobs[cfg.adversary_family]:
        jobs[cfg.adversary_family].append(cfg.adversary_n)
    return jobs


def exact_jobs(cfg: Config) -> dict[str, list[int]]:
    """family -> the sizes n its exact job computes."""
    return {**{f: list(cfg.ns) for f in cfg.families},
            **{r: [real_size(r)] for r in cfg.real_networks}}


def _family(run: Run, allowed) -> str:
    family = run.variant["family"]
    if family not in allowed:
        raise UsageError(f"--variant family: '{family}' is unknown; allowed: "
                         f"{', '.join(sorted(allowed))}")
    return family


@stage({"family": str})
def data_stage(run: Run) -> None:
    """The seeds' graphs of one family at each of its sizes (CSR arrays, spectral radii, .npz)."""
    from repro26.poll import evaluate

    jobs = graph_jobs(run.cfg)
    family = _family(run, jobs)
    io.write_npz(run.out, compressed=True, **evaluate.graphs_job(run.cfg, family, jobs[family]))


def _graphs(run: Run) -> dict:
    if len(run.inputs) != 1 or run.inputs[0].suffix != ".npz":
        raise UsageError("--input: this stage needs its family's graphs .npz")
    return io.read_npz(run.inputs[0])


@stage({"family": str})
def poll_stage(run: Run) -> None:
    """Poll and the trivial baselines on every seed's game at each (n, h) job of one family:
    summary .csv and _traj.csv."""
    from repro26.poll import evaluate

    jobs = poll_jobs(run.cfg)
    family = _family(run, {f for f, _, _ in jobs})
    graphs = _graphs(run)
    summary, trajectory = [], []
    for _, n, het in (job for job in jobs if job[0] == family):
        rows, traj = evaluate.poll_job(run.cfg, graphs, family, n, het)
        summary += rows
        trajectory += traj
    out = Path(run.out)
    io.write_table(out, summary, run.meta())
    io.write_table(out.with_name(out.stem + "_traj.csv"), trajectory, run.meta())


@stage({"family": str})
def exact_stage(run: Run) -> None:
    """Exact (dense) and distributed (CG, best response) computation, every seed and n."""
    from repro26.poll import evaluate

    jobs = exact_jobs(run.cfg)
    family = _family(run, jobs)
    rows = evaluate.exact_job(run.cfg, _graphs(run), family, jobs[family])
    io.write_table(run.out, rows, run.meta())


@stage()
def adversary_stage(run: Run) -> None:
    """Best misreports (plain vs probe-scored) and adversary detection: two tables."""
    from repro26.poll import evaluate

    cfg = run.cfg
    incentives, detection = evaluate.adversary_job(cfg, _graphs(run), cfg.adversary_family,
                                                   cfg.adversary_n)
    out = Path(run.out)
    io.write_table(out / "incentives.csv", incentives, run.meta())
    io.write_table(out / "detection.csv", detection, run.meta())


@stage()
def evaluate_stage(run: Run) -> None:
    """Gather the jobs' tables into summary, trajectories, ops, incentives, detection (in
    ``--out``); ops joins Poll's counted multiply-adds to ε with the exact jobs' rows (each
    solver counts its own, see ``solvers``)."""
    from repro26.poll import evaluate

    groups = {"summary": [], "trajectories": [], "exact": [], "incentives": [], "detection": []}
    for path in run.inputs:
        if path.name.endswith("_traj.csv"):
            groups["trajectories"].append(path)
        elif path.parent.name == "adversary":
            groups[path.stem].append(path)
        elif path.parent.name == "exact":
            groups["exact"].append(path)
        else:
            groups["summary"].append(path)
    if not groups["summary"] or not groups["exact"]:
        raise UsageError("--input: the evaluate stage needs the poll and exact tables")
    tables = {k: evaluate.read_rows(v) for k, v in groups.items()}
    exact_keys = {(r["family"], r["n"]) for r in tables["exact"]}
    # Poll's operations to ε: its counted multiply-adds per round × the CLT's rounds to a
    # root-mean-square error of ε (never censored); to the last exceedance of ε as a finding
    poll_ops = [{"family": r["family"], "n": r["n"], "seed": r["seed"], "method": "poll",
                 "iterations": r["rounds_to_eps_clt"], "ops_to_eps": r["ops_to_eps_clt"],
                 "ops_to_eps_last_exceedance": r["ops_to_eps"],
                 "time_s": r["time_to_eps_clt_s"], "price_error": r["price_error"]}
                for r in tables["summary"]
                if r["method"] == "poll" and r["het"] == run.cfg.heterogeneity
                and (r["family"], r["n"]) in exact_keys]
    out = Path(run.out)
    io.write_table(out / "summary.csv", tables["summary"], run.meta())
    io.write_table(out / "trajectories.csv", tables["trajectories"], run.meta())
    io.write_table(out / "ops.csv", tables["exact"] + poll_ops, run.meta())
    io.write_table(out / "incentives.csv", tables["incentives"], run.meta())
    io.write_table(out / "detection.csv", tables["detection"], run.meta())


STAGES = {
    "data": data_stage,
    "poll": poll_stage,
    "exact": exact_stage,
    "adversary": adversary_stage,
    "evaluate": evaluate_stage,
}
