"""End to end at smoke scale: every stage through the CLI in a temporary folder."""

import json
from pathlib import Path

import yaml

from repro26.core.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, **smoke) -> Path:
    section = yaml.safe_load((ROOT / "config/methods/nbffg.yaml").read_text())
    section["nbffg"]["smoke"].update(smoke)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"scale": "smoke", **section}))
    return path


def test_smoke_end_to_end(tmp_path):
    tasks = ["linear_balanced_4", "ctmc_random_4"]
    cfg = _config(tmp_path, tasks=tasks)
    base = ["--config", str(cfg), "--scale", "smoke", "--threads", "1", "--no-progress"]
    out = tmp_path / "results"
    run = lambda *args: main(["nbffg", *args, *base])  # noqa: E731
    tables, evals = [], []
    for task in tasks:
        data, model = out / "data" / f"{task}.npz", out / "train" / task / "seed0.eqx"
        metrics = out / "eval" / task / "seed0.csv"
        assert run("data", "--variant", task, "--seed", "0", "--out", str(data)) == 0
        assert run("train", "--variant", task, "--seed", "0", "--input", str(data), "--out",
                   str(model)) == 0
        history = out / "train" / task / "seed0_history.csv"
        assert history.is_file()
        assert run("evaluate", "--variant", task, "--seed", "0", "--input", str(data), str(model),
                   "--out", str(metrics)) == 0
        tables += [str(metrics), str(metrics.with_name("seed0_nodes.csv")), str(history)]
        evals.append(str(metrics))
    cost = out / "cost.csv"
    assert run("cost", "--out", str(cost)) == 0
    for fig in ("linear", "elbo_ess", "posterior", "shapes", "cost", "training", "discrete"):
        png = out / "figures" / f"{fig}.png"
        assert run(f"fig_{fig}", "--input", *tables, str(cost), "--out", str(png)) == 0
        assert png.is_file() and png.with_suffix(".pdf").is_file()
    claims = out / "claims.json"
    assert run("claims", "--input", *evals, str(cost), "--out", str(claims)) == 0
    result = json.loads(claims.read_text())
    assert [c["id"] for c in result["claims"]] == ["elbo_ess_nonlinear", "cost_flat_with_subsampling",
                                                   "ancestral_shapes"]
    assert "ctmc_random_4" in result["claims"][0]["measured"]
    metrics = out / "eval" / tasks[0] / "seed0.csv"
    # the linear task: BFFG is exact, so its ELBO is within Euler error of the exact evidence
    import numpy as np

    from repro26.core.io import read_table

    table = read_table(metrics)
    bffg = table["method"] == "bffg"
    elbo, exact = float(table["elbo"][bffg][0]), float(table["exact_log_p"][bffg][0])
    assert np.isfinite(elbo) and abs(elbo - exact) < 0.5


def test_bad_config_is_one_line_exit_2(tmp_path, capsys):
    cfg = _config(tmp_path, steps_per_edge="many")
    code = main(["nbffg", "data", "--config", str(cfg), "--scale", "smoke", "--variant",
                 "linear_balanced_4", "--seed", "0", "--out", str(tmp_path / "x.npz")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "nbffg.smoke.steps_per_edge" in err and len(err.splitlines()) == 1
    cfg = _config(tmp_path, tasks=["wiggle_balanced_4"])
    assert main(["nbffg", "data", "--config", str(cfg), "--scale", "smoke", "--variant",
                 "wiggle_balanced_4", "--seed", "0", "--out", str(tmp_path / "x.npz")]) == 2
