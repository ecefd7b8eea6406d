"""Config merge, typed parsing and the one-line / exit-2 contract for bad input."""

import dataclasses
from types import SimpleNamespace
from typing import Literal

import pytest
import yaml

from repro26.core import cli
from repro26.core.method import Stage
from repro26.core.config import (
    ConfigError,
    DeclaredConfig,
    UndeclaredConfigRead,
    UsageError,
    config_hash,
    config_slice,
    deep_merge,
    parse_config,
    resolve_section,
)


@dataclasses.dataclass(frozen=True)
class Inner:
    rate: float
    name: str = "x"


@dataclasses.dataclass(frozen=True)
class Config:
    steps: int
    seeds: tuple[int, ...]
    kernel: Literal["rbf", "matern32"]
    lr: float = 1e-3
    verbose: bool = False
    inner: Inner = Inner(0.5)


SECTION = {
    "common": {"kernel": "rbf", "lr": 0.01, "inner": {"rate": 0.1, "name": "common"}},
    "smoke": {"steps": 10, "seeds": [0]},
    "small": {"steps": 100, "seeds": [0, 1, 2], "inner": {"rate": 0.2}},
    "paper": {"steps": 10000, "seeds": list(range(10)), "kernel": "matern32"},
}


@dataclasses.dataclass(frozen=True)
class Derived(Config):
    @property
    def total(self) -> int:
        return self.steps * len(self.seeds)

    def scaled_lr(self, factor: float) -> float:
        return self.lr * factor


def test_declared_config_serves_declared_fields_and_what_they_derive():
    cfg = Derived(steps=10, seeds=(0, 1), kernel="rbf", lr=0.5)
    view = DeclaredConfig(cfg, ("steps", "seeds"), "m stage 'train'")
    assert view.steps == 10 and view.seeds == (0, 1) and view.total == 20
    with pytest.raises(UndeclaredConfigRead, match="m stage 'train' reads config field 'lr'"):
        view.lr
    with pytest.raises(UndeclaredConfigRead, match="'lr'"):
        view.scaled_lr(2.0)  # a method reading an undeclared field is caught too
    assert DeclaredConfig(cfg, ("lr",), "m").scaled_lr(2.0) == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.steps = 3
    with pytest.raises(TypeError, match="'stepz', which is not a field of Derived"):
        DeclaredConfig(cfg, ("stepz",), "m")


def test_config_slice_hash_moves_only_with_the_fields_read():
    cfg = Derived(steps=10, seeds=(0, 1), kernel="rbf", lr=0.5)
    reads = ("steps", "inner")
    assert config_slice(cfg, reads) == {"inner": {"rate": 0.5, "name": "x"}, "steps": 10}
    assert config_slice(cfg, None) == dataclasses.asdict(cfg)
    before = config_hash(config_slice(cfg, reads))
    assert config_hash(config_slice(dataclasses.replace(cfg, lr=0.1), reads)) == before
    assert config_hash(config_slice(dataclasses.replace(cfg, steps=11), reads)) != before


def test_deep_merge_overrides_leaves_and_keeps_siblings():
    merged = deep_merge({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": 20}, "e": 5})
    assert merged == {"a": 1, "b": {"c": 20, "d": 3}, "e": 5}


def test_scale_presets_merge_into_typed_config():
    cfg = parse_config(Config, resolve_section(SECTION, "small", "m"), "m.small")
    assert cfg == Config(steps=100, seeds=(0, 1, 2), kernel="rbf", lr=0.01,
                         inner=Inner(rate=0.2, name="common"))
    paper = parse_config(Config, resolve_section(SECTION, "paper", "m"), "m.paper")
    assert paper.kernel == "matern32" and len(paper.seeds) == 10
    assert isinstance(paper.inner.rate, float)


def test_config_hash_changes_with_values_only():
    a = config_hash({"x": 1, "y": [1, 2]})
    assert a == config_hash({"y": [1, 2], "x": 1})
    assert a != config_hash({"x": 2, "y": [1, 2]})


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"steps": "ten"}, "m.small.steps: expected an integer, got 'ten'"),
        ({"steps": True}, "m.small.steps: expected an integer"),
        ({"kernel": "linear"}, "m.small.kernel: 'linear' is not allowed; use one of 'rbf', 'matern32'"),
        ({"seeds": [0, "a"]}, "m.small.seeds[1]: expected an integer"),
        ({"stepz": 3}, "m.small.stepz: unknown field; allowed: steps, seeds"),
        ({"inner": {"rate": "fast"}}, "m.small.inner.rate: expected a number"),
    ],
)
def test_bad_values_name_the_field(override, message):
    values = deep_merge(resolve_section(SECTION, "small", "m"), override)
    with pytest.raises(ConfigError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        parse_config(Config, values, "m.small")


def test_missing_field_and_bad_scale():
    with pytest.raises(ConfigError, match="m.smoke.kernel: missing"):
        parse_config(Config, {"steps": 1, "seeds": [0]}, "m.smoke")
    with pytest.raises(ConfigError, match="scale: 'huge' is not allowed; use one of smoke, small, paper"):
        resolve_section(SECTION, "huge", "m")
    with pytest.raises(ConfigError, match="m.tiny: unknown key"):
        resolve_section({**SECTION, "tiny": {}}, "small", "m")


@pytest.fixture
def fake_method(monkeypatch, tmp_path):
    """A registered method whose single stage records the Run it receives."""
    calls = []
    module = SimpleNamespace(Config=Config, STAGES={"train": Stage(calls.append)})
    monkeypatch.setattr(cli, "load_method", lambda name: module)
    monkeypatch.setattr(cli, "method_figures", lambda name: {})
    monkeypatch.setattr(cli, "enable_compile_cache", lambda: None)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"scale": "small", "fake": SECTION}))
    return calls, config


def _error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_cli_runs_a_stage_with_the_typed_config(fake_method, tmp_path, monkeypatch):
    calls, config = fake_method
    monkeypatch.setattr(cli, "load_method", lambda name: SimpleNamespace(
        Config=Config, STAGES={"train": Stage(calls.append, seed=True)}))
    assert cli.main(["fake", "train", "--config", str(config), "--scale", "smoke",
                     "--seed", "3", "--out", str(tmp_path / "o.csv")]) == 0
    (run,) = calls
    assert run.cfg.steps == 10 and run.seed == 3 and run.scale == "smoke"
    assert run.meta()["config_hash"] == run.cfg_hash


def test_a_stage_declaring_reads_sees_only_its_slice(fake_method, tmp_path, monkeypatch):
    calls, config = fake_method
    sliced = Stage(calls.append, reads=("steps", "seeds"))
    monkeypatch.setattr(cli, "load_method", lambda name: SimpleNamespace(
        Config=Config, STAGES={"train": sliced}))
    assert cli.main(["fake", "train", "--config", str(config), "--scale", "smoke"]) == 0
    (run,) = calls
    assert run.cfg.steps == 10
    assert run.cfg_hash == config_hash({"seeds": [0], "steps": 10})  # the checkpoint identity too
    with pytest.raises(UndeclaredConfigRead):
        run.cfg.kernel
    calls.clear()
    planned = ["fake", "train", "--config", str(config), "--scale", "smoke", "--config-slice"]
    assert cli.main([*planned, run.cfg_hash]) == 0 and calls
    assert cli.main([*planned, "0123456789ab"]) == 2  # config.json changed after planning


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["fake", "fly"], "stage 'fly' is unknown for fake; allowed: train"),
        (["fake", "train", "--scale", "huge"], "scale: 'huge' is not allowed"),
        (["fake", "train", "--input", "/nonexistent.csv"], "--input: /nonexistent.csv does not exist"),
        (["fake", "train", "--seed", "one"], "argument --seed: invalid int value: 'one'"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(fake_method, capsys, args, expected):
    calls, config = fake_method
    assert cli.main([*args, "--config", str(config)]) == 2
    assert expected in _error_line(capsys)
    assert calls == []


def test_cli_wrong_type_in_config_file(fake_method, capsys):
    calls, config = fake_method
    bad = {**SECTION, "small": {**SECTION["small"], "steps": "many"}}
    config.write_text(yaml.safe_dump({"scale": "small", "fake": bad}))
    assert cli.main(["fake", "train", "--config", str(config)]) == 2
    assert _error_line(capsys) == "repro26: error: fake.small.steps: expected an integer, got 'many'"


def test_cli_unknown_method_and_missing_config(capsys, tmp_path):
    assert cli.main(["not_a_method", "train"]) == 2
    assert "method 'not_a_method' is unknown; known: neural_ctmc" in _error_line(capsys)
    with pytest.raises(UsageError, match="does not exist"):
        cli.load_yaml(tmp_path / "absent.yaml")


def test_list_names_all_nineteen_methods(capsys):
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 19 and lines[-1].startswith("kernel_bandits")


def test_exponent_floats_load_from_yaml_and_json(tmp_path):
    (tmp_path / "c.yaml").write_text("tol: 1e-6\nlr: 3.0E+2\nname: 1e-6x\n")
    assert cli.load_yaml(tmp_path / "c.yaml") == {"tol": 1e-6, "lr": 300.0, "name": "1e-6x"}
    (tmp_path / "c.json").write_text('{"tol": 1e-06}')
    assert cli.load_yaml(tmp_path / "c.json") == {"tol": 1e-6}
    assert parse_config(Inner, {"rate": "1e-3"}, "m").rate == 1e-3  # as Snakemake's loader leaves it
