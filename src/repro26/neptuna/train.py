"""Autoregressive next-step training of one surrogate with one loss, every seed at once
(``vmap`` over seeds inside ``repro26.core.train.run_loop``), then rollout evaluation.

The loss is Σ_i w_i L_i over the four terms of :mod:`losses`; the weights are fixed (``mse``,
``sobolev``, ``interface``, ``ssim``, ``equal``), SoftAdapt weights recomputed every
``softadapt_every`` steps from the slopes of an exponential moving average (decay 0.9) of the
terms since the previous update, or GradNorm's learned weights. The weights used at a step were
computed from the previous steps, and the terms come out of the one forward pass the gradient
needs, so each step takes one gradient of the network whatever the loss.

Budget and validation: every from-scratch model trains ``train_steps`` Adam steps of
``batch_size`` pairs; the foundation model's ``pretrain_steps`` count against the same budget
(it is fine-tuned for ``train_steps − pretrain_steps``). The last ``n_val`` training trajectories
of each dataset are held out; the one-step MSE on their pairs (normalised fields) is recorded every
``val_every`` steps (the validation curve the plateau check reads).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core import timing
from repro26.core.train import run_loop
from repro26.neptuna import evaluate, losses, model as models

EMA = 0.9


class BalanceState(eqx.Module):
    """Network, optimiser state and the loss-balancing state of one seed."""

    model: Any
    opt_state: Any
    weights: jax.Array  # (4,) weights used at the next step
    ema: jax.Array  # (4,) moving average of the terms
    initial: jax.Array  # (4,) terms at step 0 (GradNorm's L_i(0))
    anchor: jax.Array  # (4,) moving average at SoftAdapt's last weight update
    step: jax.Array


def coarsen(fields, factor: int):
    """Average-pool the last two axes by ``factor``."""
    if factor == 1:
        return fields
    *lead, h, w = fields.shape
    return fields.reshape(*lead, h // factor, factor, w // factor, factor).mean((-3, -1))


class Normaliser(eqx.Module):
    """x ↦ (x − μ)/σ per channel (α is left in [0, 1]: μ = 0, σ = 1 for it)."""

    mean: jax.Array
    std: jax.Array

    @classmethod
    def fit(cls, fields):
        axes = tuple(i for i in range(fields.ndim) if i != fields.ndim - 3)
        mean = np.asarray(fields.mean(axes), np.float32)
        std = np.asarray(fields.std(axes), np.float32) + 1e-6
        mean[losses.ALPHA], std[losses.ALPHA] = 0.0, 1.0
        return cls(jnp.asarray(mean), jnp.asarray(std))

    def __call__(self, x):
        return (x - self.mean[:, None, None]) / self.std[:, None, None]

    def inverse(self, z):
        return z * self.std[:, None, None] + self.mean[:, None, None]


def initial_weights(loss: str):
    if loss in losses.FIXED:
        return jnp.asarray(losses.FIXED[loss], jnp.float32)
    return jnp.full((len(losses.TERMS),), 1.0 / len(losses.TERMS), jnp.float32)


def make_step(loss: str, optimizer, cfg):
    """``step(state, (X, Y), key) -> (state, metrics)`` for one seed. A fixed loss evaluates only
    its own terms (the others read 0), so MSE-only pays for MSE alone."""
    active = losses.active_terms(loss)
    term_fn = lambda pred, y: losses.loss_terms(pred, y, cfg.interface_gamma, cfg.interface_tau,  # noqa: E731
                                                active)

    def objective(model, x, y, w):
        terms = term_fn(jax.vmap(model)(x), y)
        return jnp.dot(w, terms), terms

    def head_grad_norms(model, x, y):
        """‖∇_head L_i‖ for each term, the shared features held fixed."""
        feats = jax.lax.stop_gradient(jax.vmap(model.body)(x))

        def terms_of(head):
            m = eqx.tree_at(lambda m: m.head, model, head)
            return term_fn(jax.vmap(lambda f, xi: models.apply_head(m, f, xi))(feats, x), y)

        head = eqx.filter(model.head, eqx.is_inexact_array)
        jac = eqx.filter_jacrev(terms_of)(head)
        leaves = jax.tree_util.tree_leaves(jac)
        return jnp.sqrt(sum(jnp.sum(l.reshape(len(losses.TERMS), -1) ** 2, 1) for l in leaves))

    def step(state: BalanceState, batch, key):
        X, Y = batch
        idx = jax.random.randint(key, (cfg.batch_size,), 0, X.shape[0])
        x, y = X[idx], Y[idx]
        w = jax.lax.stop_gradient(state.weights)
        (total, terms), grads = eqx.filter_value_and_grad(objective, has_aux=True)(state.model, x, y, w)
        params = eqx.filter(state.model, eqx.is_inexact_array)
        updates, opt_state = optimizer.update(grads, state.opt_state, params)
        model = eqx.apply_updates(state.model, updates)
        first = state.step == 0
        initial = jnp.where(first, terms, state.initial)
        ema = jnp.where(first, terms, EMA * state.ema + (1 - EMA) * terms)
        anchor = state.anchor
        if loss in losses.FIXED:
            new_w = state.weights
        elif loss == "gradnorm":
            norms = head_grad_norms(state.model, x, y)
            new_w = losses.gradnorm_update(state.weights, norms, terms, initial,
                                           cfg.gradnorm_lr, cfg.gradnorm_a)
        else:  # SoftAdapt: slopes of the moving average since the last update, every k steps
            due = (state.step + 1) % cfg.softadapt_every == 0
            new_w = jnp.where(due, losses.softadapt_weights(ema, state.anchor, loss,
                                                            cfg.softadapt_beta), state.weights)
            anchor = jnp.where(first | due, ema, state.anchor)
        new = BalanceState(model, opt_state, new_w, ema, initial, anchor, state.step + 1)
        return new, {"loss": total, "terms": terms, "weights": state.weights}

    return step


def init_state(name, loss, channels, shape, cfg, optimizer, key):
    model = models.build(name, channels, shape, cfg, key)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_inexact_array))
    zeros = jnp.zeros((len(losses.TERMS),), jnp.float32)
    return BalanceState(model, opt_state, initial_weights(loss), zeros, zeros, zeros,
                        jnp.zeros((), jnp.int32))


WARMUP = 0.05  # fraction of a run's steps with the learning rate ramped linearly from 0


def schedule_of(cfg, steps: int | None = None):
    """Linear warmup over ``WARMUP`` of the steps (at least one) to ``cfg.lr``, then cosine decay
    to 0 at ``steps`` (``cfg.train_steps`` by default)."""
    steps = steps or cfg.train_steps
    warm = max(1, round(WARMUP * steps))
    return optax.warmup_cosine_decay_schedule(0.0, cfg.lr, warm, max(steps, warm + 1), 0.0)


def optimizer_of(cfg, steps: int | None = None):
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule_of(cfg, steps)))


def pairs(fields_norm):
    """(X, Y) next-step pairs from (traj, T, C, H, W) normalised fields."""
    X = fields_norm[:, :-1].reshape(-1, *fields_norm.shape[2:])
    Y = fields_norm[:, 1:].reshape(-1, *fields_norm.shape[2:])
    return jnp.asarray(X), jnp.asarray(Y)


def init_models(name: str, channels: int, shape, cfg, seeds):
    """The untrained networks of every seed, stacked (also the structure to load weights into)."""
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    return eqx.filter_vmap(lambda k: models.build(name, channels, shape, cfg, k))(keys)


def split_validation(train_fields, n_val: int):
    """(fit trajectories, validation trajectories): the last ``n_val`` of the training set."""
    return train_fields[:-n_val], train_fields[-n_val:]


def one_step_mse(model, X, Y):
    """Validation loss: ⟨(f(x) − y)²⟩ over the pairs (normalised fields)."""
    return jnp.mean((jax.vmap(model)(X) - Y) ** 2)


def _fit(name, loss, data, cfg, seeds, steps, start_models=None, progress=False, tag=""):
    """``steps`` Adam steps (warmup then cosine schedule) of one (model, loss) for every seed at once, from
    ``start_models`` (stacked over seeds) when given, else from the seeds' initialisation.
    ``data`` = (X, Y, X_val, Y_val); the history's ``val`` is the validation loss of every seed
    after each multiple of ``val_every`` steps and after the last step (−1 in between: a loss is
    ≥ 0, and the loop refuses non-finite metrics)."""
    X, Y, Xv, Yv = data
    c, h, w = X.shape[1:]
    optimizer = optimizer_of(cfg, steps)
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    states = eqx.filter_vmap(lambda k: init_state(name, loss, c, (h, w), cfg, optimizer, k))(keys)
    if start_models is not None:
        params = eqx.filter(start_models, eqx.is_inexact_array)
        states = eqx.tree_at(lambda s: (s.model, s.opt_state), states,
                             (start_models, eqx.filter_vmap(optimizer.init)(params)))
    single = make_step(loss, optimizer, cfg)
    n = len(seeds)

    def step(state, batch, key):
        X, Y, Xv, Yv = batch
        new, metrics = eqx.filter_vmap(single, in_axes=(eqx.if_array(0), None, 0))(
            state, (X, Y), jax.random.split(key, n))
        t = new.step[0]  # steps done (the same for every seed)
        due = (t % cfg.val_every == 0) | (t == steps)
        val = jax.lax.cond(due, lambda: eqx.filter_vmap(lambda m: one_step_mse(m, Xv, Yv))(new.model),
                           lambda: jnp.full((n,), -1.0, jnp.float32))
        return new, {**metrics, "val": val}

    step.__name__ = f"neptuna_{name}_{loss}{tag}"
    return run_loop(step, states, data, key=jax.random.PRNGKey(1000 + seeds[0]),
                    num_steps=steps, chunk_size=cfg.chunk_size, desc=f"{name}/{loss}{tag}",
                    progress=progress)


def _pairs_with_validation(train_fields, norm, n_val):
    fit, val = split_validation(train_fields, n_val)
    return (*pairs(norm(jnp.asarray(fit))), *pairs(norm(jnp.asarray(val))))


def finetune_steps(cfg) -> int:
    """The foundation model's fine-tuning steps: its pretraining counts against ``train_steps``."""
    return cfg.train_steps - cfg.pretrain_steps


def train_seeds(name: str, loss: str, train_fields, cfg, seeds, progress=False,
                start_models=None):
    """Train one (model, loss) for every seed at once: ``train_steps`` from scratch, or
    :func:`finetune_steps` fine-tuning ``start_models``; returns (stacked states, history,
    normaliser). The normaliser is fitted on all training trajectories (validation included)."""
    norm = Normaliser.fit(train_fields)
    data = _pairs_with_validation(train_fields, norm, cfg.n_val)
    steps = cfg.train_steps if start_models is None else finetune_steps(cfg)
    states, history = _fit(name, loss, data, cfg, seeds, steps, start_models, progress,
                           "" if start_models is None else "_finetune")
    return states, history, norm


def pretrain_seeds(name: str, train_sets, cfg, seeds, progress=False):
    """Foundation pretraining: MSE next-step training for ``cfg.pretrain_steps`` on the union of
    the datasets' fit pairs (validation: the union of their held-out pairs), each dataset
    normalised by its own training statistics (the same normaliser its fine-tuning and its
    from-scratch model use). Returns (states, history)."""
    parts = [_pairs_with_validation(tr, Normaliser.fit(tr), cfg.n_val) for tr in train_sets]
    data = tuple(jnp.concatenate(a) for a in zip(*parts))
    return _fit(name, "mse", data, cfg, seeds, cfg.pretrain_steps, None, progress, "_pretrain")


def validation_curve(history) -> tuple[np.ndarray, np.ndarray]:
    """(steps (k,), validation loss (k, seed)) at the steps where it was recorded."""
    val = np.asarray(history["val"])  # (steps, seed)
    done = np.flatnonzero(val[:, 0] >= 0)
    return done + 1, val[done]


def curve_fall(steps, val, tail: float = 0.5) -> np.ndarray:
    """Per seed: relative decrease of a validation curve over its last ``tail`` of the steps,
    (v(T(1 − tail)) − v(T)) / v(T(1 − tail)), v(T(1 − tail)) the recorded point nearest that step.
    ``steps`` (k,), ``val`` (k, seed)."""
    steps, val = np.asarray(steps), np.asarray(val)
    start = int(np.argmin(np.abs(steps - steps[-1] * (1.0 - tail))))
    return (val[start] - val[-1]) / val[start]


def plateau_gain(history) -> np.ndarray:
    """Per seed: relative decrease of the validation loss over the second half of training,
    (v(T/2) − v(T)) / v(T/2), v(T/2) the recorded point nearest the midpoint."""
    return curve_fall(*validation_curve(history), 0.5)


def rollout_seeds(states, norm, test_fields, mats, dx: float):
    """Rollout of every seed's model from frame 1 of each test trajectory through the last frame;
    per-step metrics, arrays (seed, traj, steps). Errors are scaled by ``norm.std``, the
    dataset's training spread; ``mats`` (traj, 4) the materials (:func:`data.materials`)."""
    return _rollout_all(states, norm, test_fields, mats, dx)


@eqx.filter_jit
def _rollout_all(states, norm, test_fields, mats, dx):
    steps = test_fields.shape[1] - 2

    def one_model(model):
        def traj(f, mat):
            z = model_rollout_norm(model, norm, f[1], steps)
            return evaluate.rollout_metrics(z, f[2:], norm.std, mat, dx)

        return jax.vmap(traj)(test_fields, mats)

    return eqx.filter_vmap(lambda s: one_model(s.model))(states)


def model_rollout_norm(model, norm, x0, steps):
    z = evaluate.model_rollout(model, norm(x0), steps)
    return jax.vmap(norm.inverse)(z)


def baseline_metrics(test_fields, mats, scale, dx: float):
    """Per-step metrics (baseline, traj, steps) of persistence and linear extrapolation."""
    steps = test_fields.shape[1] - 2

    @jax.jit
    def run(f, mat):
        return {b: evaluate.rollout_metrics(evaluate.baseline_rollout(b, f[0], f[1], steps),
                                            f[2:], scale, mat, dx) for b in evaluate.BASELINES}

    return jax.vmap(run)(jnp.asarray(test_fields), jnp.asarray(mats))


def exact_metrics(test_fields, mats, scale, dx: float):
    """Per-step metrics (traj, steps) of the true frames scored against themselves over the
    rollout window (frames 2 ... last): the ideal surrogate, through the same metric code."""
    @jax.jit
    def run(f, mat):
        return evaluate.rollout_metrics(f[2:], f[2:], scale, mat, dx)

    return jax.vmap(run)(jnp.asarray(test_fields), jnp.asarray(mats))


def time_per_step(losses_to_time, train_fields, cfg, steps: int, rounds: int, name="unet",
                  min_seconds: float = 0.1) -> dict:
    """CPU time per training step of each loss against MSE-only (one seed, compile excluded),
    by :func:`repro26.core.timing.interleaved_cpu_times`: each program is one compiled
    ``fori_loop`` of ``steps`` training steps, called often enough that a measurement spans
    ``min_seconds`` of CPU; ``rounds`` interleaved rounds with the order rotated; MSE-only timed
    a second time as the control. Returns the timing result (per-call seconds per round, ratios
    to MSE-only with intervals widened by the control's noise floor)."""
    norm = Normaliser.fit(train_fields)
    X, Y = pairs(norm(jnp.asarray(train_fields)))
    c, h, w = X.shape[1:]
    optimizer = optimizer_of(cfg)
    n = jnp.asarray(max(1, steps), jnp.int32)
    programs = {}
    for loss in dict.fromkeys(("mse", *losses_to_time)):
        single = make_step(loss, optimizer, cfg)

        @eqx.filter_jit
        def run(state, key, batch, n, single=single):
            def body(i, s):
                return single(s, batch, jax.random.fold_in(key, i))[0]
            return jax.lax.fori_loop(0, n, body, state)

        state = init_state(name, loss, c, (h, w), cfg, optimizer, jax.random.PRNGKey(0))
        programs[loss] = (lambda run=run, state=state:
                          run(state, jax.random.PRNGKey(2), (X, Y), n))
    return timing.interleaved_cpu_times(programs, "mse", rounds=rounds, min_seconds=min_seconds)


def timing_rows(result: dict, steps: int) -> list[dict]:
    """Tidy rows of a timing result: per program and round the CPU seconds per step, with the
    program's ratio to MSE-only (median, interval) and the noise floor repeated on each row."""
    rows = []
    for loss, per_round in result["seconds"].items():
        ratio = result["ratio"].get(loss, {"median": 1.0, "interval": [1.0, 1.0]})
        for r, sec in enumerate(per_round):
            rows.append({"loss": loss, "repeat": r, "steps": steps,
                         "calls": result["calls"][loss], "seconds_per_step": sec / steps,
                         "ratio_median": ratio["median"], "ratio_lo": ratio["interval"][0],
                         "ratio_hi": ratio["interval"][1],
                         "noise_floor": result["noise_floor"]})
    return rows
