"""Train one GDE per state dimension, all seeds at once (vmapped), with core.train.run_loop.

Seed s initialises its model with PRNGKey(s) and draws its own training batches (the pool of
exact beliefs is shared: it is data, not a model)."""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core.train import init_train_state, optax_step, run_loop
from repro26.nbf import losses
from repro26.nbf.model import GDE


def make_models(cfg, n_evaders: int, seeds) -> GDE:
    """Stacked (seed axis first) untrained GDEs of dimension 2 * n_evaders."""
    make = lambda s: GDE(2 * n_evaders, cfg.hidden, cfg.embed_dim, cfg.flow_layers,
                         key=jax.random.PRNGKey(s))
    return eqx.filter_vmap(make)(jnp.asarray(seeds))


def parameter_count(models: GDE) -> int:
    """Trainable scalars of one seed's GDE (``models`` stacked on a leading seed axis)."""
    leaves = jax.tree_util.tree_leaves(eqx.filter(models, eqx.is_inexact_array))
    return int(sum(leaf[0].size for leaf in leaves))


def optimizer(cfg) -> optax.GradientTransformation:
    schedule = optax.cosine_decay_schedule(cfg.learning_rate, cfg.train_steps)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


def train_gdes(cfg, pool: np.ndarray, n_evaders: int, checkpoint: Path | None = None,
               progress: bool = True):
    """Train the GDEs of all ``cfg.seeds`` for d = 2 * n_evaders; returns the stacked models
    and the loss history (steps x seeds)."""
    opt = optimizer(cfg)
    seeds = jnp.asarray(cfg.seeds)

    def loss_fn(model, pool, key):
        sets, targets = losses.sample_training_batch(
            key, pool, batch=cfg.batch_size, n_evaders=n_evaders, set_size=cfg.set_size,
            target_size=cfg.target_size, grid=cfg.grid)
        return losses.gde_nll(model, sets, targets)

    one_step = optax_step(loss_fn, opt)

    def step(states, pool, key):
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seeds)
        return eqx.filter_vmap(one_step, in_axes=(eqx.if_array(0), None, 0))(states, pool, keys)

    models = make_models(cfg, n_evaders, cfg.seeds)
    states = eqx.filter_vmap(lambda m: init_train_state(m, opt))(models)
    states, history = run_loop(step, states, jnp.asarray(pool, jnp.float32),
                               key=jax.random.PRNGKey(1000 + n_evaders),
                               num_steps=cfg.train_steps, chunk_size=min(100, cfg.train_steps),
                               checkpoint_path=checkpoint, checkpoint_every=None,
                               desc=f"gde d={2 * n_evaders}", progress=progress)
    return states.model, history
