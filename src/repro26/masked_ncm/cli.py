"""Stages of ``repro26 masked_ncm <stage>`` and the method's typed config.

data (one job per dataset) -> train (one job per dataset) -> evaluate; the figures
(``figures.FIGURES``) and claims (``claims.CLAIMS``) stages come from core.
Datasets ("graphs") are ``nodes<d>`` (random Markovian SCMs with d variables, every seed) and
``iv`` (the semi-Markovian instrumental-variable SCM); ``--variant graph=<name>`` names one.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import ConfigError, Count, NonNegativeInt, Positive, Probability, UsageError
from repro26.core.method import stage
from repro26.masked_ncm.settings import ModelConfig, OptimConfig


@dataclasses.dataclass(frozen=True)
class IVConfig:
    """The semi-Markovian IV dataset: its confounder size and its query-phase schedule (the
    query is not identified within the mask, so steps are not scaled by n^{-1/2} and the
    data-fit region is annealed over ``anneal`` of the query steps)."""

    num_latent: Count
    concentration: Positive
    steps: Count
    query_lr_ratio: Positive
    anneal: Probability
    restarts: Count


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    num_nodes: tuple[Count, ...]
    sample_sizes: tuple[Count, ...]
    card: Count
    edge_prob: Probability
    concentration: Positive
    max_class_size: NonNegativeInt
    pc_alpha: Probability
    batch_multiple: Count
    model: ModelConfig
    optim: OptimConfig
    iv: IVConfig
    restarts: Count = 1


def graphs(cfg: Config) -> list[str]:
    """Dataset names of a config: one per graph size, plus the IV model."""
    return [f"nodes{d}" for d in cfg.num_nodes] + ["iv"]


def check(cfg: Config) -> None:
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
    if not 0.0 < cfg.edge_prob <= 1.0:
        raise ConfigError(f"{where}.edge_prob: must lie in (0, 1]")
    if cfg.concentration <= 0 or cfg.iv.concentration <= 0:
        raise ConfigError(f"{where}.concentration / iv.concentration: must be positive")
    if cfg.max_class_size < 2:
        raise ConfigError(f"{where}.max_class_size: must be at least 2")
    counts = {"restarts": cfg.restarts, "batch_multiple": cfg.batch_multiple,
              "iv.restarts": cfg.iv.restarts, "iv.num_latent": cfg.iv.num_latent,
              **{f"model.{k}": v for k, v in dataclasses.asdict(cfg.model).items()}}
    for name, value in counts.items():
        if value < 1:
            raise ConfigError(f"{where}.{name}: must be a positive integer, got {value}")
    if not cfg.seeds or min(cfg.seeds) < 0:
        raise ConfigError(f"{where}.seeds: need a non-empty list of non-negative integers")


def _graph(run: Run) -> str:
    graph, allowed = run.variant["graph"], graphs(run.cfg)
    if graph not in allowed:
        raise UsageError(f"--variant graph: '{graph}' is not a dataset; allowed: {', '.join(allowed)}")
    return graph


@stage({"graph": str}, reads=("seeds", "num_nodes", "iv", "sample_sizes", "card", "edge_prob",
                             "concentration", "max_class_size", "pc_alpha"))
def data_stage(run: Run) -> None:
    """One dataset (nodes<d> or iv): instances, samples and the exact / plug-in reference bounds."""
    from repro26.masked_ncm import data

    cfg = run.cfg
    graph = _graph(run)
    if graph == "iv":
        instances = data.iv_dataset(cfg.seeds, cfg.iv.concentration, cfg.sample_sizes)
    else:
        instances = data.graph_dataset(cfg.seeds, int(graph[5:]), cfg.card, cfg.edge_prob,
                                       cfg.concentration, cfg.max_class_size, cfg.sample_sizes,
                                       cfg.pc_alpha)
    io.write_json(run.out, {"graph": graph, "instances": instances, "meta": run.meta()})


@stage({"graph": str}, matches=("graph",),
       reads=("seeds", "num_nodes", "iv", "restarts", "batch_multiple", "card", "optim", "model"))
def train_stage(run: Run) -> None:
    """Every bound problem of one dataset (--input data/<graph>.json), in one compiled loop."""
    import jax

    from repro26.masked_ncm import train

    cfg = run.cfg
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
            mle[(inst["seed"], s["n"])] = ([saturated], saturated) if iv else \
                (s["nll_mle"], s["single_nll_mle"])
    table = []
    for i, row in enumerate(rows):
        per_mask, single = mle[(row["seed"], row["n"])]
        table.append({**row, "q": out["q"][i], "q_fit": out["q_fit"][i], "nll_fit": out["nll_fit"][i],
                      "nll_ref": out["nll_ref"][i],
                      "nll_mle": single if row["model"] == "single" else per_mask[row["mask"]],
                      "nll_end": out["nll_end"][i], "constraint": out["constraint"][i],
                      "lam": out["lam"][i]})
    io.write_table(run.out, table, run.meta(graph=graph, problems=len(rows)))


@stage()
def evaluate_stage(run: Run) -> None:
    """Bounds, errors and coverage per (seed, graph size, n); IV vs Balke-Pearl.

    --input data/*.json runs/*.csv; writes ``--out`` (bounds.csv) and, beside it,
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


STAGES = {
    "data": data_stage,
    "train": train_stage,
    "evaluate": evaluate_stage,
}
