"""Every claim predicate on synthetic tables that make it held, not held and inconclusive."""

import numpy as np
import pytest

from repro26.progress_advantage import claims as C

NOISE = np.random.default_rng(0).normal(0, 0.002, 8)


def _scores(values: dict[str, float], scale=0.002, seed=0, oracle=0.8):
    """Application scores with every scorer at ``values`` plus independent per-seed noise;
    the oracle a_star at ``oracle`` (no ORM in beam search or attribution)."""
    rng = np.random.default_rng(seed)
    base = {"random": 0.5, "position": 0.52, "logprob": 0.6, "self_certainty": 0.6,
            "step_prob": 0.6, "prm": 0.6, "orm": 0.6, "pa": 0.6, "a_star": oracle, **values}
    out = {}
    for app in C.APPLICATIONS:
        out[app] = {k: v + rng.normal(0, scale, 8) for k, v in base.items()}
        if app == "attribution":
            out[app].pop("orm")
        if app == "beam_search":
            out[app].pop("orm")
    return out


def test_beats_confidence_held_not_held_inconclusive():
    held = C.beats_confidence_claim(_scores({"pa": 0.7}))
    assert held.verdict == "held" and held.ideal_passes and held.trivial_passes is False
    assert C.beats_confidence_claim(_scores({"pa": 0.55})).verdict == "not held"
    c = C.beats_confidence_claim(_scores({"pa": 0.62}, 0.02))
    assert c.verdict == "inconclusive" and np.isfinite(c.min_detectable_effect)
    assert c.effect is not None
    # baselines below the strongest trivial row do not count, but the gate still decides:
    # pa above that row and above them is held, pa at that row is not
    none = {"logprob": 0.45, "self_certainty": 0.4, "step_prob": 0.48}
    c = C.beats_confidence_claim(_scores({**none, "pa": 0.7}))
    assert c.verdict == "held"
    assert not any(b["counts"] for v in c.measured["comparisons"].values()
                   for b in v["baselines"].values())
    assert C.beats_confidence_claim(_scores({**none, "pa": 0.52}, 0.02)).verdict != "held"


def test_step_position_is_the_trivial_row_when_stronger():
    s = _scores({"pa": 0.7, "position": 0.65, "logprob": 0.62, "self_certainty": 0.62,
                 "step_prob": 0.62})
    c = C.beats_confidence_claim(s)
    assert all(v["trivial"] == "position" for v in c.measured["comparisons"].values())
    assert not any(b["counts"] for v in c.measured["comparisons"].values()
                   for b in v["baselines"].values())


def test_the_task_cannot_show_it_when_the_oracle_loses():
    c = C.beats_confidence_claim(_scores({"pa": 0.7}, oracle=0.55))
    assert c.verdict == "inconclusive" and c.ideal_passes is False
    assert "cannot show" in c.inconclusive_reason


def test_surpasses_reward_models_is_superiority():
    assert C.surpasses_reward_models_claim(_scores({"pa": 0.65})).verdict == "held"
    # equal to the reward models: no longer enough (non-inferiority would pass)
    assert C.surpasses_reward_models_claim(_scores({"pa": 0.6})).verdict in (
        "not held", "inconclusive")
    assert C.surpasses_reward_models_claim(
        _scores({"pa": 0.55, "prm": 0.7, "orm": 0.7})).verdict == "not held"
    assert C.surpasses_reward_models_claim(_scores({"pa": 0.61}, 0.02)).verdict == "inconclusive"


def test_orm_is_not_compared_on_beam_prefixes():
    c = C.surpasses_reward_models_claim(_scores({"pa": 0.65, "orm": 0.9}, oracle=0.95))
    assert "orm" not in c.measured["comparisons"]["beam_search"]["baselines"]
    assert c.verdict == "not held"  # the ORM still wins best-of-N and AUROC


def test_reward_models_see_as_many_episodes_as_rl():
    import dataclasses
    from pathlib import Path

    from repro26.core.cli import resolve_run_config
    from repro26.progress_advantage import cli

    root = Path(__file__).resolve().parents[2]
    _, cfg, _ = resolve_run_config(cli, "progress_advantage", root / "config" / "config.yaml",
                                   "small")
    c = C.surpasses_reward_models_claim(_scores({"pa": 0.65}), cfg)
    ep = {k: v["episodes"] for k, v in c.budget.items()}
    assert ep["orm"] == ep["pa"] == cfg.rl_steps * cfg.rl_problems * cfg.rl_group
    assert ep["pa"] - (1 + cfg.horizon * cfg.rm_rollouts) < ep["prm"] <= ep["pa"]
    assert dataclasses.is_dataclass(cfg)


def _tabular(slope, err=0.001):
    slope = np.asarray(slope, float)
    n = slope.size
    rng = np.random.default_rng(0)
    return {"seed": np.arange(n), "steps": np.full(n, 100), "slope_learned": slope,
            "max_err_big_learned": np.full(n, err), "a_star_std": np.full(n, 0.1),
            "slope_closed_form": np.ones(n), "max_err_big_closed_form": np.zeros(n),
            "slope_random": rng.normal(0, 0.1, n), "max_err_big_random": np.full(n, 1.0),
            "kl_to_pi_star": np.full(n, 1e-4), "objective_gap_learned": np.zeros(n),
            "corr_learned": np.full(n, 0.99), "corr_unregularised": np.full(n, 0.5),
            "max_abs_err_closed_form": np.zeros(n)}


@pytest.mark.parametrize("slope,err,verdict", [
    (1.0 + NOISE, 0.001, "held"),
    (0.5 + NOISE, 0.001, "not held"),  # right shape, half the scale
    (1.0 + NOISE, 0.02, "not held"),  # an error of 0.2 std(A*) on a likely action
    (0.95 + np.random.default_rng(3).normal(0, 0.02, 8), 0.001, "inconclusive"),
])
def test_tabular_identity_verdicts(slope, err, verdict):
    c = C.tabular_claim(_tabular(slope, err))
    assert c.verdict == verdict
    assert c.ideal_passes and c.trivial_passes is False
