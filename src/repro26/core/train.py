"""One training loop for every method.

``run_loop`` drives any pure update ``step_fn(state, data, key) -> (state, metrics)``:
gradient training (build the step with :func:`optax_step`), evolution strategies (an ask/tell
step), EM or filtering sweeps. Steps run ``chunk_size`` at a time inside one compiled
``jax.lax.scan``; between chunks the loop

* checks every metric for NaN/Inf and stops with the first bad step and term,
* updates a progress bar (step, loss, steps/s),
* every ``checkpoint_every`` steps writes the state and the metric history atomically.

Before the first chunk runs, its compiled program's memory (arguments, outputs and XLA's
temporaries, from ``memory_analysis``) is checked against what the device has
(:func:`repro26.core.memory.require`): a problem too big for the machine is one line at the
start, for every method that trains through this loop, not an out-of-memory abort later.

The key for step ``s`` is ``fold_in(key, s)``, so a run that was killed and resumed from its
last checkpoint reaches exactly the parameters of an uninterrupted run with the same seed.
To train several seeds at once, ``jax.vmap`` the step (and stack the states): metrics then have
a trailing seed axis and the progress bar shows their mean.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from repro26.core import io, jobs, memory

Metrics = Mapping[str, jax.Array]
StepFn = Callable[[Any, Any, jax.Array], tuple[Any, Metrics]]


class NonFiniteLossError(FloatingPointError):
    """A metric became NaN or Inf; names the step and the offending term."""


class TrainState(eqx.Module):
    """Model and optimiser state for gradient training."""

    model: Any
    opt_state: Any


def init_train_state(model: Any, optimizer: optax.GradientTransformation) -> TrainState:
    return TrainState(model, optimizer.init(eqx.filter(model, eqx.is_inexact_array)))


def optax_step(
    loss_fn: Callable[[Any, Any, jax.Array], tuple[jax.Array, Metrics]],
    optimizer: optax.GradientTransformation,
) -> StepFn:
    """Gradient step for ``loss_fn(model, data, key) -> (loss, terms)``.

    ``terms`` is a dict of the loss's named parts; they are logged and NaN-checked by name.
    """

    def step(state: TrainState, data: Any, key: jax.Array) -> tuple[TrainState, Metrics]:
        (loss, terms), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(
            state.model, data, key
        )
        params = eqx.filter(state.model, eqx.is_inexact_array)
        updates, opt_state = optimizer.update(grads, state.opt_state, params)
        model = eqx.apply_updates(state.model, updates)
        return TrainState(model, opt_state), {"loss": loss, **terms}

    return step


@functools.lru_cache(maxsize=64)
def _make_chunk_runner(step_fn: StepFn) -> Callable:
    """One compiled chunk per step function, reused across ``run_loop`` calls."""
    @eqx.filter_jit
    def run_chunk(state, data, key, steps):
        dynamic, static = eqx.partition(state, eqx.is_array)

        def body(carry, step):
            new_state, metrics = step_fn(eqx.combine(carry, static), data, jax.random.fold_in(key, step))
            return eqx.filter(new_state, eqx.is_array), metrics

        dynamic, metrics = jax.lax.scan(body, dynamic, steps)
        return eqx.combine(dynamic, static), metrics

    return run_chunk


def _first_non_finite(metrics: dict[str, np.ndarray], start: int) -> tuple[int, str] | None:
    bad = None
    for name, values in metrics.items():
        finite = np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
        if not finite.all():
            idx = int(np.argmin(finite))
            if bad is None or idx < bad[0]:
                bad = (idx, name)
    return None if bad is None else (start + bad[0], bad[1])


def run_loop(
    step_fn: StepFn,
    state: Any,
    data: Any,
    *,
    key: jax.Array,
    num_steps: int,
    chunk_size: int = 100,
    checkpoint_path: str | Path | None = None,
    checkpoint_every: int | None = None,
    checkpoint_tag: str | None = None,
    desc: str = "train",
    progress: bool = True,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Run ``num_steps`` of ``step_fn``; returns the final state and the metric history.

    The history maps each metric name to an array with one row per step. If
    ``checkpoint_path`` exists, training resumes from it (its state and history), but only if
    it was written by the same job (``checkpoint_tag``, by default the identity of the stage
    being run, see :mod:`repro26.core.jobs`) and is intact; otherwise one line says why and
    training starts over. The running stage deletes the checkpoint once it has succeeded.
    """
    if chunk_size < 1 or num_steps < 0:
        raise ValueError("chunk_size must be >= 1 and num_steps >= 0")
    if checkpoint_every is not None and checkpoint_every % chunk_size:
        raise ValueError("checkpoint_every must be a multiple of chunk_size")
    ckpt = Path(checkpoint_path) if checkpoint_path is not None else None
    hist_path = ckpt.with_name(ckpt.name + ".history.npz") if ckpt is not None else None

    job = jobs.current()
    if checkpoint_tag is None:
        checkpoint_tag = job.tag if job is not None else ""
    start, history = 0, {}
    if ckpt is not None:
        if job is not None:
            job.register(ckpt, hist_path)
        if ckpt.is_file():
            state, start, history = _resume(ckpt, hist_path, state, checkpoint_tag, num_steps)

    run_chunk = _make_chunk_runner(step_fn)
    full = min(chunk_size, num_steps - start)
    if full > 0:
        compiled = run_chunk.lower(state, data, key, jnp.arange(full)).compile()
        memory.require_compiled(compiled, f"{desc}: one compiled chunk of {full} steps")
    bar = tqdm(
        total=num_steps, initial=start, desc=desc, disable=not progress, file=sys.stderr,
        mininterval=0.5 if sys.stderr.isatty() else 10.0, unit="step",
    )
    step, last_ckpt, t0 = start, start, time.perf_counter()
    while step < num_steps:
        n = min(chunk_size, num_steps - step)
        state, metrics = (compiled if n == full else run_chunk)(state, data, key,
                                                                jnp.arange(step, step + n))
        metrics = {k: np.asarray(v) for k, v in metrics.items()}
        bad = _first_non_finite(metrics, step)
        if bad is not None:
            bar.close()
            raise NonFiniteLossError(f"step {bad[0]}: training metric '{bad[1]}' is not finite")
        for name, values in metrics.items():
            history.setdefault(name, []).append(values)
        step += n
        rate = (step - start) / max(time.perf_counter() - t0, 1e-9)
        bar.set_postfix(loss=f"{float(np.mean(metrics['loss'][-1])):.4g}" if "loss" in metrics else "-",
                        rate=f"{rate:.3g}/s", refresh=False)
        bar.update(n)
        if ckpt is not None and checkpoint_every and (step - last_ckpt >= checkpoint_every or step == num_steps):
            _save(ckpt, hist_path, state, step, history, checkpoint_tag)
            last_ckpt = step
    bar.close()
    return state, {k: np.concatenate(v) for k, v in history.items()}


def _resume(ckpt: Path, hist_path: Path, like: Any, tag: str, num_steps: int):
    """``(state, step, history)`` from a checkpoint, or a fresh start (with one line on stderr)
    when it is damaged, from another job, or its history does not reach its step."""
    try:
        state, start, companions = io.load_checkpoint(ckpt, like, tag)
        if not 0 <= start <= num_steps:
            raise io.CheckpointError(f"its step {start} is outside 0..{num_steps}")
        history = {}
        if start:
            if companions.get("history") != io.file_crc(hist_path):
                raise io.CheckpointError("its metric history is not the one it was saved with")
            history = {k: [v] for k, v in io.read_npz(hist_path).items()}
            if any(len(v[0]) != start for v in history.values()):
                raise io.CheckpointError(f"its metric history does not end at step {start}")
    except (io.CheckpointError, OSError, ValueError) as err:
        print(f"repro26: checkpoint {ckpt}: {err}; training starts over", file=sys.stderr)
        return like, 0, {}
    return state, start, history


def _save(ckpt: Path, hist_path: Path, state: Any, step: int, history: dict, tag: str) -> None:
    """History first, then the state with the history's checksum: a kill between the two leaves
    the old checkpoint, whose checksum no longer matches, so training starts over cleanly."""
    io.write_npz(hist_path, **{k: np.concatenate(v) for k, v in history.items()})
    io.save_checkpoint(ckpt, state, step, tag, companions={"history": io.file_crc(hist_path)})
