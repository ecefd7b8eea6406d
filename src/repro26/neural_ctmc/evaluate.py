"""Evaluation of one trained model, and the summary tables the figures and claims read.

Per (corpus, method, seed) the ``evaluate`` stage writes a tidy table with rows
``(metric, sampler, steps, value)``:

* ``elbo_nll`` / ``elbo_nll_se`` — the variational bound on validation NLL in nats/token (its
  exponential is the bound on validation perplexity), averaged over ``elbo_draws`` Monte Carlo
  draws of ``(t, x_t)`` per sequence, with its standard error;
* per sampler and number of steps (16/32/64/128): ``gen_ppl`` — ``exp`` of the mean per-token
  NLL of the samples under the autoregressive scorer (text), ``entropy`` — mean unigram entropy
  of a sample in nats, ``exact_nll`` — mean exact per-token NLL of the samples under the true
  HMM (synthetic language).
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core import io
from repro26.neural_ctmc import data as D
from repro26.neural_ctmc import losses, solvers
from repro26.neural_ctmc.model import scorer_nll
from repro26.neural_ctmc.train import init_denoiser, init_scorer, load_corpus


@eqx.filter_jit
def _bound_batch(method: str, model, x0, key, eps: float):
    return losses.sequence_bound(method, model, x0, key, eps)["bound"]


def elbo_nll(method: str, model, val: np.ndarray, key, eps: float, draws: int, batch: int
             ) -> tuple[float, float]:
    """Mean bound (nats/token) over validation sequences and its standard error."""
    per_seq = np.zeros(len(val))
    for d in range(draws):
        for start in range(0, len(val), batch):
            x0 = jnp.asarray(val[start:start + batch])
            if len(x0) < batch:  # keep one compiled shape
                x0 = jnp.concatenate([x0, jnp.asarray(val[: batch - len(x0)])])
            k = jax.random.fold_in(jax.random.fold_in(key, d), start)
            b = np.asarray(_bound_batch(method, model, x0, k, eps))
            n = min(batch, len(val) - start)
            per_seq[start:start + n] += b[:n] / draws
    return float(per_seq.mean()), float(per_seq.std(ddof=1) / np.sqrt(len(per_seq)))


def evaluate_model(run, corpus: str, method: str, seed: int) -> None:
    """Evaluation table and shown samples of one trained model (see the module docstring)."""
    cfg, ev = run.cfg, run.cfg.eval
    arrays = load_corpus(run.input(f"{corpus}.npz"))
    vocab, seq_len = int(arrays["vocab_size"]), arrays["train"].shape[1]
    like = init_denoiser(cfg, method, vocab, seq_len, seed)
    model, _ = io.load_checkpoint(run.input(f"seed{seed}.eqx"), like)
    scorer = None
    if corpus == "text":
        scorer, _ = io.load_checkpoint(run.input(f"scorer/{corpus}.eqx"),
                                       init_scorer(cfg, vocab, seq_len))
        score = eqx.filter_jit(scorer_nll)
    hmm = {k: jnp.asarray(arrays[k]) for k in ("log_pi", "log_A", "log_B")} if corpus == "hmm" else None

    key = jax.random.PRNGKey(10_007 * (seed + 1))
    k_elbo, k_samp = jax.random.split(key)
    val = arrays["val"][: ev.n_val]
    nll, nll_se = elbo_nll(method, model, val, k_elbo, cfg.eps, ev.elbo_draws, ev.batch_size)
    base = {"corpus": corpus, "method": method, "seed": seed}
    rows = [{**base, "metric": "elbo_nll", "sampler": "-", "steps": 0, "value": nll},
            {**base, "metric": "elbo_nll_se", "sampler": "-", "steps": 0, "value": nll_se}]
    samples_out = {}
    for sampler in solvers.SAMPLERS[method]:
        for steps in ev.steps:
            chunks = []
            for i, start in enumerate(range(0, ev.n_samples, ev.batch_size)):
                k = jax.random.fold_in(jax.random.fold_in(k_samp, steps), i)
                chunks.append(np.asarray(solvers.sample(
                    method, sampler, model, k, ev.batch_size, seq_len, jnp.int32(steps), cfg.eps)))
            x = np.concatenate(chunks)[: ev.n_samples]
            xj = jnp.asarray(x)
            ent = float(D.unigram_entropy(xj, vocab).mean())
            rows.append({**base, "metric": "entropy", "sampler": sampler, "steps": steps,
                         "value": ent})
            if scorer is not None:
                rows.append({**base, "metric": "gen_ppl", "sampler": sampler, "steps": steps,
                             "value": float(np.exp(np.asarray(score(scorer, xj)).mean()))})
            if hmm is not None:
                exact = -np.asarray(D.hmm_log_prob(hmm, xj)) / seq_len
                rows.append({**base, "metric": "exact_nll", "sampler": sampler, "steps": steps,
                             "value": float(exact.mean())})
            shown = x[: ev.n_show]
            samples_out[f"{sampler}/{steps}"] = (
                [D.decode_chars(s) for s in shown] if corpus == "text" and vocab == len(D.ALPHABET)
                else shown.tolist())
    out = Path(run.out)
    io.write_table(out, rows, run.meta())
    io.write_json(out.with_suffix(".samples.json"), {**base, "samples": samples_out,
                                                      "meta": run.meta()})


# ----------------------------------------------------------------------------- summary


def summarize(run) -> None:
    """Concatenate per-job tables into ``eval.csv``, ``curves.csv`` and ``reference.csv``.

    ``--out`` is the summary folder; the inputs are every per-job evaluation table, training
    history, corpus JSON and scorer JSON (recognised by their paths).
    """
    out = Path(run.out)
    eval_rows, curve_rows, ref_rows = [], [], []
    for path in run.inputs:
        parts = path.parts
        if path.suffix == ".csv" and "eval" in parts:
            t = io.read_table(path)
            eval_rows += [dict(zip(t, vals)) for vals in zip(*t.values())]
        elif path.suffix == ".csv" and "runs" in parts:
            t = io.read_table(path)
            corpus, method, seed = parts[-3], parts[-2], int(path.stem.removeprefix("seed"))
            # one-batch bound estimates are heavy-tailed: average over windows of 1/25 of the run
            window = max(1, len(t["step"]) // 25)
            for i in range(window - 1, len(t["step"]), window):
                lo = i - window + 1
                curve_rows.append({"corpus": corpus, "method": method, "seed": seed,
                                   "step": int(t["step"][i]), "tokens": int(t["tokens"][i]),
                                   "bound": float(np.mean(t["loss"][lo:i + 1]))})
        elif path.suffix == ".json" and "data" in parts:
            ref = io.read_json(path)
            for k in ("true_entropy_per_token", "true_entropy_se", "data_unigram_entropy"):
                if k in ref:
                    ref_rows.append({"corpus": ref["corpus"], "quantity": k, "value": ref[k]})
        elif path.suffix == ".json" and "scorer" in parts:
            ref = io.read_json(path)
            ref_rows += [{"corpus": ref["corpus"], "quantity": "scorer_val_ppl",
                          "value": ref["val_ppl"]}]
    io.write_table(out / "eval.csv", eval_rows, run.meta())
    io.write_table(out / "curves.csv", curve_rows, run.meta())
    io.write_table(out / "reference.csv", ref_rows, run.meta())
