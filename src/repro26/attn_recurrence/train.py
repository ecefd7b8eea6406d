"""Training through ``repro26.core.train.run_loop``.

* :func:`fit_surrogates` distils a target head into surrogates of every state size of a grid and
  every seed at once: the models are stacked (seed x state) and the optax step is vmapped twice
  (seeds carry their own training pool), so one compiled program trains the whole grid.
* :func:`train_lm` trains a GPT-2-shaped transformer (char LM on the KJV text or MQAR).
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.attn_recurrence import data, losses
from repro26.attn_recurrence.model import GPT2, init_gpt2, make_surrogate
from repro26.core.config import ConfigError
from repro26.core.train import init_train_state, optax_step, run_loop


def fit_surrogates(kind: str, X, P, states, key, *, steps: int, batch: int, lr: float,
                   value_dim: int = 1, hidden: int = 32, progress: bool = False,
                   desc: str = "fit"):
    """Surrogates of kind ``kind`` trained (Adam, cosine decay to lr/10) on pools ``X (seeds, n, T, F)``, ``P (seeds, n, T, T)``
    for every state in ``states``; returns the models stacked as ``[seed, state]``."""
    n_seeds, n_feat = X.shape[0], X.shape[-1]
    states = jnp.asarray(states)
    state_max = int(states.max())
    optimizer = optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=0.1))

    def init(k, state):
        return init_train_state(make_surrogate(kind, k, n_feat, state_max, state, value_dim,
                                               hidden),
                                optimizer)

    keys = jax.random.split(key, n_seeds * states.shape[0]).reshape(n_seeds, states.shape[0], -1)
    train_state = eqx.filter_vmap(eqx.filter_vmap(init, in_axes=(0, 0)), in_axes=(0, None))(
        keys, states)
    base = optax_step(functools.partial(losses.surrogate_loss, batch=batch), optimizer)
    grid = eqx.filter_vmap(base, in_axes=(0, None, 0))          # states share a pool
    both = eqx.filter_vmap(grid, in_axes=(0, 0, 0))             # seeds have their own

    def step(state, pool, k):
        ks = jax.random.split(k, n_seeds * states.shape[0]).reshape(n_seeds, states.shape[0], -1)
        return both(state, pool, ks)

    signature = (kind, n_seeds, states.shape[0], batch, lr, value_dim, hidden)
    train_state, _ = run_loop(_cached(step, *signature), train_state, (X, P), key=key,
                              num_steps=steps, chunk_size=min(100, steps), desc=desc,
                              progress=progress)
    return train_state.model


_STEPS: dict = {}


def _cached(step, *signature):
    """One step function object per setting, so core's compiled chunk runner is reused."""
    return _STEPS.setdefault(signature, step)


def mixing_grid(models, X):
    """``M`` of every (seed, state) model on every sequence of its seed: ``(seeds, states, n,
    T, T, d, d)``."""
    per_model = lambda m, x: jax.vmap(m.mixing)(x)  # noqa: E731
    return eqx.filter_jit(eqx.filter_vmap(eqx.filter_vmap(per_model, in_axes=(0, None)),
                                          in_axes=(0, 0)))(models, X)


def lm_data(kind: str, cfg, seed: int):
    """Training and evaluation ``(windows, loss mask)`` of a surveyed model kind."""
    T = cfg.lm_seq_len
    if kind == "charlm":
        stream = data.kjv_ids()
        held_start = len(stream) - (T + 1) * cfg.survey_sequences - 1
        room = (held_start - len(stream) // 2) // (T + 1)  # windows from any start in the 1st half
        if cfg.lm_train_windows > room:  # that stay clear of the held-out tail
            raise ConfigError(f"attn_recurrence.lm_train_windows: at most {room} windows of "
                              f"{T + 1} fit before the held-out text, got {cfg.lm_train_windows}")
        rng = np.random.default_rng(seed)
        start = int(rng.integers(0, len(stream) // 2))
        train = data.text_windows(stream, T, cfg.lm_train_windows, start)
        held = data.text_windows(stream, T, cfg.survey_sequences, held_start)
        return ((jnp.asarray(train), jnp.ones((len(train), T))),
                (jnp.asarray(held), jnp.ones((len(held), T))), len(data.ALPHABET))
    if kind == "mqar":
        k_train, k_held = jax.random.split(jax.random.PRNGKey(10_000 + seed))
        n_keys = cfg.mqar_keys
        train = data.mqar_tokens(k_train, cfg.lm_train_windows, T, cfg.mqar_pairs, n_keys)
        held = data.mqar_tokens(k_held, cfg.survey_sequences, T, cfg.mqar_pairs, n_keys)
        return train, held, data.mqar_vocab(n_keys)
    raise ValueError(kind)


def chance_accuracy(kind: str, cfg, held) -> float:
    """The accuracy of the best context-blind guess on the held-out targets: the most frequent
    character (charlm); for MQAR, a uniform guess among the values of the window's stored pairs
    (a model that knows which values are stored but not which key holds which)."""
    windows, mask = (np.asarray(a) for a in held)
    targets, mask = windows[:, 1:], mask > 0
    if kind == "charlm":
        return float(np.bincount(targets[mask]).max() / mask.sum())
    n_keys, K = cfg.mqar_keys, cfg.mqar_pairs
    stored = n_keys + (windows[:, :K] - 2 * n_keys) % n_keys  # value ids of the pairs
    hits = (stored[:, None, :] == targets[:, :, None]).mean(-1)  # P(guess = target)
    return float(hits[mask].mean())


def train_lm(kind: str, cfg, seed: int, progress: bool = False):
    """A GPT-2-shaped transformer trained on ``kind``; returns ``(model, held-out data, info)``
    with the initial model's heads too (``info['init']``), for the random-weights baseline."""
    train, held, vocab = lm_data(kind, cfg, seed)
    key = jax.random.PRNGKey(seed)
    params = init_gpt2(key, vocab, cfg.lm_seq_len, cfg.lm_d_model, cfg.lm_layers)
    model0 = GPT2(params, cfg.lm_heads)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(
        optax.cosine_decay_schedule(cfg.lm_lr, cfg.lm_steps, alpha=0.1), weight_decay=0.01))
    step = _cached(optax_step(functools.partial(losses.lm_loss, batch=cfg.lm_batch), optimizer),
                   "lm", kind, cfg.lm_batch, cfg.lm_lr)
    state, history = run_loop(step, init_train_state(model0, optimizer), train,
                              key=jax.random.fold_in(key, 1), num_steps=cfg.lm_steps,
                              chunk_size=min(100, cfg.lm_steps), desc=f"{kind} seed {seed}",
                              progress=progress)
    model = state.model
    info = {
        "final_train_loss": float(np.mean(history["loss"][-20:])),
        "held_loss": float(losses.lm_loss(model, held, jax.random.PRNGKey(0),
                                          batch=held[0].shape[0])[0]),
        "held_accuracy": float(losses.answer_accuracy(model, *held)),
        "chance_accuracy": chance_accuracy(kind, cfg, held),
        "init_held_loss": float(losses.lm_loss(model0, held, jax.random.PRNGKey(0),
                                               batch=held[0].shape[0])[0]),
    }
    return model, model0, held, info
