"""Stages of ``repro26 progress_advantage <stage>`` and the method's typed config.

tabular (one job, every seed) ; data (noisy demonstrations) -> train ref -> train rl_kl, rl_clip
-> train prm, orm (on π_RL's trajectories) -> evaluate (the three applications, test-time
scaling by best-of-N and step-level beam search); figures
(``figures.FIGURES``) and claims (``claims.CLAIMS``) come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (ConfigError, Count, NonNegative, NonNegativeInt, Positive,
                                 Probability, UsageError)
from repro26.core.method import stage

MODEL = Literal["ref", "rl_kl", "rl_clip", "prm", "orm"]


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    # tabular: slippery gridworld, KL coefficient tab_beta, exact policy gradient
    grid_width: Count
    pits: tuple[tuple[int, int], ...]
    slip: Probability
    step_cost: NonNegative
    gamma: Probability
    tab_beta: Positive
    tab_steps: Count
    tab_lr: Positive
    # agentic task (see task.py)
    modulus: Count
    horizon: Count
    n_operands: Count
    fault: Probability
    crash: Probability  # a fast-tool call (operand >= risky_from) crashes into the dead state
    risky_from: Count
    demo_noise: NonNegative
    demo_habit: Probability  # demonstrators take the largest valid operand
    demo_retry: Probability  # demonstrators' retry call in the dead state
    n_demos: Count
    # policies: SFT then KL-regularised / clipping-only policy gradient; the architecture is a
    # causal transformer (tf_*) or, with policy: mlp, an MLP of width `hidden` over the Markov state
    policy: Literal["transformer", "mlp"]
    tf_width: Count
    tf_layers: Count
    tf_heads: Count
    hidden: Count
    sft_steps: Count
    sft_batch: Count
    sft_lr: Positive
    rl_steps: Count
    rl_problems: Count
    rl_group: Count
    rl_lr: Positive
    rl_inner_epochs: Count
    rl_warmup: NonNegativeInt  # RL steps of linear warm-up before the cosine decay
    clip_eps: Positive
    kl_coef: NonNegative
    # reward models: π_RL's episodes, as many as RL sampled (rm_budget); the PRM's are split into
    # trajectories and rm_rollouts Monte Carlo continuations per step for its labels
    rm_rollouts: Count
    rm_hidden: Count
    rm_steps: Count
    rm_batch: Count
    rm_lr: Positive
    # evaluation
    n_val: Count
    n_test: Count
    n_candidates: Count
    bon_ns: tuple[Count, ...]
    n_attribution: Count
    n_beam: Count
    beam_expand: Count
    chunk_size: Count


def check(cfg: Config) -> None:
    if len(cfg.seeds) < 2:
        raise ConfigError("progress_advantage.seeds: at least 2 seeds (claims use CIs over seeds)")
    if cfg.modulus < 4 or cfg.n_operands < 2 or cfg.horizon < 2:
        raise ConfigError("progress_advantage: modulus >= 4, n_operands >= 2, horizon >= 2")
    if not 1 <= cfg.risky_from < cfg.n_operands:
        raise ConfigError("progress_advantage.risky_from: an operand in 1..n_operands-1")
    if (cfg.risky_from - 1) * cfg.horizon < cfg.modulus // 2:
        raise ConfigError("progress_advantage.risky_from: the safe operands 1..risky_from-1 must "
                          "reach every distance in horizon calls ((risky_from-1)*horizon >= "
                          "modulus//2), so the fast tool is never needed")
    if cfg.rl_warmup >= cfg.rl_steps:
        raise ConfigError("progress_advantage.rl_warmup: fewer than rl_steps")
    for name in ("fault", "demo_noise", "slip", "crash"):
        if not 0 <= getattr(cfg, name) < 1:
            raise ConfigError(f"progress_advantage.{name}: must lie in [0, 1), got {getattr(cfg, name)}")
    if not 0 < cfg.gamma < 1:
        raise ConfigError(f"progress_advantage.gamma: must lie in (0, 1), got {cfg.gamma}")
    if cfg.kl_coef <= 0 or cfg.tab_beta <= 0:
        raise ConfigError("progress_advantage.kl_coef, tab_beta: must be > 0 (β of the identity)")
    if any(not (0 <= r < cfg.grid_width and 0 <= c < cfg.grid_width) or r * cfg.grid_width + c ==
           cfg.grid_width ** 2 - 1 for r, c in cfg.pits):
        raise ConfigError(f"progress_advantage.pits: cells inside the {cfg.grid_width}x"
                          f"{cfg.grid_width} grid other than the goal (bottom right)")
    if not cfg.bon_ns or max(cfg.bon_ns) > cfg.n_candidates or min(cfg.bon_ns) < 1 \
            or len(set(cfg.bon_ns)) != len(cfg.bon_ns):
        raise ConfigError("progress_advantage.bon_ns: distinct values in 1..n_candidates")
    if cfg.policy not in ("transformer", "mlp"):
        raise ConfigError(f"progress_advantage.policy: transformer or mlp, got {cfg.policy!r}")
    if cfg.tf_width % cfg.tf_heads:
        raise ConfigError("progress_advantage.tf_width: a multiple of tf_heads")
    if cfg.beam_expand < 1 or any(n % max(1, n // cfg.beam_expand) for n in cfg.bon_ns):
        raise ConfigError("progress_advantage.beam_expand: >= 1, and every bon_ns value a "
                          "multiple of its beam count max(1, N // beam_expand)")


def rm_budget(cfg: Config) -> dict:
    """Episodes of the environment each learner sees: RL samples rl_steps · rl_problems ·
    rl_group; the ORM gets as many of π_RL's episodes, the PRM as many episodes split into
    trajectories and their rm_rollouts continuations per step."""
    episodes = cfg.rl_steps * cfg.rl_problems * cfg.rl_group
    return {"episodes": episodes, "orm_trajectories": episodes,
            "prm_trajectories": max(1, episodes // (1 + cfg.horizon * cfg.rm_rollouts))}


def _skeleton(cfg: Config, model: str):
    """The stacked (seed-axis) structure a checkpoint of ``model`` loads into."""
    from repro26.progress_advantage import evaluate, train
    from repro26.progress_advantage.model import OutcomeRewardModel, StepRewardModel, make_policy

    spec = evaluate.task_spec(cfg)
    make = {"prm": lambda k: StepRewardModel(spec, cfg.rm_hidden, k),
            "orm": lambda k: OutcomeRewardModel(spec, cfg.rm_hidden, k)}.get(
        model, lambda k: make_policy(spec, cfg, k))
    return train.stacked(make, cfg.seeds, 0)


def load_models(cfg: Config, run: Run, *models: str):
    """The stacked models ``<m>.eqx`` among the inputs; a file that records another model
    (π_ref's weights renamed rl_kl.eqx, say) is one line naming it, not a model trained on the
    wrong policy."""
    out = []
    for m in models:
        path = run.input(f"{m}.eqx")
        written = io.read_origin(path).get("variant")
        if written is not None and written != f"model={m}":
            raise UsageError(f"--input {path}: written as {written}; this stage reads it as "
                             f"model={m}")
        out.append(io.load_model(path, _skeleton(cfg, m)))
    return out


@stage()
def tabular_stage(run: Run) -> None:
    """Slippery gridworld: soft value iteration, closed-form and learned β log π/π_ref vs A*
    (``--out``: a folder; writes tabular_final.csv, tabular_curve.csv, tabular_scatter.csv)."""
    from repro26.progress_advantage import evaluate

    final, curve, scatter = evaluate.tabular(run.cfg, run.progress)
    out = Path(run.out)
    io.write_table(out / "tabular_final.csv", final, run.meta())
    io.write_table(out / "tabular_curve.csv", curve, run.meta())
    io.write_table(out / "tabular_scatter.csv", scatter, run.meta())


@stage()
def data_stage(run: Run) -> None:
    """Noisy demonstrations of every seed (``--out``: demos.npz, arrays seed x rows)."""
    import jax
    import numpy as np

    from repro26.progress_advantage import evaluate, train

    cfg = run.cfg
    spec = evaluate.task_spec(cfg)
    demos = [train.demonstrations(spec, jax.random.fold_in(jax.random.PRNGKey(s), 2), cfg.n_demos,
                                  cfg.demo_noise, cfg.demo_habit, cfg.demo_retry)
             for s in cfg.seeds]
    io.write_npz(run.out, **{k: np.stack([np.asarray(d[k]) for d in demos]) for k in demos[0]})


@stage({"model": MODEL})
def train_stage(run: Run) -> None:
    """Train one model for every seed (vmapped): ref needs demos.npz; rl_kl / rl_clip need
    ref.eqx; prm / orm need rl_kl.eqx. ``--out`` names the .eqx; the .csv beside it holds the
    training curve."""
    import jax.numpy as jnp
    import numpy as np

    from repro26.progress_advantage import evaluate, train

    cfg = run.cfg
    spec = evaluate.task_spec(cfg)
    model, out = run.variant["model"], Path(run.out)
    ckpt = out.with_suffix(".ckpt")
    if model == "ref":
        demos = {k: jnp.asarray(v) for k, v in io.read_npz(run.input("demos.npz")).items()}
        net, hist = train.train_reference(spec, cfg, demos, cfg.seeds, ckpt, run.progress)
    elif model in ("rl_kl", "rl_clip"):
        (ref,) = load_models(cfg, run, "ref")
        beta = cfg.kl_coef if model == "rl_kl" else 0.0
        net, hist = train.train_rl(spec, cfg, ref, cfg.seeds, beta, ckpt, run.progress)
    else:
        (rl,) = load_models(cfg, run, "rl_kl")
        budget = rm_budget(cfg)
        fit, n = ((train.train_prm, budget["prm_trajectories"]) if model == "prm" else
                  (train.train_orm, budget["orm_trajectories"]))
        net, hist = fit(spec, cfg, rl, n, cfg.seeds, ckpt, run.progress)
    io.save_checkpoint(out, net, 0)
    every = max(1, len(hist["loss"]) // 50)
    rows = [{"seed": s, "step": t, **{k: float(np.asarray(v)[t, i]) for k, v in hist.items()}}
            for t in range(0, len(hist["loss"]), every) for i, s in enumerate(cfg.seeds)]
    io.write_table(out.with_suffix(".csv"), rows, run.meta())


@stage()
def evaluate_stage(run: Run) -> None:
    """Best-of-N, AUROC, failure attribution, policy success and step-level beam search of every
    seed (``--out``: the tables folder; bon.csv, auroc.csv, attribution.csv, policies.csv,
    beam.csv)."""
    from repro26.progress_advantage import evaluate

    cfg = run.cfg
    models = tuple(load_models(cfg, run, "rl_kl", "ref", "rl_clip", "prm", "orm"))
    bon, roc, attr, pol, bs = evaluate.agentic(cfg, models, run.progress)
    out = Path(run.out)
    for name, rows in (("bon", bon), ("auroc", roc), ("attribution", attr), ("policies", pol),
                       ("beam", bs)):
        io.write_table(out / f"{name}.csv", rows, run.meta())


STAGES = {"tabular": tabular_stage, "data": data_stage, "train": train_stage,
          "evaluate": evaluate_stage}
