"""Training of one learned model on one dataset, every seed at once (``vmap`` over seeds).

Each optimiser step is one epoch: the full training stream (all training snapshots) is
replayed through the model and the loss of ``losses.link_loss`` is back-propagated through the
whole scan. Every model gets the same budget: ``train_steps`` Adam steps at rate ``lr`` from
its own initialisation.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from repro26.core import io
from repro26.core.train import init_train_state, optax_step, run_loop
from repro26.nagnn import model as models
from repro26.nagnn.data import Stream
from repro26.nagnn.losses import link_loss


def model_key(seed: int, name: str):
    """Initialisation key of model ``name`` for ``seed`` (independent of the data's key)."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), zlib.crc32(name.encode()) % 2**31)


def init_models(cfg, name: str, n_nodes: int, feature_dim: int):
    """The model for every seed, stacked along a leading axis."""
    keys = jnp.stack([model_key(s, name) for s in cfg.seeds])
    return eqx.filter_vmap(lambda k: models.build(name, n_nodes, feature_dim, cfg.hidden,
                                                  cfg.lsh_tables, cfg.lsh_bits, k))(keys)


def optimizer(cfg):
    return optax.adam(cfg.lr)


@functools.lru_cache(maxsize=None)
def seed_step(lr: float):
    """Adam step of ``link_loss`` vmapped over seeds (one key per seed). Cached per rate, so
    ``run_loop`` reuses its compiled chunk."""
    step = optax_step(link_loss, optax.adam(lr))

    def step_all(state, data, key):
        keys = jax.random.split(key, jax.tree_util.tree_leaves(data)[0].shape[0])
        return eqx.filter_vmap(step)(state, data, keys)

    return step_all


def fit(cfg, name: str, stream: Stream, dst_pool, checkpoint: Path, progress: bool = True):
    """Train ``name`` on the training snapshots of every seed's stream (leading seed axis).
    Returns the stacked trained models and the loss history (steps x seeds)."""
    n_nodes, feature_dim = stream.x.shape[1:]
    model = init_models(cfg, name, n_nodes, feature_dim)
    opt = optimizer(cfg)
    state = eqx.filter_vmap(lambda m: init_train_state(m, opt))(model)
    train = Stream(*(a[:, : cfg.n_train_snapshots] for a in stream[:3]), stream.x)
    chunk = min(cfg.chunk_size, cfg.train_steps)
    state, history = run_loop(seed_step(cfg.lr), state, (train, dst_pool),
                              key=jax.random.PRNGKey(cfg.seeds[0]), num_steps=cfg.train_steps,
                              chunk_size=chunk, checkpoint_path=checkpoint,
                              checkpoint_every=chunk * max(1, 50 // chunk), desc=name,
                              progress=progress)
    return state.model, history


def save_models(path: Path, stacked) -> None:
    io.save_checkpoint(path, stacked, step=0)


def load_models(path: Path, cfg, name: str, n_nodes: int, feature_dim: int):
    like = init_models(cfg, name, n_nodes, feature_dim)
    return io.load_model(path, like)
