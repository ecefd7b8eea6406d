"""Stages of ``repro26 neptuna <stage>`` and the method's typed config.

validate (solver vs exact Riemann solutions) ; data (one job per dataset, 2-D or 3-D) -> train
(one job per dataset: every model and loss, every seed) and pretrain (the foundation model on every
dataset) -> finetune (one job per dataset) -> evaluate (gathers, adds the trivial baselines) ;
timing (time per training step of MSE-only, SoftAdapt and GradNorm, in one job). Figures and
claims come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (
    ConfigError, Count, NonNegative, NonNegativeInt, OpenUnit, Positive, UsageError,
)
from repro26.core.method import stage


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    datasets: tuple[str, ...]
    models: tuple[str, ...]
    losses: tuple[str, ...]  # studied on `loss_model`; the other models train with mse
    nx: Count
    ny: Count
    n_traj: Count
    n_test: Count
    n_frames: Count
    train_steps: Count
    sod_ns: tuple[Count, ...]
    coarsen: Count = 2  # surrogates see the fields average-pooled by this factor
    loss_model: str = "unet"
    data_seed: NonNegativeInt = 0
    cfl: OpenUnit = 0.4
    batch_size: Count = 4
    lr: Positive = 0.001
    chunk_size: Count = 50
    n_val: Count = 1  # training trajectories held out for the validation curve
    val_every: Count = 10  # steps between validation points
    plateau_tol: OpenUnit = 0.1  # plateau: validation loss fell < this fraction in the 2nd half
    unet_width: Count = 8
    fno_width: Count = 16
    fno_modes: Count = 8
    fno_layers: Count = 3
    vit_patch: Count = 4
    vit_dim: Count = 32
    vit_depth: Count = 2
    vit_heads: Count = 4
    interface_gamma: Positive = 10.0
    interface_tau: Positive = 0.1
    softadapt_beta: Positive = 2.0  # temperature on the normalised slopes (in [-1, 1])
    softadapt_every: Count = 10  # steps between SoftAdapt weight updates
    gradnorm_lr: Positive = 0.025
    gradnorm_a: NonNegative = 1.5
    timing_steps: Count = 10  # training steps per timed call (calls repeat to timing_min_seconds)
    timing_repeats: Count = 7  # interleaved rounds (>= 3)
    timing_dataset: str = "bubble"
    timing_min_seconds: Positive = 0.1
    foundation_model: str = "fno"  # the architecture pretrained on every dataset jointly
    pretrain_steps: Count = 300
    datasets_3d: tuple[str, ...] = ()  # 3-D datasets (data only), run at `paper`
    nx3: Count = 64
    ny3: Count = 32
    nz3: Count = 32
    n_traj_3d: Count = 2
    n_frames_3d: Count = 5


def check(cfg: Config) -> None:
    from repro26.neptuna import data, losses, model

    for field, values, allowed in (("datasets", cfg.datasets, data.DATASETS),
                                   ("models", cfg.models, model.MODELS),
                                   ("losses", cfg.losses, losses.LOSSES)):
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise ConfigError(f"neptuna.{field}: {bad or 'empty'} not allowed; use "
                              f"{', '.join(allowed)}")
    if "mse" not in cfg.losses:
        raise ConfigError("neptuna.losses: must include mse (the reference of the loss study)")
    if cfg.loss_model not in cfg.models:
        raise ConfigError(f"neptuna.loss_model: {cfg.loss_model!r} must be one of models")
    bad3 = [d for d in cfg.datasets_3d if d not in data.DATASETS_3D]
    if bad3:
        raise ConfigError(f"neptuna.datasets_3d: {bad3} not allowed; use {', '.join(data.DATASETS_3D)}")
    if cfg.foundation_model not in model.MODELS:
        raise ConfigError(f"neptuna.foundation_model: {cfg.foundation_model!r} not allowed; use "
                          f"{', '.join(model.MODELS)}")
    if cfg.timing_dataset not in cfg.datasets:
        raise ConfigError(f"neptuna.timing_dataset: {cfg.timing_dataset!r} must be one of datasets")
    if cfg.timing_repeats < 3 or cfg.timing_steps < 1 or cfg.timing_min_seconds <= 0:
        raise ConfigError("neptuna.timing_repeats, timing_steps, timing_min_seconds: need >= 3 "
                          "rounds, >= 1 step, > 0 s")
    unit = 4 * cfg.coarsen * max(1, cfg.vit_patch // 4)
    if cfg.nx % unit or cfg.ny % unit:
        raise ConfigError(f"neptuna.nx, ny: must be multiples of {unit} (U-Net depth 2, "
                          f"coarsen {cfg.coarsen}, ViT patch {cfg.vit_patch})")
    if not 1 <= cfg.n_test < cfg.n_traj:
        raise ConfigError(f"neptuna.n_test: must lie in [1, n_traj), got {cfg.n_test}")
    if cfg.n_val >= cfg.n_traj - cfg.n_test:
        raise ConfigError(f"neptuna.n_val: must leave a training trajectory (< n_traj − n_test = "
                          f"{cfg.n_traj - cfg.n_test}), got {cfg.n_val}")
    if cfg.pretrain_steps >= cfg.train_steps:
        raise ConfigError(f"neptuna.pretrain_steps: counts against train_steps "
                          f"({cfg.train_steps}), so must be smaller, got {cfg.pretrain_steps}")
    if cfg.n_frames < 4:
        raise ConfigError(f"neptuna.n_frames: at least 4, got {cfg.n_frames}")


# every field but the timing stage's own: the training and evaluation jobs do not rerun when
# only the timing measurement changes
NOT_TIMING = tuple(f.name for f in dataclasses.fields(Config) if not f.name.startswith("timing_"))


def runs(cfg: Config) -> list[tuple[str, str, str]]:
    """(dataset, model, loss) of every from-scratch training run (one train job per dataset)."""
    out = []
    for ds in cfg.datasets:
        for m in cfg.models:
            for loss in (cfg.losses if m == cfg.loss_model else ("mse",)):
                out.append((ds, m, loss))
    return out


@stage(reads=("sod_ns", "cfl"))
def validate_stage(run: Run) -> None:
    """Solver vs the exact Riemann solutions (Sod, two-material tubes) and the moving-contact test."""
    from repro26.neptuna import validation

    rows, profile = validation.run_all(run.cfg.sod_ns, run.cfg.cfl)
    out = Path(run.out)
    io.write_table(out / "validation.csv", rows, run.meta())
    io.write_table(out / "sod_profile.csv", profile, run.meta())


@stage({"dataset": str}, reads=("datasets", "datasets_3d", "n_traj", "n_frames", "nx", "ny",
                               "n_traj_3d", "n_frames_3d", "nx3", "ny3", "nz3", "n_test",
                               "data_seed", "cfl"))
def data_stage(run: Run) -> None:
    """One dataset's trajectories (HDF5) and the reference trajectory's snapshots (npz); a 3-D
    dataset (``datasets_3d``) on the nx3 × ny3 × nz3 grid."""
    from repro26.neptuna import data

    cfg = run.cfg
    ds = run.variant["dataset"]
    if ds not in (*cfg.datasets, *cfg.datasets_3d):
        raise UsageError(f"--variant dataset: {ds!r} is not configured; allowed: "
                         f"{', '.join((*cfg.datasets, *cfg.datasets_3d))}")
    if ds in cfg.datasets_3d:
        n_frames = cfg.n_frames_3d
        fields, cs, steps, t_end = data.generate(ds, cfg.n_traj_3d, n_frames, cfg.nx3, cfg.ny3,
                                                 cfg.data_seed, cfg.cfl, nz=cfg.nz3)
        snapshot = fields[0, :, :, 0]  # the z = 0 symmetry plane: (frames, C, ny, nx)
    else:
        n_frames = cfg.n_frames
        fields, cs, steps, t_end = data.generate(ds, cfg.n_traj, n_frames, cfg.nx, cfg.ny,
                                                 cfg.data_seed, cfg.cfl)
        snapshot = fields[0]
    if not np.all(np.isfinite(fields)):
        raise RuntimeError(f"{ds}: the solver produced non-finite values")
    out = Path(run.out)
    data.write_h5(out.with_suffix(".h5"), fields, cs, steps, t_end,
                  {"dataset": ds, "lx": data.LX, "ly": data.LY, "n_test": cfg.n_test,
                   **{k: str(v) for k, v in run.meta().items()}})
    idx = np.linspace(0, n_frames - 1, 4).round().astype(int)
    io.write_npz(out.with_name(f"{ds}_snapshots.npz"), compressed=True,
                 fields=snapshot[idx], times=idx * t_end[0] / (n_frames - 1),
                 params=np.asarray(cs[0][:3]))


def require_memory(paths, cfg: Config, copies: float, what: str) -> None:
    """One line before any dataset is read when the stage cannot hold it: each file's fields
    (float32, from the stored shape) plus ``copies`` coarsened copies of them (the normalised
    fields and the next-step pairs a training stage builds)."""
    from repro26.core import memory
    from repro26.neptuna import data

    total = 0.0
    for path in paths:
        try:
            nbytes = data.h5_bytes(path)
        except (OSError, KeyError) as err:
            raise UsageError(f"--input {path}: not a neptuna dataset (HDF5 with a 'fields' "
                             f"array): {err}") from None
        total += nbytes * (1 + copies / cfg.coarsen**2)
    memory.require(total, f"neptuna {what}: {len(paths)} dataset(s) of "
                          f"{total / max(1, len(paths)) / 2**30:.3g} GB each once loaded")


def _load(path, cfg: Config):
    """(train fields, test fields, test materials (n_test, 4), dx) after coarsening."""
    from repro26.neptuna import data, train

    try:
        fields, params, _ = data.read_h5(path)
    except (OSError, KeyError) as err:
        raise UsageError(f"--input {path}: not a neptuna dataset (HDF5 with fields and "
                         f"params): {err}") from None
    f = np.asarray(train.coarsen(fields, cfg.coarsen))
    n = f.shape[0] - cfg.n_test
    return f[:n], f[n:], data.materials(params)[n:], data.LX / f.shape[-1]


FOUNDATION = "foundation"  # the model name of the pretrained-then-fine-tuned runs


def _rollout_rows(run: Run, out: Path, key, states, norm, te, mats, dx, history) -> None:
    """Rollout metrics of every seed's model on the test set -> ``out`` (CSV) and its npz."""
    import jax.numpy as jnp

    from repro26.neptuna import evaluate, train

    cfg = run.cfg
    per = train.rollout_seeds(states, norm, jnp.asarray(te), jnp.asarray(mats), dx)
    rows = []
    gain = train.plateau_gain(history)
    for i, seed in enumerate(cfg.seeds):
        s = evaluate.summarise({k: np.asarray(v)[i] for k, v in per.items()})
        rows.append({"dataset": key[0], "model": key[1], "loss": key[2], "seed": seed, **s,
                     "plateau_gain": float(gain[i])})
    io.write_table(out, rows, run.meta())
    val_steps, val = train.validation_curve(history)
    io.write_npz(out.with_suffix(".npz"),
                 nrmse_by_step=np.nanmean(np.asarray(per["nrmse"]), axis=1),  # (seed, steps)
                 weights=np.asarray(history["weights"]),  # (steps, seed, 4)
                 terms=np.asarray(history["terms"]),
                 val_steps=val_steps, val=val)  # the validation curve (k,), (k, seed)


@stage({"dataset": str}, matches=("dataset",), reads=NOT_TIMING)
def train_stage(run: Run) -> None:
    """Every configured (model, loss) run of one dataset, one after another in one process
    (JAX starts and the dataset loads once; a model's rollout compiles once for all its losses),
    each for every seed at once; rollout metrics on the test set -> ``<out>/<model>_<loss>.csv``
    and ``.npz``. The runs are the separate trainings they were as separate jobs: same seeds,
    same steps, same data."""
    from repro26.neptuna import train

    cfg = run.cfg
    ds = run.variant["dataset"]
    if ds not in cfg.datasets:
        raise UsageError(f"--variant dataset: {ds!r} is not configured; allowed: "
                         f"{', '.join(cfg.datasets)}")
    if not run.inputs:
        raise UsageError("--input: the train stage needs the dataset's .h5 file")
    require_memory(run.inputs[:1], cfg, 4, f"train {ds}")
    tr, te, mats, dx = _load(run.inputs[0], cfg)
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    for key in runs(cfg):
        if key[0] != ds:
            continue
        states, history, norm = train.train_seeds(key[1], key[2], tr, cfg, cfg.seeds,
                                                  progress=run.progress)
        _rollout_rows(run, out / f"{key[1]}_{key[2]}.csv", key, states, norm, te, mats, dx,
                      history)


@stage(reads=NOT_TIMING)
def pretrain_stage(run: Run) -> None:
    """The foundation surrogate: ``foundation_model`` pretrained with MSE on every dataset's
    training trajectories jointly, every seed (weights -> .eqx, loss curve -> .csv)."""
    from repro26.neptuna import train

    cfg = run.cfg
    h5 = [p for p in run.inputs if str(p).endswith(".h5")]
    if sorted(Path(p).stem for p in h5) != sorted(cfg.datasets):
        raise UsageError(f"--input: the pretrain stage needs one .h5 per dataset "
                         f"({', '.join(cfg.datasets)})")
    require_memory(h5, cfg, 6, "pretrain")  # + the joint pairs' concatenation
    sets = [_load(p, cfg)[0] for p in h5]
    states, history = train.pretrain_seeds(cfg.foundation_model, sets, cfg, cfg.seeds,
                                           progress=run.progress)
    out = Path(run.out)
    io.save_checkpoint(out, states.model, cfg.pretrain_steps, tag="neptuna-foundation")
    loss = np.asarray(history["loss"])  # (steps, seed)
    stride = max(1, len(loss) // 100)
    io.write_table(out.with_suffix(".csv"),
                   [{"step": k, "seed": seed, "loss": float(loss[k, i])}
                    for k in range(0, len(loss), stride) for i, seed in enumerate(cfg.seeds)],
                   run.meta())


@stage({"dataset": str}, matches=("dataset",), reads=NOT_TIMING)
def finetune_stage(run: Run) -> None:
    """The pretrained foundation surrogate fine-tuned on one dataset for ``train_steps`` (the
    from-scratch budget), every seed; rollout metrics on the test set (model ``foundation``)."""
    from repro26.neptuna import train

    cfg = run.cfg
    ds = run.variant["dataset"]
    if ds not in cfg.datasets:
        raise UsageError(f"--variant dataset: {ds!r} is not configured; allowed: "
                         f"{', '.join(cfg.datasets)}")
    h5 = [p for p in run.inputs if str(p).endswith(".h5")]
    weights = [p for p in run.inputs if str(p).endswith(".eqx")]
    if len(h5) != 1 or len(weights) != 1:
        raise UsageError("--input: the finetune stage needs the dataset's .h5 and the "
                         "pretrained .eqx")
    require_memory(h5, cfg, 4, f"finetune {ds}")
    tr, te, mats, dx = _load(h5[0], cfg)
    like = train.init_models(cfg.foundation_model, tr.shape[2], tr.shape[3:], cfg, cfg.seeds)
    pretrained = io.load_model(weights[0], like)
    states, history, norm = train.train_seeds(cfg.foundation_model, "mse", tr, cfg, cfg.seeds,
                                              progress=run.progress, start_models=pretrained)
    _rollout_rows(run, Path(run.out), (ds, FOUNDATION, "mse"), states, norm, te, mats, dx,
                  history)


TAIL = 0.25  # tail_gain: the validation curve's fall over the last quarter of training


@stage(reads=NOT_TIMING)
def evaluate_stage(run: Run) -> None:
    """Gather the runs into metrics.csv, rollout.csv, weights.csv, with the trivial baselines
    and the exact frames scored as a prediction (model ``exact``, the loss claims' ideal row)."""
    from repro26.neptuna import evaluate, losses, train

    cfg = run.cfg
    metrics, rollout, weights = [], [], []
    h5 = [Path(p) for p in run.inputs if str(p).endswith(".h5")]
    csvs = [Path(p) for p in run.inputs if str(p).endswith(".csv")]
    if not h5 or not csvs:
        raise UsageError("--input: the evaluate stage needs the datasets (.h5) and the run tables")
    for path in h5:  # one dataset at a time
        require_memory([path], cfg, 1, "evaluate")
    for path in h5:
        ds = path.stem
        tr, te, mats, dx = _load(path, cfg)
        norm = train.Normaliser.fit(tr)
        per = train.baseline_metrics(te, mats, norm.std, dx)
        for b in evaluate.BASELINES:
            summary = evaluate.summarise({k: np.asarray(v) for k, v in per[b].items()})
            for seed in cfg.seeds:  # deterministic: the same value for every seed
                metrics.append({"dataset": ds, "model": b, "loss": "-", "seed": seed, **summary,
                                "plateau_gain": 0.0, "tail_gain": 0.0})  # nothing to train
            curve = np.nanmean(np.asarray(per[b]["nrmse"]), axis=0)
            rollout += [{"dataset": ds, "model": b, "loss": "-", "seed": cfg.seeds[0],
                         "step": k + 1, "nrmse": float(v)} for k, v in enumerate(curve)]
        exact = evaluate.summarise({k: np.asarray(v) for k, v in
                                    train.exact_metrics(te, mats, norm.std, dx).items()})
        for seed in cfg.seeds:  # the ideal row of the loss claims (model "exact")
            metrics.append({"dataset": ds, "model": evaluate.EXACT, "loss": "-", "seed": seed,
                            **exact, "plateau_gain": 0.0, "tail_gain": 0.0})
    for path in csvs:
        table = io.read_table(path)
        rows = [dict(zip(table, vals)) for vals in zip(*table.values())]
        arrays = io.read_npz(path.with_suffix(".npz"))
        # the last quarter's fall of each seed's validation curve (rows are in cfg.seeds order)
        tail = train.curve_fall(arrays["val_steps"], arrays["val"], TAIL)
        for i, row in enumerate(rows):
            row["tail_gain"] = float(tail[i])
        metrics += rows
        ds, m, loss = rows[0]["dataset"], rows[0]["model"], rows[0]["loss"]
        for i, seed in enumerate(cfg.seeds):
            rollout += [{"dataset": ds, "model": m, "loss": loss, "seed": seed, "step": k + 1,
                         "nrmse": float(v)} for k, v in enumerate(arrays["nrmse_by_step"][i])]
            w = arrays["weights"][:, i]
            stride = max(1, len(w) // 50)
            weights += [{"dataset": ds, "model": m, "loss": loss, "seed": seed, "step": k,
                         **{f"w_{t}": float(w[k, j]) for j, t in enumerate(losses.TERMS)}}
                        for k in range(0, len(w), stride)]
    out = Path(run.out)
    io.write_table(out / "metrics.csv", metrics, run.meta())
    io.write_table(out / "rollout.csv", rollout, run.meta())
    io.write_table(out / "weights.csv", weights, run.meta())


TIMED = ("equal", "softadapt", "gradnorm")  # timed against MSE-only (equal: the same four
# terms with fixed weights, so SoftAdapt/equal is the cost of the weighting alone)


@stage()
def timing_stage(run: Run) -> None:
    """CPU seconds per training step of MSE-only, the fixed equal-weight composite, SoftAdapt,
    GradNorm and MSE-only timed again (the control), in interleaved rounds (repro26.core.timing), each measurement at least
    timing_min_seconds of CPU."""
    cfg = run.cfg
    from repro26.neptuna import train

    if not run.inputs:
        raise UsageError("--input: the timing stage needs the timing dataset's .h5 file")
    require_memory(run.inputs[:1], cfg, 4, "timing")
    tr, _, _, _ = _load(run.inputs[0], cfg)
    result = train.time_per_step(TIMED, tr, cfg, cfg.timing_steps,
                                 cfg.timing_repeats, cfg.loss_model, cfg.timing_min_seconds)
    io.write_table(run.out, train.timing_rows(result, cfg.timing_steps), run.meta())


STAGES = {
    "validate": validate_stage,
    "data": data_stage,
    "train": train_stage,
    "pretrain": pretrain_stage,
    "finetune": finetune_stage,
    "evaluate": evaluate_stage,
    "timing": timing_stage,
}
