"""Configuration: scale presets merged into typed, validated method configs.

A method's section in the config (``config/methods/<method>.yaml``) has the form::

    kernel_bandits:
      common: {kernel: matern32, lengthscale: 0.2}   # shared by every scale
      smoke:  {horizon: 200, seeds: [0, 1]}
      small:  {horizon: 20000, seeds: [0, 1, 2, 3, 4]}
      paper:  {horizon: 100000, seeds: [0, ..., 9]}

``resolve_section(section, scale)`` merges ``common`` with the scale's overrides (nested
dicts merged key by key). ``parse_config(Config, values, where)`` turns the merged dict into the
method's frozen dataclass, checking every field's type. Any problem raises
:class:`ConfigError` with one line naming the field and what is allowed; the CLI turns that into
exit code 2.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import yaml

PRESETS: tuple[str, ...] = ("smoke", "small", "paper")  # the sections every method writes
# ``probe`` is ``paper`` with the method's ``probe`` overrides (one seed, one optimiser step or
# rollout, the largest size of each grid): the paper's shapes, checked on any machine.
PROBE = "probe"
SCALES: tuple[str, ...] = (*PRESETS, PROBE)

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The range a numeric setting must lie in, attached to its annotation
    (``Annotated[float, Bounds(0, 1, low_open=True)]``) and checked where the config is parsed:
    a learning rate of 0 or a negative step count is refused before anything runs."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        if value != value:  # NaN lies in no range
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (self.high is not None
                    and (value >= self.high if self.high_open else value > self.high))

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return (f"in {'(' if self.low_open else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return "any number"


# the ranges that recur across methods
Count = Annotated[int, Bounds(1)]  # sizes, step counts, epochs, widths: at least 1
NonNegativeInt = Annotated[int, Bounds(0)]  # warm-up steps, optional extras: 0 allowed
Positive = Annotated[float, Bounds(0, low_open=True)]  # learning rates, sigmas, temperatures
NonNegative = Annotated[float, Bounds(0)]  # penalty weights, noise levels that may be off
Probability = Annotated[float, Bounds(0, 1)]  # discount factors, fractions, mixing weights
OpenUnit = Annotated[float, Bounds(0, 1, low_open=True)]  # CFL numbers, fractions that must act


class ConfigError(ValueError):
    """A config value is missing, unknown or of the wrong type (one line, names the field)."""


class UsageError(ValueError):
    """A command-line argument or input file is wrong (one line, names what is allowed)."""


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-6`` as a float, as YAML 1.2 and JSON do (1.1 needs ``1.0e-6``)."""


_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON mapping; a missing or malformed file is a :class:`UsageError`."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"config file {path} does not exist")
    try:
        if path.suffix == ".json":
            data = json.loads(path.read_text())
        else:
            data = yaml.load(path.read_text(), Loader=_Yaml12Loader)  # noqa: S506 (safe loader)
    except json.JSONDecodeError as err:
        raise UsageError(f"config file {path} line {err.lineno} is not valid JSON") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"config file {path}{where} is not valid YAML") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"config file {path} must hold a mapping, got {type(data).__name__}")
    return data


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated by ``override``; nested mappings merge key by key."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ConfigError(f"scale: '{scale}' is not allowed; use one of {', '.join(SCALES)}")
    return scale


def resolve_section(section: Mapping[str, Any], scale: str, where: str) -> dict[str, Any]:
    """Merge ``section['common']`` with ``section[scale]`` (for ``probe``: with ``paper``, then
    the ``probe`` overrides)."""
    check_scale(scale)
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where}: must be a mapping with keys common/{'/'.join(SCALES)}")
    unknown = set(section) - {"common", *SCALES}
    if unknown:
        raise ConfigError(
            f"{where}.{sorted(unknown)[0]}: unknown key; allowed: common, {', '.join(SCALES)}"
        )
    if scale not in section:
        raise ConfigError(f"{where}.{scale}: missing; every method needs "
                          f"{', '.join(SCALES)} (probe: overrides of paper)")
    # a stage's config slice holds the probe's values already merged, without ``paper``
    layers = [layer for layer in ("paper", PROBE) if layer in section] if scale == PROBE \
        else [scale]
    merged = dict(section.get("common") or {})
    for layer in layers:
        merged = deep_merge(merged, section.get(layer) or {})
    return merged


def method_section(config: Mapping[str, Any], method: str, config_dir: Path | None) -> Mapping:
    """The method's section from a full config, else from ``config_dir/methods/<method>.yaml``."""
    if method in config:
        return config[method]
    if config_dir is not None:
        path = config_dir / "methods" / f"{method}.yaml"
        if path.is_file():
            data = load_yaml(path)
            if method in data:
                return data[method]
    raise ConfigError(f"{method}: no config section found (expected config/methods/{method}.yaml)")


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Annotated:
        return _type_name(get_args(tp)[0])
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    return getattr(tp, "__name__", str(tp))


def coerce(value: Any, tp: Any, where: str) -> Any:
    """Check ``value`` against the annotation ``tp``; ints are accepted where floats are."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Annotated:
        inner, *extras = get_args(tp)
        value = coerce(value, inner, where)
        for bounds in extras:
            if isinstance(bounds, Bounds) and not bounds.contains(value):
                raise ConfigError(f"{where}: must be {bounds.describe()}, got {value!r}")
        return value
    if origin is Literal:
        if isinstance(value, str) and value not in get_args(tp):  # "3" from --config for 3
            value = next((a for a in get_args(tp) if str(a) == value), value)
        if value not in get_args(tp):
            raise ConfigError(f"{where}: {value!r} is not allowed; use {_type_name(tp)}")
        return value
    if origin in (typing.Union, types.UnionType):
        for option in get_args(tp):
            if option is type(None) and value is None:
                return None
            try:
                return coerce(value, option, where)
            except ConfigError:
                continue
        allowed = " or ".join(_type_name(a) for a in get_args(tp))
        raise ConfigError(f"{where}: expected {allowed}, got {value!r}")
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        args = get_args(tp)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],)
        if origin is tuple and args and len(args) > 1:
            if len(value) != len(args):
                raise ConfigError(f"{where}: expected {len(args)} entries, got {len(value)}")
            return tuple(coerce(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
        inner = args[0] if args else Any
        return tuple(coerce(v, inner, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        _, value_tp = get_args(tp) or (str, Any)
        return {k: coerce(v, value_tp, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return parse_config(tp, value, where)
    if isinstance(value, str) and tp in (int, float, bool):
        value = _from_command_line(value, tp, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    raise TypeError(f"{where}: unsupported config annotation {tp!r}")


def _from_command_line(text: str, tp: type, where: str) -> Any:
    """Snakemake passes nested ``--config`` values as strings ('200', '1e-3', 'true'), and its
    YAML 1.1 loader keeps '1e-6' as one: read them as the field's type, or fail naming the field."""
    if tp is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise ConfigError(f"{where}: expected true or false, got {text!r}")
    try:
        return tp(text) if tp is float else int(text)
    except ValueError:
        kind = "an integer" if tp is int else "a number"
        raise ConfigError(f"{where}: expected {kind}, got {text!r}") from None


def parse_config(cls: type[T], values: Mapping[str, Any], where: str) -> T:
    """Build the frozen dataclass ``cls`` from ``values``, naming the first bad field."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {values!r}")
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown field; allowed: {', '.join(fields)}")
    # values given first (a wrong one is the likelier mistake), then what is missing
    kwargs = {name: coerce(values[name], hints[name], f"{where}.{name}")
              for name in fields if name in values}
    for name, value in kwargs.items():
        if name == "seeds" or name.endswith("_seeds"):
            check_seeds(value, f"{where}.{name}")
        elif typing.get_origin(hints[name]) is tuple and \
                typing.get_args(hints[name]) == (str, Ellipsis):
            repeated = sorted({v for v in value if value.count(v) > 1})
            if repeated:  # a list of names (datasets, models, tasks): each job once
                raise ConfigError(f"{where}.{name}: {repeated[0]!r} is listed twice; the "
                                  "entries must be distinct")
    for name, field in fields.items():
        if name not in values and field.default is dataclasses.MISSING \
                and field.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}.{name}: missing (type {_type_name(hints[name])})")
    return cls(**kwargs)


def check_seeds(seeds: Any, where: str) -> None:
    """A list of seeds is non-empty and has no repeats: a repeated seed would enter every
    interval twice and narrow it with no new information."""
    if not isinstance(seeds, (tuple, list)):
        return
    if not seeds:
        raise ConfigError(f"{where}: empty; give at least one seed (two for an interval)")
    repeated = sorted({s for s in seeds if list(seeds).count(s) > 1})
    if repeated:
        raise ConfigError(f"{where}: seed {repeated[0]} is listed twice; seeds must be distinct")
    negative = [s for s in seeds if isinstance(s, int) and s < 0]
    if negative:
        raise ConfigError(f"{where}: seed {negative[0]} is negative; seeds are non-negative "
                          "integers (as --seed)")


def check_method_config(module: Any, cfg: Any) -> None:
    """Run the cross-field ``check(cfg)`` the method's ``cli`` module may define (it raises
    :class:`ConfigError`). Core runs it where the config is parsed, so a stage's own code reads
    only the fields it uses."""
    check = getattr(module, "check", None)
    if check is not None:
        check(cfg)


def parse_method_config(module: Any, values: Mapping[str, Any], where: str) -> Any:
    """The method's typed, checked ``Config`` (``module`` is its ``cli``)."""
    cfg = parse_config(module.Config, values, where)
    check_method_config(module, cfg)
    return cfg


def config_hash(values: Mapping[str, Any]) -> str:
    """Short stable hash of a resolved config (recorded in every results file)."""
    blob = json.dumps(values, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def as_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(cfg)


class NotATrigger:
    """A rule parameter that Snakemake's params trigger does not see: its metadata records only
    parameters of builtin types, so a value of this class (formatted into the shell command as
    its text) can change without rerunning the rule. Rule ``stage_config`` passes the stage's
    config file this way, so only the slice hash, a plain parameter, decides a rerun."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


def config_slice(cfg: Any, reads: tuple[str, ...] | None) -> dict[str, Any]:
    """The values of the fields a stage declares it reads (all fields when ``reads`` is None)."""
    values = as_dict(cfg)
    if reads is None:
        return values
    unknown = sorted(set(reads) - set(values))
    if unknown:
        raise TypeError(f"reads names {unknown[0]!r}, which is not a field of {type(cfg).__name__}")
    return {name: values[name] for name in sorted(reads)}


class UndeclaredConfigRead(RuntimeError):
    """A stage read a config field outside its declared slice: a bug in the method's code."""


class DeclaredConfig:
    """A stage's view of its method's ``Config``: the fields it declares (``@stage(reads=...)``)
    and the properties and methods computed from them.

    Snakemake reruns a stage's jobs only when its slice of the config changes, so a read of any
    other field would let a job keep a result computed from an old value; it raises
    :class:`UndeclaredConfigRead` instead.
    """

    __slots__ = ("_cfg", "_reads", "_where")

    def __init__(self, cfg: Any, reads: tuple[str, ...], where: str):
        config_slice(cfg, reads)  # every declared name is a field
        object.__setattr__(self, "_cfg", cfg)
        object.__setattr__(self, "_reads", frozenset(reads))
        object.__setattr__(self, "_where", where)

    def __getattr__(self, name: str) -> Any:
        cfg = object.__getattribute__(self, "_cfg")
        if name in {f.name for f in dataclasses.fields(cfg)}:
            if name not in object.__getattribute__(self, "_reads"):
                where = object.__getattribute__(self, "_where")
                raise UndeclaredConfigRead(
                    f"{where} reads config field '{name}', which its @stage(reads=...) does not "
                    "declare; add it there, or the job will not rerun when it changes")
            return getattr(cfg, name)
        import inspect

        attr = inspect.getattr_static(type(cfg), name)  # AttributeError if there is none
        if isinstance(attr, property):
            return attr.fget(self)
        if inspect.isfunction(attr):
            return types.MethodType(attr, self)
        return getattr(cfg, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __repr__(self) -> str:
        cfg = object.__getattribute__(self, "_cfg")
        reads = sorted(object.__getattribute__(self, "_reads"))
        return f"{type(cfg).__name__}[{', '.join(f'{r}={getattr(cfg, r)!r}' for r in reads)}]"
