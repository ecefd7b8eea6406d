"""End-to-end run of every Neural CTMC stage at `smoke` scale, and the CLI's bad-input path."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from repro26.core import io
from repro26.core.cli import Run, main, resolve_run_config
from repro26.neural_ctmc import cli as nc
from repro26.neural_ctmc.model import METHODS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path):
    scale, cfg, cfg_hash = resolve_run_config(nc, "neural_ctmc", ROOT / "config/config.yaml", "smoke")
    # same (V, L) for both corpora so each method compiles once in this process
    cfg = dataclasses.replace(cfg, hmm=dataclasses.replace(cfg.hmm, vocab_size=32,
                                                           seq_len=cfg.text.seq_len))

    def run(stage, out, variant=None, seed=None, inputs=()):
        nc.STAGES[stage](Run("neural_ctmc", stage, scale, cfg, cfg_hash, tmp_path / out, seed,
                             variant, tuple(tmp_path / i for i in inputs), progress=False))

    for corpus in ("hmm", "text"):
        run("data", f"data/{corpus}.npz", corpus)
    run("scorer", "scorer/text.eqx", "text", inputs=["data/text.npz"])
    evals, curves = [], []
    for corpus in ("hmm", "text"):
        for method in METHODS:
            model = f"runs/{corpus}/{method}/seed0.eqx"
            run("train", model, f"{corpus}:{method}", 0, [f"data/{corpus}.npz"])
            extra = ["scorer/text.eqx"] if corpus == "text" else []
            table = f"eval/{corpus}/{method}/seed0.csv"
            run("evaluate", table, f"{corpus}:{method}", 0, [f"data/{corpus}.npz", model, *extra])
            evals.append(table)
            curves.append(model.replace(".eqx", ".csv"))
    run("summarize", "tables", inputs=[*evals, *curves, "data/hmm.json", "data/text.json",
                                       "scorer/text.json"])
    tables = ["tables/eval.csv", "tables/reference.csv"]
    run("fig_gen_ppl", "figures/gen_ppl_vs_steps.png", inputs=tables)
    run("fig_synthetic_nll", "figures/synthetic_nll_vs_steps.png", inputs=tables)
    run("fig_training_curves", "figures/training_curves.png",
        inputs=["tables/curves.csv", "tables/reference.csv"])
    run("fig_samples", "figures/samples.png",
        inputs=[f"eval/text/{m}/seed0.samples.json" for m in METHODS])
    run("claims", "claims.json", inputs=tables)

    for name in ("gen_ppl_vs_steps", "synthetic_nll_vs_steps", "training_curves", "samples"):
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 0
        assert (tmp_path / "figures" / f"{name}.pdf").is_file()
    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["gen_ppl_text", "best_across_steps",
                                                   "synthetic_nll_closest"]
    assert all(isinstance(c["holds"], bool) for c in claims["claims"])
    assert claims["meta"]["config_hash"] == cfg_hash
    # a killed job resumes from its checkpoint: rerunning train reproduces the same history
    first = io.read_table(tmp_path / curves[0])
    run("train", "runs/hmm/neural_ctmc/seed0.eqx", "hmm:neural_ctmc", 0, ["data/hmm.npz"])
    again = io.read_table(tmp_path / curves[0])
    assert all(np.array_equal(first[k], again[k]) for k in first)


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\nneural_ctmc:\n  common: {eps: fast}\n  smoke: {}\n"
                   "  small: {}\n  paper: {}\n")
    assert main(["neural_ctmc", "data", "--config", str(bad), "--variant", "hmm",
                 "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "neural_ctmc.smoke.eps" in err and "\n" not in err
    assert not (tmp_path / "x.npz").exists()


def test_bad_variant_is_usage_error(tmp_path, capsys):
    assert main(["neural_ctmc", "train", "--config", str(ROOT / "config/config.yaml"),
                 "--scale", "smoke", "--variant", "text:ar", "--seed", "0",
                 "--out", str(tmp_path / "m.eqx")]) == 2
    assert "method 'ar' unknown" in capsys.readouterr().err
