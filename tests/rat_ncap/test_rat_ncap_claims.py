"""Every claim predicate on synthetic tables: one that makes it held, one not held (and the
inconclusive cases where the compared baseline does not beat do-nothing)."""

from types import SimpleNamespace

import numpy as np

from repro26.rat_ncap.claims import ablation_claim, interface_claim, locomotion_claim, mlp_claim

SEEDS, SPEEDS = (0, 1, 2), (0.1, 0.2, 0.3)
CFG = SimpleNamespace(main_variant="ncap-torque-refined", mlp_variant="mlp-torque-refined", generations=10,
                      pop_size=16, train_speeds=SPEEDS,
                      variants=("ncap-torque-refined", "ncap-muscle-refined", "ncap-ep-refined",
                                "mlp-torque-refined"))


def table(conditions=("intact",), num_params=83, **columns):
    """Rows (condition, seed, speed); ``columns[name](condition, seed, speed)`` gives a value."""
    rows = [dict(condition=c, seed=s, v_cmd=v, num_params=num_params, gait="walk",
                 **{k: f(c, s, v) for k, f in columns.items()})
            for c in conditions for s in SEEDS for v in SPEEDS]
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


def baselines(do_nothing=0.02):
    return table(("do-nothing", "random-circuit", "initial-circuit"), reward=lambda c, s, v: do_nothing,
                 success=lambda c, s, v: False)


def evals(ncap=0.5, mlp=0.5, muscle=0.3, ep=0.1, do_nothing=0.02, **main_columns):
    main = dict(reward=lambda c, s, v: ncap + 0.01 * s, success=lambda c, s, v: True,
                speed=lambda c, s, v: v, stride_freq=lambda c, s, v: 3 + 5 * v, duty=lambda c, s, v: 0.7 - v,
                lr_hind=lambda c, s, v: 0.5)
    main.update(main_columns)
    out = {CFG.main_variant: table(("intact", "V0", "V3"), **main), "baselines": baselines(do_nothing)}
    for name, value, n in (("ncap-muscle-refined", muscle, 83), ("ncap-ep-refined", ep, 83),
                           (CFG.mlp_variant, mlp, 11064)):
        out[name] = table(num_params=n, reward=lambda c, s, v, x=value: x + 0.01 * s,
                          success=lambda c, s, v, x=value: x > 0.2)
    return out


def fictive(lag):
    t = table(("intact", "V0", "V3"), lr_hind=lambda c, s, v: lag[c])
    return t | {"circuit": np.asarray(["trained"] * 27), "state": np.zeros(27, int),
                "alternating": np.asarray([lag[c] == 0.5 for c in t["condition"]])}


def test_locomotion_claim_flips():
    assert locomotion_claim(CFG, evals()).verdict == "held"
    flat = evals(stride_freq=lambda c, s, v: 4 - 5 * v)  # frequency falls with speed
    assert locomotion_claim(CFG, flat).verdict == "not held"


def test_interface_claim_flips_and_needs_a_trained_interface():
    assert interface_claim(CFG, evals()).verdict == "held"
    assert interface_claim(CFG, evals(ncap=0.5, muscle=0.5, ep=0.5)).verdict == "not held"
    assert interface_claim(CFG, evals(ncap=0.0, muscle=-0.1, ep=-0.2)).verdict == "inconclusive"


def test_ablation_claim_flips_fictive_and_body():
    alternation_lost = {"intact": 0.5, "V0": 0.0, "V3": 0.5}
    body = dict(lr_hind=lambda c, s, v: alternation_lost[c])
    assert ablation_claim(CFG, evals(**body), fictive(alternation_lost)).verdict == "held"
    v3_breaks_too = {"intact": 0.5, "V0": 0.0, "V3": 0.0}
    assert ablation_claim(CFG, evals(**body), fictive(v3_breaks_too)).verdict == "not held"
    body_bounds = dict(lr_hind=lambda c, s, v: 0.0)
    assert ablation_claim(CFG, evals(**body_bounds), fictive(alternation_lost)).verdict == "not held"
    no_steps = dict(lr_hind=lambda c, s, v: np.nan)
    assert ablation_claim(CFG, evals(**no_steps), fictive(alternation_lost)).verdict == "inconclusive"


def test_mlp_claim_counts_only_a_working_mlp():
    assert mlp_claim(CFG, evals(ncap=0.5, mlp=0.5)).verdict == "held"
    assert mlp_claim(CFG, evals(ncap=0.2, mlp=0.5)).verdict == "not held"
    # an MLP below standing still: the comparison says nothing
    assert mlp_claim(CFG, evals(ncap=0.5, mlp=0.0, do_nothing=0.02)).verdict == "inconclusive"
