"""progress_advantage end to end at smoke scale (stage functions in a tmp dir) and bad input."""

import dataclasses
from pathlib import Path

import pytest

from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.progress_advantage import cli

ROOT = Path(__file__).resolve().parents[2]
M = "progress_advantage"


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages, monkeypatch):
    run = smoke_stages(M)

    t, r = tmp_path / "tables", tmp_path / "runs"
    run("tabular", t)
    run("data", tmp_path / "data" / "demos.npz")
    run("train", r / "ref.eqx", [tmp_path / "data" / "demos.npz"], "model=ref")
    for m in ("rl_kl", "rl_clip"):
        run("train", r / f"{m}.eqx", [r / "ref.eqx"], f"model={m}")
    for m in ("prm", "orm"):
        run("train", r / f"{m}.eqx", [r / "rl_kl.eqx"], f"model={m}")
    run("evaluate", t, [r / f"{m}.eqx" for m in ("ref", "rl_kl", "rl_clip", "prm", "orm")])
    # without the memory its compiled evaluation needs, evaluate refuses in one line
    from repro26.core import memory
    monkeypatch.setattr(memory, "available_bytes", lambda: 1024)
    with pytest.raises(UsageError, match=r"^evaluation of .* needs about [^\n]*$"):
        run("evaluate", tmp_path / "refused", [r / f"{m}.eqx" for m in
                                               ("ref", "rl_kl", "rl_clip", "prm", "orm")])
    monkeypatch.undo()
    final = (t / "tabular_final.csv").read_text()
    assert "corr_learned" in final
    inputs = [t / f for f in ("bon.csv", "auroc.csv", "attribution.csv", "beam.csv",
                              "tabular_final.csv",
                              "tabular_curve.csv", "tabular_scatter.csv")]
    claims = run.figures_and_claims(tmp_path, inputs)
    assert list(claims) == ["beats_confidence", "surpasses_reward_models", "tabular_identity"]
    # the closed-form optimal policy satisfies the identity (a check of soft value iteration)
    assert claims["tabular_identity"]["ideal_passes"]
    assert claims["tabular_identity"]["measured"]["max_abs_err_closed_form"] < 1e-4


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text(f"scale: smoke\n{M}:\n  common: {{fault: often}}\n  smoke: {{}}\n"
                   "  small: {}\n  paper: {}\n")
    assert main([M, "data", "--config", str(bad), "--out", str(tmp_path / "d.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fault" in err[0]


def test_out_of_range_values_are_config_errors(tmp_path):
    scale, cfg, _ = resolve_run_config(cli, M, ROOT / "config" / "config.yaml", "smoke")
    for bad in ({"fault": 1.5}, {"pits": ((9, 9),)}, {"bon_ns": (1, 99)}, {"kl_coef": 0.0}):
        with pytest.raises(ConfigError):
            run_stage(M, "data", cfg=dataclasses.replace(cfg, **bad), scale=scale,
                      out=tmp_path / "d.npz", progress=False)


def test_train_variant_must_name_a_model(tmp_path):
    with pytest.raises(UsageError, match="--variant"):
        run_stage(M, "train", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.eqx", variant="model=nope", progress=False)
