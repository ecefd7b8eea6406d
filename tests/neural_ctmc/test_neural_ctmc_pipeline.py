"""End-to-end run of every Neural CTMC stage at `smoke` scale, and the CLI's bad-input path."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from repro26.core import io, tables
from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, method_figures, resolve_run_config, run_stage
from repro26.core.config import UsageError, as_dict, config_hash
from repro26.neural_ctmc import cli as nc
from repro26.neural_ctmc.names import METHODS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path):
    scale, cfg, _ = resolve_run_config(nc, "neural_ctmc", ROOT / "config/config.yaml", "smoke")
    # every stage at its smallest: a V = 3, L = 3 language (27 sequences), 2 seeds, N = 16 only
    # (the claims' range), a few steps; 8-character text windows, one sampling budget
    sc, tc = cfg.synthetic, dataclasses.replace(cfg.train, steps=4, chunk_size=2,
                                                 checkpoint_every=2, warmup=1)
    cfg = dataclasses.replace(
        cfg, train=tc, scorer_train=dataclasses.replace(tc, ema=0.0),
        synthetic=dataclasses.replace(
            sc, vocab_size=3, seq_len=3, hidden_states=2, steps=(16,), sd_repeats=2,
            sd_sequences=4, bound_sequences=64, bound_draws=2,
            train=dataclasses.replace(sc.train, steps=4, chunk_size=1, checkpoint_every=1,
                                      warmup=1, schedule="wsd", decay=1)),
        text=dataclasses.replace(cfg.text, seq_len=8, max_train=200, max_val=16),
        eval=dataclasses.replace(cfg.eval, steps=(16,), n_samples=8, n_val=16, batch_size=8,
                                 elbo_draws=2))

    def run(stage, out, variant=None, seed=None, inputs=(), name=None):
        run_stage("neural_ctmc", stage, name=name, cfg=cfg, scale=scale, out=tmp_path / out,
                  seed=seed, variant=variant, inputs=[tmp_path / i for i in inputs],
                  progress=False)

    synth = []
    for method in METHODS:
        run("synthetic_train", f"runs/synthetic/{method}.eqx", f"method={method}")
        run("synthetic_evaluate", f"eval/synthetic/{method}.csv", f"method={method}",
            inputs=[f"runs/synthetic/{method}.eqx", f"runs/synthetic/{method}.half.eqx"])
        synth += [f"eval/synthetic/{method}.csv", f"runs/synthetic/{method}.csv"]
    run("synthetic_floors", "eval/synthetic/floors.csv")
    run("summarize", "tables", "study=synthetic", inputs=[*synth, "eval/synthetic/floors.csv"])
    # fair start: the untrained uniform-noise methods share one bound (the uniform law's)
    table = io.read_table(tmp_path / "tables/synthetic.csv")
    init = {m: tables.per_seed(table, "value", method=m, metric="init_bound")
            for m in ("neural_ctmc", "gidd", "sedd")}
    np.testing.assert_allclose(init["neural_ctmc"], init["gidd"], rtol=1e-4)
    np.testing.assert_allclose(init["neural_ctmc"], init["sedd"], rtol=1e-4)

    run("data", "data/text.npz", "corpus=text")
    run("scorer", "scorer/text.eqx", "corpus=text", inputs=["data/text.npz"])
    evals, curves = [], []
    for method in METHODS:
        model = f"runs/text/{method}.eqx"
        variant = f"corpus=text,method={method}"
        run("train", model, variant, None, ["data/text.npz"])
        table = f"eval/text/{method}.csv"
        run("evaluate", table, variant, None, ["data/text.npz", model, "scorer/text.eqx"])
        evals.append(table)
        curves.append(model.replace(".eqx", ".csv"))
    run("summarize", "tables", "study=text",
        inputs=[*evals, *curves, "data/text.json", "scorer/text.json"])
    for name, fig in method_figures("neural_ctmc").items():
        run("figure", f"figures/{name}.png", inputs=fig.input_paths(cfg), name=name)
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 0
        assert (tmp_path / "figures" / f"{name}.pdf").is_file()
        assert (tmp_path / "figures" / f"{name}.rst").read_text().strip()
    assert list(method_figures("neural_ctmc")) == [
        "synthetic_kl_vs_steps", "synthetic_bounds_and_variance", "gen_ppl_vs_steps",
        "training_curves", "samples"]
    run("claims", "claims.json", inputs=["tables/synthetic.csv", "tables/synthetic_training.csv",
                                         "tables/eval.csv", "tables/reference.csv"])
    assert validate_claims_file(tmp_path / "claims.json") == []

    claims = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in claims["claims"]] == ["gen_quality_exact", "best_across_steps_exact",
                                                   "gen_ppl_text", "best_across_steps"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in claims["claims"])
    assert claims["meta"]["config_hash"] == config_hash(as_dict(cfg))  # the run's own config
    # a killed job resumes from its checkpoint: rerunning train reproduces the same history
    first = io.read_table(tmp_path / curves[0])
    run("train", "runs/text/neural_ctmc.eqx", "corpus=text,method=neural_ctmc", None,
        ["data/text.npz"])
    again = io.read_table(tmp_path / curves[0])
    assert all(np.array_equal(first[k], again[k]) for k in first)


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    section = yaml.safe_load((ROOT / "config/methods/neural_ctmc.yaml").read_text())
    section["neural_ctmc"]["common"]["eps"] = "fast"
    bad = tmp_path / "config.yaml"
    bad.write_text(yaml.safe_dump({"scale": "smoke", **section}))
    assert main(["neural_ctmc", "data", "--config", str(bad), "--variant", "corpus=text",
                 "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "neural_ctmc.smoke.eps" in err and "\n" not in err
    assert not (tmp_path / "x.npz").exists()


def test_bad_variant_is_usage_error(tmp_path, capsys):
    assert main(["neural_ctmc", "train", "--config", str(ROOT / "config/config.yaml"),
                 "--scale", "smoke", "--variant", "corpus=text,method=ar",
                 "--out", str(tmp_path / "m.eqx")]) == 2
    assert "--variant method: 'ar' is not allowed" in capsys.readouterr().err


@pytest.mark.parametrize(("stage", "variant", "seed"), [
    ("train", "text:mdlm", None),  # the old grammar
    ("train", "corpus=text", None),  # method missing
    ("synthetic_train", "method=mdlm", 0),  # a seed where the stage takes every seed
    ("data", "corpus=poems", None),
])
def test_stage_refuses_bad_variant_or_missing_seed(tmp_path, stage, variant, seed):
    with pytest.raises(UsageError, match="--variant|--seed"):
        run_stage("neural_ctmc", stage, config=ROOT / "config/config.yaml", scale="smoke",
                  out=tmp_path / "x", variant=variant, seed=seed, progress=False)
