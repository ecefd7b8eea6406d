"""Train one GDE per state dimension, all seeds at once (vmapped), with core.train.run_loop.

Seed s initialises its model with PRNGKey(s) and draws its own training batches (the pool of
exact beliefs is shared: it is data, not a model). The schedule is the one flow and diffusion
reference implementations use: Adam with global-norm clipping, a linear learning-rate warmup
over ``warmup_steps`` then cosine decay to 0 at ``train_steps``, and the returned model is the
exponential moving average of the iterates (optax.ema with bias correction),

    θ̄_t = (1 - β) sum_{s <= t} β^(t-s) θ_s / (1 - β^t),   β = ``ema_decay``.

Its NLL is measured afterwards on fresh batches (the loss history is the training iterate's)."""

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
                         cfg.encoder_features, cfg.spline_knots, key=jax.random.PRNGKey(s))
    return eqx.filter_vmap(make)(jnp.asarray(seeds))


def parameter_count(models: GDE) -> int:
    """Trainable scalars of one seed's GDE (``models`` stacked on a leading seed axis)."""
    leaves = jax.tree_util.tree_leaves(eqx.filter(models, eqx.is_inexact_array))
    return int(sum(leaf[0].size for leaf in leaves))


def optimizer(cfg) -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(0.0, cfg.learning_rate, cfg.warmup_steps,
                                                  cfg.train_steps)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


def _batch_nll(cfg, n_evaders: int):
    """loss(model, pool, key): NLL of one fresh training batch (nats per target point)."""

    def loss_fn(model, pool, key):
        sets, targets = losses.sample_training_batch(
            key, pool, batch=cfg.batch_size, n_evaders=n_evaders, set_size=cfg.set_size,
            target_size=cfg.target_size, grid=cfg.grid)
        return losses.gde_nll(model, sets, targets)

    return loss_fn


def heldout_nll(cfg, models: GDE, pool: np.ndarray, n_evaders: int, batches: int = 32,
                key=jax.random.PRNGKey(2024)) -> np.ndarray:
    """Mean NLL of each seed's model over ``batches`` fresh batches (one value per seed)."""
    loss_fn = _batch_nll(cfg, n_evaders)
    keys = jax.random.split(key, batches)

    @eqx.filter_jit
    def per_seed(models, pool):
        one = lambda m: jnp.mean(jax.vmap(lambda kk: loss_fn(m, pool, kk)[0])(keys))
        return eqx.filter_vmap(one)(models)

    return np.asarray(per_seed(models, jnp.asarray(pool, jnp.float32)))


def train_gdes(cfg, pool: np.ndarray, n_evaders: int, checkpoint: Path | None = None,
               progress: bool = True):
    """Train the GDEs of all ``cfg.seeds`` for d = 2 * n_evaders; returns the stacked
    weight-averaged models and the loss history of the iterates (steps x seeds)."""
    opt = optimizer(cfg)
    ema = optax.ema(cfg.ema_decay, debias=True)
    seeds = jnp.asarray(cfg.seeds)
    one_step = optax_step(_batch_nll(cfg, n_evaders), opt)

    def averaged_step(state, pool, key):
        train_state, ema_state, _ = state
        train_state, metrics = one_step(train_state, pool, key)
        average, ema_state = ema.update(eqx.filter(train_state.model, eqx.is_inexact_array),
                                        ema_state)
        return (train_state, ema_state, average), metrics

    def step(states, pool, key):
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seeds)
        return eqx.filter_vmap(averaged_step, in_axes=(eqx.if_array(0), None, 0))(
            states, pool, keys)

    def init(model):
        params = eqx.filter(model, eqx.is_inexact_array)
        return init_train_state(model, opt), ema.init(params), params

    models = make_models(cfg, n_evaders, cfg.seeds)
    states = eqx.filter_vmap(init)(models)
    states, history = run_loop(step, states, jnp.asarray(pool, jnp.float32),
                               key=jax.random.PRNGKey(1000 + n_evaders),
                               num_steps=cfg.train_steps, chunk_size=min(100, cfg.train_steps),
                               checkpoint_path=checkpoint, checkpoint_every=None,
                               desc=f"gde d={2 * n_evaders}", progress=progress)
    train_state, _, average = states
    return eqx.combine(average, train_state.model), history
