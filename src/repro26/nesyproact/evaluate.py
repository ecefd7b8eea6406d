"""One job = one policy profile and one seed: every domain, task, agent and fault scale.

Randomness: tasks from ``(seed, domain, task)`` (same tasks for every agent, policy and fault
scale); the environment's faults from ``(seed, domain, task, fault scale)`` and the model's
misreading of a task from ``(seed, policy, domain, task)`` (the same for every agent: common random
numbers); the policy's step and plan errors from ``(seed, policy, domain, agent, scale)``.
ASI's skill library is built over each domain's task stream, per fault scale.
"""

from __future__ import annotations

import numpy as np

from repro26.nesyproact import agents, domains
from repro26.nesyproact.env import FAULTS, WebEnv
from repro26.nesyproact.policy import Reading, misread_task

EPISODE_COLUMNS = ("domain", "template", "task", "agent", "policy", "seed", "fault_scale",
                   "success", "steps", "budget", "premise_invalid", "error_depth",
                   "policy_calls", "interventions", *(f"n_{f}" for f in FAULTS))


def episode(task, agent: str, policy, faults, env_rng, agent_rng, cfg, skills,
            reading=None) -> dict:
    """Run one episode of ``task``; the agent works from ``reading`` (the intent as the model
    read it, default the true one); the environment and its check use ``task``. Returns the
    metrics row (without the identifying columns)."""
    env = WebEnv(task, faults, env_rng)
    reading = reading or Reading.of(task)
    ep = agents.Episode(env, agents.step_budget(task, cfg.budget_factor, cfg.budget_extra))
    if agent == "random":
        agents.run_random(ep, reading, agent_rng)
    elif agent == "react":
        agents.run_react(ep, reading, policy)
    elif agent == "asi":
        agents.run_asi(ep, reading, policy, skills)
    else:
        agents.run_nesyproact(ep, reading, policy, cfg.max_reprompts, cfg.max_replans,
                              cfg.verify_waits)
    invalid, depth = agents.premise_metrics(env.log)
    fault_counts = {f"n_{f}": sum(f in e["faults"] for e in env.log) for f in FAULTS}
    fault_counts["n_ambiguous"] = sum(e.key.endswith(".decoy") for p in task.site.pages.values()
                                      for e in p.elements)
    return {"success": int(env.success()), "steps": ep.steps, "budget": ep.budget,
            "premise_invalid": invalid, "error_depth": depth, "policy_calls": ep.policy_calls,
            "interventions": sum(ep.interventions.values()), **fault_counts}


def make_policy(cfg, policy_name: str, rng: np.random.Generator):
    """The local policy of profile ``policy_name``, or (name ``endpoint``) the configured
    OpenAI-compatible endpoint, its key read from $OPENAI_API_KEY."""
    import os

    from repro26.nesyproact.policy import LocalPolicy, OpenAIChatPolicy

    if policy_name == "endpoint":
        return OpenAIChatPolicy(cfg.endpoint, cfg.endpoint_model,
                                os.environ.get("OPENAI_API_KEY", ""))
    return LocalPolicy(cfg.policies[policy_name], rng)


def run_job(cfg, policy_name: str, seed: int, progress=None) -> list[dict]:
    """Every (fault scale, domain, agent, task) episode of one policy profile and seed."""
    rows = []
    p_index = sorted([*cfg.policies, "endpoint"]).index(policy_name)
    for s_index, scale in enumerate(cfg.fault_scales):
        faults = cfg.faults.scaled(scale)
        for d_index, domain in enumerate(cfg.domains):
            tasks = domains.task_suite(domain, cfg.tasks_per_domain, seed, faults.ambiguous,
                                       cfg.n_distractors)
            for a_index, agent in enumerate(cfg.agents):
                key = [seed, p_index, domains.DOMAINS.index(domain), a_index, s_index]
                policy = make_policy(cfg, policy_name, np.random.default_rng([*key, 1]))
                agent_rng = np.random.default_rng([*key, 2])
                skills: dict = {}
                for task in tasks:
                    env_rng = np.random.default_rng([seed, domains.DOMAINS.index(domain),
                                                     task.index, s_index, 3])
                    rate = cfg.policies[policy_name].misread if policy_name in cfg.policies \
                        else 0.0
                    reading = misread_task(task, np.random.default_rng(
                        [seed, p_index, domains.DOMAINS.index(domain), task.index, 4]), rate)
                    row = episode(task, agent, policy, faults, env_rng, agent_rng, cfg, skills,
                                  reading)
                    row["misread"] = int(reading.params != task.params)
                    rows.append({"domain": domain, "template": task.template, "task": task.index,
                                 "agent": agent, "policy": policy_name, "seed": seed,
                                 "fault_scale": float(scale), **row})
            if progress:
                progress(f"scale {scale} {domain}")
    return rows


SUMMARY_VALUES = ("success", "steps", "budget", "premise_invalid", "error_depth",
                  "policy_calls", "interventions", "misread")


def summarise(rows: list[dict]) -> list[dict]:
    """Per (domain, agent, policy, seed, fault scale): the mean of each metric over tasks
    (``nan`` metrics — the random agent's premise — averaged as nan), plus ``domain = all``."""
    cols = {k: np.asarray([r[k] for r in rows]) for k in rows[0]}
    out = []
    keys = ("agent", "policy", "seed", "fault_scale")
    combos = sorted({tuple(r[k] for k in keys) for r in rows}, key=str)
    for combo in combos:
        mask = np.ones(len(rows), bool)
        for k, v in zip(keys, combo):
            mask &= cols[k] == v
        for domain in [*dict.fromkeys(cols["domain"][mask].tolist()), "all"]:
            m = mask if domain == "all" else mask & (cols["domain"] == domain)
            row = {"domain": domain, **dict(zip(keys, combo)), "n_tasks": int(m.sum())}
            for v in SUMMARY_VALUES:
                x = np.asarray(cols[v][m], float)
                row[v] = float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")
            out.append(row)
    return out
