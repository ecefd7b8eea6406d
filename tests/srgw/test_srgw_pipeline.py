"""srgw end to end at smoke scale (stage functions in a tmp dir) and bad-config handling."""

import json
from pathlib import Path

import pytest

from repro26.core import io
from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.srgw import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path):
    """Every stage at smoke scale; the compile cache (enabled in conftest as the CLI does) is
    shared by the families, whose graphs have the same shapes."""
    scale, cfg, h = resolve_run_config(cli, "srgw", ROOT / "config" / "config.yaml", "smoke")

    def run(stage, out, inputs=(), seed=None, variant=None, name=None):
        run_stage("srgw", stage, name=name, cfg=cfg, scale=scale, out=out, seed=seed,
                  variant=variant, inputs=inputs, progress=False)

    run("data", tmp_path / "data")
    fits = []
    for n in sorted({*cfg.sbm_ns, *cfg.graphon_ns}):
        path = tmp_path / "runs" / f"n{n}.csv"
        run("fit", path, variant=f"n={n}")
        assert set(io.read_table(path)["family"]) == {*cfg.sbms, *cfg.graphons}
        fits.append(path)
    run("pot", tmp_path / "pot" / "seed0.csv", seed=0)
    run("real", tmp_path / "real" / "real.csv")
    run("scaling_cpu", tmp_path / "scaling" / "cpu.csv")
    cpu = io.read_table(tmp_path / "scaling" / "cpu.csv")
    assert cpu["n"].tolist() == list(cfg.scaling_ns) and (cpu["cpu_iteration_s"] > 0).all()
    run("evaluate", tmp_path / "tables", [*fits, tmp_path / "pot" / "seed0.csv",
                                          tmp_path / "scaling" / "cpu.csv"])
    chosen = (tmp_path / "tables" / "k_chosen.csv").read_text()
    assert "K_theory" in chosen and "absdiff" in chosen
    tables = [tmp_path / "tables" / f"{t}.csv" for t in ("fits", "pot", "scaling")]
    for fig in ("error_vs_n", "gap_vs_n", "time_vs_n"):
        run("figure", tmp_path / "figures" / f"{fig}.png", tables, name=fig)
        assert (tmp_path / "figures" / f"{fig}.pdf").is_file()
        assert (tmp_path / "figures" / f"{fig}.rst").read_text().startswith("Experiment")
    run("figure", tmp_path / "figures" / "real_networks.png",
        [tmp_path / "real" / "real.csv", tmp_path / "real" / "real.npz"], name="real_networks")
    run("claims", tmp_path / "claims.json", tables)
    assert validate_claims_file(tmp_path / "claims.json") == []
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["gap_rate", "minimax_rate", "pot_agreement",
                                                   "sparse_scaling"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in claims["claims"])
    pot = claims["claims"][2]["measured"]["by_n"]
    assert all(v["objective_ratio_max"] < 1.01 for v in pot.values())


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\nsrgw:\n  common: {max_iter: many}\n"
                   "  smoke: {seeds: [0], sbm_ns: [48], graphon_ns: [48], sbms: {}, graphons: []}\n"
                   "  small: {}\n  paper: {}\n")
    assert main(["srgw", "data", "--config", str(bad), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_iter" in err[0]


@pytest.mark.parametrize("variant", ["48", "family=absdiff", "n=7", "family=absdiff,n=48", "n=x"])
def test_fit_variant_must_name_one_grid_n(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("srgw", "fit", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.csv", variant=variant, progress=False)


def test_unknown_graphon_is_a_config_error(tmp_path):
    scale, cfg, h = resolve_run_config(cli, "srgw", ROOT / "config" / "config.yaml", "smoke")
    import dataclasses

    bad = dataclasses.replace(cfg, graphons=("nope",))
    with pytest.raises(ConfigError, match="graphons"):
        run_stage("srgw", "data", cfg=bad, scale=scale, out=tmp_path, progress=False)


def test_scaling_figure_from_a_synthetic_table(tmp_path):
    """The scaling figure draws from a scaling table (rows as evaluate.scaling_rows writes
    them): PNG, PDF and caption."""
    from repro26.core import io

    rows = [{"solver": "ours_sparse", "n": n, "degree": 25.0, "K": 4, "seed": 0,
             "time_s": 1e-5 * n, "iteration_s": 1e-6 * n, "matmul_s": 7e-7 * n, "ari": 0.99,
             "memory_mb": 1e-3 * n, "mem_total_gb": 16.0} for n in (1000, 10_000, 100_000)]
    rows += [{"solver": "pot_dense", "n": n, "degree": 25.0, "K": 4, "seed": 0,
              "time_s": 1e-8 * n**3, "ari": 0.99, "memory_mb": 24 * n**2 / 2**20,
              "mem_total_gb": 16.0} for n in (250, 500, 1000)]
    table = tmp_path / "tables" / "scaling.csv"
    io.write_table(table, rows, {})
    run_stage("srgw", "figure", name="scaling", config=ROOT / "config" / "config.yaml",
              scale="smoke", out=tmp_path / "scaling.png", inputs=[table], progress=False)
    assert (tmp_path / "scaling.pdf").is_file()
    assert (tmp_path / "scaling.rst").read_text().startswith("Sparse scaling")
