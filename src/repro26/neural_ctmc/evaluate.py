"""Evaluation of one method's trained models (every seed), and the summary tables the figures and claims read.

Per (corpus, method) the ``evaluate`` stage writes one tidy table for every seed, rows
``(seed, metric, sampler, steps, value)``:

* ``elbo_nll`` / ``elbo_nll_se`` — the variational bound on validation NLL in nats/token (its
  exponential is the bound on validation perplexity), averaged over ``elbo_draws`` Monte Carlo
  stratified draws of ``(t, x_t)`` per sequence, with its standard error;
* per sampler and number of steps (16/32/64/128): ``gen_ppl`` — ``exp`` of the mean per-token
  NLL of the samples under the autoregressive scorer (text), ``entropy`` — mean unigram entropy
  of a sample in nats, ``exact_nll`` — mean exact per-token NLL of the samples under the true
  HMM (synthetic language);
* ``parameters`` — trainable scalars; the summary adds ``optimiser_steps`` and ``tokens_seen``
  from each training history (the budget of the claims' tables).
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core import io, tables
from repro26.neural_ctmc import data as D
from repro26.neural_ctmc import losses, solvers
from repro26.neural_ctmc.model import n_parameters, scorer_nll
from repro26.neural_ctmc.names import SAMPLERS
from repro26.neural_ctmc.train import init_denoisers, init_scorer, load_corpus, seed_slice


@eqx.filter_jit
def _bound_batch(method: str, model, x0, key, eps: float, draws: int):
    return losses.sequence_bound(method, model, x0, key, eps, draws)["bound"]


def elbo_nll(method: str, model, val: np.ndarray, key, eps: float, draws: int, batch: int
             ) -> tuple[float, float]:
    """Mean bound (nats/token) over validation sequences (``draws`` stratified times each, in
    network batches of ``batch`` rows) and its standard error."""
    per_seq = np.zeros(len(val))
    n_seq = max(1, batch // draws)
    for start in range(0, len(val), n_seq):
        x0 = jnp.asarray(val[start:start + n_seq])
        if len(x0) < n_seq:  # keep one compiled shape
            x0 = jnp.concatenate([x0, jnp.asarray(val[: n_seq - len(x0)])])
        b = np.asarray(_bound_batch(method, model, x0, jax.random.fold_in(key, start), eps, draws))
        n = min(n_seq, len(val) - start)
        per_seq[start:start + n] = b[:n]
    return float(per_seq.mean()), float(per_seq.std(ddof=1) / np.sqrt(len(per_seq)))


def evaluate_model(run, corpus: str, method: str) -> None:
    """Evaluation table (every seed) and shown samples (per seed) of one method's stacked
    models (see the module docstring); the seeds share each compiled function."""
    cfg, ev = run.cfg, run.cfg.eval
    arrays = load_corpus(run.input(f"{corpus}.npz"))
    vocab, seq_len = int(arrays["vocab_size"]), arrays["train"].shape[1]
    stacked = io.load_model(run.input(f"{method}.eqx"),
                            init_denoisers(cfg, method, vocab, seq_len))
    scorer = None
    if corpus == "text":
        scorer = io.load_model(run.input(f"scorer/{corpus}.eqx"), init_scorer(cfg, vocab, seq_len))
        score = eqx.filter_jit(scorer_nll)
    val = arrays["val"][: ev.n_val]
    rows, samples_out = [], {}
    for i, seed in enumerate(cfg.seeds):
        model = seed_slice(stacked, i)
        key = jax.random.PRNGKey(10_007 * (seed + 1))
        k_elbo, k_samp = jax.random.split(key)
        nll, nll_se = elbo_nll(method, model, val, k_elbo, cfg.eps, ev.elbo_draws, ev.batch_size)
        base = {"corpus": corpus, "method": method, "seed": seed}
        rows += [{**base, "metric": "elbo_nll", "sampler": "-", "steps": 0, "value": nll},
                 {**base, "metric": "elbo_nll_se", "sampler": "-", "steps": 0, "value": nll_se},
                 {**base, "metric": "parameters", "sampler": "-", "steps": 0,
                  "value": n_parameters(model)}]
        shown_by_key = {}
        for sampler in SAMPLERS[method]:
            for steps in ev.steps:
                chunks = []
                for j, start in enumerate(range(0, ev.n_samples, ev.batch_size)):
                    k = jax.random.fold_in(jax.random.fold_in(k_samp, steps), j)
                    chunks.append(np.asarray(solvers.sample(
                        method, sampler, model, k, ev.batch_size, seq_len, jnp.int32(steps),
                        cfg.eps)))
                x = np.concatenate(chunks)[: ev.n_samples]
                xj = jnp.asarray(x)
                ent = float(D.unigram_entropy(xj, vocab).mean())
                rows.append({**base, "metric": "entropy", "sampler": sampler, "steps": steps,
                             "value": ent})
                if scorer is not None:
                    rows.append({**base, "metric": "gen_ppl", "sampler": sampler,
                                 "steps": steps,
                                 "value": float(np.exp(np.asarray(score(scorer, xj)).mean()))})
                shown = x[: ev.n_show]
                shown_by_key[f"{sampler}/{steps}"] = (
                    [D.decode_chars(s) for s in shown]
                    if corpus == "text" and vocab == len(D.ALPHABET) else shown.tolist())
        samples_out[str(seed)] = shown_by_key
    out = Path(run.out)
    io.write_table(out, rows, run.meta())
    io.write_json(out.with_suffix(".samples.json"),
                  {"corpus": corpus, "method": method, "samples": samples_out,
                   "meta": run.meta()})


# ----------------------------------------------------------------------------- summary


def summarize(run, study: str) -> None:
    """Concatenate per-job tables: ``study='text'`` -> ``eval.csv``, ``curves.csv`` and
    ``reference.csv``; ``study='synthetic'`` -> ``synthetic.csv`` (exact laws, floors, bounds),
    ``variance.csv`` (bound estimator spread) and ``synthetic_training.csv``.

    ``--out`` is the summary folder; the inputs are every per-job table, training history,
    corpus JSON and scorer JSON (recognised by their paths).
    """
    out = Path(run.out)
    eval_rows, synth_rows, var_rows, curve_rows, ref_rows = [], [], [], [], []
    for path in run.inputs:
        parts = path.parts
        if path.suffix == ".csv" and "eval" in parts and "synthetic" in parts:
            t = io.read_table(path)
            for row in (dict(zip(t, vals)) for vals in zip(*t.values())):
                if str(row["metric"]).startswith("draw_sd_"):
                    var_rows.append({"method": row["method"], "seed": row["seed"],
                                     "time_draws": int(row["metric"].removeprefix("draw_sd_")),
                                     "sd_nats_per_sequence": row["value"]})
                else:
                    synth_rows.append(row)
        elif path.suffix == ".csv" and "eval" in parts:
            t = io.read_table(path)
            eval_rows += [dict(zip(t, vals)) for vals in zip(*t.values())]
        elif path.suffix == ".csv" and "runs" in parts:
            t = io.read_table(path)
            runs = [(int(s), tables.where(t, seed=s)) for s in sorted(set(t["seed"].tolist()))]
            corpus, method = parts[-2], path.stem
            bounds = t["bound"] if corpus == "synthetic" else t["loss"]
            for seed, sel in runs:
                step, tokens, bound = t["step"][sel], t["tokens"][sel], bounds[sel]
                # the budget, counted where it was spent (the training history)
                budget = {"optimiser_steps": int(step.max()), "tokens_seen": int(tokens.max())}
                where = {"method": method, "seed": seed, "sampler": "-", "steps": 0}
                (synth_rows if corpus == "synthetic" else eval_rows).extend(
                    {**where, **({} if corpus == "synthetic" else {"corpus": corpus}),
                     "metric": k, "value": v} for k, v in budget.items())
                # one-batch bound estimates are heavy-tailed: average over 1/25 of the run
                window = max(1, len(step) // 25)
                for i in range(window - 1, len(step), window):
                    curve_rows.append({"corpus": corpus, "method": method, "seed": seed,
                                       "step": int(step[i]), "tokens": int(tokens[i]),
                                       "bound": float(np.mean(bound[i - window + 1:i + 1]))})
        elif path.suffix == ".json" and "data" in parts:
            ref = io.read_json(path)
            ref_rows.append({"corpus": ref["corpus"], "quantity": "data_unigram_entropy",
                             "value": ref["data_unigram_entropy"]})
        elif path.suffix == ".json" and "scorer" in parts:
            ref = io.read_json(path)
            ref_rows += [{"corpus": ref["corpus"], "quantity": q, "value": ref[v]}
                         for q, v in (("scorer_val_ppl", "val_ppl"),
                                      ("unigram_gen_ppl", "unigram_gen_ppl"),
                                      ("unigram_entropy", "unigram_entropy"))]
    if study == "synthetic":
        io.write_table(out / "synthetic.csv", synth_rows, run.meta())
        io.write_table(out / "variance.csv", var_rows, run.meta())
        io.write_table(out / "synthetic_training.csv", curve_rows, run.meta())
    else:
        io.write_table(out / "eval.csv", eval_rows, run.meta())
        io.write_table(out / "curves.csv", curve_rows, run.meta())
        io.write_table(out / "reference.csv", ref_rows, run.meta())
