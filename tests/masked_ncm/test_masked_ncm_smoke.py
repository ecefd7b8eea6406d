"""End to end at `smoke` scale: every stage through ``run_stage`` (the CLI's path) in a temporary
folder, then the properties the bound optimisation must have on the real runs."""

import json

import numpy as np
import pytest

from repro26.core import io
from repro26.core.claims import validate_claims_file
from repro26.core.cli import resolve_run_config, run_stage
from repro26.core.config import UsageError
from repro26.masked_ncm import cli, solvers
from repro26.masked_ncm import data as data_module

FIGURES = ["endpoints", "error_vs_n", "coverage", "width_vs_class", "iv_bounds"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, repo_root):
    root = tmp_path_factory.mktemp("masked_ncm")
    scale, cfg, _ = resolve_run_config(cli, "masked_ncm", repo_root / "config" / "config.yaml",
                                       "smoke")
    datasets = cli.graphs(cfg)

    def stage(name, out, inputs=(), variant=None, figure=None):
        run_stage("masked_ncm", name, name=figure, cfg=cfg, scale=scale, out=out,
                  variant=variant, inputs=inputs, progress=False)

    for g in datasets:
        stage("data", root / "data" / f"{g}.json", variant=f"graph={g}")
        stage("train", root / "runs" / f"{g}.csv", [root / "data" / f"{g}.json"],
              variant=f"graph={g}")
    inputs = [root / "data" / f"{g}.json" for g in datasets] + \
        [root / "runs" / f"{g}.csv" for g in datasets]
    stage("evaluate", root / "bounds.csv", inputs)
    for name in FIGURES:
        table = "iv_bounds.csv" if name == "iv_bounds" else "bounds.csv"
        stage("figure", root / "figures" / f"{name}.png", [root / table], figure=name)
    stage("claims", root / "claims.json", [root / "bounds.csv", root / "iv_bounds.csv"])
    return root


def test_dataset_variant_is_checked(tmp_path, repo_root):
    for variant in ("nodes3", "graph=nodes9", "graph=nodes3,seed=1"):
        with pytest.raises(UsageError, match="--variant"):
            run_stage("masked_ncm", "data", config=repo_root / "config" / "config.yaml",
                      scale="smoke", out=tmp_path / "d.json", variant=variant, progress=False)


@pytest.mark.slow
def test_every_output_is_written(smoke):
    for name in FIGURES:
        assert (smoke / "figures" / f"{name}.png").stat().st_size > 0
        assert (smoke / "figures" / f"{name}.pdf").stat().st_size > 0
        assert (smoke / "figures" / f"{name}.rst").read_text().strip()
    claims = json.loads((smoke / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["endpoint_error", "coverage", "single_dag_miss",
                                                    "iv_bounds"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in claims["claims"])
    assert validate_claims_file(smoke / "claims.json") == []
    assert claims["meta"]["config_hash"]


@pytest.mark.slow
def test_fitted_masks_reproduce_plugin_ida_and_bounds_bracket_it(smoke):
    """After the fit phase each mask's NCM (and the single-DAG NCM) gives that DAG's plug-in IDA
    value; the min / max runs end on the two sides of it, inside the data-fit region."""
    runs = io.read_table(smoke / "runs" / "nodes3.csv")
    data = io.read_json(smoke / "data" / "nodes3.json")
    ida = {}
    for inst in data["instances"]:
        for s in inst["samples"]:
            freq = np.asarray(s["counts"], float).reshape((inst["card"],) * inst["num_nodes"]) / s["n"]
            dags = [*s["masks"], s["single_dag"]]
            values = solvers.ida(freq, [np.asarray(g) for g in dags], inst["x"], inst["y"],
                                 pseudo=data_module.PSEUDO / s["n"])
            for m, v in zip([*range(len(s["masks"])), -1], values):
                ida[(inst["seed"], s["n"], m)] = v
    expected = np.array([ida[(s, n, m)] for s, n, m in zip(runs["seed"], runs["n"], runs["mask"])])
    converged = runs["nll_fit"] - runs["nll_mle"] < 1e-4
    assert converged.mean() > 0.8
    # plug-in IDA smooths empty strata with a pseudo-count; the NCM fits them freely
    assert np.median(np.abs(runs["q_fit"] - expected)[converged]) < 1e-3
    feasible = runs["constraint"] < 1.0
    assert feasible.mean() > 0.9
    lo = (runs["direction"] == "min") & feasible
    hi = (runs["direction"] == "max") & feasible
    assert np.all(runs["q"][lo] <= runs["q_fit"][lo] + 1e-4)
    assert np.all(runs["q"][hi] >= runs["q_fit"][hi] - 1e-4)


@pytest.mark.slow
def test_bounds_table_is_consistent(smoke):
    b = io.read_table(smoke / "bounds.csv")
    assert np.all(b["true_lo"] <= b["true_effect"] + 1e-12)
    assert np.all(b["true_effect"] <= b["true_hi"] + 1e-12)
    for key in ("ncm", "ncm_pc", "single", "ida", "ida_pc"):
        assert np.all(b[f"{key}_lo"] <= b[f"{key}_hi"] + 1e-9)
    # PC's class is the true class whenever PC recovers the CPDAG: then both intervals use the
    # same runs, and the expected miss of a random member is the true class's
    same = b["pc_shd"] == 0
    assert np.allclose(b["ncm_pc_lo"][same], b["ncm_lo"][same])
    assert np.allclose(b["single_expected_miss"][same], b["class_expected_miss"][same])
    iv = io.read_table(smoke / "iv_bounds.csv")
    assert np.all(iv["true_lo"] <= iv["true_effect"]) and np.all(iv["true_effect"] <= iv["true_hi"])
    assert np.all(iv["ncm_lo"] <= iv["ncm_hi"])
    # Balke-Pearl bounds are never wider than the natural bounds (same plug-in distribution)
    assert np.all(iv["lp_plugin_lo"] >= iv["natural_lo"] - 1e-9)
    assert np.all(iv["lp_plugin_hi"] <= iv["natural_hi"] + 1e-9)
