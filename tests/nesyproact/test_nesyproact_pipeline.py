"""nesyproact end to end at smoke scale (stage functions in a tmp dir) and bad input."""

import dataclasses
import json
from pathlib import Path

import pytest

from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.nesyproact import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke():
    scale, cfg, _ = resolve_run_config(cli, "nesyproact", ROOT / "config" / "config.yaml",
                                       "smoke")
    return scale, dataclasses.replace(cfg, seeds=(0, 1), tasks_per_domain=3)


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke):
    scale, cfg = smoke

    def run(stage, out, inputs=(), seed=None, variant=None, name=None):
        run_stage("nesyproact", stage, name=name, cfg=cfg, scale=scale, out=out, seed=seed,
                  variant=variant, inputs=inputs, progress=False)

    run("data", tmp_path / "data" / "tasks.csv")
    runs = []
    for policy in cfg.policies:
        for seed in cfg.seeds:
            path = tmp_path / "runs" / policy / f"seed{seed}.csv"
            run("run", path, seed=seed, variant=f"policy={policy}")
            runs.append(path)
    run("evaluate", tmp_path / "tables", runs)
    table = [tmp_path / "tables" / "summary.csv"]
    for fig in cli_figures():
        run("figure", tmp_path / "figures" / f"{fig}.png", table, name=fig)
        assert (tmp_path / "figures" / f"{fig}.pdf").is_file()
    run("claims", tmp_path / "claims.json", table)
    out = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in out["claims"]] == ["gain_over_asi_all_domains",
                                                "gain_persists_weak_policy"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in out["claims"])
    assert validate_claims_file(tmp_path / "claims.json") == []
    for c in out["claims"]:
        assert c["ideal"] is not None and c["trivial"] is not None and c["budget"]


def cli_figures():
    from repro26.nesyproact.figures import FIGURES

    return list(FIGURES)


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\nnesyproact:\n  common: {max_reprompts: many}\n"
                   "  smoke: {seeds: [0], tasks_per_domain: 2, fault_scales: [1.0],\n"
                   "          faults: {silent: 0, stale: 0, cached: 0, popup: 0, delay: 0,\n"
                   "                   ambiguous: 0},\n"
                   "          policies: {ideal: {misground: 0, hallucinate: 0, skip: 0,\n"
                   "                             misread: 0, misplan: 0}}}\n"
                   "  small: {}\n  paper: {}\n")
    assert main(["nesyproact", "data", "--config", str(bad), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_reprompts" in err[0]


def test_unknown_domain_and_rates_are_config_errors(tmp_path, smoke):
    scale, cfg = smoke
    for bad in (dataclasses.replace(cfg, domains=("shop", "bank")),
                dataclasses.replace(cfg, claim_fault_scale=7.0),
                dataclasses.replace(cfg, ideal_policy="strong"),
                dataclasses.replace(cfg, faults=dataclasses.replace(cfg.faults, silent=1.5))):
        with pytest.raises(ConfigError):
            run_stage("nesyproact", "data", cfg=bad, scale=scale, out=tmp_path / "t.csv",
                      progress=False)


def test_run_needs_a_known_policy(tmp_path, smoke):
    scale, cfg = smoke
    with pytest.raises(UsageError, match="--variant policy"):
        run_stage("nesyproact", "run", cfg=cfg, scale=scale, out=tmp_path / "x.csv", seed=0,
                  variant="policy=endpoint", progress=False)
