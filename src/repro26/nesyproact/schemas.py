"""NesyProAct's typed symbolic decision interface, and the verifier compiled from it.

Types: a *state* is what an agent can know, the parsed observation
(:class:`~repro26.nesyproact.env.Observation`); an *action* is a parsed
:class:`~repro26.nesyproact.env.Action`; a *subgoal* is an action schema bound to arguments
(:class:`~repro26.nesyproact.env.Subgoal`: its ``kind`` names the schema, its fields are the
arguments); a *transition* ``(state, action, state')`` is checked by evaluating the
pre-conditions on ``(state, action)`` and the post-conditions on ``(state', action)``.

An :class:`Atom` is a typed fact ``kind(args)`` over ``(state, action)``; its meaning is one
:class:`Observer` in :data:`OBSERVERS`, which also says *where* it can be observed: ``here``
(the current observation, free) or ``activity`` (the ``My activity`` page: checking it costs a
navigation there and back, and under a delayed index it can miss). An :class:`ActionSchema`
declares the verb it is carried out by, its preconditions and its effects as atoms whose
arguments name fields of the subgoal (``'text'`` in quotes is a literal).

:func:`compile_checks` turns any schema into executable checks: pre-conditions
``verb(schema.verb) ∧ pre_1 ∧ … ∧ pre_k`` evaluated on ``(state, proposed action)`` before
acting, and post-conditions ``eff_1 ∧ … ∧ eff_m`` evaluated on ``(state', action)`` after it,
grouped by where they are observed. Nothing here is written per subgoal kind: a new schema
made of existing atom kinds gets its checks from the same code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from repro26.nesyproact.env import Action, Observation, Subgoal, format_record

State = Observation


@dataclasses.dataclass(frozen=True)
class Atom:
    """``kind(args)``: each arg names a subgoal field, or is a quoted literal."""

    kind: str
    args: tuple[str, ...] = ()

    def bind(self, sg: Subgoal) -> tuple:
        return tuple(a[1:-1] if a.startswith("'") else getattr(sg, a) for a in self.args)


@dataclasses.dataclass(frozen=True)
class Observer:
    """``holds(state, action, *args)`` and where the fact can be observed."""

    holds: Callable[..., bool]
    where: str = "here"


def _target(s: State, a: Action, role: str, label: str, region: str) -> bool:
    e = s.by_id(a.target)
    return e is not None and (e.role, e.label, e.region) == (role, label, region)


OBSERVERS: dict[str, Observer] = {
    "verb": Observer(lambda s, a, verb: a.kind == verb),
    "at": Observer(lambda s, a, title: s.title == title),
    "no_dialog": Observer(lambda s, a: not s.dialog),
    "shows": Observer(lambda s, a, role, label, region: bool(s.find(role, label, region))),
    "target": Observer(_target),
    "typed": Observer(lambda s, a, value: a.text == value),
    "answer_on_page": Observer(lambda s, a, label, region: any(
        e.text == a.text for e in s.find("text", label, region))),
    "field_is": Observer(lambda s, a, label, value: any(
        e.value == value for e in s.find("textbox", label))),
    "notice": Observer(lambda s, a, text: s.notice == text),
    "recorded": Observer(lambda s, a, kind, record: s.records is not None
                         and format_record(kind, record) in s.records, where="activity"),
}


@dataclasses.dataclass(frozen=True)
class ActionSchema:
    """An action type: the verb that carries it out, its preconditions and effects."""

    name: str
    verb: str  # click | type | stop
    pre: tuple[Atom, ...]
    eff: tuple[Atom, ...]


AT, NO_DIALOG = Atom("at", ("page_title",)), Atom("no_dialog")
SHOWS = Atom("shows", ("role", "label", "region"))
TARGET = Atom("target", ("role", "label", "region"))

SCHEMAS: dict[str, ActionSchema] = {
    "nav": ActionSchema("nav", "click", (AT, NO_DIALOG, SHOWS, TARGET), (Atom("at", ("expect",)),)),
    "fill": ActionSchema("fill", "type", (AT, NO_DIALOG, SHOWS, TARGET, Atom("typed", ("value",))),
                         (Atom("field_is", ("label", "value")),)),
    "commit": ActionSchema("commit", "click", (AT, NO_DIALOG, SHOWS, TARGET),
                           (Atom("notice", ("'Saved'",)), Atom("recorded", ("expect", "record")))),
    "answer": ActionSchema("answer", "stop", (AT, NO_DIALOG, SHOWS,
                                              Atom("answer_on_page", ("label", "region"))), ()),
}


@dataclasses.dataclass(frozen=True)
class Check:
    """A compiled atom: ``name`` (its kind and bound arguments), where it is observed, and
    ``holds(state, action)``."""

    name: str
    kind: str
    where: str
    holds: Callable[[State, Action], bool]


def compile_atom(atom: Atom, sg: Subgoal,
                 observers: Mapping[str, Observer] = OBSERVERS) -> Check:
    args = atom.bind(sg)
    obs = observers[atom.kind]
    return Check(f"{atom.kind}{args!r}" if args else atom.kind, atom.kind, obs.where,
                 lambda s, a: bool(obs.holds(s, a, *args)))


def compile_checks(sg: Subgoal, schemas: Mapping[str, ActionSchema] = SCHEMAS
                   ) -> tuple[list[Check], list[Check]]:
    """(pre-conditions, post-conditions) of subgoal ``sg`` from its schema ``schemas[sg.kind]``."""
    schema = schemas[sg.kind]
    pre = [compile_atom(Atom("verb", (f"'{schema.verb}'",)), sg),
           *(compile_atom(a, sg) for a in schema.pre)]
    return pre, [compile_atom(a, sg) for a in schema.eff]


def failed(checks, state: State, action: Action, where: str | None = None) -> list[str]:
    """Names of the ``checks`` (observed ``where``, default all) that do not hold."""
    return [c.name for c in checks if (where is None or c.where == where)
            and not c.holds(state, action)]
