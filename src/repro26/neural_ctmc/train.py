"""Data preparation and training stages: one job per (corpus, method), every seed vmapped, plus
the scorer.

Every diffusion model is trained on the same budget (``steps x batch_size`` network rows of
``L`` tokens, ``time_draws`` stratified times per sequence) with
the same backbone and optimiser (AdamW, linear warm-up then cosine decay or a constant rate,
global-norm clipping, optionally an exponential moving average of the weights, which is then
the saved model); each minimises its own estimate of the NLL bound in nats/token
(:func:`losses.sequence_bound`), through ``repro26.core.train.run_loop`` with a checkpoint next
to the output so a killed job resumes.
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core import io
from repro26.core.train import TrainState, init_train_state, optax_step, run_loop
from repro26.neural_ctmc import data as D
from repro26.neural_ctmc import losses
from repro26.neural_ctmc.model import make_denoiser, make_scorer, scorer_nll

SCORER_SEED = 10_000


# ----------------------------------------------------------------------------- data


def build_corpus(cfg, corpus: str) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays (``train``, ``val``) and reference statistics of the text corpus."""
    t = cfg.text
    stream, vocab = D.load_text_tokens(t.source, t.local_path, t.vocab_size)
    train, val = D.split_windows(stream, t.seq_len, t.val_fraction, t.max_train, t.max_val)
    arrays = {"train": train, "val": val}
    ref = {"n_tokens": int(stream.size)}
    val_ent = D.unigram_entropy(jnp.asarray(arrays["val"]), vocab)
    ref.update(corpus=corpus, vocab_size=int(vocab), seq_len=int(arrays["train"].shape[1]),
               n_train=int(arrays["train"].shape[0]), n_val=int(arrays["val"].shape[0]),
               data_unigram_entropy=float(val_ent.mean()))
    arrays["vocab_size"] = np.asarray(vocab)
    return arrays, ref


def write_corpus(run, corpus: str) -> None:
    """``<out>.npz`` (train/val windows) and ``<out>.json`` (reference values)."""
    arrays, ref = build_corpus(run.cfg, corpus)
    out = Path(run.out)
    io.write_npz(out, **arrays)
    io.write_json(out.with_suffix(".json"), {**ref, "meta": run.meta()})


def load_corpus(path: Path) -> dict[str, np.ndarray]:
    return io.read_npz(path)


# ----------------------------------------------------------------------------- training


def make_schedule(tc, steps: int | None = None) -> optax.Schedule:
    """Linear warm-up to ``lr``, then ``constant`` (MDLM / SEDD), ``cosine`` decay to
    ``lr / 10`` at ``steps``, or ``wsd``: constant, then linear to zero over the last
    ``tc.decay`` steps of a run of ``steps`` (default ``tc.steps``; a shorter run branches off
    the same stable phase)."""
    steps = tc.steps if steps is None else steps
    warm = max(tc.warmup, 1)
    if tc.schedule == "constant":
        return optax.join_schedules([optax.linear_schedule(0.0, tc.lr, warm),
                                     optax.constant_schedule(tc.lr)], [warm])
    if tc.schedule == "wsd":
        start = steps - tc.decay
        if tc.decay < 1 or start < warm:
            raise ValueError(f"wsd: decay ({tc.decay}) must be >= 1 and start after the "
                             f"warm-up ({warm}) in a run of {steps} steps")
        return optax.join_schedules([optax.linear_schedule(0.0, tc.lr, warm),
                                     optax.constant_schedule(tc.lr),
                                     optax.linear_schedule(tc.lr, 0.0, tc.decay)], [warm, start])
    return optax.warmup_cosine_decay_schedule(0.0, tc.lr, warm, max(steps, tc.warmup + 1),
                                              tc.lr * 0.1)


def make_optimizer(tc, steps: int | None = None) -> optax.GradientTransformation:
    schedule = make_schedule(tc, steps)
    return optax.chain(optax.clip_by_global_norm(tc.grad_clip),
                       optax.adamw(schedule, weight_decay=tc.weight_decay))


class EmaState(eqx.Module):
    """Training state plus an exponential moving average of the model's weights (MDLM / SEDD
    evaluate the average); ``ema`` holds the average, ``count`` the steps taken."""

    train: TrainState
    ema: object
    count: jax.Array


def ema_decay(count, decay: float):
    """``min(decay, (1 + k) / (10 + k))`` at step ``k``: the average forgets the initial
    weights within the first steps, then averages over about ``1 / (1 - decay)`` steps."""
    return jnp.minimum(decay, (1.0 + count) / (10.0 + count))


def with_ema(step, decay: float):
    """``step`` on :class:`EmaState`: the optimiser step, then
    ``ema <- d * ema + (1 - d) * weights`` with ``d = ema_decay(k, decay)``."""
    def ema_step(state: EmaState, data, key):
        train, metrics = step(state.train, data, key)
        d = ema_decay(state.count, decay)
        ema = jax.tree_util.tree_map(
            lambda e, w: d * e + (1.0 - d) * w if eqx.is_inexact_array(w) else e,
            state.ema, train.model)
        return EmaState(train, ema, state.count + 1), metrics

    return ema_step


def init_state(model, optimizer, tc):
    """``TrainState``, or :class:`EmaState` starting the average at the initial weights."""
    state = init_train_state(model, optimizer)
    return EmaState(state, model, jnp.zeros((), jnp.float32)) if tc.ema > 0 else state


def wrap_step(step, tc):
    return with_ema(step, tc.ema) if tc.ema > 0 else step


def evaluated_model(state):
    """The model that is saved and evaluated: the weights' average where there is one."""
    return state.ema if isinstance(state, EmaState) else state.model


def seed_slice(stacked, i: int):
    """Seed ``i`` of a stacked (leading seed axis) model."""
    return jax.tree_util.tree_map(lambda a: a[i] if eqx.is_array(a) else a, stacked)


def init_scorer(cfg, vocab: int, seq_len: int):
    m = cfg.scorer_model
    return make_scorer(vocab_size=vocab, seq_len=seq_len, d_model=m.d_model, n_layers=m.n_layers,
                       n_heads=m.n_heads, mlp_ratio=m.mlp_ratio,
                       key=jax.random.PRNGKey(SCORER_SEED))


def _fit(run, model, loss_fn, train: np.ndarray, tc, seed: int, desc: str):
    """Train ``model`` with ``loss_fn(model, x0_batch, key)`` on random batches of
    ``batch_size`` sequences of ``train``."""
    n_seq = tc.batch_size
    optimizer = make_optimizer(tc)
    data = jnp.asarray(train)

    def batch_loss(model, data, key):
        k_idx, k_loss = jax.random.split(key)
        x0 = data[jax.random.randint(k_idx, (n_seq,), 0, data.shape[0])]
        return loss_fn(model, x0, k_loss)

    out = Path(run.out)
    state, history = run_loop(
        wrap_step(optax_step(batch_loss, optimizer), tc), init_state(model, optimizer, tc), data,
        key=jax.random.PRNGKey(seed + 1), num_steps=tc.steps, chunk_size=tc.chunk_size,
        checkpoint_path=out.with_name(out.name + ".ckpt"), checkpoint_every=tc.checkpoint_every,
        desc=desc, progress=run.progress)
    io.save_checkpoint(out, evaluated_model(state), tc.steps)
    tokens = (np.arange(1, tc.steps + 1) * n_seq * train.shape[1])
    rows = {"step": np.arange(1, tc.steps + 1), "tokens": tokens,
            **{k: np.asarray(v).reshape(tc.steps) for k, v in history.items()}}
    io.write_table(out.with_suffix(".csv"), rows, run.meta())
    return evaluated_model(state)


def init_denoisers(cfg, method: str, vocab: int, seq_len: int):
    """Stacked (leading seed axis) untrained backbones of ``method``, one per ``cfg.seeds``
    (seed ``s`` initialised from ``PRNGKey(s)``)."""
    keys = jnp.stack([jax.random.PRNGKey(s) for s in cfg.seeds])
    m = cfg.model
    return eqx.filter_vmap(lambda k: make_denoiser(
        method, vocab_size=vocab, seq_len=seq_len, d_model=m.d_model, n_layers=m.n_layers,
        n_heads=m.n_heads, mlp_ratio=m.mlp_ratio, pos_scale=m.pos_scale, key=k))(keys)


def train_model(run, corpus: str, method: str) -> None:
    """Train every seed of ``method`` on ``corpus`` at once (``jax.vmap`` over the stacked
    models: one compiled program per method); stacked checkpoint and per-seed curves. Each
    step draws ``batch_size / time_draws`` windows per seed, and the times of a seed's batch
    tile ``[0, 1]`` (``losses.sample_times(across_batch=True)``, MDLM's low-discrepancy
    sampler, for every method)."""
    arrays = load_corpus(run.input(f"{corpus}.npz"))
    vocab, seq_len = int(arrays["vocab_size"]), arrays["train"].shape[1]
    eps, tc, seeds = run.cfg.eps, run.cfg.train, run.cfg.seeds
    n_seq = tc.batch_size // tc.time_draws
    optimizer = make_optimizer(tc)

    def loss_fn(model, data, key):
        k_idx, k_loss = jax.random.split(key)
        x0 = data[jax.random.randint(k_idx, (n_seq,), 0, data.shape[0])]
        terms = losses.sequence_bound(method, model, x0, k_loss, eps, tc.time_draws,
                                      across_batch=True)
        means = {k: v.mean() for k, v in terms.items()}
        return means.pop("bound"), means

    step = wrap_step(optax_step(loss_fn, optimizer), tc)

    def seeds_step(state, data, key):
        return eqx.filter_vmap(step, in_axes=(eqx.if_array(0), None, 0))(
            state, data, jax.random.split(key, len(seeds)))

    models = init_denoisers(run.cfg, method, vocab, seq_len)
    state = eqx.filter_vmap(lambda m: init_state(m, optimizer, tc))(models)
    out = Path(run.out)
    state, history = run_loop(
        seeds_step, state, jnp.asarray(arrays["train"]),
        key=jax.random.PRNGKey(1 + 97 * sum(seeds)), num_steps=tc.steps,
        chunk_size=tc.chunk_size, checkpoint_path=out.with_name(out.name + ".ckpt"),
        checkpoint_every=tc.checkpoint_every, desc=f"{corpus}:{method}", progress=run.progress)
    io.save_checkpoint(out, evaluated_model(state), tc.steps)
    hist = {k: np.asarray(v).reshape(tc.steps, len(seeds)) for k, v in history.items()}
    rows = [{"method": method, "seed": seed, "step": s + 1, "tokens": (s + 1) * n_seq * seq_len,
             **{k: float(v[s, i]) for k, v in hist.items()}}
            for i, seed in enumerate(seeds) for s in range(tc.steps)]
    io.write_table(out.with_suffix(".csv"), rows, run.meta())


def train_scorer(run, corpus: str) -> None:
    """Train the autoregressive scorer of ``corpus``; record its validation NLL and the
    generative perplexity / sample entropy of the trivial unigram sampler."""
    arrays = load_corpus(run.input(f"{corpus}.npz"))
    vocab, seq_len = int(arrays["vocab_size"]), arrays["train"].shape[1]
    model = init_scorer(run.cfg, vocab, seq_len)

    def loss_fn(model, x0, key):
        del key
        return scorer_nll(model, x0).mean(), {}

    model = _fit(run, model, loss_fn, arrays["train"], run.cfg.scorer_train, SCORER_SEED,
                 f"scorer:{corpus}")
    score = eqx.filter_jit(scorer_nll)
    val_nll = float(score(model, jnp.asarray(arrays["val"])).mean())
    # the trivial sampler: i.i.d. tokens from the training unigram frequencies
    freq = np.bincount(arrays["train"].reshape(-1), minlength=vocab) / arrays["train"].size
    unigram = jax.random.categorical(jax.random.PRNGKey(SCORER_SEED + 1), jnp.log(freq),
                                     shape=(run.cfg.eval.n_samples, seq_len)).astype(jnp.int32)
    io.write_json(Path(run.out).with_suffix(".json"),
                  {"corpus": corpus, "val_nll_per_token": val_nll, "val_ppl": float(np.exp(val_nll)),
                   "unigram_gen_ppl": float(np.exp(np.asarray(score(model, unigram)).mean())),
                   "unigram_entropy": float(D.unigram_entropy(unigram, vocab).mean()),
                   "meta": run.meta()})
