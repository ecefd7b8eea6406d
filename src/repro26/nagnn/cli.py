"""Stages of ``repro26 nagnn <stage>`` and the method's typed config.

data (one job per dataset, every seed) -> train (one job per learned model and dataset, seeds
vmapped) -> evaluate (one job per model, heuristics included, and dataset) + speed (one job per
dataset: every learned model timed in one process) -> tables (gathers the rows); the figures
(``figures.FIGURES``) and claims (``claims.CLAIMS``) stages come from core.
"""

from __future__ import annotations

import dataclasses
import zlib
from pathlib import Path

import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (ConfigError, Count, NonNegative, OpenUnit, Positive, Probability,
                                 UsageError)
from repro26.core.method import stage

GENERATORS = ("dsbm", "bipartite")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    datasets: tuple[str, ...]  # generators (dsbm, bipartite) or names in csv_files
    models: tuple[str, ...]  # learned models; heuristics always run
    n_nodes: Count  # dsbm nodes; bipartite users + items
    n_snapshots: Count
    events_per_snapshot: Count
    n_train_snapshots: Count  # the rest is the test period
    hidden: Count
    lsh_tables: Count
    lsh_bits: Count  # 2**lsh_bits reservoir slots per table
    train_steps: Count  # optimiser steps, each one epoch over the training snapshots
    lr: Positive  # peak rate of the warm-up + cosine schedule (train.optimizer)
    warmup_frac: OpenUnit  # share of the steps of linear warm-up
    clip_norm: Positive  # gradient clipping, global norm
    plateau_tol: OpenUnit  # plateau rule (train.plateau): last-window change < tol x total drop
    chunk_size: Count
    remat: bool  # checkpoint the stream's scan in blocks (model.scan_steps): memory for paper
    mrr_negatives: Count
    timing_rounds: Count  # interleaved CPU-time rounds (repro26.core.timing), at least 3
    # dsbm generator
    n_communities: Count
    affinity: Positive  # odds of a same-community partner vs another community
    drift: Probability  # per-snapshot probability a node changes community
    frac_repeat: Probability
    frac_triadic: Probability
    frac_echo: Probability  # an event echoes (reciprocates / repeats) one earlier in its snapshot
    echo_window: Count  # ... among the last echo_window events
    feature_dim: Count
    feature_noise: NonNegative
    # bipartite generator
    bipartite_users: Count
    n_item_clusters: Count
    p_pref: Probability
    # user-supplied JODIE/TGB CSV files, name -> path (read at the data stage)
    csv_files: dict[str, str] = dataclasses.field(default_factory=dict)


def check(cfg: Config) -> None:
    from repro26.nagnn.model import LEARNED

    for ds in cfg.datasets:
        if ds not in GENERATORS and ds not in cfg.csv_files:
            raise ConfigError(f"nagnn.datasets: '{ds}' is neither a generator "
                              f"({', '.join(GENERATORS)}) nor a name in csv_files")
    for m in cfg.models:
        if m not in LEARNED:
            raise ConfigError(f"nagnn.models: '{m}' is unknown; allowed: {', '.join(LEARNED)}")
    if not 2 <= cfg.n_train_snapshots < cfg.n_snapshots:
        raise ConfigError("nagnn.n_train_snapshots: must be at least 2 and below n_snapshots")
    if not 0 < cfg.bipartite_users < cfg.n_nodes:
        raise ConfigError("nagnn.bipartite_users: must lie strictly between 0 and n_nodes")
    if cfg.frac_repeat + cfg.frac_triadic > 1 or min(cfg.frac_repeat, cfg.frac_triadic) < 0:
        raise ConfigError("nagnn.frac_repeat + frac_triadic: non-negative, at most 1")
    if cfg.timing_rounds < 3:
        raise ConfigError(f"nagnn.timing_rounds: at least 3 (a spread), got {cfg.timing_rounds}")
    if cfg.train_steps < 21:
        raise ConfigError(f"nagnn.train_steps: at least 21 (the plateau rule compares the last "
                          f"two tenths of the steps), got {cfg.train_steps}")
    if cfg.lsh_bits < 1 or cfg.lsh_tables < 1:
        raise ConfigError("nagnn.lsh_bits, lsh_tables: at least 1")


def data_key(seed: int, dataset: str):
    import jax

    return jax.random.fold_in(jax.random.PRNGKey(seed), zlib.crc32(dataset.encode()) % 2**31)


def make_stream(cfg: Config, dataset: str, seed: int):
    """(stream, destination pool, latent state) of one dataset and seed; the latent state
    (communities or preferences per snapshot, for the ideal scorer) is None for a CSV file."""
    from repro26.core.memory import require
    from repro26.nagnn import data

    key = data_key(seed, dataset)
    E, T = cfg.events_per_snapshot, cfg.n_snapshots
    U = cfg.bipartite_users
    if dataset == "dsbm":
        require(data.dsbm_bytes(cfg.n_nodes, T, E), "nagnn.n_nodes / events_per_snapshot (dsbm)")
        s, z = data.dsbm(key, cfg.n_nodes, T, E, cfg.n_communities, cfg.affinity, cfg.drift,
                         cfg.frac_repeat, cfg.frac_triadic, cfg.frac_echo, cfg.echo_window,
                         cfg.feature_dim, cfg.feature_noise)
        return s, np.arange(cfg.n_nodes), z
    if dataset == "bipartite":
        require(data.bipartite_bytes(U, cfg.n_nodes - U, T, E),
                "nagnn.n_nodes / events_per_snapshot (bipartite)")
        s, pref = data.bipartite(key, U, cfg.n_nodes - U, T, E, cfg.n_item_clusters, cfg.p_pref,
                                 cfg.drift, cfg.frac_repeat, cfg.frac_echo, cfg.echo_window,
                                 cfg.feature_dim, cfg.feature_noise)
        return s, np.arange(U, cfg.n_nodes), pref
    return (*data.load_event_csv(cfg.csv_files[dataset], E, T, cfg.feature_dim, key), None)


def _dataset(run: Run) -> str:
    ds = run.variant["dataset"]
    if ds not in run.cfg.datasets:
        raise UsageError(f"--variant dataset: '{ds}' is not configured; allowed: "
                         f"{', '.join(run.cfg.datasets)}")
    return ds


def load_data(path: Path):
    """(stream with a leading seed axis, destination pools, negatives) from a data stage file."""
    from repro26.nagnn.data import Stream

    arrays = io.read_npz(path)
    stream = Stream(arrays.pop("src"), arrays.pop("dst"), arrays.pop("time"), arrays.pop("x"))
    pool = arrays.pop("dst_pool")
    return stream, pool, arrays


@stage({"dataset": str}, reads=("seeds", "datasets", "n_train_snapshots", "mrr_negatives",
                               "events_per_snapshot", "n_snapshots", "n_nodes", "n_communities",
                               "affinity", "drift", "frac_repeat", "frac_triadic", "frac_echo",
                               "echo_window", "feature_dim",
                               "feature_noise", "bipartite_users", "n_item_clusters", "p_pref",
                               "csv_files"))
def data_stage(run: Run) -> None:
    """One dataset for every seed: events, features, destination pool and test negatives."""
    from repro26.nagnn import data

    cfg = run.cfg
    ds = _dataset(run)
    parts = []
    for seed in cfg.seeds:
        stream, pool, latent = make_stream(cfg, ds, seed)
        neg = data.negatives(stream, cfg.n_train_snapshots, pool, cfg.mrr_negatives, seed)
        parts.append({**{k: np.asarray(v) for k, v in stream._asdict().items()},
                      "dst_pool": pool, **neg,
                      **({} if latent is None else {"latent": np.asarray(latent)})})
    shapes = {p["src"].shape for p in parts}
    if len(shapes) > 1:
        raise UsageError(f"dataset {ds}: seeds give different stream shapes {shapes}")
    io.write_npz(run.out, compressed=True, **{k: np.stack([p[k] for p in parts]) for k in parts[0]})


@stage({"model": str, "dataset": str}, matches=("dataset",))
def train_stage(run: Run) -> None:
    """One learned model on one dataset, every seed at once; writes the models, the loss curve
    (``<model>.csv``, about 100 steps with their learning rate) and one row per seed of the
    plateau rule on the whole curve (``<model>.fit.csv``: steps, first / final loss, plateau
    flag; :func:`repro26.nagnn.train.plateau`)."""
    from repro26.nagnn import train
    from repro26.nagnn.model import LEARNED

    cfg = run.cfg
    name, ds = run.variant["model"], _dataset(run)
    if name not in LEARNED:
        raise UsageError(f"--variant model: '{name}' is not a learned model; allowed: "
                         f"{', '.join(LEARNED)}")
    stream, pool, _ = load_data(run.input(f"{ds}.npz"))
    out = Path(run.out)
    ckpt = out.with_suffix(".ckpt")
    models, history = train.fit(cfg, name, stream, pool, ckpt, run.progress)
    train.save_models(out, models)
    for resume_file in (ckpt, ckpt.with_name(ckpt.name + ".history.npz")):
        resume_file.unlink(missing_ok=True)  # only a killed job resumes; a finished one reruns
    loss = history["loss"]
    rates = train.schedule_rates(cfg)
    every = max(1, len(loss) // 100)
    rows = [{"dataset": ds, "model": name, "seed": seed, "step": step + 1,
             "loss": float(loss[step, i]), "lr": float(rates[step])}
            for step in sorted({*range(0, len(loss), every), len(loss) - 1})
            for i, seed in enumerate(cfg.seeds)]
    io.write_table(out.with_suffix(".csv"), rows, run.meta())
    fit = train.plateau(loss, cfg.plateau_tol)
    io.write_table(out.with_suffix(".fit.csv"), [
        {"dataset": ds, "model": name, "seed": seed, "steps": len(loss),
         **{k: (int(v[i]) if k == "plateaued" else float(v[i])) for k, v in fit.items()},
         "plateau_tol": cfg.plateau_tol} for i, seed in enumerate(cfg.seeds)], run.meta())


@stage({"model": str, "dataset": str}, matches=("dataset",))
def evaluate_stage(run: Run) -> None:
    """AP, AUROC (random/historical/inductive negatives) and MRR on the test snapshots of one
    learned model, or of every heuristic and, on a generated stream, of the ideal scorer (the
    true law, model ``ideal``) (``model=heuristics``); NAGNN's rows also carry its
    reservoir slot occupancy (:func:`repro26.nagnn.evaluate.occupancy`)."""
    from repro26.nagnn import evaluate, train
    from repro26.nagnn.model import HEURISTICS, LEARNED

    cfg = run.cfg
    name, ds = run.variant["model"], _dataset(run)
    if name not in (*LEARNED, "heuristics"):
        raise UsageError(f"--variant model: '{name}' is unknown; allowed: "
                         f"{', '.join((*LEARNED, 'heuristics'))}")
    stream, _, neg = load_data(run.input(f"{ds}.npz"))
    latent = neg.pop("latent", None)
    q_src, q_dst = evaluate.evaluation_queries(stream.src, stream.dst, neg)
    rows = []
    heuristics = (*HEURISTICS, *(("ideal",) if latent is not None else ()))
    for model in heuristics if name == "heuristics" else (name,):
        stacked = None
        if model in LEARNED:
            stacked = train.load_models(run.input(f"{model}.eqx"), cfg, model, *stream.x.shape[1:])
        if model == "ideal":
            scores = evaluate.ideal_scores(cfg, ds, stream, latent, q_src, q_dst)
        else:
            scores = evaluate.scores_for(model, stacked, stream, q_src, q_dst)
        extra = evaluate.occupancy(stacked, stream) if model == "nagnn" else None
        rows += evaluate.metric_rows(ds, model, cfg.seeds, scores, neg, cfg.n_train_snapshots,
                                     extra)
    io.write_table(run.out, rows, run.meta())


@stage({"dataset": str}, matches=("dataset",))
def speed_stage(run: Run) -> None:
    """Training/inference CPU time (interleaved rounds, one process) and peak memory of every
    learned model."""
    from repro26.nagnn import evaluate

    ds = _dataset(run)
    stream, pool, _ = load_data(run.input(f"{ds}.npz"))
    io.write_table(run.out, evaluate.speed_rows(run.cfg, ds, stream, pool), run.meta())


@stage()
def tables_stage(run: Run) -> None:
    """Gather the per-job rows into tables/metrics.csv, speed.csv, loss.csv (loss curves) and
    training.csv (plateau rule per model, dataset and seed) (--out)."""
    groups = {"metrics": [], "speed": [], "loss": [], "training": []}
    for path in run.inputs:
        kind = ("speed" if path.parent.name == "speed" else
                ("training" if path.name.endswith(".fit.csv") else "loss")
                if path.parent.parent.name == "runs" else "metrics")
        table = io.read_table(path)
        groups[kind].extend(dict(zip(table, vals)) for vals in zip(*table.values()))
    if not groups["metrics"] or not groups["speed"] or not groups["training"]:
        raise UsageError("--input: the tables stage needs the evaluation, speed and training "
                         "(<model>.fit.csv) tables")
    out = Path(run.out)
    for kind, rows in groups.items():
        io.write_table(out / f"{kind}.csv", rows, run.meta())


STAGES = {
    "data": data_stage,
    "train": train_stage,
    "evaluate": evaluate_stage,
    "speed": speed_stage,
    "tables": tables_stage,
}
