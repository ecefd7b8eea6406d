"""The method protocol: --variant grammar, tables, three-valued claims, figure/claims stages,
and one source of truth for every method's config (the Config dataclass)."""

import dataclasses
import re
import typing
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
import yaml
from scipy import stats as sps

from repro26.core import plotting, tables
from repro26.core.claims import Claim, verdict_of
from repro26.core.cli import main, method_claims, method_figures
from repro26.core.config import (
    SCALES,
    ConfigError,
    UsageError,
    coerce,
    parse_config,
    resolve_section,
)
from repro26.core.method import Stage, claim_set, figure, format_variant, parse_variant
from repro26.core.registry import implemented_methods, load_method

REPO = Path(__file__).resolve().parents[2]
DECLARED = {"family": str, "n": int, "lr": float, "kind": Literal["a", "b"]}


# ----------------------------------------------------------------------------- --variant


def test_variant_is_parsed_to_declared_types_and_round_trips():
    values = parse_variant("family=sbm,n=48,lr=1e-3,kind=b", DECLARED, "fit")
    assert values == {"family": "sbm", "n": 48, "lr": 1e-3, "kind": "b"}
    assert parse_variant(format_variant(**values), DECLARED, "fit") == values


@pytest.mark.parametrize(("text", "message"), [
    (None, "--variant: stage 'fit' needs family=...,n=...,lr=...,kind=..."),
    ("family=sbm,n=48,lr=1", "--variant: stage 'fit' needs kind=..."),
    ("family=sbm,n=4.5,lr=1,kind=a", "--variant n: expected an integer, got '4.5'"),
    ("family=sbm,n=4,lr=fast,kind=a", "--variant lr: expected a number, got 'fast'"),
    ("family=sbm,n=4,lr=1,kind=c", "--variant kind: 'c' is not allowed; use one of a, b"),
    ("family=sbm,n=4,lr=1,kind=a,extra=1", "--variant: 'extra=1' is not allowed"),
    ("sbm:48", "--variant: 'sbm:48' is not allowed"),
    ("family=a,family=b", "--variant: 'family' given twice"),
])
def test_bad_variant_is_one_usage_error_naming_the_key(text, message):
    with pytest.raises(UsageError, match="^" + re.escape(message)):
        parse_variant(text, DECLARED, "fit")


def test_stage_without_keys_rejects_a_variant():
    assert parse_variant(None, {}, "data") == {}
    with pytest.raises(UsageError, match="takes no variant"):
        parse_variant("n=3", {}, "data")


# ----------------------------------------------------------------------------- tables


TABLE = {"seed": np.array([0, 0, 1, 1, 0, 1]), "n": np.array([10, 20, 10, 20, 10, 10]),
         "model": np.array(["a", "a", "a", "a", "b", "b"]),
         "err": np.array([1.0, 0.5, 3.0, 1.5, 9.0, 7.0])}


def test_pivot_is_seed_by_x_and_refuses_ambiguous_cells():
    xs, values = tables.pivot(TABLE, "err", by="n", model="a")
    assert xs.tolist() == [10, 20] and values.tolist() == [[1.0, 0.5], [3.0, 1.5]]
    xs, values = tables.pivot(TABLE, "err", model="b")
    assert xs.tolist() == [10] and values.tolist() == [[9.0], [7.0]]
    with pytest.raises(ValueError, match="several rows"):
        tables.pivot(TABLE, "err")  # two models in one cell


def test_mean_ci_by_matches_student_t():
    xs, mean, half = tables.mean_ci_by(TABLE, "err", model="a")
    assert mean.tolist() == [2.0, 1.0]
    sem = sps.sem([1.0, 3.0])
    assert np.isclose(half[0], sps.t.ppf(0.975, 1) * sem)
    assert tables.per_seed(TABLE, "err", model="b", n=10).tolist() == [9.0, 7.0]
    assert tables.unique(TABLE, "model") == ["a", "b"]


def test_circular_statistics_match_scipy():
    rng = np.random.default_rng(0)
    phases = np.mod(0.95 + 0.1 * rng.standard_normal(200), 1.0)  # wraps around 0
    assert np.isclose(tables.circular_mean(phases), sps.circmean(phases, high=1.0, low=0.0))
    assert np.isclose(tables.resultant_length(phases),
                      1 - sps.circvar(phases * 2 * np.pi), atol=1e-12)
    assert np.isclose(tables.circular_distance(0.95, 0.05), 0.1)


def test_read_names_a_missing_column(tmp_path):
    from repro26.core import io

    io.write_table(tmp_path / "t.csv", {"a": [1, 2]}, {})
    with pytest.raises(UsageError, match="no column 'b'"):
        tables.read(tmp_path / "t.csv", ["a", "b"])


# ----------------------------------------------------------------------------- claims


def _claim(measured, **kw):
    return Claim.check("c", "statement", "paper", measured, lambda m: m["gap"] < 0,
                       "gap < 0", **{"ideal_note": "none in this test", **kw})


def test_claim_verdict_takes_three_values():
    undecided = lambda m: "CI wider than effect" if m["half"] > abs(m["gap"]) else None  # noqa: E731
    assert _claim({"gap": -1.0, "half": 0.1}, inconclusive_if=undecided).verdict == "held"
    assert _claim({"gap": 1.0, "half": 0.1}, inconclusive_if=undecided).verdict == "not held"
    c = _claim({"gap": -1.0, "half": 3.0}, inconclusive_if=undecided, min_detectable_effect=3.0)
    assert c.verdict == "inconclusive" and not c.holds
    assert c.inconclusive_reason == "CI wider than effect"
    record = c.to_json()
    assert record["holds"] is False and record["verdict"] == "inconclusive"
    assert verdict_of({"holds": True}) == "held"  # older claims files


# ----------------------------------------------------------------------------- stages


def test_figure_and_claims_declarations():
    @figure("tables/a.csv")
    def curve(run):
        """Caption of the curve."""

    @claim_set(inputs_from=lambda cfg: [f"runs/{s}.csv" for s in cfg.seeds])
    def claims(run):
        return []

    assert curve.name == "curve" and curve.caption == "Caption of the curve."
    assert curve.input_paths(None) == ["tables/a.csv"]
    cfg = type("C", (), {"seeds": (0, 1)})()
    assert claims.input_paths(cfg) == ["runs/0.csv", "runs/1.csv"]


def test_figure_save_is_all_or_nothing(tmp_path, monkeypatch):
    fig, axes = plotting.subplots()
    axes[0, 0].plot([0, 1], [0, 1])
    real = fig.savefig

    def fail_on_pdf(path, format=None, **kw):
        if format == "pdf":
            raise OSError("No space left on device")
        return real(path, format=format, **kw)

    monkeypatch.setattr(fig, "savefig", fail_on_pdf)
    with pytest.raises(OSError):
        plotting.save(fig, tmp_path / "f.png", caption="a |x| caption")
    assert list(tmp_path.iterdir()) == []
    fig, _ = plotting.subplots()
    plotting.save(fig, tmp_path / "f.png", caption="a |x| caption")
    assert (tmp_path / "f.rst").read_text() == "a \\|x\\| caption\n"
    assert {p.name for p in tmp_path.iterdir()} == {"f.png", "f.pdf", "f.rst"}


# ----------------------------------------------------------------------------- every method


@pytest.mark.parametrize("method", implemented_methods())
def test_method_declares_stages_figures_and_claims(method):
    module = load_method(method)
    assert all(isinstance(s, Stage) for s in module.STAGES.values()), method
    assert not {"figure", "claims"} & set(module.STAGES), "figure/claims stages come from core"
    figures = method_figures(method)
    assert figures and all(f.caption != f.name for f in figures.values()), "every figure has a caption"
    assert method_claims(method).build is not None
    fields = {f.name for f in dataclasses.fields(module.Config)}
    for name, st in module.STAGES.items():
        assert st.reads is None or set(st.reads) <= fields, f"{method} {name}: reads a non-field"


@pytest.mark.parametrize("method", implemented_methods())
def test_yaml_and_config_dataclass_agree(method):
    """The dataclass is the one source of truth: every YAML key is a field (parse_config
    rejects unknown keys) and no dataclass default contradicts the YAML's `common` value."""
    section = yaml.safe_load((REPO / "config" / "methods" / f"{method}.yaml").read_text())[method]
    Config = load_method(method).Config
    for scale in SCALES:
        parse_config(Config, resolve_section(section, scale, method), f"{method}.{scale}")
    hints = typing.get_type_hints(Config)
    for field in dataclasses.fields(Config):
        if field.name not in (section.get("common") or {}):
            continue
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            continue
        value = coerce(section["common"][field.name], hints[field.name], field.name)
        if isinstance(value, dict) and dataclasses.is_dataclass(default):
            value = {k: v for k, v in value.items()}
            default = {k: getattr(default, k) for k in value}
        elif dataclasses.is_dataclass(value):
            pass
        assert value == default, (f"{method}.{field.name}: dataclass default {default!r} "
                                  f"differs from the YAML's common value {value!r}")


def test_unknown_yaml_key_is_rejected():
    method = implemented_methods()[0]
    section = yaml.safe_load((REPO / "config" / "methods" / f"{method}.yaml").read_text())[method]
    values = {**resolve_section(section, "smoke", method), "no_such_key": 1}
    with pytest.raises(ConfigError, match=f"{method}.smoke.no_such_key: unknown field"):
        parse_config(load_method(method).Config, values, f"{method}.smoke")


def test_method_help_lists_stages(capsys):
    method = implemented_methods()[0]
    assert main([method, "--help"]) == 0
    text = capsys.readouterr().out
    assert "figure" in text and "claims" in text
    for name in load_method(method).STAGES:
        assert f"  {name}" in text


def test_stage_help_and_seed_rules(capsys):
    """``<stage> --help`` prints the stage's usage; a stage that runs every seed refuses --seed;
    a negative seed is one line."""
    from repro26.core.cli import main

    assert main(["srgw", "figure", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("repro26 srgw figure NAME") and "error_vs_n" in out
    assert main(["srgw", "claims", "--seed", "1"]) == 2
    assert "takes no --seed" in capsys.readouterr().err
