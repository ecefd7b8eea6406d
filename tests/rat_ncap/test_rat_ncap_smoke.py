"""End to end at smoke scale through the CLI: every stage, determinism of a fixed seed."""

import json
from pathlib import Path

import numpy as np

from repro26.core.cli import main

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "config" / "config.yaml")


def _stage(*args):
    assert main(["rat_ncap", *args, "--config", CONFIG, "--scale", "smoke", "--threads", "1", "--no-progress"]) == 0


def test_smoke_end_to_end(tmp_path):
    runs = {}
    for variant in ("ncap-torque-refined", "mlp-torque-refined"):
        out = tmp_path / "runs" / variant / "seed0.json"
        _stage("train", "--variant", variant, "--seed", "0", "--out", str(out))
        runs[variant] = out
    # a fixed seed gives identical rollouts, hence identical ES trajectories and parameters
    again = tmp_path / "again" / "seed0.json"
    _stage("train", "--variant", "ncap-torque-refined", "--seed", "0", "--out", str(again))
    first, second = json.loads(runs["ncap-torque-refined"].read_text()), json.loads(again.read_text())
    np.testing.assert_array_equal(first["params"], second["params"])
    assert first["final_center_fitness"] == second["final_center_fitness"]
    assert (runs["ncap-torque-refined"].with_suffix(".csv").read_text().split("\n")[8:]
            == again.with_suffix(".csv").read_text().split("\n")[8:])

    evals = []
    for variant, path in runs.items():
        out = tmp_path / "eval" / f"{variant}.csv"
        _stage("evaluate", "--variant", variant, "--input", str(path), "--out", str(out))
        evals.append(str(out))
    tables = evals + [str(p.with_suffix(".csv")) for p in runs.values()]
    for fig in ("learning_curves", "gait_vs_speed", "interfaces", "ablations", "params_vs_reward"):
        png = tmp_path / "figures" / f"{fig}.png"
        _stage(f"figure_{fig}", "--input", *tables, "--out", str(png))
        assert png.stat().st_size > 0 and png.with_suffix(".pdf").is_file()
    # full-rodent transfer: runs with the optional extra dm-control, else a one-row table saying so
    rodent_csv = tmp_path / "rodent.csv"
    _stage("rodent", "--input", str(runs["ncap-torque-refined"]), "--out", str(rodent_csv))
    _stage("figure_rodent_transfer", "--input", str(rodent_csv), "--out", str(tmp_path / "figures" / "rodent.png"))
    assert "status" in rodent_csv.read_text()
    _stage("claims", "--input", *evals, "--out", str(tmp_path / "claims.json"))
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["locomotion_speeds", "interface_trainability",
                                                  "v0_v3_ablation", "ncap_vs_mlp_params"]
    assert all(isinstance(c["holds"], bool) for c in claims["claims"])


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("scale: smoke\nrat_ncap:\n  common: {pop_size: many}\n  smoke: {}\n  small: {}\n  paper: {}\n")
    assert main(["rat_ncap", "claims", "--config", str(cfg), "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "pop_size" in err and len(err.splitlines()) == 1
    cfg.write_text("scale: smoke\nrat_ncap:\n  common: {pop_size: 4, variants: [ncap-foo-refined]}\n"
                   "  smoke: {}\n  small: {}\n  paper: {}\n")
    assert main(["rat_ncap", "train", "--config", str(cfg), "--variant", "x", "--seed", "0",
                 "--out", str(tmp_path / "r.json")]) == 2
    assert "variant" in capsys.readouterr().err
