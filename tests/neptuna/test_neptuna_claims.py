"""Each claim predicate on synthetic tables that make it hold, fail, and (where it can) stay
undecided."""

import numpy as np
import pytest

from repro26.neptuna import claims, evaluate

SEEDS = (0, 1, 2, 3)
MODELS = ["unet", "fno", "vit"]
COLS = (*evaluate.METRICS, "stability")


def _table(entries):
    """entries: {(dataset, model, loss): {metric: per-seed values or a scalar}}; other metrics
    default to 1.0 with a small seed jitter."""
    rows = {k: [] for k in ("dataset", "model", "loss", "seed", *COLS, "plateau_gain")}
    jitter = np.asarray([0.0, 0.001, -0.001, 0.0005])
    for (ds, m, loss), vals in entries.items():
        for i, s in enumerate(SEEDS):
            rows["dataset"].append(ds)
            rows["model"].append(m)
            rows["loss"].append(loss)
            rows["seed"].append(s)
            for c in COLS:
                v = vals.get(c, 1.0 + jitter[i])
                rows[c].append(float(np.broadcast_to(v, (len(SEEDS),))[i]))
            rows["plateau_gain"].append(float(vals.get("plateau_gain", 0.0)))
    return {k: np.asarray(v) for k, v in rows.items()}


def _base(ds="bubble"):
    return {(ds, b, "-"): {"nrmse": 10.0, "iou": 0.0, "spec_high": 10.0}
            for b in evaluate.BASELINES}


def _arch(spec, ds="bubble"):
    """spec: {model: {metric: value}} added to seed jitter."""
    jitter = np.asarray([0.0, 0.001, -0.001, 0.0005])
    out = {}
    for m in MODELS:
        vals = {c: 1.0 + jitter for c in COLS}
        vals["nrmse"] = 1.0 + jitter
        for c, v in spec.get(m, {}).items():
            vals[c] = v + jitter
        out[(ds, m, "mse")] = vals
    return out


def test_no_single_best_holds_when_every_model_loses_somewhere():
    t = _table({**_base(), **_arch({"unet": {"spec_low": 2.0}, "fno": {"spec_mid": 2.0},
                                    "vit": {"spec_high": 2.0}})})
    assert claims.no_single_best_claim(t, MODELS).verdict == "held"


def test_no_single_best_fails_when_one_model_wins_every_cell():
    spec = {m: {c: (0.5 if c in claims.BETTER_HIGH else 2.0) for c in COLS} for m in ("fno", "vit")}
    t = _table({**_base(), **_arch(spec)})
    c = claims.no_single_best_claim(t, MODELS)
    assert c.verdict == "not held" and c.measured["per_model"]["unet"]["clearly_best"] == len(COLS)


def test_no_single_best_is_inconclusive_on_ties_and_without_beating_the_baseline():
    t = _table({**_base(), **_arch({"unet": {"spec_low": 2.0}, "fno": {"spec_mid": 2.0}})})
    assert claims.no_single_best_claim(t, MODELS).verdict == "inconclusive"  # vit never beaten
    weak = {**_base(), **_arch({m: {"nrmse": 20.0} for m in MODELS})}
    assert claims.no_single_best_claim(_table(weak), MODELS).verdict == "inconclusive"


def _loss_table(iou_gain, spec_gain, noise=0.001, gains=None, base=None):
    """MSE-only and composites on the U-Net; ``gains`` {loss: (nrmse, iou, spec_high) gain}
    overrides the common gains per loss."""
    jitter = noise * np.asarray([0.0, 1.0, -1.0, 0.5])
    entries = {**_base()} if base is None else base
    entries[("bubble", "unet", "mse")] = {"nrmse": 1.0 + jitter, "iou": 0.5 + jitter,
                                          "spec_high": 0.2 + jitter}
    for comp in ("sobolev", "softadapt", "gradnorm", "equal"):
        g = (gains or {}).get(comp, (0.0, iou_gain, spec_gain))
        entries[("bubble", "unet", comp)] = {"nrmse": 1.0 - g[0] + jitter[::-1],
                                             "iou": 0.5 + g[1] + jitter[::-1],
                                             "spec_high": 0.2 - g[2] + jitter[::-1]}
    return _table(entries)


COMPS = ["sobolev", "softadapt", "gradnorm"]


def test_composite_claim_holds_fails_and_is_undecided():
    assert claims.composite_claim(_loss_table(0.1, 0.05), "unet", COMPS).verdict == "held"
    assert claims.composite_claim(_loss_table(-0.1, 0.05), "unet", COMPS).verdict == "not held"
    assert claims.composite_claim(_loss_table(0.001, 0.001, noise=0.05), "unet",
                                  COMPS).verdict == "inconclusive"


def test_composite_gate_is_per_metric():
    """A trivial baseline with a better IoU than MSE-only removes the IoU cells (its own gate),
    leaving the high-k cells: the claim cannot be decided without the IoU metric."""
    base = {("bubble", b, "-"): {"nrmse": 10.0, "iou": 0.9, "spec_high": 10.0}
            for b in evaluate.BASELINES}
    c = claims.composite_claim(_loss_table(0.1, 0.05, base=base), "unet", COMPS)
    assert c.measured["by_metric"]["iou"]["cells"] == 0
    assert c.measured["by_metric"]["spec_high"]["improved"] == len(COMPS)
    assert c.verdict == "inconclusive"


def test_consistency_claim_holds_fails_and_ties():
    big, none = (0.1, 0.1, 0.05), (0.0, 0.0, 0.0)
    held = _loss_table(0, 0, gains={"softadapt": big, "gradnorm": none, "equal": (0.1, 0, 0)})
    c = claims.consistency_claim(held, "unet")
    assert c.verdict == "held" and c.measured["improved_cells"] == {
        "softadapt": 3, "gradnorm": 0, "equal": 1}
    assert c.trivial_passes is False
    lost = _loss_table(0, 0, gains={"softadapt": (0.1, 0, 0), "gradnorm": big, "equal": none})
    assert claims.consistency_claim(lost, "unet").verdict == "not held"
    tie = _loss_table(0, 0, gains={"softadapt": big, "gradnorm": big, "equal": none})
    assert claims.consistency_claim(tie, "unet").verdict == "inconclusive"


def test_consistency_counts_cells_made_worse():
    """One significant gain does not outweigh two significant losses: SoftAdapt improving one
    cell and worsening two (net −1) loses to rivals that change nothing (net 0)."""
    mixed = _loss_table(0, 0, gains={"softadapt": (0.1, -0.1, -0.1), "gradnorm": (0.0, 0.0, 0.0),
                                     "equal": (0.0, 0.0, 0.0)})
    c = claims.consistency_claim(mixed, "unet")
    assert c.measured["improved_cells"]["softadapt"] == 1
    assert c.measured["worsened_cells"]["softadapt"] == 2
    assert c.measured["net_cells"] == {"softadapt": -1, "gradnorm": 0, "equal": 0}
    assert c.verdict == "not held"


def _timing(soft, grad, spread=0.005, floor=0.01, equal=1.15):
    """Timing-stage rows from a result in the form of repro26.core.timing.interleaved_cpu_times:
    ratios to MSE-only with interquartile ranges ± ``spread`` widened by the noise ``floor``."""
    from repro26.core import timing
    from repro26.neptuna.train import timing_rows

    def ratio(r):
        return {"median": r, "q25": r - spread, "q75": r + spread,
                "interval": [(r - spread) * np.exp(-floor), (r + spread) * np.exp(floor)]}

    names = {"equal": equal, "softadapt": soft, "gradnorm": grad, timing.CONTROL: 1.0}
    result = {"seconds": {k: [0.01 * v] * 9 for k, v in {"mse": 1.0, **names}.items()},
              "ratio": {k: ratio(v) for k, v in names.items()}, "noise_floor": floor,
              "rounds": 9, "calls": {k: 5 for k in ("mse", *names)}, "basis": "cpu"}
    rows = timing_rows(result, steps=10)
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


def test_overhead_claim_holds_fails_and_is_undecided():
    t = _loss_table(0.1, 0.05)
    assert claims.overhead_claim(_timing(1.01, 1.5), t, "unet", COMPS).verdict == "held"
    assert claims.overhead_claim(_timing(1.3, 1.5), t, "unet", COMPS).verdict == "not held"
    c = claims.overhead_claim(_timing(1.045, 1.5, spread=0.02), t, "unet", COMPS)
    assert c.verdict == "inconclusive" and np.isfinite(c.min_detectable_effect)
    assert c.timing["basis"] == "cpu" and c.ideal_passes


def test_overhead_is_inconclusive_when_even_the_control_is_too_noisy():
    """A noise floor wider than the 5% budget: the ideal (MSE against itself) cannot pass."""
    c = claims.overhead_claim(_timing(1.01, 1.5, floor=0.08), _loss_table(0.1, 0.05), "unet",
                              COMPS)
    assert c.verdict == "inconclusive" and not c.ideal_passes


def test_foundation_vs_scratch_is_paired_by_seed():
    jitter = np.asarray([0.0, 0.01, -0.01, 0.005])
    t = _table({**_base(), ("bubble", "fno", "mse"): {"nrmse": 1.0 + jitter, "iou": 0.5 + jitter},
                ("bubble", "foundation", "mse"): {"nrmse": 0.8 + jitter, "iou": 0.5 + jitter}})
    f = claims.foundation_vs_scratch(t, "fno")
    assert f["bubble/nrmse"]["state"] == "better"
    assert f["bubble/nrmse"]["gain"] == pytest.approx(0.2)
    assert f["bubble/iou"]["gain"] == pytest.approx(0.0, abs=1e-12)


def _with_exact(table):
    """Add the exact frames' rows (perfect metrics: the ideal row of the loss claims)."""
    perfect = {c: 0.0 for c in COLS}
    perfect.update(iou=1.0, ssim=1.0, stability=1.0)
    exact = _table({("bubble", evaluate.EXACT, "-"): perfect})
    return {k: np.concatenate([table[k], exact[k]]) for k in table}


def test_loss_claims_ideal_row_is_the_exact_frames():
    """With the exact frames in the table, the ideal row of both loss claims passes (every gated
    cell improves); without them the claims state that no ideal row was given."""
    t = _loss_table(-0.1, -0.05)  # every composite is worse: the measured row fails
    c = claims.composite_claim(_with_exact(t), "unet", COMPS)
    assert c.verdict == "not held" and c.ideal_passes is True
    assert c.ideal["by_metric"]["iou"]["improved"] == len(COMPS)
    k = claims.consistency_claim(_with_exact(t), "unet")
    assert k.ideal_passes is True and k.ideal["improved_cells"]["softadapt"] == 3
    assert k.ideal["improved_cells"]["gradnorm"] == 0
    assert claims.composite_claim(t, "unet", COMPS).ideal is None


def test_curve_fall_is_the_relative_drop_over_the_tail():
    from repro26.neptuna import train

    steps = np.asarray([25, 50, 75, 100])
    val = np.asarray([[4.0, 8.0], [2.0, 8.0], [1.0, 8.0], [0.5, 8.0]])  # seed 1 flat
    np.testing.assert_allclose(train.curve_fall(steps, val, 0.5), [0.75, 0.0])
    np.testing.assert_allclose(train.curve_fall(steps, val, 0.25), [0.5, 0.0])
    history = {"val": np.concatenate([np.full((24, 2), -1.0), val[:1], np.full((24, 2), -1.0),
                                      val[1:2], np.full((24, 2), -1.0), val[2:3],
                                      np.full((24, 2), -1.0), val[3:]])}
    np.testing.assert_allclose(train.plateau_gain(history), [0.75, 0.0])


def test_falling_last_quarter_reads_tail_gain_and_tolerates_old_tables():
    table = _table({("bubble", "unet", "mse"): {"plateau_gain": 0.4},
                    ("bubble", "fno", "mse"): {"plateau_gain": 0.05}})
    assert claims.not_plateaued(table, 0.1) == {"bubble/unet/mse": pytest.approx(0.4)}
    assert claims.not_plateaued(table, 0.1, "tail_gain") == {}  # no such column
    table["tail_gain"] = np.where(table["model"] == "fno", 0.2, 0.01)
    assert claims.not_plateaued(table, 0.1, "tail_gain") == {"bubble/fno/mse": pytest.approx(0.2)}
