"""attn_recurrence end to end at smoke scale (stage functions in a tmp dir), bad input, and a
flip test per claim predicate (a synthetic table that makes it hold, one that makes it fail)."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from repro26.attn_recurrence import claims, cli
from repro26.core.claims import claim_problems, validate_claims_file
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError

ROOT = Path(__file__).resolve().parents[2]
M = "attn_recurrence"


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path):
    scale, cfg, _ = resolve_run_config(cli, M, ROOT / "config" / "config.yaml", "smoke")

    def run(stage, out, inputs=(), seed=None, variant=None, name=None):
        run_stage(M, stage, name=name, cfg=cfg, scale=scale, out=out, seed=seed,
                  variant=variant, inputs=inputs, progress=False)

    run("data", tmp_path / "data")
    pools = [tmp_path / "data" / "pools.npz"]
    runs = []
    for kind in cfg.surrogates:
        for target in cfg.targets:
            runs.append(tmp_path / "runs" / "fit" / f"{kind}_{target}.csv")
            run("fit", runs[-1], pools, variant=f"surrogate={kind},target={target}")
    for k in cfg.scaling_pairs:
        for d in cfg.scaling_value_dims:
            runs.append(tmp_path / "runs" / "scaling" / f"K{k}_d{d}.csv")
            run("scaling", runs[-1], pools, variant=f"pairs={k},value_dim={d}")
    for model in cfg.survey_models:
        for seed in cfg.lm_seeds:
            folder = tmp_path / "runs" / "lm" / f"{model}_seed{seed}"
            run("lm", folder, seed=seed, variant=f"model={model}")
            runs.append(tmp_path / "runs" / "survey" / f"{model}_seed{seed}.csv")
            run("survey", runs[-1], [folder / "trained.npz"], seed=seed, variant=f"model={model}")
    run("evaluate", tmp_path / "tables", runs)
    tables = [tmp_path / "tables" / f"{t}.csv" for t in ("tightness", "scaling", "survey")]
    for fig in ("tightness", "state_scaling", "head_survey"):
        run("figure", tmp_path / "figures" / f"{fig}.png", tables, name=fig)
        assert (tmp_path / "figures" / f"{fig}.pdf").is_file()
        assert (tmp_path / "figures" / f"{fig}.rst").read_text().startswith("Experiment")
    run("claims", tmp_path / "claims.json", tables)
    assert validate_claims_file(tmp_path / "claims.json") == []
    out = json.loads((tmp_path / "claims.json").read_text())
    assert [c["id"] for c in out["claims"]] == ["tight_on_retrieval", "state_scaling",
                                                "survey_small_obstruction"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in out["claims"])
    # every recurrence, trained or not, is above the bound (it is a lower bound)
    from repro26.core import tables as tb
    t = tb.read(tables[0])
    assert np.all(t["err_op"] >= t["bound_op"] - 1e-4)


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    import yaml

    section = yaml.safe_load((ROOT / "config" / "methods" / f"{M}.yaml").read_text())[M]
    section["smoke"]["steps"] = "many"
    bad = tmp_path / "config.yaml"
    bad.write_text(yaml.safe_dump({"scale": "smoke", M: section}))
    assert main([M, "data", "--config", str(bad), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "steps" in err[0]


def test_unknown_target_is_a_config_error(tmp_path):
    scale, cfg, _ = resolve_run_config(cli, M, ROOT / "config" / "config.yaml", "smoke")
    bad = dataclasses.replace(cfg, targets=("retrieval", "spiky"))
    with pytest.raises(ConfigError, match="targets: 'spiky'"):
        run_stage(M, "data", cfg=bad, scale=scale, out=tmp_path, progress=False)


@pytest.mark.parametrize("variant", ["diag", "surrogate=diag", "surrogate=lstm,target=smooth",
                                     "surrogate=diag,target=spiky"])
def test_fit_variant_must_name_a_configured_surrogate_and_target(tmp_path, variant):
    pools = tmp_path / "pools.npz"
    np.savez(pools, x=np.zeros(1))
    with pytest.raises(UsageError, match="--variant"):
        run_stage(M, "fit", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.csv", variant=variant, inputs=[pools], progress=False)


# ----------------------------------------------------------------------------- claim flips

STATES = np.asarray([1, 2, 4, 8, 16])
SEEDS = range(5)


def _tightness_table(retrieval_trained_state, loose_trained_state):
    """Errors fall from ||P|| to 0 at a given state; bound falls at 4 (retrieval), 1 (others)."""
    rows = []
    for target, bound_at, trained_at in (("retrieval", 4, retrieval_trained_state),
                                         ("smooth", 1, loose_trained_state),
                                         ("clustered", 2, loose_trained_state)):
        for job in ("diag", "linattn"):
            for seed in SEEDS:
                at = trained_at[seed] if isinstance(trained_at, list) else trained_at
                for n in STATES:
                    falls = {job: at, "svd_sweep": bound_at, "random": 32, "causal_mean": 99}
                    for method, state in falls.items():
                        if method == "linattn" and job == "linattn":
                            state = 99  # the other surrogate never gets there
                        rows.append({"target": target, "job": job, "seed": seed, "state": n,
                                     "method": method, "norm_op": 2.0,
                                     "bound_op": 0.0 if n >= bound_at else 1.5,
                                     "err_op": 0.1 if n >= state else 1.8})
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


def test_tightness_claim_flips():
    held = claims.tightness_claim(_tightness_table(4, 16), 0.25)
    assert held.verdict == "held"
    assert held.measured["targets"]["retrieval"]["ratio_trained_to_bound"] == [1.0] * 5
    assert claims.tightness_claim(_tightness_table(99, 16), 0.25).verdict == "not held"
    assert claims.tightness_claim(_tightness_table(4, 2), 0.25).verdict == "not held"
    split = claims.tightness_claim(_tightness_table([4, 4, 16, 16, 16], 16), 0.25)
    assert split.verdict == "inconclusive"
    assert claim_problems(split.to_json()) == [] and held.trivial_passes is False


def _scaling_table(required):
    """``required(K, d_v)``: the state at which the trained error falls below tolerance."""
    rows = []
    for K in (2, 4, 8):
        for d in (1, 2):
            for seed in SEEDS:
                for n in (1, 2, 4, 8, 16, 32, 64, 128, 256):
                    common = {"pairs": K, "value_dim": d, "seed": seed, "state": n,
                              "norm_op": 2.0, "bound_op": 0.0 if n >= K * d else 1.9}
                    rows.append({**common, "method": "diag",
                                 "err_op": 0.1 if n >= required(K, d) else 1.9})
                    rows.append({**common, "method": "random", "err_op": 1.9})
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


def test_scaling_claim_flips():
    held = claims.scaling_claim(_scaling_table(lambda K, d: 2 * K * d), 0.25)
    assert held.verdict == "held"
    assert held.measured["diag"]["slope_vs_K_dv"]["mean"] == pytest.approx(1.0)
    quadratic = claims.scaling_claim(_scaling_table(lambda K, d: K * K * d * d), 0.25)
    assert quadratic.verdict == "not held"
    assert quadratic.measured["diag"]["slope_vs_K_dv"]["mean"] == pytest.approx(2.0)
    flat = claims.scaling_claim(_scaling_table(lambda K, d: 8 * d), 0.25)  # ignores K
    assert flat.verdict == "not held"
    never = claims.scaling_claim(_scaling_table(lambda K, d: 999 if K == 8 else K * d), 0.25)
    assert never.verdict == "inconclusive"
    assert claim_problems(never.to_json()) == [] and held.trivial_passes is False


def _survey_table(fraction_small, heads=40, sources=("checkpoint0", "checkpoint1"),
                  exact_bound=0.6):
    """``exact_bound``: the exact retrieval head's relative bound at the probe state."""
    common = {"seed": 0, "state": 8, "seq_len": 64, "held_accuracy": 0.5,
              "chance_accuracy": 0.2}
    rows = []
    for i in range(heads):
        for weights in ("trained", "init"):
            small = i < fraction_small * heads or weights == "init"
            rows.append({**common, "source": sources[i % 2], "weights": weights,
                         "layer": i // 4, "head": i % 4, "rel_bound_op": 0.01 if small else 0.5})
    rows.append({**common, "source": "mqar", "weights": "exact", "layer": 0, "head": 0,
                 "rel_bound_op": exact_bound})
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


def test_survey_claim_flips():
    assert claims.survey_claim(_survey_table(0.9), 8, 0.1).verdict == "held"
    assert claims.survey_claim(_survey_table(0.1), 8, 0.1).verdict == "not held"
    assert claims.survey_claim(_survey_table(0.5), 8, 0.1).verdict == "inconclusive"
    # a probe at which even the exact retrieval head is small cannot see an obstruction
    blind = claims.survey_claim(_survey_table(0.9, exact_bound=0.05), 8, 0.1)
    assert blind.verdict == "inconclusive" and "exact retrieval" in blind.inconclusive_reason
    # without a pretrained checkpoint the abstract's survey is not measured: inconclusive,
    # whatever the small models trained here show (reported as small_models)
    small = claims.survey_claim(_survey_table(0.9, sources=("charlm", "mqar")), 8, 0.1)
    assert small.verdict == "inconclusive" and "checkpoint" in small.inconclusive_reason
    assert small.measured["small_models"]["fraction_small"] == pytest.approx(0.9)
    assert small.min_detectable_effect > 0 and small.effect == pytest.approx(0.4)
