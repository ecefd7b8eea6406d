"""srgw: our JAX semi-relaxed GW solver vs POT's, on SBM graphs.

    python benchmarks/srgw.py                 # n = 1,000 and 5,000
    python benchmarks/srgw.py --ns 1000       # one size
    python benchmarks/srgw.py --large         # adds n = 20,000 (dense for both, and BCOO for ours)

Two rows per n (``benchmarks.runner.compare``, median of repeats, compile excluded; ratio > 1:
ours faster):

* ``fw-iterations``: 50 Frank-Wolfe iterations on T for a fixed block matrix C — ours a
  ``lax.fori_loop`` of ``solvers.fw_step``, POT ``ot.gromov.semirelaxed_gromov_wasserstein``
  with ``max_iter=50`` and zero tolerances — so the ratio is the ratio of iterations/s;
* ``to-tolerance``: the whole block-coordinate estimator (FW steps + closed-form C) from the
  same spectral initial coupling to relative tolerance 1e-5 — ours ``solvers.solve``, POT's
  solver in the same loop (``evaluate.pot_block_model``); the objectives of both are printed.

Single-threaded runs: set ``XLA_FLAGS``/``OMP_NUM_THREADS`` as the pipeline does
(``--threads``) to compare like with like.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="*", default=[1000, 5000])
    parser.add_argument("--large", action="store_true", help="add n = 20,000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    from repro26.core.cli import _set_threads

    _set_threads(args.threads)

    import jax
    import jax.numpy as jnp
    import numpy as np
    import ot

    from benchmarks.runner import compare
    from repro26.srgw import data, evaluate, model, solvers

    ns = list(args.ns) + ([20000] if args.large else [])
    spec = data.SBMSpec(0.3, 0.1, (1.0, 1.0, 1.0))
    iters, tol, K = 50, 1e-5, 3

    @jax.jit
    def fw_iterations(A, T, C):
        fAr = A @ T.sum(1)  # f1(A) = A for a 0/1 adjacency

        def body(_, T):
            return solvers.fw_step(A, T, A @ T, C, fAr)[0]

        return jax.lax.fori_loop(0, iters, body, T)

    solve = jax.jit(lambda A, T0: solvers.solve(A, T0, 1000, tol))
    for n in ns:
        key = jax.random.PRNGKey(n)
        A, _, _ = data.sample_sbm(key, n, spec)
        z = jax.jit(lambda A, k: model.spectral_labels(A, K, k))(A, key)
        T0 = jax.nn.one_hot(z, K, dtype=jnp.float32) / n
        # a perturbed start so that FW has work to do on every row
        T0 = 0.5 * T0 + 0.5 / (n * K)
        C = solvers.block_update(T0, A @ T0)
        A64, T064, C64 = (np.asarray(x, np.float64) for x in (A, T0, C))
        p = np.full(n, 1.0 / n)
        compare(f"srgw fw-iterations x{iters} n={n}",
                ours=lambda: fw_iterations(A, T0, C),
                reference=lambda: ot.gromov.semirelaxed_gromov_wasserstein(
                    A64, C64, p, symmetric=True, G0=T064, max_iter=iters, tol_rel=0.0,
                    tol_abs=0.0),
                repeats=args.repeats)
        row = compare(f"srgw to-tolerance n={n}",
                      ours=lambda: solve(A, T0),
                      reference=lambda: evaluate.pot_block_model(A64, T064, tol, 1000),
                      repeats=args.repeats)
        res = solve(A, T0)
        ours = evaluate._np_objective(A64, np.asarray(res.T, np.float64),
                                      np.asarray(res.C, np.float64))
        pot = evaluate.pot_block_model(A64, T064, tol, 1000)
        print(f"    objective ours {ours:.6f} ({int(res.n_iter)} it)   POT {pot[2]:.6f} "
              f"({pot[3]} outer it)   ours/POT {ours / pot[2]:.5f}   "
              f"iterations/s ours {int(res.n_iter) / row['ours_s']:.1f}", flush=True)
        if n >= 20000:
            sparse_spec = data.SBMSpec(20.0 / n, 5.0 / n, (1.0, 1.0, 1.0))
            As, _, _ = data.sample_sbm(key, n, sparse_spec)
            Ab = solvers.to_bcoo(As)
            del As
            Ts = jnp.full((n, K), 1.0 / (n * K)) + jax.random.uniform(key, (n, K)) * 1e-3 / n
            Ts = Ts / Ts.sum(1, keepdims=True) / n
            t = evaluate.timed(lambda A, T: solvers.solve(A, T, 1000, tol), Ab, Ts)[1]
            print(f"srgw sparse BCOO n={n} nnz={Ab.nse}: ours to tolerance {t:.2f} s "
                  f"(POT needs the dense {n}x{n} float64 matrix)", flush=True)


if __name__ == "__main__":
    main()
