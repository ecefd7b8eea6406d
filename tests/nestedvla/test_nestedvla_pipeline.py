"""nestedvla end to end at smoke scale (stage functions in a tmp dir), and bad input."""

import json
from pathlib import Path

import pytest

from repro26.core import tables
from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import UsageError
from repro26.nestedvla import cli
from repro26.nestedvla.evaluate import METHODS

ROOT = Path(__file__).resolve().parents[2]
M = "nestedvla"


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path):
    scale, cfg, _ = resolve_run_config(cli, M, ROOT / "config" / "config.yaml", "smoke")

    def run(stage, out, inputs=(), name=None):
        run_stage(M, stage, name=name, cfg=cfg, scale=scale, out=out, inputs=inputs,
                  progress=False)

    demos, models = tmp_path / "data" / "demos.npz", tmp_path / "models"
    run("data", tmp_path / "data")
    run("base", models / "base.eqx", [demos])
    run("adapters", models / "adapters.eqx", [demos, models / "base.eqx"])
    run("joint", models / "joint.eqx", [demos, models / "base.eqx"])
    run("nested", models / "nested.eqx", [demos, models / "base.eqx", models / "adapters.eqx"])
    run("evaluate", tmp_path / "tables",
        [models / f"{m}.eqx" for m in ("base", "adapters", "joint", "nested")])
    success = tables.read(tmp_path / "tables" / "success.csv")
    assert set(success["method"].tolist()) == set(METHODS)
    per_suite = (len(METHODS) - 1) * (cfg.n_tasks + cfg.n_heldout) + cfg.n_tasks  # no finetune
    n_rows = len(cfg.seeds) * 3 * per_suite                                  # on held-out tasks
    assert len(success["method"]) == n_rows
    assert ((success["success"] >= 0) & (success["success"] <= 1)).all()
    inputs = [tmp_path / "tables" / f"{t}.csv"
              for t in ("success_by_suite", "heldout_by_suite", "generated_adapters")]
    generated = tables.read(inputs[2])
    assert len(generated["seed"]) == len(cfg.seeds) * 3 * (cfg.n_tasks + cfg.n_heldout)
    assert (generated["delta_norm_ratio"] >= 0).all()
    train_rows = generated["split"] == "train"
    assert (generated["reconstruction_error"][train_rows] >= 0).all()
    assert (generated["same_shape_gap"] > 0).all()  # same-shape layers differ
    for fig in ("success_by_suite", "heldout_success", "generated_adapters"):
        run("figure", tmp_path / "figures" / f"{fig}.png", inputs, name=fig)
        assert (tmp_path / "figures" / f"{fig}.pdf").is_file()
    run("claims", tmp_path / "claims.json", inputs)
    out = json.loads((tmp_path / "claims.json").read_text())
    ids = [c["id"] for c in out["claims"]]
    assert ids == ["beats_strongest_merging", "near_finetune_one_suite"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in out["claims"])
    assert validate_claims_file(tmp_path / "claims.json") == []
    assert all(c["ideal"] is not None and c["trivial"] is not None and c["budget"]
               for c in out["claims"])
    assert not list(tmp_path.rglob("*.ckpt*"))


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\nnestedvla:\n  common: {width: wide}\n"
                   "  smoke: {}\n  small: {}\n  paper: {}\n")
    assert main([M, "data", "--config", str(bad), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "width" in err[0]


def test_mt10_without_metaworld_is_one_line_exit_2(tmp_path, capsys):
    try:
        import metaworld  # noqa: F401
        pytest.skip("metaworld is installed here")
    except ImportError:
        pass
    code = main([M, "mt10", "--config", str(ROOT / "config" / "config.yaml"), "--scale", "smoke",
                 "--out", str(tmp_path / "mt10_success.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "metaworld" in err[0]
    assert not (tmp_path / "mt10_success.csv").exists()


def test_missing_input_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="demos.npz"):
        run_stage(M, "base", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "b.eqx", inputs=[], progress=False)
