"""nbf end to end at smoke scale (stage functions in a tmp dir) and bad input handling."""

import dataclasses
from pathlib import Path

import pytest

from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.nbf import cli, evaluate

ROOT = Path(__file__).resolve().parents[2]


def _smoke():
    return resolve_run_config(cli, "nbf", ROOT / "config" / "config.yaml", "smoke")


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages):
    run = smoke_stages("nbf")
    # one evader: every stage, filter and figure runs; the dimension sweep is the smoke
    # pipeline's (CI), which compiles each joint dimension once more
    cfg = run.cfg = dataclasses.replace(run.cfg, evaders=(1,))

    data = tmp_path / "data"
    run("data", data)
    curves, runs = [], []
    for k in cfg.evaders:
        run("train", tmp_path / "models" / f"gde_k{k}.eqx", [data / "pool.npz"], f"evaders={k}")
        curves.append(tmp_path / "models" / f"gde_k{k}.csv")
    for k, dyn, n in evaluate.scenarios(cfg):
        path = tmp_path / "runs" / f"k{k}_{dyn}_n{n}.csv"
        run("filter", path, [tmp_path / "models" / f"gde_k{k}.eqx", data / "episodes.npz",
                                data / "pool.npz"],
            f"evaders={k},dynamics={dyn},particles={n}")
        runs += [path, path.with_name(path.stem + "_steps.csv")]
    run("evaluate", tmp_path / "tables", runs + curves)
    tables = tmp_path / "tables"
    header = (tables / "filtering.csv").read_text()
    assert all(f in header for f in evaluate.FILTERS)
    inputs = [tables / "filtering.csv", tables / "steps.csv", tables / "training.csv"]
    claims = run.figures_and_claims(tmp_path, inputs)
    assert list(claims) == ["multimodal_tracking", "dimension_scaling", "zero_shot"]


@pytest.mark.parametrize("old, new, field", [
    ("held_in: walk", "held_in: sprint", "held_in"),
    ("warmup_steps: 4\n", "warmup_steps: 40\n", "warmup_steps"),
    ("ema_decay: 0.9\n", "ema_decay: 1.0\n", "ema_decay")])
def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys, old, new, field):
    bad = tmp_path / "config.yaml"
    text = (ROOT / "config" / "methods" / "nbf.yaml").read_text()
    assert old in text
    bad.write_text("scale: smoke\n" + text.replace(old, new))
    assert main(["nbf", "data", "--config", str(bad), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0]


@pytest.mark.parametrize("variant", ["evaders=1", "evaders=1,dynamics=walk,particles=7",
                                     "evaders=9,dynamics=walk,particles=32",
                                     "evaders=1,dynamics=nope,particles=32"])
def test_filter_variant_must_be_a_configured_scenario(tmp_path, variant):
    scale, cfg, _ = _smoke()
    with pytest.raises(UsageError, match="--variant"):
        run_stage("nbf", "filter", cfg=cfg, scale=scale, out=tmp_path / "x.csv",
                  variant=variant, progress=False)


def test_particles_off_grid_is_a_config_error(tmp_path):
    scale, cfg, _ = _smoke()
    with pytest.raises(ConfigError, match="particles"):
        run_stage("nbf", "data", cfg=dataclasses.replace(cfg, particles=999), scale=scale,
                  out=tmp_path, progress=False)
