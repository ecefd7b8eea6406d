"""Fictive locomotion (circuit without body) of the untrained Rat NCAP over a fixed set of
random initial states: the circuit is bistable, so left-right coordination is read as the
fraction of initial states that end in alternation. Intact: most alternate, phase-locked;
V0 (and the diagonal V0-type LPN) silenced: almost none (synchrony, hopping); V3 silenced:
about as many as intact (Danner et al. 2017; Talpalar et al. 2013, Nature 500:85). The
rhythm speeds up with the commanded speed.

Measured on this set (48 states x 3 speeds, PRNGKey(2026)): alternating fraction intact
0.67, V0 silenced 0.08, V3 silenced 0.76 (V2a silenced 0.94, Ia silenced 0.67)."""

import jax
import numpy as np
import pytest

from repro26.core import tables
from repro26.rat_ncap.evaluate import alternating, coordination, fictive_rows, gait_class
from repro26.rat_ncap.model import RatNCAP, ravel_policy

SPEEDS = (0.1, 0.2, 0.3)
N_STATES = 48  # initial states (RatNCAP.init_state) from PRNGKey(2026), see fictive_rows


@pytest.fixture(scope="module")
def fictive():
    policy = RatNCAP("torque", True, 0.025, 0.1)
    params = np.asarray(ravel_policy(policy)[0])[None]
    rows = fictive_rows(policy, params, (0,), SPEEDS, 6.0, 0.004, jax.random.PRNGKey(2026), "initial",
                        n_states=N_STATES)
    return tables.concat([{k: np.asarray([v]) for k, v in r.items()} for r in rows])


def _fraction_alternating(t, condition):
    lag = t["lr_hind"][t["condition"] == condition]
    assert lag.size == N_STATES * len(SPEEDS) and np.isfinite(lag).all()  # every run has a rhythm
    return float(np.mean(alternating(lag)))


def test_fictive_alternation_fractions_intact_v0_v3(fictive):
    intact, v0, v3 = (_fraction_alternating(fictive, c) for c in ("intact", "V0", "V3"))
    assert 0.5 <= intact <= 0.95  # mostly alternation, but bistable: some states synchronise
    assert v0 <= 0.25 and intact - v0 >= 0.4  # V0 silenced: synchrony from almost every state
    assert abs(v3 - intact) <= 0.15  # V3 silenced: about unchanged
    intact_rows = fictive["condition"] == "intact"
    assert np.median(fictive["plv_lr_hind"][intact_rows]) > 0.9  # phase-locked, not drifting
    alt = alternating(fictive["lr_hind"]) & intact_rows
    assert tables.circular_distance(tables.circular_mean(fictive["lr_hind"][alt]), 0.5) < 0.1  # lag ~0.5


def test_fictive_rhythm_speeds_up_with_commanded_speed(fictive):
    intact = fictive["condition"] == "intact"
    freq = [np.mean(fictive["stride_freq"][intact & (fictive["v_cmd"] == v)]) for v in SPEEDS]
    assert freq[0] < freq[1] < freq[2] and freq[2] / freq[0] > 1.2


def test_coordination_recovers_known_lags():
    """Four sine 'limbs' at 3 Hz with set lags: the measured lags and frequency match."""
    dt, lags = 0.002, np.array([0.0, 0.5, 0.25, 0.75])  # LF, RF, LH, RH phase delays
    t = np.arange(0, 4, dt)
    signals = np.sin(2 * np.pi * (3.0 * t[:, None] - lags[None]))
    out = coordination(signals, dt)
    assert abs(out["stride_freq"] - 3.0) < 0.01
    assert tables.circular_distance(out["lr_hind"], 0.5) < 0.01  # RH after LH by 0.5
    assert tables.circular_distance(out["homolateral"], 0.75) < 0.01  # LF after LH by 0.75
    assert out["plv_lr_hind"] > 0.99


def test_lags_use_the_reference_limbs_own_period():
    """Hind limbs at 2 Hz in antiphase, fore limbs at 3 Hz: the hind left-right lag is 0.5 of
    the hind (reference) period. Dividing by the mean period of all four limbs (0.417 s instead
    of 0.5 s) would report 0.6."""
    dt = 0.002
    t = np.arange(0, 6, dt)
    freq, lags = np.array([3.0, 3.0, 2.0, 2.0]), np.array([0.0, 0.5, 0.0, 0.5])
    out = coordination(np.sin(2 * np.pi * (freq[None] * t[:, None] - lags[None])), dt)
    assert tables.circular_distance(out["lr_hind"], 0.5) < 0.01
    assert tables.circular_distance(out["lr_fore"], 0.5) < 0.01  # fore pair: the fore period
    assert abs(out["stride_freq"] - 2.5) < 0.01  # mean of the limbs' frequencies
    assert out["plv_lr_hind"] > 0.99


def test_a_silent_fore_limb_keeps_the_hind_lag():
    """LF silent (flat signal or marked inactive): lags that need it are NaN, the hind
    left-right lag and the frequency of the stepping limbs are still reported."""
    dt = 0.002
    t = np.arange(0, 4, dt)
    signals = np.sin(2 * np.pi * (3.0 * t[:, None] - np.array([0.0, 0.5, 0.0, 0.5])[None]))
    flat = signals.copy()
    flat[:, 0] = 0.0
    for out in (coordination(flat, dt), coordination(signals, dt, active=np.array([False, True, True, True]))):
        assert np.isnan(out["lr_fore"]) and np.isnan(out["homolateral"])
        assert tables.circular_distance(out["lr_hind"], 0.5) < 0.01
        assert tables.circular_distance(out["diagonal"], 0.5) < 0.01
        assert abs(out["stride_freq"] - 3.0) < 0.01
        assert gait_class(out) == "hind only"
