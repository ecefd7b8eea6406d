"""Stages of ``repro26 srgw <stage>`` and the method's typed config.

data -> fit (one job per family and n, all seeds) + pot (one job per seed) + scaling (one job
per n and solver) + scaling_cpu (CPU time per iteration, every n in one job) + real -> evaluate;
the figures (``figures.FIGURES``) and claims (``claims.CLAIMS``) stages come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import Count, NonNegativeInt, Positive, Probability, UsageError
from repro26.core.method import stage


@dataclasses.dataclass(frozen=True)
class SBMConfig:
    """K-block SBM: within-block probability ``p_in``, between ``p_out``, relative block sizes."""

    p_in: Probability
    p_out: Probability
    sizes: tuple[Positive, ...]


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    sbm_ns: tuple[Count, ...]
    graphon_ns: tuple[Count, ...]
    sbms: dict[str, SBMConfig]
    graphons: tuple[str, ...]
    k_scale: Positive = 1.0
    k_exponent: float = 1.0 / 3.0
    # smooth graphons: K = ceil(k_scale n^k_exponent) ("theory") or the held-out-error minimiser
    # over k_grid multiples of it ("validation", fraction validation_fraction of pairs hidden)
    k_rule: Literal["theory", "validation"] = "validation"
    k_grid: tuple[float, ...] = (0.5, 1.0, 2.0)
    validation_fraction: Probability = 0.1
    n_random_inits: Count = 2
    max_iter: NonNegativeInt = 500
    tol_log10: float = -5.0  # FW-gap tolerance 10**tol_log10 (see evaluate.tolerance)
    usvt_eta: Positive = 0.01
    usvt_k_max: Count = 20
    pot_families: tuple[str, ...] = ("sbm_bal_assort", "absdiff")
    pot_ns: tuple[Count, ...] = ()
    pot_seeds: tuple[int, ...] = (0,)
    real_networks: dict[str, int] = dataclasses.field(
        default_factory=lambda: {"karate": 2, "lesmis": 6, "florentine": 3, "davis": 2})
    # sparse scaling study (evaluate.scaling_rows): balanced SBMs with p_in = ratio * p_out at
    # each mean degree and K, sampled and solved sparse (BCOO); POT dense at scaling_pot_ns
    scaling_ns: tuple[Count, ...] = ()
    scaling_pot_ns: tuple[Count, ...] = ()
    scaling_degrees: tuple[Positive, ...] = (25.0,)
    scaling_ks: tuple[Count, ...] = (4,)
    scaling_seeds: tuple[int, ...] = (0,)
    scaling_ratio: Positive = 5.0
    scaling_power_iters: Count = 12
    scaling_kmeans_restarts: Count = 1
    scaling_iters: Count = 10
    scaling_timing_rounds: Count = 7  # interleaved CPU-timing rounds of scaling_cpu (at least 3)


def check(cfg: Config) -> None:
    from repro26.core.config import ConfigError
    from repro26.srgw import evaluate

    evaluate.families(cfg)
    for name, grid in (("sbm_ns", cfg.sbm_ns), ("graphon_ns", cfg.graphon_ns),
                       ("pot_ns", cfg.pot_ns)):
        if any(n < 10 for n in grid):
            raise ConfigError(f"srgw.{name}: every n must be at least 10, got {list(grid)}")
    if not 0 < cfg.validation_fraction < 1:
        raise ConfigError(f"srgw.validation_fraction: must lie in (0, 1), got "
                          f"{cfg.validation_fraction}")
    if not cfg.k_grid or any(m <= 0 for m in cfg.k_grid):
        raise ConfigError(f"srgw.k_grid: positive multipliers of the theory K, got "
                          f"{list(cfg.k_grid)}")
    if any(n < 100 for n in (*cfg.scaling_ns, *cfg.scaling_pot_ns)):
        raise ConfigError("srgw.scaling_ns, scaling_pot_ns: every n must be at least 100")
    if cfg.scaling_timing_rounds < 3:
        raise ConfigError(f"srgw.scaling_timing_rounds: at least 3 interleaved rounds, got "
                          f"{cfg.scaling_timing_rounds}")
    if any(K < 2 for K in cfg.scaling_ks) or any(d <= 0 for d in cfg.scaling_degrees):
        raise ConfigError("srgw.scaling_ks: at least 2 blocks; scaling_degrees: positive")
    for fam, s in cfg.sbms.items():
        if not (0 <= s.p_in <= 1 and 0 <= s.p_out <= 1) or len(s.sizes) < 2:
            raise ConfigError(f"srgw.sbms.{fam}: p_in, p_out in [0, 1] and at least 2 sizes")


@stage(reads=("sbms", "graphons", "sbm_ns", "graphon_ns", "k_rule", "k_scale",
               "k_exponent", "k_grid", "real_networks"))
def data_stage(run: Run) -> None:
    """Manifest of the synthetic families (true parameters, grids) and the real adjacencies."""
    from repro26.srgw import data, evaluate

    cfg = run.cfg
    manifest = {"families": {}, "meta": run.meta()}
    for fam in evaluate.families(cfg):
        ns = evaluate.family_ns(cfg, fam)
        entry = {"kind": "sbm" if fam in cfg.sbms else "graphon", "ns": list(ns),
                 "K": [evaluate.n_blocks(cfg, fam, n) for n in ns]}
        if fam not in cfg.sbms and cfg.k_rule == "validation":
            entry["K_candidates"] = [list(evaluate.k_candidates(cfg, fam, n)) for n in ns]
        if fam in cfg.sbms:
            s = cfg.sbms[fam]
            entry["block_matrix"] = data.SBMSpec(s.p_in, s.p_out, s.sizes).block_matrix()
            entry["sizes"] = list(s.sizes)
        manifest["families"][fam] = entry
    arrays = {}
    for name in cfg.real_networks:
        A, _, _ = data.real_network(name)
        arrays[name] = A
    out = Path(run.out)
    io.write_json(out / "manifest.json", manifest)
    io.write_npz(out / "real_networks.npz", compressed=True, **arrays)


@stage({"n": int})
def fit_stage(run: Run) -> None:
    """One graph size n: every estimator on the graph of every seed of every family whose grid
    holds n (one process, so each function is compiled once per n and K, not once per family)."""
    from repro26.srgw import evaluate

    n = run.variant["n"]
    fams = [f for f in evaluate.families(run.cfg) if n in evaluate.family_ns(run.cfg, f)]
    if not fams:
        allowed = sorted({m for f in evaluate.families(run.cfg) for m in evaluate.family_ns(run.cfg, f)})
        raise UsageError(f"--variant n: {n} is on no family's grid; allowed: {', '.join(map(str, allowed))}")
    rows = [row for family in fams for row in evaluate.fit_family_n(run.cfg, family, n, progress=run.progress)]
    io.write_table(run.out, rows, run.meta())


@stage(seed=True)
def pot_stage(run: Run) -> None:
    """Ours vs POT's solver (same estimator, same initial couplings) for one seed."""
    from repro26.srgw import evaluate

    rows = evaluate.pot_compare_seed(run.cfg, run.seed, progress=run.progress)
    io.write_table(run.out, rows, run.meta())


@stage({"n": int, "solver": str})
def scaling_stage(run: Run) -> None:
    """Sparse scaling study at one n: srGW on BCOO (``solver=ours``) or POT dense
    (``solver=pot``), every seed, mean degree and K of the config."""
    from repro26.srgw import evaluate

    n, solver = run.variant["n"], run.variant["solver"]
    grids = {"ours": run.cfg.scaling_ns, "pot": run.cfg.scaling_pot_ns}
    if solver not in grids:
        raise UsageError(f"--variant solver: '{solver}' is unknown; allowed: ours, pot")
    if n not in grids[solver]:
        raise UsageError(f"--variant n: {n} is not on the {solver} scaling grid; allowed: "
                         f"{', '.join(map(str, grids[solver])) or 'none'}")
    rows = evaluate.scaling_rows(run.cfg, n, solver, progress=run.progress)
    io.write_table(run.out, rows, run.meta())


@stage(reads=("scaling_ns", "scaling_degrees", "scaling_ks", "scaling_seeds", "scaling_ratio",
               "scaling_iters", "scaling_timing_rounds"))
def scaling_cpu_stage(run: Run) -> None:
    """CPU seconds per srGW iteration at every n of the sparse scaling grid, in one job
    (``repro26.core.timing``: interleaved rounds with a control)."""
    from repro26.srgw import evaluate

    io.write_table(run.out, evaluate.scaling_cpu(run.cfg), run.meta())


@stage()
def real_stage(run: Run) -> None:
    """srGW block models of the networkx graphs: table + arrays (adjacency, labels, C)."""
    from repro26.srgw import evaluate

    rows, arrays = evaluate.fit_real_networks(run.cfg, run.cfg.seeds[0])
    out = Path(run.out)
    io.write_table(out.with_suffix(".csv"), rows, run.meta())
    io.write_npz(out.with_suffix(".npz"), compressed=True, **arrays)


@stage()
def evaluate_stage(run: Run) -> None:
    """Concatenate the per-job tables into ``fits.csv``, ``pot.csv`` and ``scaling.csv`` (in
    ``--out``), and
    summarise the K used per (family, n) in ``k_chosen.csv``."""
    from repro26.srgw import evaluate

    fits, pots, scaling = [], [], []
    for path in run.inputs:
        table = io.read_table(path)
        rows = [dict(zip(table, vals)) for vals in zip(*table.values())]
        {"pot": pots, "scaling": scaling}.get(path.parent.name, fits).extend(rows)
    if not fits:
        raise UsageError("--input: the evaluate stage needs the fit tables")
    out = Path(run.out)
    io.write_table(out / "fits.csv", fits, run.meta())
    io.write_table(out / "pot.csv", pots, run.meta())
    io.write_table(out / "scaling.csv", scaling, run.meta())
    io.write_table(out / "k_chosen.csv", evaluate.k_choice_rows(fits), run.meta())


STAGES = {
    "data": data_stage,
    "fit": fit_stage,
    "pot": pot_stage,
    "scaling": scaling_stage,
    "scaling_cpu": scaling_cpu_stage,
    "real": real_stage,
    "evaluate": evaluate_stage,
}
