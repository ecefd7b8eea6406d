"""End to end at smoke scale through the CLI: every stage, determinism of a fixed seed."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, method_figures
from repro26.core.tables import read as read_table

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "config" / "config.yaml")


def _stage(*args):
    assert main(["rat_ncap", *args, "--config", CONFIG, "--scale", "smoke", "--threads", "1", "--no-progress"]) == 0


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path):
    runs = {}
    for variant in ("ncap-torque-refined", "mlp-torque-refined"):
        out = tmp_path / "runs" / variant / "seed0.json"
        _stage("train", "--variant", f"variant={variant}", "--seed", "0", "--out", str(out))
        runs[variant] = out
    # a fixed seed gives identical rollouts, hence identical ES trajectories and parameters
    again = tmp_path / "again" / "seed0.json"
    _stage("train", "--variant", "variant=ncap-torque-refined", "--seed", "0", "--out", str(again))
    first, second = json.loads(runs["ncap-torque-refined"].read_text()), json.loads(again.read_text())
    np.testing.assert_array_equal(first["params"], second["params"])
    assert first["final_center_fitness"] == second["final_center_fitness"]
    assert (runs["ncap-torque-refined"].with_suffix(".csv").read_text().split("\n")[8:]
            == again.with_suffix(".csv").read_text().split("\n")[8:])

    evals = []
    for variant, path in runs.items():
        out = tmp_path / "eval" / f"{variant}.csv"
        _stage("evaluate", "--variant", f"variant={variant}", "--input", str(path), "--out", str(out))
        evals.append(str(out))
    base = tmp_path / "eval" / "baselines.csv"
    _stage("baselines", "--out", str(base))
    evals.append(str(base))
    fictive = tmp_path / "fictive.csv"
    _stage("fictive", "--variant", "variant=ncap-torque-refined", "--input", str(runs["ncap-torque-refined"]),
           "--out", str(fictive))
    # full-rodent transfer: the standing-posture row and one row per seed and speed
    rodent_csv = tmp_path / "rodent.csv"
    _stage("rodent", "--input", str(runs["ncap-torque-refined"]), "--out", str(rodent_csv))
    transfer = read_table(rodent_csv)
    assert list(transfer["variant"]).count("hold") == 1 and len(transfer["variant"]) > 1
    contacts = [str(tmp_path / "eval" / "ncap-torque-refined_contacts.csv")]
    tables = evals + contacts + [str(p.with_suffix(".csv")) for p in runs.values()] + [str(rodent_csv), str(fictive)]
    figures = method_figures("rat_ncap")
    assert list(figures) == ["learning_curves", "gait_vs_speed", "interfaces", "ablations", "gait_diagram",
                             "params_vs_reward", "rodent_transfer"]
    for fig in figures:
        png = tmp_path / "figures" / f"{fig}.png"
        _stage("figure", fig, "--input", *tables, "--out", str(png))
        assert png.stat().st_size > 0 and png.with_suffix(".pdf").is_file()
        assert png.with_suffix(".rst").read_text().strip()
    _stage("speed", "--out", str(tmp_path / "speed.csv"))
    _stage("claims", "--input", *evals, str(fictive), str(tmp_path / "speed.csv"),
           "--out", str(tmp_path / "claims.json"))
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["locomotion_speeds", "interface_trainability",
                                                  "v0_v3_ablation", "ncap_vs_mlp_params"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in claims["claims"])
    assert validate_claims_file(tmp_path / "claims.json") == []


def _config_with(tmp_path, **values):
    """The repository's rat_ncap section with ``values`` replaced at smoke scale."""
    section = yaml.safe_load((ROOT / "config" / "methods" / "rat_ncap.yaml").read_text())
    section["rat_ncap"]["smoke"].update(values)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"scale": "smoke", **section}))
    return str(path)


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    cfg = _config_with(tmp_path, pop_size="many")
    assert main(["rat_ncap", "claims", "--config", cfg, "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "pop_size" in err and len(err.splitlines()) == 1
    cfg = _config_with(tmp_path, variants=["ncap-foo-refined"])
    assert main(["rat_ncap", "train", "--config", cfg, "--variant", "variant=ncap-foo-refined",
                 "--seed", "0", "--out", str(tmp_path / "r.json")]) == 2
    assert "variant" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(("variant", "seed", "message"), [
    ("ncap-torque-refined", 0, "--variant: 'ncap-torque-refined' is not allowed"),  # old grammar
    ("variant=ncap-foo-refined", 0, "variant: 'ncap-foo-refined' is not allowed; use <controller>"),
    ("variant=ncap-torque-refined", None, "--seed: stage 'train' needs a seed"),
])
def test_train_refuses_bad_variant_or_missing_seed(tmp_path, capsys, variant, seed, message):
    args = ["rat_ncap", "train", "--config", CONFIG, "--scale", "smoke", "--variant", variant,
            "--out", str(tmp_path / "r.json")]
    assert main(args + (["--seed", str(seed)] if seed is not None else [])) == 2
    assert message in capsys.readouterr().err


def test_training_reruns_only_for_what_it_reads():
    """The train stage's config slice moves with the ES budget, not with evaluation settings or
    the list of variants (adding a variant must not retrain the others)."""
    import dataclasses

    from repro26.core.cli import resolve_run_config
    from repro26.core.config import config_hash, config_slice
    from repro26.rat_ncap import cli

    _, cfg, _ = resolve_run_config(cli, "rat_ncap", Path(CONFIG), "small")
    reads = cli.STAGES["train"].reads
    train_hash = lambda c: config_hash(config_slice(c, reads))  # noqa: E731
    base = train_hash(cfg)
    assert train_hash(dataclasses.replace(cfg, eval_s=cfg.eval_s + 1, fictive_states=3,
                                          variants=(*cfg.variants, "ncap-ep-openai"))) == base
    assert train_hash(dataclasses.replace(cfg, generations=cfg.generations + 1)) != base
