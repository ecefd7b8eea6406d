"""End to end: every stage of ``repro26 nsmp`` (through ``run_stage``, the CLI's path) at a
shrunk ``smoke`` config in a tmp dir, and one-line errors for bad config and bad ``--variant``."""

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from repro26.core import io
from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import UsageError
from repro26.nsmp import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_all_stages_end_to_end(tmp_path):
    scale, cfg, _ = resolve_run_config(cli, "nsmp", ROOT / "config" / "config.yaml", "smoke")
    cfg = dataclasses.replace(cfg, seeds=(0, 1), cases=("logistic-tree",), n_clients=5,
                              scaling_topologies=("chain",), scaling_n=(4,), admm_iters=40,
                              fed_iters=40, newton_rounds=8, chunk_size=40, admm_rho=(1.0,),
                              fed_lr=(1.0,), fedprox_mu=(1.0,))

    def run(stage, out, variant=None, inputs=(), name=None):
        run_stage("nsmp", stage, name=name, cfg=cfg, scale=scale, out=out, variant=variant,
                  inputs=inputs, progress=False)

    summaries, cases, curves = [], [], []
    for case in ("logistic-tree", "ridge-chain-n4"):
        case_file = tmp_path / "runs" / case / "case.npz"
        run("case", case_file, f"case={case}")
        cases.append(case_file)
        for method in cli.methods_of(case):
            summaries.append(case_file.with_name(f"{method}_summary.csv"))
            if case == "logistic-tree":
                curves.append(case_file.with_name(f"{method}.csv"))
    assert len(summaries) == 6 and all(p.exists() for p in summaries)
    evaluation = tmp_path / "evaluation.csv"
    run("evaluate", evaluation, inputs=[*summaries, *cases])
    table = io.read_table(evaluation)
    assert set(table["method"]) == {"nsmp", "admm", "fedavg", "fedprox"}
    for name in ("error_vs_rounds", "error_vs_floats"):
        run("figure", tmp_path / f"{name}.png", inputs=[evaluation, *curves], name=name)
    run("figure", tmp_path / "messages.png", inputs=[evaluation], name="messages_vs_clients")
    run("claims", tmp_path / "claims.json", inputs=[evaluation, tmp_path / "structure.csv"])
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["quadratic_two_passes", "convex_fewer_floats"]
    quad = claims["claims"][0]["measured"]
    assert quad["nsmp_rel_err_after_2_passes_max"] < 1e-10 and quad["messages_equal_2(n-1)"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in claims["claims"])
    assert validate_claims_file(tmp_path / "claims.json") == []
    assert all((tmp_path / f).stat().st_size > 0 for f in ("error_vs_rounds.pdf", "messages.png"))
    assert (tmp_path / "messages.rst").read_text().startswith("Ridge regression")


def _config_with(tmp_path, **smoke):
    section = yaml.safe_load((ROOT / "config" / "methods" / "nsmp.yaml").read_text())
    section["nsmp"]["smoke"].update(smoke)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"scale": "smoke", **section}))
    return config


def test_bad_config_is_one_line_exit_2(tmp_path, capsys):
    config = _config_with(tmp_path, cases=["ridge-ring"])
    assert main(["nsmp", "case", "--config", str(config), "--variant", "case=ridge-chain"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nsmp.cases" in err
    config = _config_with(tmp_path, n_clients="four")
    assert main(["nsmp", "case", "--config", str(config), "--variant", "case=ridge-chain"]) == 2
    assert "nsmp.smoke.n_clients" in capsys.readouterr().err


@pytest.mark.parametrize("variant", ["ridge-chain", "case=ridge-ring", "case=sensor-chain",
                                     "method=nsmp,case=ridge-chain"])
def test_case_variant_names_one_valid_case(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("nsmp", "case", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.csv", variant=variant, progress=False)
