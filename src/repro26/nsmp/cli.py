"""Stages of ``repro26 nsmp``: case (problems, centralised optimum, then the solvers nsmp, admm,
fedavg and fedprox) -> evaluate; the figures (``figures.FIGURES``) and claims (``claims.CLAIMS``)
stages come from core.

``--variant case=<problem>-<topology>[-n<clients>]`` (e.g. ``case=ridge-loopy``,
``case=ridge-chain-n64``) names the case; every stage handles all seeds of a case at once.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import ConfigError, Count, NonNegative, Positive, UsageError
from repro26.core.method import stage
from repro26.nsmp import data as data_mod


@dataclasses.dataclass(frozen=True)
class Config(data_mod.Sizes):
    """Every value is set by config/methods/nsmp.yaml (common + the scale); the problem sizes
    are the fields inherited from ``data.Sizes``."""

    seeds: tuple[int, ...]
    # experiments
    cases: tuple[str, ...]  # convergence cases <problem>-<topology>, at n_clients
    scaling_topologies: tuple[str, ...]  # ridge-<topology>-n<n> for n in scaling_n
    scaling_n: tuple[Count, ...]
    # solvers
    # relative-error tolerance 10**tol_exponent (an integer: the config.json that Snakemake writes
    # prints 1e-6 as "1e-06", which the YAML loader reads back as a string)
    tol_exponent: int
    precision: Literal["float32", "float64"]
    newton_rounds: Count
    admm_rho: tuple[Positive, ...]
    admm_local_steps: Count
    admm_iters: Count
    fed_lr: tuple[Positive, ...]
    fed_local_steps: Count
    fedprox_mu: tuple[NonNegative, ...]
    fed_iters: Count
    chunk_size: Count

    def __post_init__(self):
        where = "nsmp"
        if not self.seeds:
            raise ConfigError(f"{where}.seeds: needs at least one seed")
        for name in ("n_clients", "private_dim", "rows_per_client", "sensors_per_client", "newton_rounds",
                     "admm_local_steps", "admm_iters", "fed_local_steps", "fed_iters", "chunk_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be a positive integer")
        if not 0 <= self.shared_min <= self.shared_max or self.shared_max < 1:
            raise ConfigError(f"{where}.shared_min/shared_max: need 0 <= shared_min <= shared_max, max >= 1")
        for case in self.cases:
            try:
                problem, _, n = data_mod.parse_case(case)
            except ValueError as err:
                raise ConfigError(f"{where}.cases: {err}") from None
            if n is not None:
                raise ConfigError(f"{where}.cases: '{case}' must not fix n (n_clients sets it)")
            if problem == "sensor" and math.isqrt(self.n_clients) ** 2 != self.n_clients:
                raise ConfigError(f"{where}.n_clients: sensor-grid needs a square number, got {self.n_clients}")
        for topo in self.scaling_topologies:
            if topo not in ("chain", "tree", "loopy"):
                raise ConfigError(f"{where}.scaling_topologies: '{topo}' not allowed; use chain, tree, loopy")
        if any(n < 2 for n in self.scaling_n):
            raise ConfigError(f"{where}.scaling_n: every entry must be at least 2")
        if any(r <= 0 for r in self.admm_rho) or any(lr <= 0 for lr in self.fed_lr):
            raise ConfigError(f"{where}.admm_rho/fed_lr: must be positive")
        if not self.admm_rho or not self.fed_lr or not self.fedprox_mu:
            raise ConfigError(f"{where}.admm_rho/fed_lr/fedprox_mu: need at least one value")

    @property
    def tol(self) -> float:
        return 10.0**self.tol_exponent

    @property
    def sizes(self) -> data_mod.Sizes:
        return data_mod.Sizes(**{f.name: getattr(self, f.name) for f in dataclasses.fields(data_mod.Sizes)})


def _case(run: Run) -> str:
    """The ``case`` of ``--variant``, checked against the case grammar."""
    case = run.variant["case"]
    try:
        data_mod.parse_case(case)
    except ValueError as err:
        raise UsageError(f"--variant case: {err}") from None
    return case


CONVERGENCE_SOLVERS = ("nsmp", "admm", "fedavg", "fedprox")
"""Every solver, run on a convergence case (``<problem>-<topology>``)."""
SCALING_SOLVERS = ("nsmp", "admm")
"""The solvers of a scaling case (``-n<clients>``), where the claim counts messages against the
client count."""


def methods_of(case: str) -> tuple[str, ...]:
    """The solvers run on ``case``: :data:`CONVERGENCE_SOLVERS` on a convergence case,
    :data:`SCALING_SOLVERS` on a scaling case."""
    return CONVERGENCE_SOLVERS if data_mod.parse_case(case)[2] is None else SCALING_SOLVERS


@stage({"case": str})
def case_stage(run: Run) -> None:
    """One case in one process (no job start-up or compilation is paid twice): the problems of
    every seed, their nerve skeletons, spanning trees and schedules, and the centralised optimum
    ``x*`` -> ``--out`` (``runs/<case>/case.npz``); then every solver of :func:`methods_of` on
    every seed and its hyper-parameter grid -> ``<method>.csv`` (error curve) and
    ``<method>_summary.csv`` beside it."""
    from repro26.nsmp import model, train

    case = _case(run)
    problems = [data_mod.make_problem(case, s, run.cfg.sizes) for s in run.cfg.seeds]
    schedules = [model.build_schedule(p.blocks) for p in problems]
    info = {
        "seed": np.array(run.cfg.seeds), "n": np.array([p.n for p in problems]),
        "d": np.array([p.d for p in problems]),
        "nerve_edges": np.array([model.nerve_skeleton(p.blocks).number_of_edges() for p in problems]),
        "violations": np.array([s.violations for s in schedules]),
        "added": np.array([s.added for s in schedules]),
        "height": np.array([s.height for s in schedules]),
        "max_block": np.array([max(b.size for b in s.blocks) for s in schedules]),
        "max_sep": np.array([max(x.size for x in s.separators) for s in schedules]),
        "floats_two_pass": np.array([s.floats_up(False) + s.floats_down(False) for s in schedules]),
    }
    arrays, loss = model.pack(problems, schedules), problems[0].loss
    with train.precision(run.cfg):
        inst = train.instance(arrays, loss, run.cfg)
        x_star = train.run_central(inst)
        train.save_case(run.out, arrays, info, loss, x_star)
        for method in methods_of(case):
            train.run_method(method, case, inst, x_star, info, run.cfg, seeds=run.cfg.seeds,
                             out=run.out.with_name(f"{method}.csv"), progress=run.progress,
                             meta=run.meta(solver=method))


@stage()
def evaluate_stage(run: Run) -> None:
    """Best grid point per case and method, cost to tol (``--out``) and schedule structure
    (``structure.csv`` beside it)."""
    from repro26.nsmp import evaluate

    evaluate.evaluate(run.inputs, run.out, run.meta())


STAGES = {
    "case": case_stage,
    "evaluate": evaluate_stage,
}
