"""Each claim predicate made to hold, to fail, and to be inconclusive by synthetic tables."""

import dataclasses

import numpy as np

from repro26.nbf import claims
from repro26.nbf.evaluate import FILTERS


@dataclasses.dataclass(frozen=True)
class Cfg:
    held_in: str = "walk"
    held_out: tuple = ("fast",)
    particles: int = 64
    evaders: tuple = (1, 2, 3)


def table(nbf_err, seeds=8, noise=0.0, pf_err=None, trivial=1.0):
    """Rows for every filter/scenario: error = base(filter, k, dyn) * (1 + noise_s).

    ``nbf_err(k, dyn)`` and ``pf_err(k, dyn)`` give the mean errors."""
    pf_err = pf_err or (lambda k, dyn: 0.1 * k)
    rng = np.random.default_rng(0)
    rows = {c: [] for c in ("filter", "seed", "evaders", "dynamics", "particles", "sinkhorn",
                            "mmd2")}
    scen = [(k, "walk") for k in (1, 2, 3)] + [(1, "fast")]
    for k, dyn in scen:
        for f in FILTERS:
            base = {"nbf": nbf_err(k, dyn), "pf": pf_err(k, dyn)}.get(
                f, trivial if f in claims.TRIVIAL else 0.05)
            for s in range(seeds):
                v = base * (1 + noise * rng.standard_normal())
                for c, val in zip(rows, (f, s, k, dyn, 64, v, v)):
                    rows[c].append(val)
    return {c: np.asarray(v) for c, v in rows.items()}


def verdicts(t):
    cfg = Cfg()
    return (claims.tracking_claim(t, cfg).verdict, claims.scaling_claim(t, cfg).verdict,
            claims.zero_shot_claim(t, cfg).verdict)


def test_all_hold_when_nbf_is_better_flatter_and_stable():
    t = table(lambda k, dyn: 0.05 * (1.1 ** k), noise=0.01)
    assert verdicts(t) == ("held", "held", "held")


def test_none_hold_when_nbf_is_worse_steeper_and_unstable():
    t = table(lambda k, dyn: (0.2 * 3 ** k) * (2.0 if dyn == "fast" else 1.0) / 3, noise=0.01,
              trivial=100.0)
    assert verdicts(t) == ("not held", "not held", "not held")


def test_inconclusive_when_noise_swamps_the_effect():
    t = table(lambda k, dyn: 0.1 * k * (1.2 if dyn == "fast" else 1.0), noise=0.5, seeds=4)
    assert verdicts(t) == ("inconclusive", "inconclusive", "inconclusive")


def test_inconclusive_when_pf_does_not_beat_the_trivial_belief():
    t = table(lambda k, dyn: 0.05, noise=0.01, trivial=0.01)
    v = verdicts(t)
    assert v[0] == "inconclusive" and v[1] == "inconclusive" and v[2] == "inconclusive"
    c = claims.tracking_claim(t, Cfg())
    assert "trivial" in c.inconclusive_reason
