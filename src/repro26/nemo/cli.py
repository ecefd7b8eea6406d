"""Stages of ``repro26 nemo <stage>`` and the method's typed config.

data (evaluation personas, arousal curves) -> train (one job per trained method, all seeds
vmapped) -> evaluate (one job per method, every Sim2Sim setting) -> gather (tables/returns.csv,
tables/learning.csv); the figures and claims stages come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import ConfigError, Count, NonNegative, Positive, UsageError
from repro26.core.method import stage
from repro26.nemo.names import PERSONA_FIELDS, SETTINGS, STRATEGIES

# the same names as repro26.nemo.train.TRAINED and repro26.nemo.evaluate.PLANNERS (kept literal
# here so that the CLI does not import JAX to list its variants; a test checks they agree)
TRAINED = ("nemo", "nemo_one_step", "nemo_plain", "emotion_only", "fixed_75", "fixed_50",
           "fixed_25", "cognition_only")
PLANNERS = ("planner_emo", "planner_cog", "planner_need")
METHODS = (*TRAINED, "random", "rule_based", *PLANNERS)


@dataclasses.dataclass(frozen=True)
class PersonaValues:
    """One persona's parameters (the representative personas of the arousal-curve figure)."""

    arousal_peak: float
    arousal_width: float
    affective_gain: float
    deliberative_gain: float
    reactivity: float
    baseline_distress: float


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    iterations: Count
    users_per_batch: Count
    epochs: Count
    learning_rate: Positive
    clip_eps: Positive
    entropy_coef: NonNegative
    width: Count
    lookahead: Count  # H: turns of forward simulation per credit estimate
    chunk_size: Count


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    eval_users: Count
    ppo: PPOConfig
    # (empathic load e_k, informational load g_k) per ESConv strategy: stated priors (ESConv's
    # annotated dialogues are not in an installed package, so nothing is fitted)
    strategy_effects: dict[str, tuple[float, float]]
    # persona distributions: "train" (also in-distribution evaluation) and "shifted" (Sim2Sim);
    # each field uniform on [lo, hi]
    personas: dict[str, dict[str, tuple[float, float]]]
    curve_personas: dict[str, PersonaValues]
    horizon: Count = 10
    obs_noise: NonNegative = 0.1
    process_noise: NonNegative = 0.02
    reappraisal: NonNegative = 0.05
    balance_temperature: Positive = 0.1
    planner_beam: Count = 64  # beam width of the ideal rows' planner (repro26.nemo.solvers)
    alt_family: Literal["logit"] = "logit"

    @property
    def strategy_order(self) -> tuple[str, ...]:
        return STRATEGIES


def check(cfg: Config) -> None:
    """Consistency the types cannot state; one line naming the field."""
    if set(cfg.strategy_effects) != set(STRATEGIES):
        raise ConfigError(f"nemo.strategy_effects: give exactly the ESConv strategies "
                          f"{', '.join(STRATEGIES)}")
    for name, (e, g) in cfg.strategy_effects.items():
        if e < 0 or g < 0 or e + g <= 0:
            raise ConfigError(f"nemo.strategy_effects.{name}: loads must be >= 0, not both 0")
    if set(cfg.personas) != {"train", "shifted"}:
        raise ConfigError("nemo.personas: give exactly the distributions train and shifted")
    for dist, ranges in cfg.personas.items():
        if set(ranges) != set(PERSONA_FIELDS):
            raise ConfigError(f"nemo.personas.{dist}: give exactly {', '.join(PERSONA_FIELDS)}")
        for name, (lo, hi) in ranges.items():
            if not 0 <= lo <= hi:
                raise ConfigError(f"nemo.personas.{dist}.{name}: need 0 <= lo <= hi, got "
                                  f"[{lo}, {hi}]")
        if ranges["arousal_width"][0] <= 0:
            raise ConfigError(f"nemo.personas.{dist}.arousal_width: must be > 0")
    if cfg.planner_beam < 1:
        raise ConfigError(f"nemo.planner_beam: must be >= 1, got {cfg.planner_beam}")
    p = cfg.ppo
    if min(p.iterations, p.users_per_batch, p.epochs, p.width, p.lookahead, p.chunk_size) < 1:
        raise ConfigError("nemo.ppo: iterations, users_per_batch, epochs, width, lookahead and "
                          "chunk_size must be positive")
    if len(cfg.seeds) < 2 or cfg.eval_users < 1 or cfg.horizon < 1:
        raise ConfigError("nemo: need at least 2 seeds, eval_users >= 1 and horizon >= 1")


def _persona_arrays(personas) -> dict:
    return {f"{setting}.{field}": getattr(p, field)
            for setting, p in personas.items() for field in PERSONA_FIELDS}


def _load_personas(path: Path) -> dict:
    import jax.numpy as jnp

    from repro26.nemo.simulator import Persona

    arrays = io.read_npz(path)
    try:
        return {s: Persona(**{f: jnp.asarray(arrays[f"{s}.{f}"]) for f in PERSONA_FIELDS})
                for s in SETTINGS}
    except KeyError as err:
        raise UsageError(f"--input {path}: no array {err}; is it the data stage's personas.npz?")


@stage(reads=("eval_users", "personas", "curve_personas", "strategy_effects", "obs_noise",
              "process_noise", "reappraisal", "balance_temperature", "horizon", "alt_family"))
def data_stage(run: Run) -> None:
    """Evaluation personas of every setting (personas.npz) and the arousal curves (csv)."""
    from repro26.nemo import evaluate

    out = Path(run.out)
    io.write_npz(out / "personas.npz", **_persona_arrays(evaluate.eval_personas(run.cfg)))
    io.write_table(out / "arousal_curves.csv", evaluate.arousal_curve_rows(run.cfg), run.meta())


@stage({"method": TRAINED})
def train_stage(run: Run) -> None:
    """Multi-objective PPO of one method, every seed vmapped: policy.ckpt and learning.csv."""
    from repro26.nemo import evaluate, train

    cfg, method, out = run.cfg, run.variant["method"], Path(run.out)
    ranges = cfg.personas["train"]
    states, history = train.train_method(
        evaluate.make_env(cfg, "mindflow"), ranges, cfg.ppo, method, cfg.seeds,
        checkpoint=out / "train.ckpt", progress=run.progress)
    io.save_checkpoint(out / "policy.ckpt", states.model, cfg.ppo.iterations)
    rows = train.learning_rows(method, cfg.seeds, history,
                               train.parameter_count(states.model, len(cfg.seeds)))
    io.write_table(out / "learning.csv", rows, run.meta())


@stage({"method": METHODS}, matches=("method",))
def evaluate_stage(run: Run) -> None:
    """One method on the fixed evaluation users of every setting, every seed: a table."""
    from repro26.nemo import evaluate, train

    method = run.variant["method"]
    personas = _load_personas(run.input("personas.npz"))
    policies = None  # the rule-based schedule and the planners
    if method == "random":
        from repro26.nemo.model import uniform

        policies = uniform(train.init_states(run.cfg.seeds, run.cfg.ppo).model)
    elif method in TRAINED:
        path = run.input("policy.ckpt")
        like = train.init_states(run.cfg.seeds, run.cfg.ppo).model
        policies = io.load_model(path, like)
    rows = evaluate.evaluate_method(run.cfg, method, personas, policies)
    io.write_table(run.out, rows, run.meta())


@stage()
def gather_stage(run: Run) -> None:
    """Concatenate the evaluation tables (tables/returns.csv) and learning curves
    (tables/learning.csv) into ``--out``."""
    returns, learning = [], []
    for path in run.inputs:
        table = io.read_table(path)
        rows = [dict(zip(table, vals)) for vals in zip(*table.values())]
        (learning if path.name == "learning.csv" else returns).extend(rows)
    if not returns:
        raise UsageError("--input: the gather stage needs the evaluation tables")
    out = Path(run.out)
    io.write_table(out / "returns.csv", returns, run.meta())
    io.write_table(out / "learning.csv", learning, run.meta())


STAGES = {
    "data": data_stage,
    "train": train_stage,
    "evaluate": evaluate_stage,
    "gather": gather_stage,
}
