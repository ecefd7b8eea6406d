"""nestedvla parts: merging operators on hand-made task vectors, the nested hypernetwork's
shapes and zero-init, the scripted experts, and the claim predicates on synthetic tables."""

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.core.cli import resolve_run_config
from repro26.nestedvla import claims, cli, evaluate, merging, suites
from repro26.nestedvla.policy import BasePolicy, NestedHypernetwork, act, bc_loss, init_lora

ROOT = Path(__file__).resolve().parents[2]
TAU = jnp.asarray([[3.0, -1.0, 0.5, 2.0],
                   [-2.0, -2.0, 0.1, 1.0],
                   [1.0, 4.0, -0.2, -3.0]])


def test_task_arithmetic_is_scaled_sum():
    np.testing.assert_allclose(merging.task_arithmetic(TAU, 0.5),
                               0.5 * np.asarray([2.0, 1.0, 0.4, 0.0]))


def test_ties_trim_elect_disjoint_mean():
    # no trimming: signs elected from the column sums (+, +, +, 0); agreeing entries averaged
    merged = merging.ties(TAU, 1.0, keep=1.0)
    np.testing.assert_allclose(merged, [(3.0 + 1.0) / 2, 4.0, (0.5 + 0.1) / 2, 0.0])
    # keep half of each row by magnitude: rows -> [3,0,0,2], [-2,-2,0,0], [0,4,0,-3]
    trimmed = merging.trim(TAU, 0.5)
    np.testing.assert_allclose(trimmed, [[3, 0, 0, 2], [-2, -2, 0, 0], [0, 4, 0, -3]])
    merged = merging.ties(TAU, 2.0, keep=0.5)
    # sums of trimmed: [1, 2, 0, -1] -> signs (+, +, 0, -); agreeing: [3], [4], none, [-3]
    np.testing.assert_allclose(merged, 2.0 * np.asarray([3.0, 4.0, 0.0, -3.0]))


def test_dare_is_unbiased_and_drops_at_rate_p():
    keys = jax.random.split(jax.random.PRNGKey(0), 20000)
    draws = jax.vmap(lambda k: merging.dare(TAU, 1.0, 0.7, k))(keys)
    expected = np.asarray(TAU.sum(0))
    # each entry's sum of 3 independent terms tau/(1-p) * Bernoulli(1-p): standard error
    se = np.sqrt(np.sum(np.asarray(TAU) ** 2 * 0.7 / 0.3, axis=0) / len(keys))
    np.testing.assert_array_less(np.abs(np.asarray(draws.mean(0)) - expected), 5 * se + 1e-6)
    single = jax.vmap(lambda k: merging.dare(TAU[:1], 1.0, 0.7, k))(keys)
    assert abs(float(jnp.mean(single == 0)) - 0.7) < 0.01
    np.testing.assert_allclose(merging.dare(TAU, 0.3, 0.0, keys[0]),
                               merging.task_arithmetic(TAU, 0.3))


@pytest.fixture(scope="module")
def nets():
    base = BasePolicy(16, 2, key=jax.random.PRNGKey(0))
    hyper = NestedHypernetwork(base.shapes, 3, 4, 8, 16, key=jax.random.PRNGKey(1))
    return base, hyper


def test_generated_adapter_shapes_and_zero_init_is_base(nets):
    base, hyper = nets
    emb = jnp.linspace(-1, 1, suites.EMB_DIM)
    adapter = hyper.adapter(emb)
    assert [a.shape for a in adapter.a] == [(3, i) for o, i in base.shapes]
    assert [b.shape for b in adapter.b] == [(o, 3) for o, i in base.shapes]
    assert all(d.shape == s for d, s in zip(adapter.deltas(), base.shapes))
    assert all(float(jnp.abs(d).max()) == 0.0 for d in adapter.deltas())
    obs = jnp.linspace(-1, 1, suites.OBS_DIM)
    np.testing.assert_array_equal(act(base, hyper.deltas(emb), obs, emb), act(base, None, obs, emb))
    # not a stationary point: the BC loss moves the zero-initialised output layer
    target = jnp.ones((4, suites.ACT_DIM)) * 0.3
    grads = eqx.filter_grad(lambda h: bc_loss(base, h.deltas(emb), jnp.tile(obs, (4, 1)), emb,
                                              target, jnp.ones(suites.ACT_DIM)))(hyper)
    assert float(jnp.abs(grads.outer.layers[-1].weight).max()) > 0
    lora = init_lora(base.shapes, 3, jax.random.PRNGKey(2))
    assert all(float(jnp.abs(d).max()) == 0.0 for d in lora.deltas())


def test_scripted_experts_solve_every_task_of_the_small_suites():
    _, cfg, _ = resolve_run_config(cli, "nestedvla", ROOT / "config" / "config.yaml", "small")
    skills, pretrain = evaluate.suite_tasks(cfg), evaluate.pretrain_tasks(cfg)
    for suite in suites.SUITES:
        tasks = suites.concat(pretrain[suite], *skills[suite])
        _, _, ok = suites.demonstrations(suite, tasks, jax.random.PRNGKey(7), 16, cfg.horizon, 0.0)
        rate = np.asarray(ok).mean(1)
        assert rate.min() >= 0.9, (suite, rate.round(2))
        assert rate.mean() >= 0.98, (suite, rate.mean())


def test_nearest_task_excludes_itself():
    emb = np.asarray([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    np.testing.assert_array_equal(evaluate.nearest_index(emb, emb, True), [1, 0, 1])
    np.testing.assert_array_equal(evaluate.nearest_index(emb, np.asarray([[2.9, 0.0]]), False), [2])


def _table(success: dict[str, list[float]]):
    """Synthetic success_by_suite table: ``success[method] = per-seed value`` on every suite and
    the mean of suites; a ``method@suite`` key overrides one suite."""
    rows = []
    methods = {k.split("@")[0] for k in success}
    for method in methods:
        for suite in (*suites.SUITES, "all"):
            values = success.get(f"{method}@{suite}", success[method])
            rows += [{"method": method, "suite": suite, "seed": s, "success": v}
                     for s, v in enumerate(values)]
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


NOISE = np.asarray([0.0, 0.01, -0.01, 0.02, -0.02])


def _rows(**means):
    out = {"base": 0.4 + NOISE, "nearest": 0.3 + NOISE, "joint": 0.6 + NOISE,
           "finetune": 0.95 + NOISE, "ties": 0.45 - NOISE, "dare": 0.5 + NOISE,
           "task_arithmetic": 0.55 + 0 * NOISE, "nestedvla": 0.9 + NOISE[::-1]}
    out.update({k: v + NOISE if np.ndim(v) == 0 else v for k, v in means.items()})
    return out


def test_beats_merging_held_not_held_inconclusive():
    held = claims.beats_merging_claim(_table(_rows()))
    assert held.verdict == "held" and held.measured["strongest_merging"] == "task_arithmetic"
    assert claims.beats_merging_claim(_table(_rows(nestedvla=0.4))).verdict == "not held"
    weak = claims.beats_merging_claim(_table(_rows(task_arithmetic=0.35, dare=0.3, ties=0.2)))
    assert weak.verdict == "inconclusive"
    assert "does not beat the frozen base" in weak.inconclusive_reason
    noisy = claims.beats_merging_claim(_table(_rows(nestedvla=0.55 + 5 * NOISE[::-1])))
    assert noisy.verdict == "inconclusive"


def test_near_finetune_held_not_held_inconclusive():
    assert claims.near_finetune_claim(_table(_rows()), 0.1).verdict == "held"
    # close on one suite only is enough
    one = _rows(nestedvla=0.5, **{"nestedvla@arm2": 0.93 + NOISE})
    assert claims.near_finetune_claim(_table(one), 0.05).verdict == "held"
    assert claims.near_finetune_claim(_table(_rows(nestedvla=0.5)), 0.05).verdict == "not held"
    # a suite where fine-tuning does not beat the base does not count
    no_gain = _rows(nestedvla=0.5, finetune=0.5, base=0.5)
    assert claims.near_finetune_claim(_table(no_gain), 0.05).verdict == "inconclusive"
    wide = _rows(nestedvla=0.92 + 4 * NOISE)
    assert claims.near_finetune_claim(_table(wide), 0.05).verdict == "inconclusive"
