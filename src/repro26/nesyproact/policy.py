"""The language model behind every agent: ``Policy.compose(reading) -> subgoals`` (the model
composes its plan from the intent as it read it, :class:`Reading`; no agent is handed a plan)
and ``Policy.propose(observation, history) -> action``.

``history[0]`` is the instruction (task, action grammar, and either the whole ``PLAN`` the
model composed — the ReAct-style prompt — or one ``SUBGOAL`` with the ``NEXT`` one and
``FEEDBACK`` from a failed check — NesyProAct's typed prompt); later entries are
``ACTION: ...`` / ``OBSERVATION: ...``.

* :class:`LocalPolicy` — a stochastic stand-in for a model of tunable competence. It reads the
  observation text and the instruction only, and errs at the rates of its
  :class:`PolicyProfile`: ``misground`` (it assumes its previous action took effect, or
  overlooks a dialog, without reading the observation), ``hallucinate`` (it acts on an element
  id that is not on the page), ``skip`` (it jumps over a plan step). Among several elements with
  the subgoal's label it picks one at random unless feedback names the region. Per task it
  may also misread one parameter of the intent (``misread``, :func:`misread_task`: an error
  in the plan itself, which no step-level check can catch), and each plan it composes may
  leave out one fill step (``misplan``: a search query or a form field it forgets).
* :class:`OpenAIChatPolicy` — an OpenAI-compatible ``/chat/completions`` client in the standard
  library (urllib), for a real model. Nothing calls it unless a config names an endpoint.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from repro26.core.config import Probability
from repro26.nesyproact.env import ACTION_GRAMMAR, Action, Observation, Subgoal, Task


class Policy(Protocol):
    def compose(self, reading: "Reading", feedback: str = "") -> tuple[Subgoal, ...]: ...

    def propose(self, observation: str, history: Sequence[str]) -> str: ...


@dataclasses.dataclass(frozen=True)
class PolicyProfile:
    """Per-proposal error rates of the local policy (``misread``, ``misplan``: per task)."""

    misground: Probability
    hallucinate: Probability
    skip: Probability
    misread: Probability  # per task: one parameter of the intent read as another value
    misplan: Probability = 0.0  # per composed plan: one of its fill steps left out


@dataclasses.dataclass(frozen=True)
class Reading:
    """The task as a model read its intent: which kind of task (the template) and the values it
    names. This, not the environment's plan, is what every agent composes its subgoals from."""

    domain: str
    template: str
    intent: str
    params: Mapping[str, str]

    @classmethod
    def of(cls, task: Task) -> "Reading":
        """The intent read without error."""
        return cls(task.domain, task.template, task.intent, task.params)


def misread_task(task: Task, rng: np.random.Generator, rate: float) -> Reading:
    """The task as the model understood it: with probability ``rate`` one parameter of the
    intent is read as another value of its vocabulary. No check can see this (the composed
    subgoals are consistent with the wrong reading); every agent that uses the model gets the
    same reading."""
    from repro26.nesyproact.domains import V

    u, pick = rng.random(), rng.random(2)
    names = [n for n in task.params if n in V or n in ("from", "to")]
    params = dict(task.params)
    if u < rate and names:
        name = names[int(pick[0] * len(names))]
        vocab = V.get(name, V["place"])
        others = [v for v in vocab if v != params[name]]
        params[name] = others[int(pick[1] * len(others))]
    return dataclasses.replace(Reading.of(task), params=params)


def compose_local(reading: Reading, rng: np.random.Generator, misplan: float
                  ) -> tuple[Subgoal, ...]:
    """The local model's plan: the site's procedure for the task as read
    (:func:`~repro26.nesyproact.domains.compose_plan`), with probability ``misplan`` one of its
    fill steps (a search query, a form field) left out."""
    from repro26.nesyproact.domains import compose_plan

    plan = compose_plan(reading.domain, reading.template, reading.params)
    fills = [i for i, sg in enumerate(plan) if sg.kind == "fill"]
    u, pick = rng.random(), rng.random()
    if fills and u < misplan:
        drop = fills[int(pick * len(fills))]
        plan = plan[:drop] + plan[drop + 1:]
    return plan


def subgoal_json(sg: Subgoal | None) -> str:
    if sg is None:
        return "null"
    return json.dumps({"kind": sg.kind, "role": sg.role, "label": sg.label,
                       "region": sg.region, "value": sg.value, "expect": sg.expect})


def react_instruction(intent: str, plan: Sequence[Subgoal]) -> str:
    return (f"TASK: {intent}\nACTIONS: {ACTION_GRAMMAR}\n"
            f"PLAN: [{', '.join(subgoal_json(s) for s in plan)}]")


def subgoal_instruction(intent: str, sg: Subgoal, nxt: Subgoal | None, feedback: str) -> str:
    return (f"TASK: {intent}\nACTIONS: {ACTION_GRAMMAR}\nSUBGOAL: {subgoal_json(sg)}\n"
            f"NEXT: {subgoal_json(nxt)}\nFEEDBACK: {feedback}")


def _field(instruction: str, name: str) -> str | None:
    for line in instruction.splitlines():
        if line.startswith(name + ": "):
            return line[len(name) + 2:]
    return None


def _sg(d: dict) -> Subgoal:
    return Subgoal(d["kind"], "", d["role"], d["label"], d.get("region", "main"),
                   d.get("value", ""), d.get("expect", ""), page_title=d.get("page_title", ""))


def ground(sg: Subgoal, obs: Observation, rng: np.random.Generator,
           region: bool = False) -> str:
    """The action that carries out ``sg`` on a (random) element with its role and label (in
    its region when ``region``); a made-up id when no such element is shown."""
    matches = obs.find(sg.role, sg.label, sg.region if region else None)
    if not matches:
        target = _unused_id(obs, rng)
        return f"click [{target}]" if sg.kind != "fill" else f'type [{target}] "{sg.value}"'
    el = matches[int(rng.integers(len(matches)))]
    if sg.kind == "fill":
        return f'type [{el.id}] "{sg.value}"'
    if sg.kind == "answer":
        return f'stop "{el.text}"'
    return f"click [{el.id}]"


def _unused_id(obs: Observation, rng: np.random.Generator) -> int:
    used = {e.id for e in obs.elements}
    while (i := int(rng.integers(1, 1000))) in used:
        pass
    return i


def effect_visible(sg: Subgoal, obs: Observation) -> bool:
    """What a careful reader of the observation would take as ``sg`` having taken effect (a
    submit: the ``Saved`` notice)."""
    if sg.kind == "nav":
        return obs.title == sg.expect
    if sg.kind == "fill":
        return any(e.value == sg.value for e in obs.find("textbox", sg.label))
    if sg.kind == "commit":
        return obs.notice == "Saved"
    return True


class LocalPolicy:
    """Stochastic policy of tunable competence (module docstring). Its belief about the plan
    position in the ReAct prompt is rebuilt from the history: it restarts when the history is
    the instruction alone and is updated from the newest observation."""

    def __init__(self, profile: PolicyProfile, rng: np.random.Generator):
        self.profile, self.rng = profile, rng
        self.cursor = 0
        self.pending: int | None = None  # the plan index of the last proposal

    def compose(self, reading: Reading, feedback: str = "") -> tuple[Subgoal, ...]:
        """A plan for the task as read (a fresh draw of the plan error each time)."""
        return compose_local(reading, self.rng, self.profile.misplan)

    def resume_at(self, index: int) -> None:
        """Continue the ReAct prompt at plan step ``index`` (after a skill ran the others)."""
        self.cursor, self.pending = index, None

    def propose(self, observation: str, history: Sequence[str]) -> str:
        obs = Observation.parse(observation)
        instruction = history[0]
        if (sub := _field(instruction, "SUBGOAL")) is not None:
            return self._propose_subgoal(obs, instruction, sub)
        plan = [_sg(d) for d in json.loads(_field(instruction, "PLAN") or "[]")]
        if len(history) == 1:
            self.cursor, self.pending = 0, None
        p = self.profile
        if self.pending is not None:
            index = self.pending
            self.pending = None
            assumed = self.rng.random() < p.misground
            if assumed or effect_visible(plan[index], obs):
                self.cursor = index + 1
            if self.rng.random() < p.skip:
                self.cursor += 1
        if obs.dialog and self.rng.random() >= p.misground:
            return f"click [{obs.find('button', 'Close', 'dialog')[0].id}]"
        return self.act_at(obs, plan)

    def act_at(self, obs: Observation, plan: Sequence[Subgoal]) -> str:
        """The action for plan step ``self.cursor`` (``stop`` past the end), remembered for
        the check at the next call."""
        if self.cursor >= len(plan):
            return "stop"
        sg = plan[self.cursor]
        self.pending = self.cursor
        if self.rng.random() < self.profile.hallucinate:
            target = _unused_id(obs, self.rng)
            return f'type [{target}] "{sg.value}"' if sg.kind == "fill" else f"click [{target}]"
        return ground(sg, obs, self.rng)

    def _propose_subgoal(self, obs: Observation, instruction: str, sub: str) -> str:
        sg = _sg(json.loads(sub))
        nxt = json.loads(_field(instruction, "NEXT") or "null")
        feedback = _field(instruction, "FEEDBACK") or ""
        p = self.profile
        if nxt is not None and self.rng.random() < p.skip:
            sg = _sg(nxt)
        if self.rng.random() < p.hallucinate:
            target = _unused_id(obs, self.rng)
            return f'type [{target}] "{sg.value}"' if sg.kind == "fill" else f"click [{target}]"
        return ground(sg, obs, self.rng, region=bool(feedback))


SYSTEM_PROMPT = ("You are a web agent. You see a page as an accessibility tree. Reply with "
                 f"exactly one action on one line: {ACTION_GRAMMAR}.")


class OpenAIChatPolicy:
    """An OpenAI-compatible chat-completions endpoint as a policy (standard library only)."""

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_s: float = 60.0,
                 temperature: float = 0.0):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key = model, api_key
        self.timeout_s, self.temperature = timeout_s, temperature

    def propose(self, observation: str, history: Sequence[str]) -> str:
        user = "\n\n".join([*history, f"OBSERVATION:\n{observation}", "Your next action:"])
        return first_action(self._chat(user))

    def compose(self, reading: Reading, feedback: str = "") -> tuple[Subgoal, ...]:
        """The model's plan: a JSON list of subgoals (``kind`` nav | fill | commit | answer,
        ``role``, ``label``, ``region``, ``value``, ``expect``, ``page_title``); an empty plan
        when the reply holds none."""
        text = self._chat(f"TASK: {reading.intent}\nFEEDBACK: {feedback}\nReply with the plan "
                          "as a JSON list of subgoals with keys kind (nav|fill|commit|answer), "
                          "role, label, region, value, expect, page_title.")
        try:
            return tuple(_sg(d) for d in json.loads(text[text.index("["):text.rindex("]") + 1]))
        except (ValueError, KeyError, TypeError):
            return ()

    def _chat(self, user: str) -> str:
        body = json.dumps({"model": self.model, "temperature": self.temperature,
                           "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                                        {"role": "user", "content": user}]}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            reply = json.loads(response.read().decode())
        return reply["choices"][0]["message"]["content"] or ""


def first_action(text: str) -> str:
    """The first line of a model's reply that parses as an action (else its first line)."""
    lines = [ln.strip().strip("`") for ln in text.splitlines() if ln.strip()]
    for line in lines:
        if Action.parse(line).kind != "invalid":
            return line
    return lines[0] if lines else ""
