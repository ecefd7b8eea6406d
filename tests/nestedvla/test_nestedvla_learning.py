"""Every trained model of nestedvla learns (DESIGN.md rule 6): each trainable leaf of the base
policy, the per-task and joint LoRA adapters, the PPO agent and the nested hypernetwork gets
gradient from its own training loss (:func:`repro26.core.learning.assert_every_parameter_learns`);
the hypernetwork's inner network, codes and outer network already at the first step while its
generated adapter is exactly zero; after training, same-shape layers get different generated
matrices and the generated adapters reconstruct the per-task ones."""

import dataclasses
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.core.cli import resolve_run_config
from repro26.core.learning import assert_every_parameter_learns
from repro26.nestedvla import cli, ppo, suites, train
from repro26.nestedvla.policy import BasePolicy, NestedHypernetwork, init_lora

ROOT = Path(__file__).resolve().parents[2]
N_TASKS, N_DEMO = 3, 12


@pytest.fixture(scope="module")
def setup():
    _, cfg, _ = resolve_run_config(cli, "nestedvla", ROOT / "config" / "config.yaml", "smoke")
    cfg = dataclasses.replace(cfg, seeds=(0,), width=8, depth=1, rank=2, code_dim=4,
                              inner_width=8, outer_width=16, per_task=4)
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    obs = jax.random.normal(k[0], (N_TASKS, N_DEMO, suites.OBS_DIM))
    acts = 0.5 * jnp.tanh(jax.random.normal(k[1], (N_TASKS, N_DEMO, suites.ACT_DIM)))
    emb = jax.random.normal(k[2], (N_TASKS, suites.EMB_DIM))
    mask = jnp.ones((N_TASKS, suites.ACT_DIM))
    base = BasePolicy(cfg.width, cfg.depth, cfg.heads, key=k[3])
    return cfg, base, (obs, acts, emb, mask)


def _keys(n=3):
    return list(jax.random.split(jax.random.PRNGKey(5), n))


def _adapters(base, rank, seed=7):
    """Per-task LoRA adapters (stacked on N_TASKS) with random non-zero B."""
    def one(k):
        lora = init_lora(base.shapes, rank, k)
        return dataclasses.replace(lora, b=tuple(
            0.3 * jax.random.normal(jax.random.fold_in(k, l), x.shape)
            for l, x in enumerate(lora.b)))
    return jax.vmap(one)(jax.random.split(jax.random.PRNGKey(seed), N_TASKS))


def _targets(base, rank):
    return jax.vmap(lambda a: a.deltas())(_adapters(base, rank))


def test_base_policy_learns(setup):
    cfg, base, data = setup
    assert_every_parameter_learns(base, lambda m, k: train.base_loss(m, data, k, 4)[0], _keys())


def test_per_task_and_joint_adapters_learn(setup):
    cfg, base, (obs, acts, emb, mask) = setup
    lora = init_lora(base.shapes, cfg.rank, jax.random.PRNGKey(1))
    one_task = (base, obs[0], acts[0], emb[0], mask[0])
    assert_every_parameter_learns(lora, lambda m, k: train.adapter_loss(m, one_task, k, 8)[0],
                                  _keys())
    all_tasks = (base, obs, acts, emb, mask)
    assert_every_parameter_learns(lora, lambda m, k: train.joint_loss(m, all_tasks, k, 4)[0],
                                  _keys())


def test_ppo_agent_learns(setup):
    cfg, base, (obs, acts, emb, mask) = setup
    agent = ppo.init_agent(init_lora(base.shapes, cfg.rank, jax.random.PRNGKey(1)), 0.3, 8,
                           jax.random.PRNGKey(2))
    logp = jnp.full(N_DEMO, -2.0)
    adv = jnp.linspace(-1, 1, N_DEMO)
    batch = (obs[0], acts[0], logp, adv, adv + 0.5)
    assert_every_parameter_learns(
        agent, lambda m, k: ppo.surrogate(m, base, emb[0], mask[0], batch, 0.2)[0], _keys())


def test_nested_hypernetwork_starts_at_zero_and_every_group_learns_at_step_one(setup):
    cfg, base, (obs, acts, emb, mask) = setup
    hyper = NestedHypernetwork(base.shapes, cfg.rank, cfg.code_dim, cfg.inner_width,
                               cfg.outer_width, key=jax.random.PRNGKey(3))
    generated = eqx.filter_jit(eqx.filter_vmap(hyper.deltas))(emb)
    assert all(float(jnp.abs(d).max()) == 0.0 for d in generated)
    data = (base, _targets(base, cfg.rank), obs, acts, emb, mask)

    def loss(m, k):
        return train.nested_loss(m, data, k, cfg.per_task, 1.0)[0]

    grads = eqx.filter_jit(eqx.filter_grad(loss))(hyper, jax.random.PRNGKey(0))
    for layer in grads.outer.layers:
        assert float(jnp.abs(layer.weight).max()) > 0 and float(jnp.abs(layer.bias).max()) > 0
    assert float(jnp.min(jnp.abs(grads.codes).max(1))) > 0  # every layer's code, step one
    # only the frozen initial copy stays; the A offsets learn once B has left zero
    assert_every_parameter_learns(hyper, loss, _keys(), frozen=["initial"])


def test_trained_hypernetwork_reconstructs_distinct_same_shape_layers(setup):
    """train_nested on random per-task targets: generated deltas reconstruct them (relative
    error below 0.25; 1 at initialisation) and the 4 same-shape (width x width) projections of a task differ."""
    cfg, base, (obs, acts, emb, mask) = setup
    cfg = dataclasses.replace(cfg, nested_steps=300, chunk_size=300, adapter_lr=0.01)
    bases = jax.tree.map(lambda x: x[None], base)
    adapters = _adapters(base, cfg.rank)
    targets = jax.vmap(lambda a: a.deltas())(adapters)
    adapters = jax.tree.map(lambda x: x[None], adapters)  # one seed
    hyper, _ = train.train_nested(cfg, cfg.seeds, bases, adapters, obs, acts, emb, mask, None,
                                  False)
    hyper = jax.tree.map(lambda x: x[0] if eqx.is_array(x) else x, hyper)
    all_generated = eqx.filter_jit(eqx.filter_vmap(hyper.deltas))(emb)
    for t in range(N_TASKS):
        generated, target = (jax.tree.map(lambda x: x[t], d) for d in (all_generated, targets))
        assert float(train.reconstruction_error(generated, target)) < 0.25  # 1 at init
        same = [g for g, s in zip(generated, base.shapes) if s == (cfg.width, cfg.width)]
        assert len(same) == 4
        for i in range(4):
            for j in range(i + 1, 4):
                gap = jnp.linalg.norm(same[i] - same[j]) / jnp.linalg.norm(same[i])
                assert float(gap) > 0.5, (t, i, j, float(gap))
