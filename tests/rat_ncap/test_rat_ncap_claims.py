"""Every claim predicate on synthetic tables: one that makes it held, one not held, and the
inconclusive cases (the compared baseline does not beat the trivial row, no seed walks a whole
episode, an interval of a difference too wide to decide)."""

from types import SimpleNamespace

import numpy as np

from repro26.rat_ncap.claims import ablation_claim, interface_claim, locomotion_claim, mlp_claim

from repro26.core.claims import claim_problems

SEEDS, SPEEDS = (0, 1, 2), (0.1, 0.2, 0.3)
CFG = SimpleNamespace(main_variant="ncap-torque-refined", mlp_variant="mlp-torque-refined", generations=10,
                      pop_size=16, train_speeds=SPEEDS, eval_speeds=SPEEDS, seeds=SEEDS, episode_s=3.0,
                      eval_s=4.0, timestep=0.004,
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
                 success=lambda c, s, v: False, fell=lambda c, s, v: False, speed=lambda c, s, v: 0.0,
                 stride_freq=lambda c, s, v: np.nan, duty=lambda c, s, v: np.nan,
                 lr_hind=lambda c, s, v: np.nan)


def evals(ncap=0.5, mlp=0.5, muscle=0.3, ep=0.1, do_nothing=0.02, spread=0.0, **main_columns):
    main = dict(reward=lambda c, s, v: ncap + 0.01 * s, success=lambda c, s, v: True, fell=lambda c, s, v: False,
                speed=lambda c, s, v: v, stride_freq=lambda c, s, v: 3 + 5 * v, duty=lambda c, s, v: 0.7 - v,
                lr_hind=lambda c, s, v: 0.5)
    main.update(main_columns)
    out = {CFG.main_variant: table(("intact", "V0", "V3"), **main), "baselines": baselines(do_nothing)}
    for name, value, n in (("ncap-muscle-refined", muscle, 83), ("ncap-ep-refined", ep, 83),
                           (CFG.mlp_variant, mlp, 11064)):
        out[name] = table(num_params=n, reward=lambda c, s, v, x=value: x + 0.01 * s + spread * (s - 1),
                          success=lambda c, s, v, x=value: x > 0.2)
    return out


def fictive(lag, initial=None):
    """Fictive rows of the trained circuits (lags ``lag``) and the untrained circuit as wired
    (``initial``, default: V0's alternation role shown, the ideal row)."""
    initial = initial or {"intact": 0.5, "V0": 0.0, "V3": 0.5}
    out = []
    for circuit, lags in (("trained", lag), ("initial", initial)):
        t = table(("intact", "V0", "V3"), lr_hind=lambda c, s, v, lags=lags: lags[c])
        out.append(t | {"circuit": np.asarray([circuit] * 27), "state": np.zeros(27, int),
                        "alternating": np.asarray([lags[c] == 0.5 for c in t["condition"]])})
    return {k: np.concatenate([t[k] for t in out]) for k in out[0]}


def valid(claim):
    """The claim's JSON passes the core schema check (what every smoke run validates)."""
    assert claim_problems(claim.to_json()) == []
    return claim


def test_locomotion_claim_flips():
    assert valid(locomotion_claim(CFG, evals())).verdict == "held"
    flat = evals(stride_freq=lambda c, s, v: 4 - 5 * v)  # frequency falls with speed
    assert valid(locomotion_claim(CFG, flat)).verdict == "not held"
    # one seed walks whole episodes, the others fall: not held on the evidence of that seed
    some_fall = evals(fell=lambda c, s, v: s > 0, success=lambda c, s, v: s == 0)
    assert valid(locomotion_claim(CFG, some_fall)).verdict == "not held"


def test_locomotion_claim_is_inconclusive_when_every_episode_falls():
    falls = evals(fell=lambda c, s, v: True, success=lambda c, s, v: False,
                  stride_freq=lambda c, s, v: np.nan, duty=lambda c, s, v: np.nan)
    claim = valid(locomotion_claim(CFG, falls))
    assert claim.verdict == "inconclusive" and "walks a whole evaluation episode" in claim.inconclusive_reason
    assert claim.ideal_passes and not claim.trivial_passes


def test_interface_claim_flips_and_needs_a_trained_interface():
    assert valid(interface_claim(CFG, evals())).verdict == "held"
    assert valid(interface_claim(CFG, evals(ncap=0.5, muscle=0.5, ep=0.5))).verdict == "not held"
    assert valid(interface_claim(CFG, evals(ncap=0.0, muscle=-0.1, ep=-0.2))).verdict == "inconclusive"


def test_interface_claim_with_overlapping_intervals_is_never_not_held():
    """Best and worst differ by 0.01 with a seed spread of 0.05: the interval of the difference
    contains 0 and reaches past the effect, so noise decides: inconclusive, not 'not held'."""
    noisy = evals(ncap=0.51, muscle=0.505, ep=0.5, spread=0.05,
                  reward=lambda c, s, v: 0.51 + 0.01 * s - 0.05 * (s - 1))
    claim = valid(interface_claim(CFG, noisy))
    assert claim.verdict == "inconclusive" and claim.min_detectable_effect > 0.05


def test_ablation_claim_flips_fictive_and_body():
    alternation_lost = {"intact": 0.5, "V0": 0.0, "V3": 0.5}
    body = dict(lr_hind=lambda c, s, v: alternation_lost[c])
    assert valid(ablation_claim(CFG, evals(**body), fictive(alternation_lost))).verdict == "held"
    v3_breaks_too = {"intact": 0.5, "V0": 0.0, "V3": 0.0}
    assert ablation_claim(CFG, evals(**body), fictive(v3_breaks_too)).verdict == "not held"
    body_bounds = dict(lr_hind=lambda c, s, v: 0.0)
    assert ablation_claim(CFG, evals(**body_bounds), fictive(alternation_lost)).verdict == "not held"
    # the circuit as wired does not show the roles: the task cannot show them
    claim = valid(ablation_claim(CFG, evals(**body), fictive(alternation_lost, v3_breaks_too)))
    assert claim.verdict == "inconclusive" and claim.ideal_passes is False
    no_steps = dict(lr_hind=lambda c, s, v: np.nan)
    assert valid(ablation_claim(CFG, evals(**no_steps), fictive(alternation_lost))).verdict == "inconclusive"


def test_mlp_claim_counts_only_a_working_mlp():
    assert valid(mlp_claim(CFG, evals(ncap=0.5, mlp=0.5))).verdict == "held"
    assert valid(mlp_claim(CFG, evals(ncap=0.2, mlp=0.5))).verdict == "not held"
    # an MLP below standing still: the comparison says nothing
    assert valid(mlp_claim(CFG, evals(ncap=0.5, mlp=0.0, do_nothing=0.02))).verdict == "inconclusive"
    # an interval of the difference that straddles -delta: inconclusive, never not held
    noisy = evals(ncap=0.48, mlp=0.5, spread=0.1)
    claim = valid(mlp_claim(CFG, noisy))
    assert claim.verdict == "inconclusive" and "noise decides" in claim.inconclusive_reason
    assert claim.budget[CFG.main_variant]["env_steps"] == claim.budget[CFG.mlp_variant]["env_steps"]
