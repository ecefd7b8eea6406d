"""Sampling throughput: Neural CTMC tau-leaping vs MDLM's ancestral sampler at equal steps.

    python -m benchmarks.neural_ctmc [--steps 16 64 128] [--batch 128] [--seq-len 64]

Both samplers run the same backbone size (untrained weights: throughput does not depend on
them) for the same number of network evaluations; the printed ratio is
``MDLM time / tau-leaping time`` (> 1: tau-leaping is faster) and tokens/s of each.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

from benchmarks.runner import compare, save
from repro26.neural_ctmc.model import make_denoiser
from repro26.neural_ctmc.solvers import sample


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, nargs="+", default=[16, 64, 128])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=32)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()

    def model(method):
        return make_denoiser(method, vocab_size=args.vocab, seq_len=args.seq_len,
                             d_model=args.d_model, n_layers=args.layers, n_heads=4, mlp_ratio=4,
                             key=jax.random.PRNGKey(0))

    ctmc, mdlm = model("neural_ctmc"), model("mdlm")
    key = jax.random.PRNGKey(1)
    tokens = args.batch * args.seq_len
    print(f"backend {jax.default_backend()}; batch {args.batch} x L {args.seq_len}, "
          f"V {args.vocab}, width {args.d_model}, {args.layers} layers")
    rows = []
    for steps in args.steps:
        n = jnp.int32(steps)
        row = compare(
            f"tau-leap vs MDLM, {steps} steps",
            ours=lambda: sample("neural_ctmc", "tau", ctmc, key, args.batch, args.seq_len, n, 1e-3),
            reference=lambda: sample("mdlm", "ancestral", mdlm, key, args.batch, args.seq_len, n, 1e-3),
            repeats=3)
        print(f"    tokens/s: tau-leaping {tokens / row['ours_s']:.3g}, "
              f"MDLM {tokens / row['reference_s']:.3g}")
        rows.append(row | {"steps": steps, "tokens_per_s_ours": tokens / row["ours_s"],
                           "tokens_per_s_reference": tokens / row["reference_s"]})
    save("neural_ctmc", rows, batch=args.batch, seq_len=args.seq_len, vocab=args.vocab,
         d_model=args.d_model, layers=args.layers)


if __name__ == "__main__":
    main()
