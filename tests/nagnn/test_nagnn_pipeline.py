"""nagnn end to end at smoke scale (stage functions in a tmp dir) and bad input handling."""

import dataclasses
from pathlib import Path

import pytest

from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.nagnn import cli

ROOT = Path(__file__).resolve().parents[2]


def _smoke():
    return resolve_run_config(cli, "nagnn", ROOT / "config" / "config.yaml", "smoke")


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages):
    """Every stage on the dsbm generator (the bipartite one runs in the smoke pipeline)."""
    run = smoke_stages("nagnn")
    cfg = run.cfg = dataclasses.replace(run.cfg, datasets=("dsbm",))

    data = tmp_path / "data" / "dsbm.npz"
    run("data", data, variant="dataset=dsbm")
    evals, losses = [], []
    for model in (*cfg.models, "heuristics"):
        inputs = [data]
        if model != "heuristics":
            ckpt = tmp_path / "runs" / "dsbm" / f"{model}.eqx"
            run("train", ckpt, [data], variant=f"model={model},dataset=dsbm")
            inputs.append(ckpt)
            losses += [ckpt.with_suffix(".csv"), ckpt.with_suffix(".fit.csv")]
        evals.append(tmp_path / "eval" / "dsbm" / f"{model}.csv")
        run("evaluate", evals[-1], inputs, variant=f"model={model},dataset=dsbm")
    run("speed", tmp_path / "speed" / "dsbm.csv", [data], variant="dataset=dsbm")
    run("tables", tmp_path / "tables", [*evals, tmp_path / "speed" / "dsbm.csv", *losses])
    tables = [tmp_path / "tables" / f"{t}.csv" for t in ("metrics", "speed", "loss", "training")]
    claims = run.figures_and_claims(tmp_path, tables, [tables[0], tables[1], tables[3]])
    assert list(claims) == ["ap_matches_event_based", "several_times_faster",
                            "beats_snapshot_baseline"]
    metrics = (tmp_path / "tables" / "metrics.csv").read_text()
    assert all(m in metrics for m in ("nagnn", "tgn", "edgebank", "common_neighbours"))


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    section = (ROOT / "config" / "methods" / "nagnn.yaml").read_text()
    bad.write_text("scale: smoke\n" + section.replace("lsh_bits: 3", "lsh_bits: many"))
    assert main(["nagnn", "data", "--config", str(bad), "--variant", "dataset=dsbm",
                 "--out", str(tmp_path / "d.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lsh_bits" in err[0]


@pytest.mark.parametrize("variant", ["dsbm", "dataset=nope", "model=nagnn"])
def test_data_variant_must_name_a_configured_dataset(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("nagnn", "data", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.npz", variant=variant, progress=False)


def test_unknown_model_is_a_config_error(tmp_path):
    scale, cfg, _ = _smoke()
    bad = dataclasses.replace(cfg, models=("nagnn", "dyrep"))
    with pytest.raises(ConfigError, match="models"):
        run_stage("nagnn", "data", cfg=bad, scale=scale, out=tmp_path / "x.npz",
                  variant="dataset=dsbm", progress=False)
