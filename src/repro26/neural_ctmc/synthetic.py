"""The ``synthetic`` study: the four methods on an enumerable HMM language, judged by the exact
output laws of their samplers (:mod:`exact`), with no sampling noise.

* ``train``: one job per method, all seeds at once (``jax.vmap`` over stacked models); each
  batch is drawn from the exact law ``p`` (infinite data), the loss is the method's own bound
  with ``time_draws`` stratified times per sequence. The saved model is the average of the
  weights where ``train.ema`` > 0, else the weights. A complete run of half the steps is saved
  too (``.half.eqx``), the reference of the plateau check (doubling): with a constant learning
  rate after the warm-up it is the first half of the run; with ``wsd`` (warm-up, constant,
  linear decay to zero over the last ``decay`` steps) it branches off the stable phase at
  ``steps/2 - decay`` and decays by ``steps/2``.
* ``evaluate``: per method and seed, the exact ``q_N`` of every sampler that applies for every
  ``N``, its ``KL(q_N || p)``, ``KL(p || q_N)``, ``H(q_N)``; ``kl_qp_halfway``: the half-way
  model's ``KL(q_N || p)`` with the own sampler at the claims' ``N``; a Monte Carlo estimate of the NLL
  bound ``E_p[bound]`` with its 95% half-interval, for the trained and for the untrained model
  (the fair start: ``L log V`` for every method); the per-draw standard deviation of the bound
  estimator with 1 and with ``time_draws`` times; the parameter count.
* ``floors``: the same samplers run on the exact quantities of ``p`` (the floors) and the
  trivial baselines (independent positions, uniform law), with ``H(p)``.

Tables are tidy: ``(method, sampler, seed, steps, metric, value)``; per sequence, in nats.
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core import io
from repro26.core.train import optax_step, run_loop
from repro26.neural_ctmc import exact as E
from repro26.neural_ctmc import losses
from repro26.neural_ctmc.model import make_denoiser, n_parameters
from repro26.neural_ctmc.figures import CLAIM_STEPS
from repro26.neural_ctmc.names import ALL_SAMPLERS
from repro26.neural_ctmc.train import (evaluated_model, init_state, make_optimizer, seed_slice,
                                       wrap_step)


def init_models(cfg, method: str):
    """Stacked (leading seed axis) untrained backbones of ``method``, one per synthetic seed."""
    sc, m = cfg.synthetic, cfg.synthetic.model

    def make(key):
        return make_denoiser(method, vocab_size=sc.vocab_size, seq_len=sc.seq_len,
                             d_model=m.d_model, n_layers=m.n_layers, n_heads=m.n_heads,
                             mlp_ratio=m.mlp_ratio, pos_scale=m.pos_scale, key=key)

    keys = jnp.stack([jax.random.PRNGKey(s) for s in sc.seeds])
    return eqx.filter_vmap(make)(keys)


def half_path(path: Path) -> Path:
    """The checkpoint of the same run after half its steps (``<method>.half.eqx``)."""
    return path.with_name(path.stem + ".half.eqx")


def train(run, method: str) -> None:
    """Train every seed of ``method`` at once; checkpoint and per-seed training curves."""
    cfg, sc, tc = run.cfg, run.cfg.synthetic, run.cfg.synthetic.train
    _, p = E.synthetic_language(sc)
    seqs, log_p = E.all_sequences(sc.vocab_size, sc.seq_len), jnp.log(p)
    n_seq = tc.batch_size // tc.time_draws
    optimizer = make_optimizer(tc)

    def loss_fn(model, data, key):
        k_x, k_b = jax.random.split(key)
        x0 = data[jax.random.categorical(k_x, log_p, shape=(n_seq,))]
        terms = losses.sequence_bound(method, model, x0, k_b, cfg.eps, tc.time_draws)
        means = {k: v.mean() for k, v in terms.items()}
        return means.pop("bound"), means

    n_seeds = len(sc.seeds)

    def seeds_step(step):
        def run(state, data, key):
            return eqx.filter_vmap(step, in_axes=(eqx.if_array(0), None, 0))(
                state, data, jax.random.split(key, n_seeds))
        return run

    models = init_models(cfg, method)
    state = eqx.filter_vmap(lambda m: init_state(m, optimizer, tc))(models)
    out = Path(run.out)
    half = tc.steps // 2
    full_step = seeds_step(wrap_step(optax_step(loss_fn, optimizer), tc))

    def segment(state, step, start, stop, phase):
        return run_loop(
            step, state, seqs, key=jax.random.PRNGKey(1 + 97 * sum(sc.seeds) + phase),
            num_steps=stop - start, chunk_size=tc.chunk_size,
            checkpoint_path=out.with_name(out.name + f".ckpt{phase}"),
            checkpoint_every=tc.checkpoint_every, desc=f"synthetic:{method}:{phase}",
            progress=run.progress)

    # the plateau check's reference is a complete run of half the steps from the same stable
    # phase. "constant" (after the warm-up): the first half of the run is that run. "wsd": the
    # run of steps/2 branches off at steps/2 - decay and decays to zero by steps/2 (its own
    # optimiser schedule, the same state), while the main run continues its stable phase
    # (``decay`` extra optimiser steps in all)
    branch = half - tc.decay if tc.schedule == "wsd" else half
    state, first = segment(state, full_step, 0, branch, 0)
    if tc.schedule == "wsd":
        half_step = seeds_step(wrap_step(optax_step(loss_fn, make_optimizer(tc, half)), tc))
        half_state, _ = segment(state, half_step, branch, half, 2)
        io.save_checkpoint(half_path(out), evaluated_model(half_state), half)
        del half_state
    else:
        io.save_checkpoint(half_path(out), evaluated_model(state), half)
    state, second = segment(state, full_step, branch, tc.steps, 1)
    histories = [first, second]
    io.save_checkpoint(out, evaluated_model(state), tc.steps)
    history = {k: np.concatenate([h[k] for h in histories if k in h]) for k in histories[-1]}
    loss = np.asarray(history["loss"]).reshape(tc.steps, n_seeds)
    rows = [{"method": method, "seed": seed, "step": s + 1, "tokens":
             (s + 1) * n_seq * sc.seq_len, "bound": float(loss[s, i]) * sc.seq_len}
            for i, seed in enumerate(sc.seeds) for s in range(tc.steps)]
    io.write_table(out.with_suffix(".csv"), rows, run.meta())


@eqx.filter_jit
def _bounds(method, model, x0, key, eps, draws):
    return losses.sequence_bound(method, model, x0, key, eps, draws)["bound"]


def draw_sequences(p, vocab: int, key, n: int):
    """``(x [n, L], L)``: ``n`` sequences drawn from the enumerated law ``p``."""
    length = int(round(np.log(p.shape[0]) / np.log(vocab)))
    return E.all_sequences(vocab, length)[jax.random.categorical(key, jnp.log(p), shape=(n,))], length


def bound_estimate(method: str, model, p, key, eps: float, draws: int, n_seq: int,
                   chunk: int = 512) -> tuple[float, float]:
    r"""Monte Carlo estimate of ``E_{x ~ p}[bound(x)]`` in nats per sequence and its 95%
    half-interval: ``n_seq`` sequences drawn from ``p``, ``draws`` stratified ``(t, x_t)`` draws
    each; the estimator's variance holds both sources (which sequence, which times), so
    ``mean +- 1.96 sd / sqrt(n_seq)`` covers ``E_p[bound] >= H(p)``."""
    chunk = min(chunk, n_seq)
    n_seq = chunk * max(1, -(-n_seq // chunk))
    x0, length = draw_sequences(p, model.vocab_size, key, n_seq)
    per = np.concatenate([np.asarray(_bounds(method, model, x0[i:i + chunk],
                                             jax.random.fold_in(key, i), eps, draws))
                          for i in range(0, n_seq, chunk)]) * length
    return float(per.mean()), float(1.96 * per.std(ddof=1) / np.sqrt(n_seq))


def draw_sd(method: str, model, p, key, eps: float, draws: int, n_seq: int, repeats: int) -> float:
    """Root mean (over ``n_seq`` sequences drawn from ``p``) within-sequence variance of the
    ``draws``-time bound estimate, in nats per sequence."""
    x0, length = draw_sequences(p, model.vocab_size, key, n_seq)
    est = jnp.stack([_bounds(method, model, x0, jax.random.fold_in(key, r), eps, draws)
                     for r in range(repeats)])
    return float(jnp.sqrt(est.var(0, ddof=1).mean()) * length)


def evaluate(run, method: str) -> None:
    """Exact output laws, bounds and estimator spread of every seed of ``method``."""
    cfg, sc = run.cfg, run.cfg.synthetic
    _, p = E.synthetic_language(sc)
    like = init_models(cfg, method)
    trained = io.load_model(run.input(f"{method}.eqx"), like)
    halfway = io.load_model(run.input(f"{method}.half.eqx"), like)
    claim_steps = [n for n in sc.steps if CLAIM_STEPS[0] <= n <= CLAIM_STEPS[1]]
    rows = []
    for i, seed in enumerate(sc.seeds):
        model, key = seed_slice(trained, i), jax.random.PRNGKey(7919 * (seed + 1))
        base = {"method": method, "seed": seed}
        # every sampler and step count of the trained model; the plateau check: the model
        # after half the steps, own sampler, the claims' step counts (metric ``kl_qp_halfway``)
        for net, samplers, steps, suffix in (
                (model, ALL_SAMPLERS[method], sc.steps, ""),
                (seed_slice(halfway, i), ALL_SAMPLERS[method][:1], claim_steps, "_halfway")):
            cached = E.cached_outputs(E.network_outputs(method, net, sc.vocab_size, sc.seq_len,
                                                        cfg.eps))
            for sampler in samplers:
                for n in steps:
                    q = E.output_law(method, sampler, cached, sc.vocab_size, sc.seq_len, n,
                                     cfg.eps)
                    rows += [{**base, "sampler": sampler, "steps": n, "metric": k + suffix,
                              "value": v} for k, v in E.divergences(q, p).items()
                             if not suffix or k == "kl_qp"]
        draws = sc.train.time_draws
        for metric, net in (("nll_bound", model), ("init_bound", seed_slice(like, i))):
            mean, half = bound_estimate(method, net, p, key, cfg.eps, sc.bound_draws,
                                        sc.bound_sequences)
            rows += [{**base, "sampler": "-", "steps": 0, "metric": metric, "value": mean},
                     {**base, "sampler": "-", "steps": 0, "metric": f"{metric}_half",
                      "value": half}]
        rows += [
            {**base, "sampler": "-", "steps": 0, "metric": "parameters",
             "value": n_parameters(model)},
            {**base, "sampler": "-", "steps": 0, "metric": "draw_sd_1",
             "value": draw_sd(method, model, p, key, cfg.eps, 1, sc.sd_sequences, sc.sd_repeats)},
            {**base, "sampler": "-", "steps": 0, "metric": f"draw_sd_{draws}",
             "value": draw_sd(method, model, p, key, cfg.eps, draws, sc.sd_sequences,
                              sc.sd_repeats)},
        ]
    io.write_table(Path(run.out), rows, run.meta())


def floors(run) -> None:
    """Exact-rate floors of every sampler, the trivial baselines and ``H(p)``."""
    cfg, sc = run.cfg, run.cfg.synthetic
    _, p = E.synthetic_language(sc)
    v, length = sc.vocab_size, sc.seq_len
    exact_outputs = {"uniform": E.exact_uniform_outputs(p, v, length, cfg.eps),
                     "mask": E.exact_mask_outputs(p, v, length)}
    rows = []
    for sampler, noise in E.FLOORS:
        method = "mdlm" if noise == "mask" else "gidd"
        cached = E.cached_outputs(exact_outputs[noise])
        for n in sc.steps:
            q = E.output_law(method, sampler, cached, v, length, n, cfg.eps)
            rows += [{"method": f"exact_{noise}", "sampler": sampler, "seed": 0, "steps": n,
                      "metric": k, "value": val} for k, val in E.divergences(q, p).items()]
    trivial = {"independent": E.independent_positions(p, v, length),
               "uniform": jnp.full(p.shape, 1.0 / p.size)}
    for name, q in trivial.items():
        rows += [{"method": name, "sampler": "-", "seed": 0, "steps": 0, "metric": k,
                  "value": val} for k, val in E.divergences(q, p).items()]
    rows.append({"method": "data", "sampler": "-", "seed": 0, "steps": 0, "metric": "entropy",
                 "value": E.divergences(p, p)["entropy"]})
    rows.append({"method": "data", "sampler": "-", "seed": 0, "steps": 0, "metric": "log_states",
                 "value": float(length * np.log(v))})
    io.write_table(Path(run.out), rows, run.meta())
