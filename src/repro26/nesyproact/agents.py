"""The four agents, one episode each: random-valid-action, ReAct, ASI-like, NesyProAct.

Every agent sees only observation text and acts in text through the same
:class:`~repro26.nesyproact.env.WebEnv` under the same step budget (every environment action,
``wait`` and a verifier's look at ``My activity`` included, is a step). No agent is handed a
plan: ReAct, ASI and NesyProAct get the intent as their model read it
(:class:`~repro26.nesyproact.policy.Reading`) and the model composes the subgoals
(``Policy.compose``).

* ``random`` — a uniformly random valid action (click any element, type a task value into any
  textbox, back, stop): the trivial baseline.
* ``react`` — the policy composes a plan once and proposes every action from the observation
  and history.
* ``asi`` — ReAct plus skill induction (Wang et al., agent skill induction): after a successful
  episode (judged by the task's own check — generous to the baseline), the actions that changed
  the page become a skill for that template, with the task's parameters as slots; later tasks of
  the template run the skill as a macro (elements looked up by role and label, no model call,
  no check) and hand back to the policy at the plan step where the skill ends or breaks.
* ``nesyproact`` — the typed decision interface of :mod:`~repro26.nesyproact.schemas`: each
  subgoal the model composed is an action schema instance, and its pre- and post-conditions
  are compiled from the schema (:func:`~repro26.nesyproact.schemas.compile_checks`). A failed
  check triggers a grounding intervention: clear the dialog, re-prompt the policy with the
  failed predicates (re-locate), re-observe (``wait``), backtrack (``back``), re-plan (ask the
  model for a new plan when a pre-condition cannot be met on the page, and back up to where
  the new plan differs), or, for an effect observable only on ``My activity``, go and look
  (``verify_waits`` re-observations there) and repeat the action if it is not listed.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from repro26.nesyproact import schemas
from repro26.nesyproact.env import ACTIVITY_LINK, Action, Observation, Subgoal, Task, WebEnv
from repro26.nesyproact.policy import (LocalPolicy, Policy, Reading, react_instruction,
                                       subgoal_instruction)

AGENTS = ("random", "react", "asi", "nesyproact")

State = schemas.State


@dataclasses.dataclass(frozen=True)
class SkillStep:
    role: str
    label: str  # may hold {param} slots
    region: str
    value: str | None  # typed text (slots allowed) or None for a click
    believed: int  # plan step the source trajectory was on


class Episode:
    """Step counter around an environment: at most ``budget`` steps."""

    def __init__(self, env: WebEnv, budget: int):
        self.env, self.budget, self.steps = env, budget, 0
        self.text = env.observe()
        self.interventions: Counter = Counter()
        self.policy_calls = 0

    @property
    def over(self) -> bool:
        return self.env.done or self.steps >= self.budget

    def act(self, text: str, believed: int | None) -> str:
        self.steps += 1
        self.text = self.env.step(text, believed)
        return self.text


def step_budget(task: Task, factor: float, extra: int) -> int:
    return math.ceil(factor * len(task.plan)) + extra


# ----------------------------------------------------------------------------- random


def run_random(ep: Episode, reading: Reading, rng: np.random.Generator) -> None:
    values = list(reading.params.values()) + ["x"]
    while not ep.over:
        obs = Observation.parse(ep.text)
        options = [f"click [{e.id}]" for e in obs.elements if e.role in ("link", "button")]
        options += [f'type [{e.id}] "{v}"' for e in obs.elements if e.role == "textbox"
                    for v in values]
        options += ["back"] + [f'stop "{e.text}"' for e in obs.elements if e.role == "text"]
        options += ["stop"]
        ep.act(options[int(rng.integers(len(options)))], None)


# ----------------------------------------------------------------------------- ReAct / ASI


def _believed(policy: Policy) -> int | None:
    return getattr(policy, "cursor", None)


def run_react(ep: Episode, reading: Reading, policy: Policy,
              history: list[str] | None = None) -> list[tuple[str, str, str, int | None]]:
    """The policy composes a plan, then proposes, environment executes; returns the trajectory
    ``(action, observation before, observation after, believed plan step)``."""
    history = history or [react_instruction(reading.intent, policy.compose(reading))]
    trajectory = []
    while not ep.over:
        text = policy.propose(ep.text, history)
        ep.policy_calls += 1
        before, believed = ep.text, _believed(policy)
        ep.act(text, believed)
        history.append(f"ACTION: {text}\nOBSERVATION:\n{ep.text}")
        trajectory.append((text, before, ep.text, believed))
    return trajectory


def _slot(text: str, params: Mapping[str, str]) -> str:
    for name, value in sorted(params.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(value, "{" + name + "}")
    return text


def _fill_slots(text: str, params: Mapping[str, str]) -> str | None:
    names = re.findall(r"\{(\w+)\}", text)
    if any(n not in params for n in names):
        return None
    return text.format(**{n: params[n] for n in names})


def induce_skill(trajectory, params: Mapping[str, str]) -> tuple[SkillStep, ...]:
    """The actions of a successful trajectory that visibly changed the page (title, a field,
    a notice), dialog closes left out, with the task's parameter values as slots."""
    steps = []
    for text, before, after, believed in trajectory:
        action = Action.parse(text)
        if action.kind not in ("click", "type") or believed is None:
            continue
        b, a = Observation.parse(before), Observation.parse(after)
        el = b.by_id(action.target)
        if el is None or el.region == "dialog":
            continue
        changed = (a.title != b.title or a.notice != b.notice
                   or {(e.label, e.value) for e in a.elements if e.role == "textbox"}
                   != {(e.label, e.value) for e in b.elements if e.role == "textbox"})
        if changed:
            value = None if action.kind == "click" else _slot(action.text or "", params)
            steps.append(SkillStep(el.role, _slot(el.label, params), el.region, value, believed))
    return tuple(steps)


def run_asi(ep: Episode, reading: Reading, policy: Policy,
            skills: dict[str, tuple[SkillStep, ...]]) -> None:
    """Run the template's skill as a macro when there is one, then the policy (ReAct on the
    plan it composed); induce a skill from a successful episode of a template that has none."""
    history = [react_instruction(reading.intent, policy.compose(reading))]
    resume = 0
    for step in skills.get(reading.template, ()):
        if ep.over:
            break
        label = _fill_slots(step.label, reading.params)
        value = None if step.value is None else _fill_slots(step.value, reading.params)
        obs = Observation.parse(ep.text)
        matches = obs.find(step.role, label, step.region) if label else []
        if obs.dialog or not matches or (step.value is not None and value is None):
            break  # a covered or missing element raises in a skill program
        target = matches[0].id  # the first element with that role and label
        text = f"click [{target}]" if value is None else f'type [{target}] "{value}"'
        ep.act(text, step.believed)
        history.append(f"ACTION: {text}\nOBSERVATION:\n{ep.text}")
        resume = step.believed + 1
    if reading.template in skills and isinstance(policy, LocalPolicy):
        policy.resume_at(resume)
    trajectory = run_react(ep, reading, policy, history)
    if reading.template not in skills and ep.env.success():
        skills[reading.template] = induce_skill(trajectory, reading.params)


# ----------------------------------------------------------------------------- NesyProAct


def _activity_id(state: State) -> int | None:
    hit = state.find(ACTIVITY_LINK.role, ACTIVITY_LINK.label, ACTIVITY_LINK.region)
    return hit[0].id if hit else None


def _first_difference(old: Sequence[Subgoal], new: Sequence[Subgoal]) -> int:
    return next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))


def verify_remote(ep: Episode, checks: Sequence[schemas.Check], action: Action,
                  waits: int, come_back: bool) -> bool | None:
    """Look at ``My activity`` for the effects observable only there: navigate to it, check,
    re-observe up to ``waits`` times while a check fails, and come back (unless ``come_back``
    is false and the checks passed: nothing is left to do on the page). True/False: the
    effects were/were not listed; None: the budget did not allow the look (unverified)."""
    state = State.parse(ep.text)
    target = _activity_id(state)
    if target is None or ep.budget - ep.steps < 2 + waits:
        return None
    ep.act(f"click [{target}]", None)
    seen = State.parse(ep.text)
    ok = not schemas.failed(checks, seen, action, "activity")
    for _ in range(waits):
        if ok or ep.over:
            break
        ep.interventions["reobserve"] += 1
        ep.act("wait", None)
        ok = not schemas.failed(checks, State.parse(ep.text), action, "activity")
    if not ep.over and seen.title != state.title and (come_back or not ok):
        ep.act("back", None)
    return ok


def run_nesyproact(ep: Episode, reading: Reading, policy: Policy, max_reprompts: int,
                   max_replans: int, verify_waits: int) -> None:
    """Compose, check, act, verify (module docstring); every check comes from the schemas."""
    plan = policy.compose(reading)
    c, replans, missing, back_to = 0, 0, 0, False
    while not ep.over:
        state = State.parse(ep.text)
        if state.dialog:  # pre-condition no_dialog: clear it first
            ep.interventions["clear_dialog"] += 1
            ep.act(f"click [{state.find('button', 'Close', 'dialog')[0].id}]", c)
            continue
        if c >= len(plan):
            ep.act("stop", c)
            break
        sg = plan[c]
        if state.title != sg.page_title:
            on_page = [j for j, s in enumerate(plan) if s.page_title == state.title and j > c]
            if on_page and not back_to:  # re-plan forward: resume at the subgoal of this page
                ep.interventions["replan"] += 1
                c = on_page[0]
            else:
                ep.interventions["backtrack"] += 1
                ep.act("back", c)
            continue
        back_to = False
        pre, post = schemas.compile_checks(sg)
        nxt = plan[c + 1] if c + 1 < len(plan) else None
        feedback, text, failed = "", "", ["not proposed"]
        for _ in range(1 + max_reprompts):
            text = policy.propose(ep.text, [subgoal_instruction(reading.intent, sg, nxt,
                                                                feedback)])
            ep.policy_calls += 1
            failed = schemas.failed(pre, state, Action.parse(text))
            if not failed:
                break
            ep.interventions["relocate"] += 1
            feedback = "failed pre-conditions: " + ", ".join(failed)
        if failed:
            cannot = any(n.startswith("shows") for n in failed)
            missing += cannot
            if cannot and missing > 1 and replans < max_replans:
                # the page does not offer what the subgoal needs: ask for a new plan
                ep.interventions["replan"] += 1
                replans, missing = replans + 1, 0
                new = policy.compose(reading, "not on page: " + ", ".join(failed))
                c, plan, back_to = _first_difference(plan, new), new, True
                continue
            ep.interventions["reobserve"] += 1
            ep.act("wait", c)
            continue
        missing = 0
        action = Action.parse(text)
        ep.act(text, c)
        if ep.env.done:
            break
        after = State.parse(ep.text)
        if schemas.failed(post, after, action, "here") and not ep.over:
            ep.interventions["reobserve"] += 1
            ep.act("wait", c)
            after = State.parse(ep.text)
        if schemas.failed(post, after, action, "here"):
            if after.title != state.title and not ep.over:  # went somewhere else: backtrack
                ep.interventions["backtrack"] += 1
                ep.act("back", c)
            continue  # else: the page did not change as it should: the subgoal is tried again
        if any(ch.where == "activity" for ch in post) \
                and verify_remote(ep, post, action, verify_waits, c + 1 < len(plan)) is False:
            ep.interventions["repeat"] += 1
            continue  # not listed: the action is taken again
        c += 1


# ----------------------------------------------------------------------------- metrics


def premise_metrics(log: Sequence[dict]) -> tuple[float, float]:
    """(fraction of acting steps taken on an invalidated premise, error-propagation depth =
    mean length of the runs of consecutive such steps; 0 when there is none). NaN for an agent
    without a plan."""
    flags = [not e["premise_valid"] for e in log if e["acting"] and e["believed"] is not None]
    if not flags:
        return math.nan, math.nan
    runs, n = [], 0
    for f in flags:
        if f:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    if n:
        runs.append(n)
    return float(np.mean(flags)), float(np.mean(runs)) if runs else 0.0
