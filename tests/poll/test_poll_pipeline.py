"""poll end to end at smoke scale (stage functions in a tmp dir) and bad-input handling."""

import dataclasses
from pathlib import Path

import pytest

from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.poll import cli

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("summary", "trajectories", "ops", "incentives", "detection")


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages):
    """Every stage at smoke scale; every game pads to one shape, so Poll compiles once."""
    run = smoke_stages("poll")
    cfg = run.cfg

    for fam in cli.graph_jobs(cfg):
        run("data", tmp_path / "data" / f"{fam}.npz", variant=f"family={fam}")
    runs = []
    for fam in dict.fromkeys(f for f, _, _ in cli.poll_jobs(cfg)):
        out = tmp_path / "runs" / "poll" / f"{fam}.csv"
        run("poll", out, [tmp_path / "data" / f"{fam}.npz"], f"family={fam}")
        runs += [out, out.with_name(out.stem + "_traj.csv")]
    for fam in cli.exact_jobs(cfg):
        out = tmp_path / "runs" / "exact" / f"{fam}.csv"
        run("exact", out, [tmp_path / "data" / f"{fam}.npz"], f"family={fam}")
        runs.append(out)
    adv = tmp_path / "runs" / "adversary"
    run("adversary", adv, [tmp_path / "data" / f"{cfg.adversary_family}.npz"])
    run("evaluate", tmp_path / "tables", [*runs, adv / "incentives.csv", adv / "detection.csv"])
    tables = [tmp_path / "tables" / f"{t}.csv" for t in TABLES]
    claims = run.figures_and_claims(tmp_path, tables)
    assert list(claims) == ["converges", "queries_scale", "fewer_operations",
                            "truthful_best_response", "detects_adversaries"]
    for fam in claims["converges"]["measured"]["families"].values():
        # Poll ends below the strongest trivial baseline on every family
        assert fam["final_price_error"]["mean"] < fam["trivial_price_error"][fam["strongest_trivial"]]
    fp = claims["detects_adversaries"]["measured"]["false_positive_rate"]["mean"]
    assert abs(fp - cfg.alpha) < 0.02
    for claim in claims.values():  # the ideal row, or the reason there is none
        assert claim["ideal"] is not None or claim["ideal_note"]
    assert claims["truthful_best_response"]["measured"]["horizons"] == list(cfg.incentive_horizons)


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\npoll:\n  common: {walk_length: long}\n"
                   "  smoke: {seeds: [0], families: [er], ns: [40], real_networks: [],\n"
                   "          sweep_families: [], sweep_n: 40, heterogeneities: [1.0],"
                   " rounds: 64}\n  small: {}\n  paper: {}\n")
    assert main(["poll", "data", "--config", str(bad), "--variant", "family=er",
                 "--out", str(tmp_path / "d.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "walk_length" in err[0]


@pytest.mark.parametrize("variant", ["er", "family=nope", "family=er,n=40"])
def test_poll_variant_must_name_a_family(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("poll", "poll", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.csv", variant=variant, progress=False)


@pytest.mark.parametrize("field,value", [("families", ("er", "lattice")),
                                         ("peer_strength", 0.6),
                                         ("activity_values", (1.0,)),
                                         ("incentive_horizons", (512,))])
def test_bad_settings_are_config_errors(tmp_path, field, value):
    scale, cfg, _ = resolve_run_config(cli, "poll", ROOT / "config" / "config.yaml", "smoke")
    bad = dataclasses.replace(cfg, **{field: value})
    with pytest.raises(ConfigError, match=field):
        run_stage("poll", "data", cfg=bad, scale=scale, out=tmp_path / "d.npz",
                  variant="family=er", progress=False)
