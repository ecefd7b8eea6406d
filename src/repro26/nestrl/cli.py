"""Stages of ``repro26 nestrl <stage>`` and the method's typed config.

train (one job per layout and kind: level0 -> level1 -> ... -> levelK, level0 -> fcp,
mep_pop -> mep; every seed vmapped in the job) -> evaluate (one job per layout: every pair of
egos and partners); the figures (``figures.FIGURES``) and claims (``claims.CLAIMS``) come from core.
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


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    layouts: tuple[str, ...]
    horizon: Count
    updates: Count  # PPO updates per training job (each: num_envs episodes per learner)
    num_envs: Count
    levels: Count = 3  # NestRL levels k = 1..levels above the level-0 population
    level_size: Count = 2  # agents per level k >= 1 (the partners of level k+1)
    sp_members: Count = 2  # level-0 self-play members (also FCP's population)
    biases: tuple[tuple[float, float], ...] = ((2.0, 0.0), (0.0, 2.0))  # (onion, plate) weights
    fcp_snapshots: Count = 3  # FCP: snapshots per self-play member (the last is the final agent)
    mep_members: Count = 2
    mep_alpha: NonNegative = 0.01
    hidden: Count = 64
    epochs: Count = 4
    minibatches: Count = 4
    learning_rate: Positive = 0.002
    gamma: Probability = 0.99
    gae_lambda: Probability = 0.95
    clip_eps: Positive = 0.2
    vf_coef: NonNegative = 0.5
    ent_coef: NonNegative = 0.05
    max_grad_norm: Positive = 0.5
    reward_scale: Positive = 0.05  # the learner's reward times this (value targets of order 1)
    shaped_anneal: Probability = 0.5  # shaping weight reaches 0 at this fraction of the updates
    # partner-trained learners: per episode the partner acts uniformly at random with a
    # probability drawn from these (1.0: a random partner), against the lazy-agent collapse
    partner_eps: tuple[float, ...] = (0.0, 1.0)
    # ... and that probability is at least 1 - update / (partner_anneal x updates): a random
    # partner first, the real one by this fraction of training (0: off)
    partner_anneal: NonNegative = 0.5
    chunk_updates: Count = 25
    eval_envs: Count = 8
    eval_repeats: Count = 3
    eval_batch: Count = 32
    # pairs with a scripted proxy partner play this many times (independent keys), averaged
    proxy_replicas: Count = 4
    # how a learned *ego* acts in the evaluation: its most likely action (greedy) or a draw from
    # its policy (sampled); learned partners always sample (they stand for a population)
    ego_actions: Literal["greedy", "sampled"] = "greedy"
    patience: NonNegativeInt = 3  # blocked moves before a human proxy switches role
    scripted_eps: Probability = 0.1
    # every learner kind (self-play too): this share of each rollout's episodes has a scripted
    # role-switching partner with other parameters than the held-out proxies (issue 40), the
    # best response included
    scripted_share: Probability = 0.25
    train_patience: NonNegativeInt = 6
    train_scripted_eps: Probability = 0.2


def check(cfg: Config) -> None:
    from repro26.nestrl.env import LAYOUTS

    bad = [l for l in cfg.layouts if l not in LAYOUTS]
    if bad or not cfg.layouts:
        raise ConfigError(f"nestrl.layouts: '{bad[0] if bad else ''}' is unknown; allowed: "
                          f"{', '.join(LAYOUTS)}")
    if cfg.horizon < 4 or cfg.horizon % 4:
        raise ConfigError(f"nestrl.horizon: a positive multiple of 4 (quarters), got {cfg.horizon}")
    if len(cfg.seeds) < 2:
        raise ConfigError("nestrl.seeds: at least 2 (held-out partners come from other seeds)")
    if cfg.levels < 1 or cfg.level_size < 1 or cfg.sp_members < 1 or cfg.mep_members < 1:
        raise ConfigError("nestrl.levels, level_size, sp_members, mep_members: at least 1")
    if cfg.minibatches < 1 or cfg.num_envs % cfg.minibatches:
        raise ConfigError(f"nestrl.minibatches: must divide num_envs ({cfg.num_envs}), got "
                          f"{cfg.minibatches}")
    if cfg.eval_repeats < 2:
        raise ConfigError(f"nestrl.eval_repeats: at least 2 (adaptability over repeated episodes), "
                          f"got {cfg.eval_repeats}")
    if not 0 < cfg.shaped_anneal <= 1:
        raise ConfigError(f"nestrl.shaped_anneal: a fraction of training in (0, 1], got "
                          f"{cfg.shaped_anneal}")
    if cfg.eval_envs < 2 or cfg.eval_envs % 2:
        raise ConfigError(f"nestrl.eval_envs: even and at least 2 (both seats), got {cfg.eval_envs}")
    if cfg.updates % min(cfg.chunk_updates, cfg.updates):
        raise ConfigError(f"nestrl.updates: a multiple of chunk_updates ({cfg.chunk_updates}), "
                          f"got {cfg.updates}")
    if not cfg.partner_eps or any(not 0.0 <= e <= 1.0 for e in cfg.partner_eps):
        raise ConfigError(f"nestrl.partner_eps: probabilities in [0, 1], at least one, got "
                          f"{list(cfg.partner_eps)}")
    if round(cfg.scripted_share * cfg.num_envs) >= cfg.num_envs:
        raise ConfigError(f"nestrl.scripted_share: must leave at least one of num_envs "
                          f"({cfg.num_envs}) episodes to learned partners, got {cfg.scripted_share}")
    if any(len(b) != 2 for b in cfg.biases):
        raise ConfigError("nestrl.biases: pairs (onion weight, plate weight)")


def _kind(cfg: Config, kind: str) -> str:
    from repro26.nestrl.train import train_kinds

    if kind not in train_kinds(cfg):
        raise UsageError(f"--variant kind: '{kind}' is unknown; allowed: {', '.join(train_kinds(cfg))}")
    return kind


def _layout(cfg: Config, layout: str) -> str:
    if layout not in cfg.layouts:
        raise UsageError(f"--variant layout: '{layout}' is not configured; allowed: "
                         f"{', '.join(cfg.layouts)}")
    return layout


def partner_inputs(kind: str, levels: int) -> list[str]:
    """Training jobs whose agents are this kind's partners (file stems)."""
    if kind == "fcp":
        return ["level0"]
    if kind == "mep":
        return ["mep_pop"]
    if kind == "br":
        return ["level0", "fcp", "mep", *(f"level{k}" for k in range(1, levels + 1))]
    if kind.startswith("level") and kind != "level0":
        return [f"level{int(kind[5:]) - 1}"]
    return []


def heldout_pool(cfg: Config, agents: list):
    """The best response's partners, leading axes [seed, P]: for seed s every agent in
    ``agents`` (each with leading axis [seed]) of the other seeds, P = (S - 1) x len(agents)."""
    import jax
    import jax.numpy as jnp

    stacked = jax.tree.map(lambda *xs: jnp.stack(xs, 1), *agents)  # [S, types]
    n = len(cfg.seeds)
    others = jnp.asarray([[t for t in range(n) if t != s] for s in range(n)])  # [S, S-1]
    return jax.tree.map(lambda x: x[others].reshape(n, -1, *x.shape[2:]), stacked)


def partner_pool(cfg: Config, game, kind: str, run: Run):
    """The partners of ``kind``'s learners, leading axes [seed, P]: level k-1 for level k, the
    self-play members and their snapshots for FCP, the MEP population for MEP, and for the
    best response every learned type of the other seeds (member 0: the evaluated agents)."""
    import jax
    import jax.numpy as jnp

    from repro26.nestrl.train import load_agents

    paths = {stem: run.input(f"{stem}.npz") for stem in partner_inputs(kind, cfg.levels)}
    if kind == "fcp":
        snaps = load_agents(paths["level0"], cfg, game, prefix="snap")  # [K, S, M0]
        sp = jax.tree.map(lambda x: x[:, :, : cfg.sp_members], snaps)
        return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1).reshape(
            x.shape[1], -1, *x.shape[3:]), sp)
    if kind == "br":
        first = lambda stem: jax.tree.map(lambda x: x[:, 0], load_agents(paths[stem], cfg, game))
        return heldout_pool(cfg, [first(stem) for stem in paths])
    return load_agents(next(iter(paths.values())), cfg, game) if paths else None


@stage({"layout": str, "kind": str}, matches=("layout",))
def train_stage(run: Run) -> None:
    """Train one kind of agent on one layout, every seed at once -> agents (.npz) + curve (.csv)."""
    from repro26.nestrl import env, train

    cfg = run.cfg
    layout, kind = _layout(cfg, run.variant["layout"]), _kind(cfg, run.variant["kind"])
    game = env.game(layout, cfg.horizon)
    pool = partner_pool(cfg, game, kind, run)
    out = Path(run.out)
    agents, snaps, history = train.train(cfg, game, kind, pool, checkpoint=out.with_suffix(".ckpt"),
                                         progress=run.progress)
    io.write_table(out.with_suffix(".csv"), train.history_rows(cfg, game, kind, history), run.meta())
    train.save_agents(out, agents, snaps)


@stage({"layout": str}, matches=("layout",))
def evaluate_stage(run: Run) -> None:
    """Every ego with every partner on one layout -> ``pairs_<layout>.csv``."""
    import jax

    from repro26.nestrl import env, evaluate, train

    cfg = run.cfg
    layout = _layout(cfg, run.variant["layout"])
    game = env.game(layout, cfg.horizon)
    load = lambda stem: train.load_agents(run.input(f"{stem}.npz"), cfg, game)
    first = lambda a: jax.tree.map(lambda x: x[:, 0], a)  # member 0 of every seed
    trained = {"sp": first(load("level0")), "fcp": first(load("fcp")), "mep": first(load("mep")),
               "br": first(load("br"))}
    for k in range(1, cfg.levels + 1):
        trained[f"level{k}"] = first(load(f"level{k}"))
    rows = evaluate.evaluate(cfg, game, trained, jax.random.PRNGKey(2024))
    io.write_table(run.out, rows, run.meta())


STAGES = {
    "train": train_stage,
    "evaluate": evaluate_stage,
}
