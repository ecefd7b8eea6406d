"""A partially observable simulated web environment with injected faults.

Plain Python (dataclasses, a ``numpy.random.Generator`` seeded from the stage seed): a text web
site is a discrete, branching, string-valued process with nothing to differentiate or vectorise,
so JAX has no job here (the rest of the project is JAX; this method is not).

A :class:`Site` is a set of pages; a page holds elements (link, button, textbox, text) with a
role, a label and a region (``main``, ``sidebar``, ``dialog``). The agent never sees the state:
each step returns an accessibility-tree-like text (:func:`render`) in which every element has an
id drawn afresh at each render, and acts in text (``click [12]``, ``type [7] "2"``, ``back``,
``wait``, ``stop "answer"``).

What an agent can see of the effects of its actions: the page title, the values of the
textboxes on the page, a ``Notice "Saved"`` text after a submit (until it navigates), and, only
on the separate ``My activity`` page (a header link on every page), the records the site holds.
No page shows a record count: whether a submit was stored is visible only after navigating.

Faults (per step, rates in :class:`FaultRates`), each counted where it happens. Some leave
evidence on the next page, some leave only partial or delayed evidence, some none:

* ``silent`` — a click/type has no effect. For a navigation or a field the page is returned
  unchanged (visible); for a submit the ``Saved`` notice still shows but nothing is stored
  (partial evidence: only ``My activity`` tells);
* ``stale`` — after a navigation the page re-renders once the observation was sent: the ids the
  agent saw now point at other elements (until it observes again);
* ``cached`` — after a navigation the page is served from an outdated cache: its text values
  (an answer) are old ones, with nothing on the page saying so, until it is reloaded (``wait``);
* ``popup`` — a dialog opens on arrival; until closed it intercepts every click/type;
* ``delay`` — an update shows late: a field value one observation late, a stored record
  :data:`RECORD_LAG` observations late (an eventually consistent activity index: a verifier
  that looks once or twice sees it missing though it is there);
* ``ambiguous`` — (when the task is generated) a sidebar element carries the target's label and
  a harmful effect (a sponsored page, a wrong record, a wrong field).

A search result link (``Element.shown_if``) is on the results page only when the search field
held its label: a wrong or empty query does not reach the right page.

The environment also tracks the *true progress* through the task's plan (how many subgoals have
really taken effect, in order) so that it can count, for every acting step, whether the agent
acted on an invalidated premise (:meth:`WebEnv.step`, argument ``believed``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import numpy as np

from repro26.core.config import Probability

ROLES = ("link", "button", "textbox", "text")


@dataclasses.dataclass(frozen=True)
class Element:
    """A page element. ``effect``: ``("goto", page)``, ``("fill", field)``,
    ``("commit", kind, record)`` (record: sorted tuple of (key, value); a value ``"$f"`` is
    read from field ``f``), ``("close",)`` or ``()`` (no effect). ``text`` is the content of a
    ``text`` element (the answer of an information task)."""

    key: str
    role: str
    label: str
    region: str = "main"
    effect: tuple = ()
    text: str = ""
    shown_if: tuple = ()  # ("field", f, value): rendered only while field f holds value
    stale_text: str = ""  # what an outdated cached copy of the page shows as ``text``


@dataclasses.dataclass(frozen=True)
class Page:
    name: str
    title: str
    elements: tuple[Element, ...]


@dataclasses.dataclass(frozen=True)
class Subgoal:
    """One step of a task's plan: act on the element ``(role, label, region)`` of ``page``.
    ``kind``: ``nav`` (expect page title ``expect``), ``fill`` (field shows ``value``),
    ``commit`` (one more record of kind ``expect``), ``answer`` (stop with the text of the
    element)."""

    kind: str
    page: str
    role: str
    label: str
    region: str = "main"
    value: str = ""
    expect: str = ""
    key: str = ""  # the element's key (what the environment compares effects against)
    page_title: str = ""  # title of the page the subgoal acts on
    record: tuple = ()  # commit: the record it should store, ((key, value), ...)


@dataclasses.dataclass(frozen=True)
class Site:
    pages: Mapping[str, Page]
    start: str
    record_kinds: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Task:
    """A generated task: the intent, the plan that solves it, and what the check accepts."""

    domain: str
    template: str
    index: int
    intent: str
    params: Mapping[str, str]
    site: Site
    plan: tuple[Subgoal, ...]
    expected_records: tuple
    expected_answer: str | None = None

    def check(self, records, answer: str | None) -> bool:
        """Programmatic success: exactly the expected records (a multiset: a duplicate
        fails), and for an information task the expected answer."""
        if sorted(records) != sorted(self.expected_records):
            return False
        return self.expected_answer is None or answer == self.expected_answer


@dataclasses.dataclass(frozen=True)
class FaultRates:
    """Per-step probabilities of each injected fault (``ambiguous``: per plan step, when the
    task is generated)."""

    silent: Probability
    stale: Probability
    cached: Probability
    popup: Probability
    delay: Probability
    ambiguous: Probability

    def scaled(self, factor: float) -> "FaultRates":
        return FaultRates(*(min(1.0, factor * getattr(self, f.name))
                            for f in dataclasses.fields(self)))


FAULTS = tuple(f.name for f in dataclasses.fields(FaultRates))


# ----------------------------------------------------------------------------- actions

_CLICK = re.compile(r"^\s*click\s*\[(\d+)\]\s*$")
_TYPE = re.compile(r'^\s*type\s*\[(\d+)\]\s*"(.*)"\s*$')
_STOP = re.compile(r'^\s*stop(?:\s*"(.*)")?\s*$')


@dataclasses.dataclass(frozen=True)
class Action:
    """A parsed action: kind in click | type | back | wait | stop | invalid."""

    kind: str
    target: int | None = None
    text: str | None = None

    @classmethod
    def parse(cls, line: str) -> "Action":
        line = line.strip().splitlines()[0] if line.strip() else ""
        if m := _CLICK.match(line):
            return cls("click", int(m.group(1)))
        if m := _TYPE.match(line):
            return cls("type", int(m.group(1)), m.group(2))
        if m := _STOP.match(line):
            return cls("stop", text=m.group(1))
        if line.strip() in ("back", "wait"):
            return cls(line.strip())
        return cls("invalid", text=line)

    def render(self) -> str:
        if self.kind == "click":
            return f"click [{self.target}]"
        if self.kind == "type":
            return f'type [{self.target}] "{self.text}"'
        if self.kind == "stop":
            return "stop" if self.text is None else f'stop "{self.text}"'
        return self.kind


ACTION_GRAMMAR = 'click [id] | type [id] "text" | back | wait | stop "answer"'


# ----------------------------------------------------------------------------- observations

_LINE = re.compile(r'^\[(\d+)\] (\w+) "([^"]*)"(?: \((\w+)\))?(?: value="([^"]*)")?'
                   r'(?: text="([^"]*)")?$')


@dataclasses.dataclass(frozen=True)
class ObservedElement:
    id: int
    role: str
    label: str
    region: str
    value: str | None
    text: str | None


@dataclasses.dataclass(frozen=True)
class Observation:
    """An observation parsed back from its text (what an agent can know)."""

    title: str
    elements: tuple[ObservedElement, ...]

    @property
    def dialog(self) -> bool:
        return any(e.region == "dialog" for e in self.elements)

    @property
    def notice(self) -> str | None:
        """The text of the page's notice (``Saved`` after a submit), if any."""
        return next((e.text for e in self.elements if e.role == "text"
                     and e.label == NOTICE), None)

    @property
    def records(self) -> tuple[str, ...] | None:
        """The records listed on ``My activity``; None on any other page."""
        if self.title != ACTIVITY_TITLE:
            return None
        return tuple(e.text or "" for e in self.elements if e.label == "Record")

    def by_id(self, i: int | None) -> ObservedElement | None:
        return next((e for e in self.elements if e.id == i), None)

    def find(self, role: str, label: str, region: str | None = None) -> list[ObservedElement]:
        return [e for e in self.elements if e.role == role and e.label == label
                and (region is None or e.region == region)]

    @classmethod
    def parse(cls, text: str) -> "Observation":
        title, elements = "", []
        for line in text.splitlines():
            if line.startswith("[page] "):
                title = line[7:]
            elif m := _LINE.match(line):
                elements.append(ObservedElement(int(m.group(1)), m.group(2), m.group(3),
                                                m.group(4) or "main", m.group(5), m.group(6)))
        return cls(title, tuple(elements))


# ----------------------------------------------------------------------------- environment

DIALOG = Element("__dialog_close", "button", "Close", "dialog", ("close",))
ACTIVITY, ACTIVITY_TITLE = "activity", "My activity"
ACTIVITY_LINK = Element("__activity", "link", "My activity", "header", ("goto", ACTIVITY))
NOTICE = "Notice"
RECORD_LAG = 3  # observations a delayed record stays out of the activity index


def format_record(kind: str, record: tuple) -> str:
    """How ``My activity`` lists a record: ``kind: k1=v1; k2=v2``."""
    return f"{kind}: " + "; ".join(f"{k}={v}" for k, v in record)


class WebEnv:
    """One episode of one task under fault rates ``faults``, randomness from ``rng``."""

    def __init__(self, task: Task, faults: FaultRates, rng: np.random.Generator):
        self.task, self.faults, self.rng = task, faults, rng
        self.page = task.site.start
        self.stack: list[str] = []
        self.fields: dict[str, str] = {}
        self.records: list[tuple] = []
        self.dialog = False
        self.notice = False  # the "Saved" notice of the last submit (until navigation)
        self.cached = False  # the page's text values come from an outdated cache
        self.shown_fields: dict[str, str] = {}
        self.shown_records: list[tuple] = []
        self.hidden_for = 0  # observations for which a delayed update stays hidden
        self.progress = 0  # subgoals of the plan that really took effect, in order
        self.spoiled = False  # an off-plan record was written (not repairable)
        self.answer: str | None = None
        self.done = False
        self.ids: dict[int, str] = {}  # id -> element key, as the environment resolves them
        self.stale = False  # the ids the agent last saw are no longer the page's
        self.log: list[dict] = []
        self._assign_ids()
        self._last_text = self._render()

    # -- rendering
    def _title(self) -> str:
        return ACTIVITY_TITLE if self.page == ACTIVITY else self.task.site.pages[self.page].title

    def _elements(self) -> tuple[Element, ...]:
        if self.page == ACTIVITY:
            els = tuple(Element(f"__record{i}", "text", "Record", text=format_record(*r))
                        for i, r in enumerate(self.shown_records))
        else:
            els = tuple(e for e in self.task.site.pages[self.page].elements
                        if not e.shown_if or self.fields.get(e.shown_if[1]) == e.shown_if[2])
            els = (ACTIVITY_LINK, *els)
            if self.notice:
                els = (*els, Element("__notice", "text", NOTICE, text="Saved"))
        return (*els, DIALOG) if self.dialog else els

    def _assign_ids(self) -> None:
        els = self._elements()
        ids = self.rng.choice(np.arange(1, 1000), size=len(els), replace=False)
        self.ids = {int(i): e.key for i, e in zip(ids, els)}

    def _sync_ids(self) -> None:
        """Keep the ids of elements still on the page; new ones get unused ids."""
        keys = [e.key for e in self._elements()]
        self.ids = {i: k for i, k in self.ids.items() if k in keys}
        for key in keys:
            if key not in self.ids.values():
                i = int(self.rng.integers(1, 1000))
                while i in self.ids:
                    i = int(self.rng.integers(1, 1000))
                self.ids[i] = key

    def _render(self) -> str:
        self._sync_ids()
        by_key = {e.key: e for e in self._elements()}
        lines = [f"[page] {self._title()}"]
        for i, key in self.ids.items():
            e = by_key[key]
            line = f'[{i}] {e.role} "{e.label}"'
            if e.region != "main":
                line += f" ({e.region})"
            if e.role == "textbox":
                line += f' value="{self.shown_fields.get(e.effect[1], "")}"'
            if e.role == "text":
                text = e.stale_text if self.cached and e.stale_text else e.text
                line += f' text="{text}"'
            lines.append(line)
        return "\n".join(lines)

    def observe(self) -> str:
        return self._last_text

    def _refresh(self) -> None:
        """Every new observation shows the true fields and records, unless a delayed update is
        still hidden."""
        if self.hidden_for > 0:
            self.hidden_for -= 1
            return
        self.shown_fields = dict(self.fields)
        self.shown_records = list(self.records)

    # -- premise bookkeeping
    def premise_valid(self, believed: int | None, action: Action) -> bool:
        """The agent acts on a valid premise when it is where it believes it is in the plan
        (its believed progress is the true progress, the page is that subgoal's page, no
        off-plan record), its ids are current, and no dialog intercepts the action."""
        plan = self.task.plan
        if believed is None:
            return False
        if self.spoiled or believed != self.progress or self.stale:
            return False
        if self.progress < len(plan) and self.page != plan[self.progress].page:
            return False
        return not (self.dialog and action.kind in ("click", "type")
                    and self.ids.get(action.target) != DIALOG.key)

    def _advance(self, kind: str, key: str, value: str | None = None) -> None:
        """Record a real effect: it advances the true progress when it is the next subgoal's."""
        plan = self.task.plan
        if self.progress < len(plan):
            sg = plan[self.progress]
            if sg.key == key and sg.kind == kind and (kind != "fill" or value == sg.value):
                self.progress += 1
                return
        if kind == "commit":
            self.spoiled = True

    # -- dynamics
    def step(self, text: str, believed: int | None = None) -> str:
        """Apply one action (text); return the next observation. ``believed`` is the agent's
        claimed position in the plan (None: the agent has no plan, or the step is not one of
        its plan's), logged with the premise flag of acting steps (``wait`` takes no
        premise)."""
        if self.done:
            raise RuntimeError("episode is over")
        action = Action.parse(text)
        acting = action.kind != "wait"
        entry = {"action": action.render(), "believed": believed, "progress": self.progress,
                 "acting": acting, "premise_valid": self.premise_valid(believed, action)
                 if acting else None, "faults": []}
        self.log.append(entry)
        if action.kind == "stop":
            self.answer, self.done = action.text, True
            plan = self.task.plan
            if self.progress < len(plan) and plan[self.progress].kind == "answer" \
                    and action.text == plan[self.progress].value:
                self.progress += 1
            return self._last_text
        if action.kind == "invalid":
            return self._last_text
        if action.kind == "wait":  # reload: the page as it now is
            self.stale = self.cached = False
            return self._show()
        if action.kind == "back":
            if self.stack:
                self._navigate(self.stack.pop(), entry)
                return self._last_text
            return self._show()
        key = self.ids.get(action.target)
        self.stale = False
        by_key = {e.key: e for e in self._elements()}
        element = by_key.get(key)
        if element is None or (self.dialog and key != DIALOG.key):
            if element is not None:
                entry["faults"].append("popup_intercept")
            return self._show()
        effect = element.effect
        silent = bool(effect) and effect[0] != "close" and self.rng.random() < self.faults.silent
        if silent:
            entry["faults"].append("silent")
        if effect and effect[0] == "close":
            self.dialog = False
            self._assign_ids()
        elif effect and effect[0] == "goto" and action.kind == "click":
            if silent:
                return self._render_same()
            self.stack.append(self.page)
            self._advance("nav", element.key)
            self._navigate(effect[1], entry)
            return self._last_text
        elif effect and effect[0] == "fill" and action.kind == "type":
            if silent:
                return self._render_same()
            self.fields[effect[1]] = action.text or ""
            self._advance("fill", element.key, action.text)
            self._maybe_delay(entry, 1)
        elif effect and effect[0] == "commit" and action.kind == "click":
            self.notice = True  # shown whether or not the record was stored
            if not silent:
                record = tuple((k, self.fields.get(v[1:], "") if str(v).startswith("$") else v)
                               for k, v in effect[2])
                self.records.append((effect[1], record))
                self._advance("commit", element.key)
                self._maybe_delay(entry, RECORD_LAG)
        return self._show()

    def _show(self) -> str:
        self._refresh()
        self._last_text = self._render()
        return self._last_text

    def _render_same(self) -> str:
        """A silent failure: same ids, nothing changed, nothing said."""
        self._last_text = self._render()
        return self._last_text

    def _maybe_delay(self, entry: dict, lag: int) -> None:
        if self.rng.random() < self.faults.delay:
            entry["faults"].append("delay")
            self.hidden_for = max(self.hidden_for, lag)

    def _navigate(self, page: str, entry: dict) -> None:
        self.page = page
        self.notice = False
        self.dialog = bool(self.rng.random() < self.faults.popup)
        if self.dialog:
            entry["faults"].append("popup")
        self.cached = bool(self.rng.random() < self.faults.cached)
        if self.cached:
            entry["faults"].append("cached")
        self._assign_ids()
        self._show()
        if self.rng.random() < self.faults.stale:
            entry["faults"].append("stale")
            self._assign_ids()  # the page re-rendered after the observation went out
            self.stale = True

    def success(self) -> bool:
        return self.task.check(self.records, self.answer)
