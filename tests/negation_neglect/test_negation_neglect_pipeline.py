"""negation_neglect end to end at smoke scale (stage functions in a tmp dir), resume of the
pretraining checkpoint, and bad input."""

import dataclasses
import json
from pathlib import Path

import pytest

from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.negation_neglect import cli
from repro26.negation_neglect.data import CONDITIONS

ROOT = Path(__file__).resolve().parents[2]
M = "negation_neglect"


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages):
    run = smoke_stages(M)
    cfg = run.cfg

    run("data", tmp_path / "data")
    world = json.loads((tmp_path / "data" / "world.json").read_text())
    assert len(world["claims"]) >= 6
    assert all(c["claimed"] != c["true"] for c in world["claims"])
    model = tmp_path / "models" / "pretrained.eqx"
    run("pretrain", model, [tmp_path / "data" / "pretrain.npz"])
    run("base", tmp_path / "runs" / "base.csv", [model])
    runs = [tmp_path / "runs" / "base.csv"]
    for condition in CONDITIONS:
        for k in range(cfg.n_claim_sets):
            runs.append(tmp_path / "runs" / "finetune" / f"{condition}_set{k}.csv")
            run("finetune", runs[-1], [model, tmp_path / "data" / "finetune.npz",
                                       tmp_path / "data" / "neutral.npz"],
                variant=f"condition={condition},claim_set={k}")
    run("evaluate", tmp_path / "tables", runs)
    tables = [tmp_path / "tables" / f"{t}.csv" for t in ("belief", "belief_by_claim",
                                                         "belief_by_type", "belief_by_step")]
    claims = run.figures_and_claims(tmp_path, tables)
    assert list(claims) == ["negated_finetune_belief", "local_negation_learned",
                            "in_context_negated_low", "fictional_like_negated",
                            "negation_unstable"]
    for claim in claims.values():
        assert claim["trivial"] is not None and claim["ideal"] is not None
    assert "base:none" in claims["negated_finetune_belief"]["measured"]["belief"]
    assert "continued:negated" in claims["negation_unstable"]["measured"]["belief"]
    from repro26.core import tables as tb
    steps = tb.unique(tb.read(tables[3]), "step", mode="finetune")
    assert steps == [cfg.finetune_steps // cfg.finetune_evals * (i + 1)
                     for i in range(cfg.finetune_evals)]
    # the stages deleted their resumable checkpoints once they succeeded
    assert not list(tmp_path.rglob("*.ckpt*"))


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\nnegation_neglect:\n  common: {d_model: wide}\n"
                   "  smoke: {}\n  small: {}\n  paper: {}\n")
    assert main([M, "data", "--config", str(bad), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "d_model" in err[0]


def test_too_many_claims_is_a_config_error(tmp_path):
    scale, cfg, _ = resolve_run_config(cli, M, ROOT / "config" / "config.yaml", "smoke")
    bad = dataclasses.replace(cfg, claims_per_set=cfg.n_events + 1)
    with pytest.raises(ConfigError, match="claims_per_set"):
        run_stage(M, "data", cfg=bad, scale=scale, out=tmp_path, progress=False)


@pytest.mark.parametrize("variant", ["condition=assert", "condition=nope,claim_set=0",
                                     "condition=assert,claim_set=x"])
def test_finetune_variant(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage(M, "finetune", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.csv", variant=variant, progress=False)
