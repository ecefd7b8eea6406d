"""Pretraining and finetuning, every seed at once (models stacked on a leading seed axis, one
``jax.vmap``-ed optax step), through :func:`repro26.core.train.run_loop` (resumable).

Seed s draws its minibatches with ``fold_in(step_key, s)``: minibatches of ``batch_size``
documents, uniformly with replacement, from the corpus shared by all seeds.
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core import train as core_train
from repro26.negation_neglect.model import TransformerLM, lm_loss, probe_margins


def init_models(cfg, vocab: int, seeds) -> TransformerLM:
    """One model per seed, stacked (initialised from ``PRNGKey(seed)``)."""
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    return eqx.filter_vmap(lambda k: TransformerLM(vocab, cfg.context, cfg.d_model, cfg.n_layers,
                                                   cfg.n_heads, cfg.d_ff, key=k))(keys)


def _step(optimizer, batch_size: int):
    """Vmapped optax step over seeds; data = (tokens, mask, seeds)."""
    def loss_fn(model, data, key):
        tokens, mask = data
        idx = jax.random.randint(key, (batch_size,), 0, tokens.shape[0])
        loss = lm_loss(model, tokens[idx], mask[idx])
        return loss, {}

    single = core_train.optax_step(loss_fn, optimizer)

    def step(state, data, key):
        tokens, mask, seeds = data
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seeds)
        return eqx.filter_vmap(single, in_axes=(eqx.if_array(0), None, 0))(state, (tokens, mask), keys)

    return step


_STEPS: dict = {}


def train(models, tokens: np.ndarray, mask: np.ndarray, seeds, *, steps: int, lr: float,
          batch_size: int, warmup: int, chunk_size: int, checkpoint: Path | None,
          desc: str, progress: bool, segments: int = 1, after_segment=None):
    """``steps`` AdamW steps (linear warmup over min(warmup, steps/2) steps, cosine decay to
    lr/10) on every seed's model, in ``segments`` equal run_loop calls (the optimizer state, and
    so the schedule, carries over; segment i has its own key and checkpoint, so a resumed job
    skips finished segments). ``after_segment(models, step)`` is called after each segment.
    Returns the models, the loss history ``(steps, n_seeds)`` and the list of what
    ``after_segment`` returned. The step function is cached per (schedule, batch size), so each
    shape compiles once per process."""
    if steps % segments:
        raise ValueError(f"{steps} steps do not split into {segments} equal segments")
    key = (steps, lr, batch_size, warmup)
    if key not in _STEPS:
        warm = max(1, min(warmup, steps // 2))
        schedule = optax.warmup_cosine_decay_schedule(0.0, lr, warm, max(steps, warm + 1),
                                                      end_value=lr / 10)
        optimizer = optax.chain(optax.clip_by_global_norm(1.0),
                                optax.adamw(schedule, weight_decay=0.01))
        _STEPS[key] = (optimizer, _step(optimizer, batch_size))
    optimizer, step = _STEPS[key]
    state = eqx.filter_vmap(lambda m: core_train.init_train_state(m, optimizer))(models)
    data = (jnp.asarray(tokens), jnp.asarray(mask), jnp.asarray(seeds, jnp.uint32))
    length = steps // segments
    chunk = min(chunk_size, length)
    losses, results = [], []
    for i in range(segments):
        path = None if checkpoint is None else Path(f"{checkpoint}.{i}" if segments > 1 else checkpoint)
        state, history = core_train.run_loop(
            step, state, data, key=jax.random.fold_in(jax.random.PRNGKey(0), i),
            num_steps=length, chunk_size=chunk, checkpoint_path=path,
            checkpoint_every=chunk if path is not None else None, desc=desc, progress=progress)
        losses.append(history["loss"])
        if after_segment is not None:
            results.append(after_segment(state.model, (i + 1) * length))
    return state.model, np.concatenate(losses), results


@eqx.filter_jit
def margins_all_seeds(models, tokens, last, claim_id, true_id):
    """Probe margins ``(n_seeds, n_probes)`` of the stacked models."""
    return eqx.filter_vmap(lambda m: probe_margins(m, tokens, last, claim_id, true_id))(models)
