"""Every setting that can be meaningless is range-checked when the config is parsed.

For each built method: its `smoke` config parses; each field annotated with ``Bounds`` (also
inside nested dataclasses and lists) given a value outside its range is refused with one line
naming the field; and every numeric field whose name says it is a size, a step count, a rate, a
discount, a width or a temperature carries such a range.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Annotated, get_args, get_origin

import pytest

from repro26.core.config import (
    Bounds,
    ConfigError,
    check_scale,
    load_yaml,
    method_section,
    parse_method_config,
    resolve_section,
)
from repro26.core.registry import implemented_methods, load_method

ROOT = Path(__file__).resolve().parents[2]

# names that promise a quantity with a natural range (a count, a rate, a probability, ...)
MUST_BE_BOUNDED = re.compile(
    r"(^|_)(steps|batch|batch_size|hidden|width|depth|layers|heads|epochs|updates|lr|"
    r"learning_rate|gamma|sigma|temperature|rank|cfl|horizon|size|dim|seq_len|iterations)($|_)")


def _smoke_values(method: str) -> dict:
    config = load_yaml(ROOT / "config" / "config.yaml")
    section = method_section(config, method, ROOT / "config")
    return resolve_section(section, check_scale("smoke"), method)


def _bounded_fields(cls, prefix=()):
    """(path, bounds, is_list) of every Bounds-annotated field of ``cls``, recursively."""
    hints = typing.get_type_hints(cls, include_extras=True)
    for field in dataclasses.fields(cls):
        tp = hints[field.name]
        path = (*prefix, field.name)
        if dataclasses.is_dataclass(tp):
            yield from _bounded_fields(tp, path)
            continue
        is_list = get_origin(tp) is tuple
        inner = get_args(tp)[0] if is_list and get_args(tp) else tp
        if get_origin(inner) is Annotated:
            for extra in get_args(inner)[1:]:
                if isinstance(extra, Bounds):
                    yield path, extra, is_list


def _numeric_unbounded(cls, prefix=()):
    hints = typing.get_type_hints(cls, include_extras=True)
    for field in dataclasses.fields(cls):
        tp, path = hints[field.name], (*prefix, field.name)
        if dataclasses.is_dataclass(tp):
            yield from _numeric_unbounded(tp, path)
        elif tp in (int, float) or (get_origin(tp) is tuple and get_args(tp)[:1] in ((int,), (float,))):
            if not (field.name == "seeds" or field.name.endswith("_seeds")):
                yield path


def _outside(bounds: Bounds, integer: bool):
    """A value just outside the range (below it where it has a floor)."""
    if bounds.low is not None:
        return bounds.low - (1 if integer else 0.5) if not bounds.low_open else bounds.low
    return bounds.high + (1 if integer else 0.5) if not bounds.high_open else bounds.high


def _set(values: dict, path, value) -> dict:
    out = dict(values)
    if len(path) == 1:
        out[path[0]] = value
    else:
        out[path[0]] = _set(dict(values.get(path[0], {})), path[1:], value)
    return out


def _get(values, path):
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return None
        values = values[key]
    return values


@pytest.mark.parametrize("method", implemented_methods())
def test_every_range_is_enforced(method):
    module = load_method(method)
    values = _smoke_values(method)
    parse_method_config(module, values, f"{method}.smoke")  # the shipped config is valid
    checked = 0
    for path, bounds, is_list in _bounded_fields(module.Config):
        current = _get(values, path)
        integer = isinstance(current, int) or (is_list and current and isinstance(current[0], int))
        bad = _outside(bounds, integer)
        if is_list:
            bad = [bad] if current is None else [bad, *list(current)[1:]]
        with pytest.raises(ConfigError, match=re.escape(".".join(path))):
            parse_method_config(module, _set(values, path, bad), f"{method}.smoke")
        checked += 1
    assert checked > 0, f"{method}: no range-checked setting"


@pytest.mark.parametrize("method", implemented_methods())
def test_quantities_with_a_natural_range_are_bounded(method):
    module = load_method(method)
    loose = [".".join(p) for p in _numeric_unbounded(module.Config)
             if MUST_BE_BOUNDED.search(p[-1])]
    assert not loose, f"{method}: give these a Bounds annotation: {', '.join(loose)}"


def test_bounds_describe_and_contain():
    unit = Bounds(0, 1, low_open=True)
    assert unit.describe() == "in (0, 1]"
    assert unit.contains(1.0) and not unit.contains(0.0) and not unit.contains(float("nan"))
    assert Bounds(1).describe() == ">= 1" and not Bounds(1).contains(0)
