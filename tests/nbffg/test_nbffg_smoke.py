"""End to end at smoke scale: every stage through ``run_stage`` (the CLI's path) in a temporary
folder laid out as the pipeline lays out results/<scale>/nbffg."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import UsageError
from repro26.core.io import read_table
from repro26.nbffg import cli
from repro26.nbffg.claims import CLAIMS
from repro26.nbffg.figures import FIGURES

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, **smoke) -> Path:
    section = yaml.safe_load((ROOT / "config/methods/nbffg.yaml").read_text())
    section["nbffg"]["smoke"].update(smoke)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"scale": "smoke", **section}))
    return path


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path):
    scale, cfg, _ = resolve_run_config(cli, "nbffg", ROOT / "config" / "config.yaml", "smoke")
    assert len(cfg.seeds) >= 2 and any(t.startswith("shapes") for t in cfg.tasks)
    out = tmp_path / "results"

    def run(stage, target, inputs=(), variant=None, seed=None, name=None):
        run_stage("nbffg", stage, name=name, cfg=cfg, scale=scale, out=out / target,
                  inputs=[out / p for p in inputs], variant=variant, seed=seed, progress=False)

    for task in cfg.tasks:
        data = [f"data/{task}/seed{s}.npz" for s in cfg.seeds]
        models = [f"train/{task}/seed{s}.eqx" for s in cfg.seeds]
        run("data", f"data/{task}", variant=f"task={task}")
        run("train", f"train/{task}", data, variant=f"task={task}")
        run("evaluate", f"eval/{task}", [*data, *models], variant=f"task={task}")
        for seed in cfg.seeds:
            assert (out / f"train/{task}/seed{seed}_history.csv").is_file()
            assert (out / f"eval/{task}/seed{seed}_nodes.csv").is_file()
    run("cost", "cost.csv")
    for name, fig in FIGURES.items():  # each figure gets only the tables it declares
        run("figure", f"figures/{name}.png", fig.input_paths(cfg), name=name)
        assert (out / "figures" / f"{name}.pdf").is_file()
        assert (out / "figures" / f"{name}.rst").read_text().strip()
    run("claims", "claims.json", CLAIMS.input_paths(cfg))
    result = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in result["claims"]] == ["elbo_ess_nonlinear", "cost_flat_with_subsampling",
                                                   "ancestral_shapes"]
    assert "ctmc_random_4" in result["claims"][0]["measured"]["tasks"]
    assert {c["verdict"] for c in result["claims"]} <= {"held", "not held", "inconclusive"}
    assert validate_claims_file(out / "claims.json") == []
    # the linear task: BFFG is exact, so its ELBO is within Euler error of the exact evidence
    table = read_table(out / "eval" / "linear_balanced_4" / "seed0.csv")
    bffg = table["method"] == "bffg"
    elbo, exact = float(table["elbo"][bffg][0]), float(table["exact_log_p"][bffg][0])
    assert np.isfinite(elbo) and abs(elbo - exact) < 0.5


def test_figure_inputs_follow_the_task_list():
    scale, cfg, _ = resolve_run_config(cli, "nbffg", ROOT / "config" / "config.yaml", "small")
    shapes = FIGURES["shapes"].input_paths(cfg)
    assert shapes == [f"eval/shapes_random_16/seed{s}.csv" for s in cfg.seeds] + \
        ["eval/shapes_random_16/seed0_nodes.csv"]
    assert all(p.startswith(("eval/ctmc_", "train/ctmc_")) for p in
               FIGURES["discrete"].input_paths(cfg))
    without_linear = dataclasses.replace(cfg, tasks=("ctmc_random_16",))
    assert FIGURES["linear"].input_paths(without_linear) == []
    claims = CLAIMS.input_paths(cfg)
    assert len(claims) == len(cfg.tasks) * len(cfg.seeds) + 1 and claims[-1] == "cost.csv"


def test_bad_config_is_one_line_exit_2(tmp_path, capsys):
    cfg = _config(tmp_path, steps_per_edge="many")
    code = main(["nbffg", "data", "--config", str(cfg), "--scale", "smoke", "--variant",
                 "task=linear_balanced_4", "--out", str(tmp_path / "x")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "nbffg.smoke.steps_per_edge" in err and len(err.splitlines()) == 1
    cfg = _config(tmp_path, tasks=["wiggle_balanced_4"])
    assert main(["nbffg", "data", "--config", str(cfg), "--scale", "smoke", "--variant",
                 "task=wiggle_balanced_4", "--out", str(tmp_path / "x")]) == 2


@pytest.mark.parametrize("variant", ["linear_balanced_4", "task=linear_balanced_8",
                                     "task=linear_balanced_4,seed=0"])
def test_task_variant_is_checked(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("nbffg", "data", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x", variant=variant, progress=False)


def test_per_task_stage_writes_a_folder_and_takes_no_seed(tmp_path):
    config = ROOT / "config" / "config.yaml"
    with pytest.raises(UsageError, match="--out"):
        run_stage("nbffg", "data", config=config, scale="smoke", out=tmp_path / "x.npz",
                  variant="task=linear_balanced_4", progress=False)
    with pytest.raises(UsageError, match="--seed"):
        run_stage("nbffg", "data", config=config, scale="smoke", out=tmp_path / "x",
                  variant="task=linear_balanced_4", seed=0, progress=False)
