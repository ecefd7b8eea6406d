"""Stages of ``repro26 masked_ncm <stage>``: data -> train -> evaluate -> figures -> claims.

Datasets ("graphs") are ``nodes<d>`` (random Markovian SCMs with d variables, every seed) and
``iv`` (the semi-Markovian instrumental-variable SCM); ``--variant`` names the graph.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import ConfigError, UsageError
from repro26.masked_ncm.train import ModelConfig, OptimConfig


@dataclasses.dataclass(frozen=True)
class IVConfig:
    """The semi-Markovian IV dataset: its confounder size and its query-phase schedule (the
    query is not identified within the mask, so steps are not scaled by n^{-1/2} and the
    data-fit region is annealed over ``anneal`` of the query steps)."""

    num_latent: int = 16
    concentration: float = 1.0
    steps: int = 1600
    query_lr_ratio: float = 0.1
    anneal: float = 0.8
    restarts: int = 4


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    num_nodes: tuple[int, ...] = (3, 4, 5)
    sample_sizes: tuple[int, ...] = (100, 1000, 10000, 100000)
    card: int = 2
    edge_prob: float = 0.5
    concentration: float = 1.0
    max_class_size: int = 8
    cpdag_source: Literal["true", "pc"] = "true"
    pc_alpha: float = 0.01
    restarts: int = 1
    batch_multiple: int = 16
    model: ModelConfig = ModelConfig()
    optim: OptimConfig = OptimConfig()
    iv: IVConfig = IVConfig()


def graphs(cfg: Config) -> list[str]:
    """Dataset names of a config: one per graph size, plus the IV model."""
    return [f"nodes{d}" for d in cfg.num_nodes] + ["iv"]


def _check(cfg: Config) -> None:
    where = "masked_ncm"
    if any(d < 2 or d > 6 for d in cfg.num_nodes):
        raise ConfigError(f"{where}.num_nodes: each must be in 2..6 (classes are enumerated)")
    if cfg.card < 2 or cfg.card ** max(cfg.num_nodes) > 4096:
        raise ConfigError(f"{where}.card: need card >= 2 and card^max(num_nodes) <= 4096")
    if any(n < 1 for n in cfg.sample_sizes) or not cfg.sample_sizes:
        raise ConfigError(f"{where}.sample_sizes: need a non-empty list of positive integers")
    if cfg.optim.steps % cfg.optim.chunk_size or cfg.iv.steps % cfg.optim.chunk_size:
        raise ConfigError(f"{where}.optim.steps and iv.steps: must be multiples of optim.chunk_size")
    if not 0.0 <= cfg.iv.anneal <= 1.0:
        raise ConfigError(f"{where}.iv.anneal: must lie in [0, 1]")
    if not 0.0 < cfg.optim.alpha < 1.0 or not 0.0 < cfg.pc_alpha < 1.0:
        raise ConfigError(f"{where}.optim.alpha / pc_alpha: must lie in (0, 1)")


def _graph(run: Run) -> str:
    allowed = graphs(run.cfg)
    if run.variant not in allowed:
        raise UsageError(f"--variant: '{run.variant}' is not a dataset; allowed: {', '.join(allowed)}")
    return run.variant


def stage_data(run: Run) -> None:
    """--variant nodes<d> | iv: instances, samples and the exact / plug-in reference bounds."""
    from repro26.masked_ncm import data

    cfg = run.cfg
    _check(cfg)
    graph = _graph(run)
    if graph == "iv":
        instances = data.iv_dataset(cfg.seeds, cfg.iv.concentration, cfg.sample_sizes)
    else:
        instances = data.graph_dataset(cfg.seeds, int(graph[5:]), cfg.card, cfg.edge_prob,
                                       cfg.concentration, cfg.max_class_size, cfg.sample_sizes,
                                       cfg.cpdag_source, cfg.pc_alpha)
    io.write_json(run.out, {"graph": graph, "instances": instances, "meta": run.meta()})


def stage_train(run: Run) -> None:
    """--variant <graph> --input data/<graph>.json: every bound problem of the dataset."""
    import jax

    from repro26.masked_ncm import train

    cfg = run.cfg
    _check(cfg)
    graph = _graph(run)
    payload = io.read_json(run.input(f"{graph}.json"))
    instances = payload["instances"]
    iv = graph == "iv"
    restarts = cfg.iv.restarts if iv else cfg.restarts
    problems, groups, rows = train.build_problems(instances, restarts, cfg.batch_multiple, iv=iv)
    num_nodes = 3 if iv else int(graph[5:])
    card = 2 if iv else cfg.card
    key = jax.random.key(int(np.sum(cfg.seeds)) * 1009 + num_nodes)
    optim = dataclasses.replace(cfg.optim, steps=cfg.iv.steps, query_lr_ratio=cfg.iv.query_lr_ratio) \
        if iv else cfg.optim
    out = train.optimise_bounds(problems, groups, num_nodes, card, cfg.iv.num_latent if iv else 1,
                                cfg.model, optim, key, identified=not iv,
                                anneal=cfg.iv.anneal if iv else 0.0,
                                checkpoint=Path(str(run.out) + ".ckpt"), progress=run.progress)
    mle = {}
    for inst in instances:
        for s in inst["samples"]:
            f = np.asarray(s["counts"], float) / s["n"]
            saturated = -float(np.sum(f[f > 0] * np.log(f[f > 0])))
            mle[(inst["seed"], s["n"])] = [saturated] if iv else s["nll_mle"]
    table = []
    for i, row in enumerate(rows):
        table.append({**row, "q": out["q"][i], "q_fit": out["q_fit"][i], "nll_fit": out["nll_fit"][i],
                      "nll_ref": out["nll_ref"][i],
                      "nll_mle": mle[(row["seed"], row["n"])][0 if iv else row["mask"]],
                      "nll_end": out["nll_end"][i], "constraint": out["constraint"][i],
                      "lam": out["lam"][i]})
    io.write_table(run.out, table, run.meta(graph=graph, problems=len(rows)))


def _inputs(run: Run, suffix: str) -> list[Path]:
    return sorted(p for p in run.inputs if p.name.endswith(suffix))


def stage_evaluate(run: Run) -> None:
    """--input data/*.json runs/*.csv --out bounds.csv: bounds, errors and coverage per
    (seed, graph size, n) in ``bounds.csv``; the IV comparison with Balke-Pearl in the sibling
    ``iv_bounds.csv``."""
    from repro26.masked_ncm import evaluate

    rows = []
    for graph in graphs(run.cfg)[:-1]:
        instances = io.read_json(run.input(f"data/{graph}.json"))["instances"]
        rows += evaluate.graph_bounds(instances, io.read_table(run.input(f"runs/{graph}.csv")),
                                       run.cfg.optim.max_violation)
    instances = io.read_json(run.input("data/iv.json"))["instances"]
    iv_rows = evaluate.iv_bounds(instances, io.read_table(run.input("runs/iv.csv")),
                                 run.cfg.optim.max_violation)
    io.write_table(Path(run.out).with_name("iv_bounds.csv"), iv_rows, run.meta())
    io.write_table(run.out, rows, run.meta())


def _figure(name: str):
    def stage(run: Run) -> None:
        from repro26.masked_ncm import figures

        getattr(figures, name)([io.read_table(p) for p in run.inputs], run.out)

    stage.__doc__ = f"--input <tables> --out figures/<name>.png: figures.{name}"
    return stage


def stage_claims(run: Run) -> None:
    """--input bounds.csv: the issue's claims as predicates."""
    from repro26.core.claims import write_claims
    from repro26.masked_ncm import claims

    bounds = io.read_table(run.input("bounds.csv"))
    write_claims(run.out, "masked_ncm", run.scale, run.cfg.seeds, claims.check_all(bounds),
                 run.meta())


STAGES = {
    "data": stage_data,
    "train": stage_train,
    "evaluate": stage_evaluate,
    "figure_endpoints": _figure("endpoints"),
    "figure_error_vs_n": _figure("error_vs_n"),
    "figure_coverage": _figure("coverage"),
    "figure_width_vs_class": _figure("width_vs_class"),
    "figure_iv_bounds": _figure("iv_bounds"),
    "claims": stage_claims,
}
