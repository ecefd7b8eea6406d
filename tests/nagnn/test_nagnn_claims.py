"""Each claim predicate on a synthetic table that makes it hold and one that makes it fail."""

import numpy as np

from repro26.nagnn import claims

SEEDS = range(6)


def metrics_table(ap: dict[str, float], noise=0.002):
    rng = np.random.default_rng(0)
    rows = {k: [] for k in ("dataset", "model", "seed", "negatives", "ap")}
    for model, mean in ap.items():
        for seed in SEEDS:
            for neg in ("random", "historical", "inductive"):
                rows["dataset"].append("dsbm")
                rows["model"].append(model)
                rows["seed"].append(seed)
                rows["negatives"].append(neg)
                rows["ap"].append(mean + noise * rng.normal())
    return {k: np.asarray(v) for k, v in rows.items()}


def speed_table(rate: dict[str, float]):
    rng = np.random.default_rng(1)
    rows = {k: [] for k in ("dataset", "model", "seed", "train_events_per_s",
                            "infer_events_per_s", "peak_memory_mb")}
    for model, r in rate.items():
        for seed in SEEDS:
            rows["dataset"].append("dsbm")
            rows["model"].append(model)
            rows["seed"].append(seed)
            rows["train_events_per_s"].append(r * np.exp(0.02 * rng.normal()))
            rows["infer_events_per_s"].append(2 * r * np.exp(0.02 * rng.normal()))
            rows["peak_memory_mb"].append(1.0)
    return {k: np.asarray(v) for k, v in rows.items()}


BASE = {"edgebank": 0.70, "common_neighbours": 0.72, "pref_attachment": 0.6,
        "jodie": 0.75, "gcn_gru": 0.76}


def test_ap_claim_flips_with_the_gap():
    held = claims.ap_gap_claim(metrics_table({**BASE, "tgn": 0.85, "nagnn": 0.845}))
    failed = claims.ap_gap_claim(metrics_table({**BASE, "tgn": 0.85, "nagnn": 0.80}))
    assert held.verdict == "held" and failed.verdict == "not held"
    assert held.measured["by_dataset"]["dsbm"]["event_model"] == "tgn"


def test_ap_claim_is_inconclusive_when_the_event_model_loses_to_the_trivial_row():
    c = claims.ap_gap_claim(metrics_table({**BASE, "tgn": 0.71, "jodie": 0.70, "nagnn": 0.71}))
    assert c.verdict == "inconclusive" and "does not beat" in c.inconclusive_reason


def test_speed_claim_flips_with_the_ratio():
    m = metrics_table({**BASE, "tgn": 0.85, "nagnn": 0.845})
    assert claims.speedup_claim(m, speed_table({"nagnn": 5000, "tgn": 1000, "jodie": 1200,
                                                "gcn_gru": 6000})).verdict == "held"
    assert claims.speedup_claim(m, speed_table({"nagnn": 1500, "tgn": 1000, "jodie": 1200,
                                                "gcn_gru": 6000})).verdict == "not held"


def test_snapshot_claim_flips_with_the_gain():
    held = claims.beats_snapshot_claim(metrics_table({**BASE, "tgn": 0.85, "nagnn": 0.82}))
    failed = claims.beats_snapshot_claim(metrics_table({**BASE, "tgn": 0.85, "nagnn": 0.755}))
    assert held.verdict == "held" and failed.verdict == "not held"
    weak = claims.beats_snapshot_claim(metrics_table({**BASE, "gcn_gru": 0.70, "tgn": 0.85,
                                                      "nagnn": 0.82}))
    assert weak.verdict == "inconclusive"
