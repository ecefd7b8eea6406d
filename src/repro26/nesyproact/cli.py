"""Stages of ``repro26 nesyproact <stage>`` and the method's typed config.

data (the task suites) -> run (one job per policy profile and seed: every domain, agent and
fault scale) -> evaluate (episodes.csv, summary.csv); figures and claims come from core.
Plain Python and numpy: the simulated web is text, with nothing for JAX to do (see ``env``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (
    ConfigError, Count, NonNegative, NonNegativeInt, Positive, UsageError,
)
from repro26.core.method import stage
from repro26.nesyproact.env import FaultRates
from repro26.nesyproact.policy import PolicyProfile


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    tasks_per_domain: Count
    fault_scales: tuple[NonNegative, ...]  # multipliers of `faults` (1.0: the nominal rates)
    faults: FaultRates
    policies: dict[str, PolicyProfile]
    domains: tuple[str, ...] = ("shop", "shop_admin", "forum", "code", "map", "wiki")
    agents: tuple[str, ...] = ("random", "react", "asi", "nesyproact")
    n_distractors: NonNegativeInt = 4
    budget_factor: Positive = 2.0  # step budget = ceil(budget_factor * plan length) + budget_extra
    budget_extra: NonNegativeInt = 3
    max_reprompts: NonNegativeInt = 2  # NesyProAct: re-prompts with the failed pre-conditions per step
    max_replans: NonNegativeInt = 2  # NesyProAct: new plans asked for when the page cannot meet a subgoal
    verify_waits: NonNegativeInt = 1  # NesyProAct: re-observations of My activity before a miss is final
    ideal_policy: str = "ideal"  # the error-free profile: the ideal row of every agent
    claim_fault_scale: NonNegative = 1.0  # the scale of success_by_domain (claims: the whole sweep)
    claim_policies: tuple[str, str] = ("strong", "weak")  # (strong model, small model)
    endpoint: str = ""  # an OpenAI-compatible base URL; empty: local policies only
    endpoint_model: str = ""


def check(cfg: Config) -> None:
    from repro26.nesyproact.agents import AGENTS
    from repro26.nesyproact.domains import DOMAINS

    if bad := [d for d in cfg.domains if d not in DOMAINS]:
        raise ConfigError(f"nesyproact.domains: unknown {bad}; allowed: {', '.join(DOMAINS)}")
    if bad := [a for a in cfg.agents if a not in AGENTS]:
        raise ConfigError(f"nesyproact.agents: unknown {bad}; allowed: {', '.join(AGENTS)}")
    if cfg.tasks_per_domain < 1:
        raise ConfigError(f"nesyproact.tasks_per_domain: at least 1, got {cfg.tasks_per_domain}")
    if cfg.claim_fault_scale not in cfg.fault_scales:
        raise ConfigError(f"nesyproact.claim_fault_scale: {cfg.claim_fault_scale} is not in "
                          f"fault_scales {list(cfg.fault_scales)}")
    if bad := [p for p in cfg.claim_policies if p not in cfg.policies]:
        raise ConfigError(f"nesyproact.claim_policies: {bad} not among policies "
                          f"{', '.join(cfg.policies)}")
    rates = [*dataclasses.asdict(cfg.faults).values(),
             *(v for p in cfg.policies.values() for v in dataclasses.asdict(p).values())]
    if any(not 0 <= r <= 1 for r in rates) or any(s < 0 for s in cfg.fault_scales):
        raise ConfigError("nesyproact.faults / policies: rates must lie in [0, 1] and "
                          "fault_scales be non-negative")
    if cfg.budget_factor < 1 or cfg.budget_extra < 0 or min(cfg.max_reprompts, cfg.max_replans,
                                                             cfg.verify_waits) < 0:
        raise ConfigError("nesyproact.budget_factor >= 1, budget_extra >= 0, max_reprompts, "
                          "max_replans and verify_waits >= 0")
    if cfg.ideal_policy not in cfg.policies or any(
            dataclasses.asdict(cfg.policies[cfg.ideal_policy]).values()):
        raise ConfigError(f"nesyproact.ideal_policy: '{cfg.ideal_policy}' must name a policy "
                          "profile with every error rate 0")


@stage(reads=("seeds", "domains", "tasks_per_domain", "faults", "n_distractors"))
def data_stage(run: Run) -> None:
    """The task suites: per seed and domain, each task's template, intent and plan length."""
    from repro26.nesyproact import domains

    cfg = run.cfg
    rows = []
    for seed in cfg.seeds:
        for domain in cfg.domains:
            for t in domains.task_suite(domain, cfg.tasks_per_domain, seed,
                                        cfg.faults.ambiguous, cfg.n_distractors):
                rows.append({"seed": seed, "domain": domain, "task": t.index,
                             "template": t.template, "intent": t.intent,
                             "plan_length": len(t.plan), "pages": len(t.site.pages),
                             "answer_task": int(t.expected_answer is not None)})
    io.write_table(run.out, rows, run.meta())


@stage({"policy": str}, seed=True)
def run_stage(run: Run) -> None:
    """Every domain, agent and fault scale with one policy profile and seed (episode rows)."""
    from repro26.nesyproact import evaluate

    name = run.variant["policy"]
    allowed = [*run.cfg.policies, *(["endpoint"] if run.cfg.endpoint else [])]
    if name not in allowed:
        raise UsageError(f"--variant policy: '{name}' is unknown; allowed: {', '.join(allowed)}"
                         " (endpoint only when the config sets one)")
    rows = evaluate.run_job(run.cfg, name, run.seed,
                            progress=print if run.progress else None)
    io.write_table(run.out, rows, run.meta())


@stage()
def evaluate_stage(run: Run) -> None:
    """Concatenate the run tables into episodes.csv and summary.csv (means over tasks).

    summary.csv: one row per domain, agent, policy, seed and fault scale; domain ``all``
    pools the domains."""
    from repro26.nesyproact import evaluate

    rows = []
    for path in run.inputs:
        table = io.read_table(path)
        rows.extend(dict(zip(table, vals)) for vals in zip(*table.values()))
    if not rows:
        raise UsageError("--input: the evaluate stage needs the run tables")
    out = Path(run.out)
    io.write_table(out / "episodes.csv", rows, run.meta())
    io.write_table(out / "summary.csv", evaluate.summarise(rows), run.meta())


STAGES = {"data": data_stage, "run": run_stage, "evaluate": evaluate_stage}
