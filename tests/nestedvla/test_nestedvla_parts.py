"""nestedvla parts: merging operators on hand-made task vectors, the transformer base against
equinox's own layers, the nested hypernetwork's shapes and zero-init, the scripted experts, PPO
(GAE and log-density closed forms; a PPO adapter beats the frozen base on an easy task), the
MT10 token layout, and the claim predicates on synthetic tables."""

import dataclasses

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.core.cli import resolve_run_config
import scipy.stats

from repro26.nestedvla import claims, cli, evaluate, merging, mt10, ppo, suites, train
from repro26.nestedvla.policy import (PROJECTIONS, BasePolicy, NestedHypernetwork, act, bc_loss,
                                      init_lora, tokens)

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


def _reference_act(base: BasePolicy, obs, emb):
    """The base policy rebuilt from equinox's LayerNorm, MultiheadAttention and Linear layers."""
    x = tokens(base, obs, emb)
    width = x.shape[1]
    key = jax.random.PRNGKey(0)

    def norm(i):
        ln = eqx.nn.LayerNorm(width, eps=1e-5)
        return eqx.tree_at(lambda m: (m.weight, m.bias), ln, tuple(base.norms[i]))

    def linear(j):
        w = base.weights[j]
        lin = eqx.nn.Linear(w.shape[1], w.shape[0], key=key)
        return eqx.tree_at(lambda m: (m.weight, m.bias), lin, (w, base.biases[j]))

    for l in range(len(base.weights) // len(PROJECTIONS)):
        j = len(PROJECTIONS) * l
        mha = eqx.nn.MultiheadAttention(base.heads, width, use_query_bias=True, use_key_bias=True,
                                        use_value_bias=True, use_output_bias=True, key=key)
        mha = eqx.tree_at(lambda m: (m.query_proj, m.key_proj, m.value_proj, m.output_proj), mha,
                          tuple(linear(j + i) for i in range(4)))
        h = jax.vmap(norm(2 * l))(x)
        x = x + mha(h, h, h)
        h = jax.vmap(norm(2 * l + 1))(x)
        x = x + jax.vmap(linear(j + 5))(jax.nn.gelu(jax.vmap(linear(j + 4))(h)))
    return jnp.tanh(base.head_w @ norm(-1)(x[-1]) + base.head_b)


def test_transformer_base_matches_equinox_layers(nets):
    base, _ = nets
    base = eqx.tree_at(lambda b: b.biases, base,
                       tuple(0.1 * jnp.ones_like(b) for b in base.biases))
    obs = jnp.linspace(-1, 1, suites.OBS_DIM)
    emb = jnp.linspace(1, -0.5, suites.EMB_DIM)
    np.testing.assert_allclose(act(base, None, obs, emb), _reference_act(base, obs, emb),
                               rtol=1e-5, atol=1e-6)
    assert len(base.weights) == 2 * len(PROJECTIONS)


def test_gae_closed_forms_and_gaussian_log_density():
    rewards = jnp.asarray([1.0, -0.5, 2.0, 0.25])
    values = jnp.asarray([0.3, -0.2, 0.8, 0.1])
    last, gamma = jnp.asarray(0.6), 0.9
    # lambda = 1: discounted return to the horizon (bootstrapped by V(o_T)) minus V(o_t)
    adv, ret = ppo.gae(rewards, values, last, gamma, 1.0)
    discounted = [sum(gamma ** (k - t) * float(rewards[k]) for k in range(t, 4))
                  + gamma ** (4 - t) * float(last) for t in range(4)]
    np.testing.assert_allclose(ret, discounted, rtol=1e-6)
    np.testing.assert_allclose(adv, np.asarray(discounted) - np.asarray(values), rtol=1e-6)
    # lambda = 0: the one-step TD residual
    adv0, _ = ppo.gae(rewards, values, last, gamma, 0.0)
    np.testing.assert_allclose(adv0, rewards + gamma * jnp.append(values[1:], last) - values,
                               rtol=1e-6)
    mean, log_std = jnp.asarray([0.1, -0.3, 0.5]), jnp.asarray([-1.0, 0.2, 0.0])
    a, mask = jnp.asarray([0.4, 0.1, 2.0]), jnp.asarray([1.0, 1.0, 0.0])
    expected = scipy.stats.norm.logpdf(np.asarray(a[:2]), np.asarray(mean[:2]),
                                       np.exp(np.asarray(log_std[:2]))).sum()
    np.testing.assert_allclose(ppo.log_prob(mean, log_std, a, mask), expected, rtol=1e-5)


def test_ppo_adapter_beats_the_frozen_base_on_an_easy_task():
    """A base pretrained by BC on eight point-mass reach targets fails a ninth; PPO on a LoRA
    adapter of that frozen base (no demonstrations of the ninth) learns to reach it."""
    _, cfg, _ = resolve_run_config(cli, "nestedvla", ROOT / "config" / "config.yaml", "smoke")
    cfg = dataclasses.replace(cfg, seeds=(0,), width=8, depth=1, horizon=30, base_steps=200,
                              per_task=16, chunk_size=200, eval_episodes=64, ppo_iterations=40,
                              ppo_envs=32, ppo_lr=0.003)
    pretrain, new = suites.make_tasks(3, "point", 8, 1)
    pretrain = dataclasses.replace(pretrain, kind=np.zeros(8, int))
    new = dataclasses.replace(new, kind=np.zeros(1, int))
    obs, acts, _ = suites.demonstrations("point", pretrain, jax.random.PRNGKey(0), 4, cfg.horizon,
                                         0.3)
    mask = np.tile(np.asarray([1, 1, 0], np.float32), (8, 1))
    bases, _ = train.train_base(cfg, cfg.seeds, np.asarray(obs), np.asarray(acts),
                                pretrain.embedding(), mask, None, False)
    lora, curve = train.train_adapters_ppo(cfg, cfg.seeds, bases, [("point", new)], None, False)
    deltas = eqx.filter_vmap(eqx.filter_vmap(lambda a: a.deltas()))(lora)
    zeros = jax.tree.map(jnp.zeros_like, deltas)
    key = jax.random.PRNGKey(1)
    base_rate = float(evaluate.success(cfg, new, bases, zeros, key)[0, 0])
    ppo_rate = float(evaluate.success(cfg, new, bases, deltas, key)[0, 0])
    assert curve.shape == (cfg.ppo_iterations, 1, 1)
    assert ppo_rate > base_rate + 0.3, (base_rate, ppo_rate)


def test_mt10_layout_tokenises_every_feature_once():
    used = sorted(i for group in mt10.LAYOUT for i in group if i >= 0)
    assert used == list(range(mt10.OBS + mt10.N_TASKS))
    base = BasePolicy(8, 1, 2, mt10.LAYOUT, mt10.ACT, key=jax.random.PRNGKey(0))
    a = act(base, None, jnp.ones(mt10.OBS), jnp.eye(mt10.N_TASKS)[3])
    assert a.shape == (mt10.ACT,)


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
    assert noisy.min_detectable_effect > 0 and noisy.effect == 0.41
    # the ideal row (per-task fine-tuning) passes, the trivial row (frozen base) does not
    assert held.ideal_passes is True and held.trivial_passes is False
    # where not even per-task fine-tuning beats the mergers, the task cannot show the claim
    cannot = claims.beats_merging_claim(_table(_rows(finetune=0.5, nestedvla=0.6)))
    assert cannot.verdict == "inconclusive" and cannot.ideal_passes is False


def test_near_finetune_held_not_held_inconclusive():
    assert claims.near_finetune_claim(_table(_rows()), 0.1).verdict == "held"
    # close on one suite only is enough
    one = _rows(nestedvla=0.5, **{"nestedvla@arm2": 0.93 + NOISE})
    assert claims.near_finetune_claim(_table(one), 0.05).verdict == "held"
    assert claims.near_finetune_claim(_table(_rows(nestedvla=0.5)), 0.05).verdict == "not held"
    # a suite where fine-tuning does not beat the base does not count
    no_gain = _rows(nestedvla=0.5, finetune=0.5, base=0.5)
    assert claims.near_finetune_claim(_table(no_gain), 0.05).verdict == "inconclusive"
    wide = claims.near_finetune_claim(_table(_rows(nestedvla=0.92 + 4 * NOISE)), 0.05)
    assert wide.verdict == "inconclusive" and 0 < wide.min_detectable_effect < 1
    assert wide.effect == 0.05
    held = claims.near_finetune_claim(_table(_rows()), 0.1)
    assert held.ideal_passes is True and held.trivial_passes is False
    # one point of a 1 pp margin: exact ties with fine-tuning hold, a 2 pp gap does not
    tie = _rows(nestedvla=_rows()["finetune"])
    assert claims.near_finetune_claim(_table(tie), 0.01).verdict == "held"
    gap = _rows(nestedvla=_rows()["finetune"] - 0.02)
    assert claims.near_finetune_claim(_table(gap), 0.01).verdict == "not held"


def test_budgets_name_what_nestedvla_adds():
    _, cfg, _ = resolve_run_config(cli, "nestedvla", ROOT / "config" / "config.yaml", "smoke")
    b = claims.budgets(cfg)
    n = 3 * cfg.n_tasks
    assert b["finetune"]["optimiser_steps"] == n * cfg.adapter_steps
    assert b["nestedvla"]["optimiser_steps"] == n * cfg.adapter_steps + cfg.nested_steps
    assert b["nestedvla"]["data_seen"] > b["merging"]["data_seen"] == b["finetune"]["data_seen"]
    assert b["merging"]["env_steps"] > 0 == b["nestedvla"]["env_steps"]
    assert set(claims.BUDGET_NOTE) >= set(b["nestedvla"])
    assert b["nestedvla"]["parameters"] > 0 and b["finetune"]["parameters"] > 0
