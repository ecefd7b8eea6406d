"""Stages of ``repro26 nsmp``: data -> central -> nsmp/admm/fedavg/fedprox -> evaluate -> figures, claims.

``--variant`` names the case, ``<problem>-<topology>[-n<clients>]`` (e.g. ``ridge-loopy``,
``ridge-chain-n64``); every stage handles all seeds of a case at once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Literal

import numpy as np

from repro26.core.cli import Run
from repro26.core.config import ConfigError, UsageError
from repro26.nsmp import data as data_mod


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    # experiments
    cases: tuple[str, ...]  # convergence cases <problem>-<topology>, at n_clients
    n_clients: int
    scaling_topologies: tuple[str, ...]  # ridge-<topology>-n<n> for n in scaling_n
    scaling_n: tuple[int, ...]
    # problem sizes
    private_dim: int = 4
    shared_min: int = 2
    shared_max: int = 4
    extra_edges: float = 0.25
    rows_per_client: int = 30
    ridge: float = 0.1
    noise: float = 0.1
    sensors_per_client: int = 4
    sensor_radius: float = 0.6
    anchor_fraction: float = 0.1
    # solvers
    # relative-error tolerance 10**tol_exponent (an integer: the config.json that Snakemake writes
    # prints 1e-6 as "1e-06", which the YAML loader reads back as a string)
    tol_exponent: int = -6
    precision: Literal["float32", "float64"] = "float64"
    newton_rounds: int = 12
    admm_rho: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0)
    admm_local_steps: int = 3
    admm_iters: int = 2000
    fed_lr: tuple[float, ...] = (0.5, 1.0)
    fed_local_steps: int = 5
    fedprox_mu: tuple[float, ...] = (0.1, 1.0)
    fed_iters: int = 2000
    chunk_size: int = 500
    far_fewer_factor: float = 10.0  # "far fewer floats": at least this ratio
    many_rounds_factor: float = 10.0  # "many rounds": at least this times NSMP's two passes

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


def convergence_cases(cfg: Config) -> list[str]:
    return list(cfg.cases)


def scaling_cases(cfg: Config) -> list[str]:
    return [f"ridge-{t}-n{n}" for t in cfg.scaling_topologies for n in cfg.scaling_n]


def _case(run: Run) -> str:
    if run.variant is None:
        raise UsageError(f"--variant: stage '{run.stage}' needs the case, e.g. ridge-chain")
    try:
        data_mod.parse_case(run.variant)
    except ValueError as err:
        raise UsageError(f"--variant: {err}") from None
    return run.variant


def stage_data(run: Run) -> None:
    """Problems of every seed, their nerve skeletons, spanning trees and schedules -> ``.npz``."""
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
    train.save_case(run.out, model.pack(problems, schedules), info, problems[0].loss)


def stage_central(run: Run) -> None:
    """The centralised optimum ``x*`` of every seed."""
    from repro26.core import io
    from repro26.nsmp import train

    with train.precision(run.cfg):
        inst, _ = train.load_case(run.input(f"{_case(run)}.npz"), run.cfg)
        x_star = train.run_central(inst)
    io.write_npz(run.out, x_star=x_star)


def _method_stage(method: str) -> Callable[[Run], None]:
    def stage(run: Run) -> None:
        import jax.numpy as jnp

        from repro26.nsmp import train

        case = _case(run)
        with train.precision(run.cfg):
            inst, info = train.load_case(run.input(f"{case}.npz"), run.cfg)
            with np.load(run.input("central.npz")) as z:
                x_star = jnp.asarray(z["x_star"], inst.A.dtype)
            train.run_method(method, case, inst, x_star, info, run.cfg, seeds=run.cfg.seeds,
                             out=run.out, progress=run.progress, meta=run.meta())

    stage.__doc__ = f"Run {method} on one case (all seeds, its hyper-parameter grid)."
    return stage


def stage_evaluate(run: Run) -> None:
    from repro26.nsmp import evaluate

    evaluate.evaluate(run.inputs, run.out, run.meta())


def stage_figure(name: str) -> Callable[[Run], None]:
    def stage(run: Run) -> None:
        from repro26.nsmp import figures

        getattr(figures, name)(run.inputs, run.out, run.cfg)

    return stage


def stage_claims(run: Run) -> None:
    from repro26.nsmp import claims

    claims.write(run)


STAGES: dict[str, Callable[[Run], None]] = {
    "data": stage_data,
    "central": stage_central,
    **{m: _method_stage(m) for m in ("nsmp", "admm", "fedavg", "fedprox")},
    "evaluate": stage_evaluate,
    "figure_error_vs_rounds": stage_figure("error_vs_rounds"),
    "figure_error_vs_floats": stage_figure("error_vs_floats"),
    "figure_messages_vs_clients": stage_figure("messages_vs_clients"),
    "claims": stage_claims,
}
