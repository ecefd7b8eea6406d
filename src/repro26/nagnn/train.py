"""Training of one learned model on one dataset, every seed at once (``vmap`` over seeds).

Each optimiser step is one epoch: the full training stream (all training snapshots) is
replayed through the model and the loss of ``losses.link_loss`` is back-propagated through the
whole scan. Every model gets the same budget and schedule (:func:`optimizer`): ``train_steps``
Adam steps from its own initialisation, the rate warming up linearly from 0 to ``lr`` over the
first ``warmup_frac`` of the steps and then decaying to ``lr / 10`` along a cosine, gradients
clipped to global norm ``clip_norm``.

Whether a run trained to its plateau is decided by a rule fixed before any run
(:func:`plateau`): over the last 10% of the steps the mean loss changed, against the 10%
before, by less than ``plateau_tol`` of the whole drop from the first step's loss.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
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


END_FRACTION = 0.1  # the cosine decays to lr * END_FRACTION
PLATEAU_WINDOW = 0.1  # the plateau rule compares the last two windows of this share of steps


@functools.lru_cache(maxsize=None)
def _optimizer(lr: float, steps: int, warmup_frac: float, clip_norm: float):
    warmup = max(1, round(warmup_frac * steps))
    schedule = optax.warmup_cosine_decay_schedule(0.0, lr, warmup, max(steps, warmup + 1),
                                                  end_value=lr * END_FRACTION)
    return optax.chain(optax.clip_by_global_norm(clip_norm), optax.adam(schedule))


def optimizer(cfg):
    """Gradient clipping, then Adam with linear warm-up and cosine decay (module docstring);
    the same for every model."""
    return _optimizer(cfg.lr, cfg.train_steps, cfg.warmup_frac, cfg.clip_norm)


def schedule_rates(cfg) -> np.ndarray:
    """The learning rate of every step (for the record)."""
    warmup = max(1, round(cfg.warmup_frac * cfg.train_steps))
    sched = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, warmup,
                                               max(cfg.train_steps, warmup + 1),
                                               end_value=cfg.lr * END_FRACTION)
    return np.asarray(jax.vmap(sched)(jnp.arange(cfg.train_steps)))


def plateau(loss: np.ndarray, tol: float, window: float = PLATEAU_WINDOW) -> dict[str, np.ndarray]:
    """The plateau rule per run (``loss``: steps x runs). With ``w = max(1, round(window *
    steps))``: ``final`` = mean loss over the last ``w`` steps, ``previous`` = over the ``w``
    before, ``drop = loss[0] - final``; a run has plateaued when it learned (``drop > 1e-6
    |loss[0]|``, above rounding) and ``|final - previous| < tol * drop``."""
    loss = np.asarray(loss, float).reshape(len(loss), -1)
    w = max(1, round(window * len(loss)))
    if len(loss) < 2 * w + 1:
        raise ValueError(f"the plateau rule needs more than {2 * w} steps, got {len(loss)}")
    final, previous = loss[-w:].mean(0), loss[-2 * w:-w].mean(0)
    drop = loss[0] - final
    change = np.abs(final - previous)
    return {"first_loss": loss[0], "final_loss": final, "previous_loss": previous,
            "drop": drop, "change": change, "window": np.full(loss.shape[1], w),
            "plateaued": (drop > 1e-6 * np.abs(loss[0])) & (change < tol * drop)}


@functools.lru_cache(maxsize=None)
def seed_step(lr: float, steps: int, warmup_frac: float, clip_norm: float, remat: bool = False):
    """Optimiser step of ``link_loss`` vmapped over seeds (one key per seed). Cached per
    schedule, so ``run_loop`` reuses its compiled chunk."""
    step = optax_step(functools.partial(link_loss, remat=remat),
                      _optimizer(lr, steps, warmup_frac, clip_norm))

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
    step = seed_step(cfg.lr, cfg.train_steps, cfg.warmup_frac, cfg.clip_norm, cfg.remat)
    state, history = run_loop(step, state, (train, dst_pool),
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
