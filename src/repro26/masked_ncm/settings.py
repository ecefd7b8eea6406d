"""The training sections of the masked_ncm config (values in config/methods/masked_ncm.yaml):
plain dataclasses, so that the CLI reads and checks the config without importing JAX."""

from __future__ import annotations

import dataclasses

from repro26.core.config import Count, NonNegative, Positive


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Size of every mechanism's attention network (set per scale in the YAML)."""

    embed_dim: Count
    heads: Count
    hidden: Count


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """Both phases' schedule (values in config/methods/masked_ncm.yaml): Adam step ``lr``; the
    query step ``query_lr_ratio`` in units of sqrt(n_ref / n); augmented-Lagrangian penalty
    ``rho`` and multiplier step ``dual_lr`` (clipped at ``dual_clip``); data-fit level
    ``alpha``; runs with constraint above ``max_violation`` are infeasible."""

    steps: Count
    chunk_size: Count
    lr: Positive
    query_lr_ratio: Positive
    n_ref: Positive
    rho: Positive
    dual_lr: Positive
    dual_clip: Positive
    alpha: NonNegative
    max_violation: NonNegative
