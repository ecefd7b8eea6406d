"""nemo end to end at smoke scale through the stage functions (the CLI's path), and bad input."""

import dataclasses
from pathlib import Path

import pytest

from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.nemo import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke():
    return resolve_run_config(cli, "nemo", ROOT / "config" / "config.yaml", "smoke")


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages):
    run = smoke_stages("nemo")
    # the fewest users, iterations and sizes that still run every stage of every method (the
    # full smoke DAG runs in CI's snakemake stage); two seeds, as the claims need
    run.cfg = dataclasses.replace(
        run.cfg, seeds=(0, 1), eval_users=4, planner_beam=2, horizon=4,
        ppo=dataclasses.replace(run.cfg.ppo, iterations=2, users_per_batch=4, chunk_size=1,
                                width=4, epochs=1, lookahead=2))

    run("data", tmp_path / "data")
    personas = tmp_path / "data" / "personas.npz"
    evals, learning = [], []
    for method in cli.METHODS:
        inputs = [personas]
        if method in cli.TRAINED:
            run("train", tmp_path / "runs" / method, variant=f"method={method}")
            inputs.append(tmp_path / "runs" / method / "policy.ckpt")
            learning.append(tmp_path / "runs" / method / "learning.csv")
        evals.append(tmp_path / "eval" / f"{method}.csv")
        run("evaluate", evals[-1], inputs, variant=f"method={method}")
    run("gather", tmp_path / "tables", [*evals, *learning])
    returns = (tmp_path / "tables" / "returns.csv").read_text()
    assert "alt_family" in returns and "rule_based" in returns
    tables = [tmp_path / t for t in ("data/arousal_curves.csv", "tables/learning.csv",
                                     "tables/returns.csv")]
    claims = run.figures_and_claims(tmp_path, tables, tables[2:] + tables[1:2])
    assert list(claims) == ["improves_both_user_states", "advantage_under_sim2sim",
                            "forward_simulation_improves_credit"]


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\nnemo:\n  common: {horizon: long}\n  smoke: {}\n  small: {}\n"
                   "  paper: {}\n")
    assert main(["nemo", "data", "--config", str(bad), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "horizon" in err[0]


def test_inconsistent_config_is_a_config_error(smoke):
    _, cfg, _ = smoke
    with pytest.raises(ConfigError, match="strategy_effects"):
        cli.check(dataclasses.replace(cfg, strategy_effects={"question": (0.1, 0.1)}))
    with pytest.raises(ConfigError, match="planner_beam"):
        cli.check(dataclasses.replace(cfg, planner_beam=0))


def test_cli_method_lists_match_the_modules():
    from repro26.nemo import evaluate, train

    assert set(cli.TRAINED) == set(train.TRAINED)
    assert set(cli.PLANNERS) == set(evaluate.PLANNERS)


@pytest.mark.parametrize("variant", ["nemo", "method=nope", "method=random,x=1"])
def test_train_variant_must_name_a_trained_method(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("nemo", "train", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x", variant=variant, progress=False)
