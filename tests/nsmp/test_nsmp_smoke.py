"""End to end: every stage of ``repro26 nsmp`` at a shrunk ``smoke`` config in a tmp dir."""

import dataclasses
import json
from pathlib import Path

import pytest

from repro26.core import io
from repro26.core.cli import Run, main, resolve_run_config
from repro26.nsmp import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_all_stages_end_to_end(tmp_path):
    scale, cfg, cfg_hash = resolve_run_config(cli, "nsmp", ROOT / "config" / "config.yaml", "smoke")
    cfg = dataclasses.replace(cfg, seeds=(0, 1), cases=("logistic-tree",), n_clients=5,
                              scaling_topologies=("chain",), scaling_n=(4,), admm_iters=40,
                              fed_iters=40, newton_rounds=8, chunk_size=40, admm_rho=(1.0,),
                              fed_lr=(1.0,), fedprox_mu=(1.0,))

    def run(stage, out, variant=None, inputs=()):
        cli.STAGES[stage](Run("nsmp", stage, scale, cfg, cfg_hash, Path(out), None, variant,
                              tuple(Path(p) for p in inputs), progress=False))

    summaries, datas, curves = [], [], []
    for case, methods in (("logistic-tree", cli.STAGES.keys() & {"nsmp", "admm", "fedavg", "fedprox"}),
                          ("ridge-chain-n4", {"nsmp", "admm"})):
        data, central = tmp_path / "data" / f"{case}.npz", tmp_path / case / "central.npz"
        run("data", data, case)
        run("central", central, case, [data])
        datas.append(data)
        for method in sorted(methods):
            curve = tmp_path / case / f"{method}.csv"
            run(method, curve, case, [data, central])
            summaries.append(curve.with_name(f"{method}_summary.csv"))
            if case == "logistic-tree":
                curves.append(curve)
    evaluation = tmp_path / "evaluation.csv"
    run("evaluate", evaluation, inputs=[*summaries, *datas])
    table = io.read_table(evaluation)
    assert set(table["method"]) == {"nsmp", "admm", "fedavg", "fedprox"}
    for name in ("error_vs_rounds", "error_vs_floats"):
        run(f"figure_{name}", tmp_path / f"{name}.png", inputs=[evaluation, *curves])
    run("figure_messages_vs_clients", tmp_path / "messages.png", inputs=[evaluation])
    run("claims", tmp_path / "claims.json", inputs=[evaluation, tmp_path / "structure.csv"])
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["quadratic_two_passes", "convex_fewer_floats"]
    quad = claims["claims"][0]["measured"]
    assert quad["nsmp_rel_err_after_2_passes_max"] < 1e-10 and quad["messages_equal_2(n-1)"]
    assert all(isinstance(c["holds"], bool) for c in claims["claims"])
    assert all((tmp_path / f).stat().st_size > 0 for f in ("error_vs_rounds.pdf", "messages.png"))


def test_bad_config_is_one_line_exit_2(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text("scale: smoke\nnsmp:\n  smoke: {seeds: [0], cases: [ridge-ring], n_clients: 4,"
                      " scaling_topologies: [chain], scaling_n: [4]}\n  small: {}\n  paper: {}\n")
    assert main(["nsmp", "data", "--config", str(config), "--variant", "ridge-chain"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nsmp.cases" in err
    config.write_text(config.read_text().replace("ridge-ring", "ridge-chain").replace(
        "n_clients: 4", "n_clients: four"))
    assert main(["nsmp", "data", "--config", str(config), "--variant", "ridge-chain"]) == 2
    assert "nsmp.smoke.n_clients" in capsys.readouterr().err
