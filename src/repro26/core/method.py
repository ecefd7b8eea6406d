"""The method protocol: what a method package declares, once, so that core derives the rest.

A method ``repro26.<name>`` declares

* in ``cli.py``: ``Config`` (a frozen dataclass, the one source of the method's settings) and
  ``STAGES = {name: Stage}`` for its own jobs (data, training, evaluation), each made with
  :func:`stage`, which states the ``--variant`` keys the stage takes and their types;
* in ``figures.py``: ``FIGURES = {name: Figure}``, each made with :func:`figure`, naming the
  tables it reads (paths under ``results/<scale>/<name>/``). The draw function returns a
  matplotlib figure; its docstring is the caption;
* in ``claims.py``: ``CLAIMS``, made with :func:`claim_set`, naming the tables the claims read;
  its build function returns the list of :class:`repro26.core.claims.Claim`.

From these, ``repro26 <name> figure <fig>`` and ``repro26 <name> claims`` exist for every
method, and ``workflow/rules/protocol.smk`` emits the figure, claims and named target rules.

``--variant`` has one grammar for every stage: ``key=value[,key=value...]``, each key declared by
the stage with its type (``int``, ``float``, ``str``, or a ``Literal[...]``/tuple of allowed
values).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from repro26.core.config import UsageError

if TYPE_CHECKING:
    from repro26.core.claims import Claim
    from repro26.core.run import Run

VariantType = Any  # int | float | str | Literal[...] | tuple of allowed strings


# ----------------------------------------------------------------------------- stages


@dataclasses.dataclass(frozen=True)
class Stage:
    """One job type of a method: ``fn(run)`` with the ``--variant`` keys it takes, and the
    config fields it reads (``None``: all of them)."""

    fn: Callable[["Run"], None]
    variant: Mapping[str, VariantType] = dataclasses.field(default_factory=dict)
    seed: bool = False  # the stage needs --seed
    reads: tuple[str, ...] | None = None
    matches: tuple[str, ...] = ()  # variant keys every input that records them must share

    @property
    def summary(self) -> str:
        doc = inspect.getdoc(self.fn) or ""
        return doc.splitlines()[0] if doc else ""

    def __call__(self, run: "Run") -> None:
        self.fn(run)


def stage(variant: Mapping[str, VariantType] | None = None, *, seed: bool = False,
          reads: Sequence[str] | None = None, matches: Sequence[str] = ()):
    """Decorator: the function is a stage taking ``--variant`` keys ``variant`` (name -> type).

    ``reads``, when given, names the only ``Config`` fields the stage uses: its jobs then rerun
    only when one of them changes (the per-stage config slice; see rule ``stage_config`` in
    the ``Snakefile``), and ``run.cfg`` raises on a read of any other field. ``matches`` names
    variant keys that an input recording them must share with the job (an evaluation of
    ``method=a`` refuses the policy trained as ``method=b``)."""

    def wrap(fn: Callable[["Run"], None]) -> Stage:
        return Stage(fn, dict(variant or {}), seed, None if reads is None else tuple(reads),
                     tuple(matches))

    return wrap


def _allowed(tp: VariantType) -> tuple | None:
    if get_origin(tp) is Literal:
        return get_args(tp)
    if isinstance(tp, tuple):
        return tp
    return None


def _parse_value(key: str, text: str, tp: VariantType) -> Any:
    allowed = _allowed(tp)
    if allowed is not None:
        for option in allowed:
            if text == str(option):
                return option
        raise UsageError(f"--variant {key}: {text!r} is not allowed; use one of "
                         f"{', '.join(map(str, allowed))}")
    if tp is int:
        if not text.lstrip("-").isdigit():
            raise UsageError(f"--variant {key}: expected an integer, got {text!r}")
        return int(text)
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise UsageError(f"--variant {key}: expected a number, got {text!r}") from None
    if tp is str:
        if not text:
            raise UsageError(f"--variant {key}: empty value")
        return text
    raise TypeError(f"--variant {key}: unsupported declared type {tp!r}")


def parse_variant(text: str | None, declared: Mapping[str, VariantType],
                  stage_name: str) -> dict[str, Any]:
    """``key=value,key=value`` -> typed dict; every declared key required, nothing else."""
    wanted = ",".join(f"{k}=..." for k in declared)
    if not declared:
        if text:
            raise UsageError(f"--variant: stage '{stage_name}' takes no variant, got {text!r}")
        return {}
    if not text:
        raise UsageError(f"--variant: stage '{stage_name}' needs {wanted}")
    values: dict[str, Any] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or key not in declared:
            raise UsageError(f"--variant: '{part}' is not allowed; stage '{stage_name}' takes {wanted}")
        if key in values:
            raise UsageError(f"--variant: '{key}' given twice")
        values[key] = _parse_value(key, value, declared[key])
    missing = [k for k in declared if k not in values]
    if missing:
        raise UsageError(f"--variant: stage '{stage_name}' needs {missing[0]}=... ({wanted})")
    return values


def format_variant(**values: Any) -> str:
    """The inverse of :func:`parse_variant`, for rule files: ``format_variant(n=5) == "n=5"``."""
    return ",".join(f"{k}={v}" for k, v in values.items())


# ----------------------------------------------------------------------------- figures

Inputs = Sequence[str] | Callable[[Any], Sequence[str]]


@dataclasses.dataclass(frozen=True)
class Figure:
    """A figure: ``draw(run) -> matplotlib Figure`` reading ``inputs`` (paths relative to the
    method's results folder, or a function of the typed config returning them)."""

    name: str
    draw: Callable[["Run"], Any]
    inputs: Inputs

    @property
    def caption(self) -> str:
        return inspect.getdoc(self.draw) or self.name

    def input_paths(self, cfg: Any) -> list[str]:
        return list(self.inputs(cfg) if callable(self.inputs) else self.inputs)


def figure(*inputs: str, inputs_from: Callable[[Any], Sequence[str]] | None = None):
    """Decorator: ``draw`` is a figure reading ``inputs`` (or ``inputs_from(cfg)``)."""
    if inputs and inputs_from is not None:
        raise TypeError("figure(): give input paths or inputs_from, not both")

    def wrap(draw: Callable[["Run"], Any]) -> Figure:
        return Figure(draw.__name__, draw, inputs_from or tuple(inputs))

    return wrap


def figures_by_name(*figs: Figure) -> dict[str, Figure]:
    """``FIGURES`` in the order given (the paper's order)."""
    names = [f.name for f in figs]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate figure names: {names}")
    return {f.name: f for f in figs}


# ----------------------------------------------------------------------------- claims


@dataclasses.dataclass(frozen=True)
class ClaimSet:
    """The method's headline claims: ``build(run) -> [Claim]`` over ``inputs`` (as for figures)."""

    build: Callable[["Run"], Sequence["Claim"]]
    inputs: Inputs

    def input_paths(self, cfg: Any) -> list[str]:
        return list(self.inputs(cfg) if callable(self.inputs) else self.inputs)


def claim_set(*inputs: str, inputs_from: Callable[[Any], Sequence[str]] | None = None):
    """Decorator: ``build`` returns the method's claims, reading ``inputs``."""
    if inputs and inputs_from is not None:
        raise TypeError("claim_set(): give input paths or inputs_from, not both")

    def wrap(build: Callable[["Run"], Sequence["Claim"]]) -> ClaimSet:
        return ClaimSet(build, inputs_from or tuple(inputs))

    return wrap
