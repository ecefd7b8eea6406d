"""The four agents, one episode each: random-valid-action, ReAct, ASI-like, NesyProAct.

Every agent sees only observation text and acts in text through the same
:class:`~repro26.nesyproact.env.WebEnv` under the same step budget (every environment action,
``wait`` included, is a step). ReAct, ASI and NesyProAct are told the task's plan (the same
subgoals for all three: the comparison is about executing a plan under partial observability,
not about finding one).

* ``random`` — a uniformly random valid action (click any element, type a task value into any
  textbox, back, stop): the trivial baseline.
* ``react`` — the policy proposes every action from the observation and history.
* ``asi`` — ReAct plus skill induction (Wang et al., agent skill induction): after a successful
  episode (judged by the task's own check — generous to the baseline), the actions that changed
  the page become a skill for that template, with the task's parameters as slots; later tasks of
  the template run the skill as a macro (elements looked up by role and label, no model call,
  no check) and hand back to the policy at the plan step where the skill ends or breaks.
* ``nesyproact`` — a typed decision interface (:class:`~repro26.nesyproact.env.Subgoal`,
  ``State`` = the parsed observation, :class:`~repro26.nesyproact.env.Action`,
  :class:`Transition`). For each step it compiles pre-conditions from the action's type and the
  subgoal (:func:`preconditions`: on the subgoal's page, no dialog, the target exists with the
  subgoal's role, label and region, the typed value / read answer is the subgoal's) and
  post-conditions (:func:`postconditions`: the expected page title, field value or one more
  record). A failed check triggers a grounding intervention: clear the dialog, re-prompt the
  policy with the failed predicates (re-locate), re-observe (``wait``), backtrack (``back``) or
  re-plan (jump to the subgoal of the page it is on).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from repro26.nesyproact.env import Action, Observation, Subgoal, Task, WebEnv
from repro26.nesyproact.policy import (LocalPolicy, Policy, react_instruction,
                                       subgoal_instruction)

AGENTS = ("random", "react", "asi", "nesyproact")

State = Observation  # what the agent can know about the state: the parsed observation


@dataclasses.dataclass(frozen=True)
class Transition:
    before: State
    action: Action
    after: State


@dataclasses.dataclass(frozen=True)
class Predicate:
    """A named check on a state, compiled for one step."""

    name: str
    holds: Callable[[State], bool]


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


def run_random(ep: Episode, task: Task, rng: np.random.Generator) -> None:
    values = list(task.params.values()) + ["x"]
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


def run_react(ep: Episode, task: Task, policy: Policy,
              history: list[str] | None = None) -> list[tuple[str, str, str, int | None]]:
    """Policy proposes, environment executes; returns the trajectory
    ``(action, observation before, observation after, believed plan step)``."""
    history = history or [react_instruction(task.intent, task.plan)]
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
    a record count), dialog closes left out, with the task's parameter values as slots."""
    steps = []
    for text, before, after, believed in trajectory:
        action = Action.parse(text)
        if action.kind not in ("click", "type") or believed is None:
            continue
        b, a = Observation.parse(before), Observation.parse(after)
        el = b.by_id(action.target)
        if el is None or el.region == "dialog":
            continue
        changed = (a.title != b.title or a.status != b.status
                   or {(e.label, e.value) for e in a.elements if e.role == "textbox"}
                   != {(e.label, e.value) for e in b.elements if e.role == "textbox"})
        if changed:
            value = None if action.kind == "click" else _slot(action.text or "", params)
            steps.append(SkillStep(el.role, _slot(el.label, params), el.region, value, believed))
    return tuple(steps)


def run_asi(ep: Episode, task: Task, policy: Policy,
            skills: dict[str, tuple[SkillStep, ...]]) -> None:
    """Run the template's skill as a macro when there is one, then the policy (ReAct); induce
    a skill from a successful episode of a template that has none."""
    history = [react_instruction(task.intent, task.plan)]
    resume = 0
    for step in skills.get(task.template, ()):
        if ep.over:
            break
        label = _fill_slots(step.label, task.params)
        value = None if step.value is None else _fill_slots(step.value, task.params)
        obs = Observation.parse(ep.text)
        matches = obs.find(step.role, label, step.region) if label else []
        if obs.dialog or not matches or (step.value is not None and value is None):
            break  # a covered or missing element raises in a skill program
        target = matches[0].id  # the first element with that role and label
        text = f"click [{target}]" if value is None else f'type [{target}] "{value}"'
        ep.act(text, step.believed)
        history.append(f"ACTION: {text}\nOBSERVATION:\n{ep.text}")
        resume = step.believed + 1
    if task.template in skills and isinstance(policy, LocalPolicy):
        policy.resume_at(resume)
    trajectory = run_react(ep, task, policy, history)
    if task.template not in skills and ep.env.success():
        skills[task.template] = induce_skill(trajectory, task.params)


# ----------------------------------------------------------------------------- NesyProAct


def preconditions(sg: Subgoal, action: Action) -> list[Predicate]:
    """Executability of ``action`` for ``sg``, compiled from the action's type and the subgoal."""
    wanted = {"nav": "click", "commit": "click", "fill": "type", "answer": "stop"}[sg.kind]
    checks = [Predicate("on_subgoal_page", lambda s: s.title == sg.page_title),
              Predicate("no_dialog", lambda s: not s.dialog),
              Predicate(f"action_is_{wanted}", lambda s: action.kind == wanted)]
    if action.kind in ("click", "type"):
        def target(s):
            return s.by_id(action.target)
        checks += [
            Predicate("target_exists", lambda s: target(s) is not None),
            Predicate("target_role", lambda s: target(s) is not None
                      and target(s).role == sg.role),
            Predicate("target_label", lambda s: target(s) is not None
                      and target(s).label == sg.label),
            Predicate("target_region", lambda s: target(s) is not None
                      and target(s).region == sg.region),
        ]
    if action.kind == "type":
        checks.append(Predicate("typed_value", lambda s: action.text == sg.value))
    if action.kind == "stop" and sg.kind == "answer":
        checks.append(Predicate("answer_read_from_page", lambda s: any(
            e.text == action.text for e in s.find("text", sg.label, sg.region))))
    return checks


def verify(sg: Subgoal, transition: Transition) -> list[str]:
    """Names of the post-conditions of ``sg`` that the transition's outcome violates."""
    return _failed(postconditions(sg, transition.before), transition.after)


def postconditions(sg: Subgoal, before: State) -> list[Predicate]:
    """Progress of ``sg``: the expected page, field value or one more record than before."""
    if sg.kind == "nav":
        return [Predicate("reached_page", lambda s: s.title == sg.expect)]
    if sg.kind == "fill":
        return [Predicate("field_value", lambda s: any(
            e.value == sg.value for e in s.find("textbox", sg.label, sg.region)))]
    if sg.kind == "commit":
        n = before.status.get(sg.expect, 0)
        return [Predicate("record_added", lambda s: s.status.get(sg.expect, 0) == n + 1)]
    return []


def _failed(predicates: Sequence[Predicate], state: State) -> list[str]:
    return [p.name for p in predicates if not p.holds(state)]


def run_nesyproact(ep: Episode, task: Task, policy: Policy, max_reprompts: int) -> None:
    plan = task.plan
    c = 0
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
            on_page = [j for j, s in enumerate(plan) if s.page_title == state.title]
            if on_page:  # re-plan: resume at the first subgoal of the page it is on
                ep.interventions["replan"] += 1
                c = on_page[0]
            else:
                ep.interventions["backtrack"] += 1
                ep.act("back", c)
            continue
        nxt = plan[c + 1] if c + 1 < len(plan) else None
        feedback, text, failed = "", "", ["not proposed"]
        for _ in range(1 + max_reprompts):
            text = policy.propose(ep.text, [subgoal_instruction(task.intent, sg, nxt, feedback)])
            ep.policy_calls += 1
            failed = _failed(preconditions(sg, Action.parse(text)), state)
            if not failed:
                break
            ep.interventions["relocate"] += 1
            feedback = "failed pre-conditions: " + ", ".join(failed)
        if failed:
            ep.interventions["reobserve"] += 1
            ep.act("wait", c)
            continue
        action = Action.parse(text)
        ep.act(text, c)
        if ep.env.done:
            break
        if not verify(sg, Transition(state, action, State.parse(ep.text))):
            c += 1
            continue
        ep.interventions["reobserve"] += 1
        if ep.over:
            break
        ep.act("wait", c)
        after = State.parse(ep.text)
        if not verify(sg, Transition(state, action, after)):
            c += 1
        elif after.title != state.title:  # went somewhere else: backtrack
            ep.interventions["backtrack"] += 1
            if not ep.over:
                ep.act("back", c)
        # else: the page did not change as it should: the subgoal is tried again


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
