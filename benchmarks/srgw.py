"""srgw: our JAX semi-relaxed GW solver vs POT's, on SBM graphs (issue 4's benchmark).

    python benchmarks/srgw.py                 # n = 1,000 / 5,000 / 20,000
    python benchmarks/srgw.py --ns 1000       # one size
    python benchmarks/srgw.py --sparse        # sparse SBMs, n = 1e4 / 1e5 / 1e6 (issue 18)
    python benchmarks/srgw.py --sparse --sparse-ns 10000 100000 1000000 --degrees 25 --ks 4

Rows per n (``benchmarks.runner``, median of repeats, compile excluded; speedup > 1: ours
faster), saved to ``results/benchmarks/srgw.csv``:

* ``fw-iterations``: ``iters`` Frank-Wolfe iterations on T for a fixed block matrix C — ours a
  ``lax.fori_loop`` of ``solvers.fw_step``, POT ``ot.gromov.semirelaxed_gromov_wasserstein``
  with ``max_iter=iters`` and zero tolerances — reported as iterations/s of each;
* ``to-tolerance``: the whole block-coordinate estimator (FW steps + closed-form C) from the
  same perturbed spectral coupling to relative tolerance 1e-5 — ours ``solvers.solve``, POT's
  solver in the same loop (``evaluate.pot_block_model``) — with both objectives (float64);
* at n >= 20,000 also ours on a sparse (BCOO, mean degree 25) SBM, which POT cannot take.

POT needs the dense float64 n x n adjacency plus its square (``init_matrix_semirelaxed``): about
3 x 8 n^2 bytes, ~10 GB at n = 20,000. Before POT runs at a size, the free memory
(``MemAvailable``) is checked against 4 x 8 n^2 bytes; if short, POT's rows at that size are
left out and the table says so. At n >= ``--pot-tolerance-max-n`` POT's to-tolerance run (minutes
per run) is timed once, without repeats.

Single-threaded: ``--threads`` caps XLA and BLAS (both libraries) as the pipeline does.

``--sparse`` (issue 18): for every n x mean degree x K, a balanced SBM (p_in = 5 p_out) sampled
in O(edges) and solved end to end on a BCOO matrix (``evaluate.scaling_ours``: spectral init by
subspace iteration, solve to tolerance, rounding), each configuration in its own process so that
its peak RSS is its own. Rows ``sparse``: seconds to tolerance (init + solve + rounding; sampling
apart), iterations to tolerance, seconds per iteration (mean over a fixed loop from a perturbed
coupling), one sparse ``A @ T`` (mean over a chained loop) and their ratio, peak RSS and RSS
before sampling, ARI vs the planted blocks. Default ``--threads 2`` there (the issue's laptop);
the CSV's other rows (dense, other sparse configurations) are kept.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def mem_available_bytes() -> int:
    """``MemAvailable`` of /proc/meminfo (0 where it cannot be read)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children_cpu(before: os.times_result) -> float:
    """CPU seconds (user + system) of the child processes that ended since ``before``."""
    now = os.times()
    return (now.children_user - before.children_user) + (now.children_system
                                                         - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="*", default=[1000, 5000, 20000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--pot-tolerance-max-n", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--sparse", action="store_true")
    parser.add_argument("--sparse-ns", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--degrees", type=float, nargs="*", default=[25.0, 100.0])
    parser.add_argument("--ks", type=int, nargs="*", default=[4, 16])
    parser.add_argument("--one", type=str, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        return sparse_one(args)
    if args.sparse:
        return sparse_main(args)
    args.threads = args.threads or 1
    from repro26.core.cli import _set_threads

    _set_threads(args.threads)

    import gc

    import jax
    import jax.numpy as jnp
    import numpy as np
    import ot

    from benchmarks.runner import compare, median_time, save
    from repro26.core import timing
    from repro26.srgw import data, evaluate, model, solvers

    spec = data.SBMSpec(0.3, 0.1, (1.0, 1.0, 1.0))
    iters, tol, K = args.iters, 1e-5, 3

    @jax.jit
    def fw_iterations(A, T, C):
        fAr = A @ T.sum(1)  # f1(A) = A for a 0/1 adjacency

        def body(_, T):
            return solvers.fw_step(A, T, A @ T, C, fAr)[0]

        return jax.lax.fori_loop(0, iters, body, T)

    solve = jax.jit(lambda A, T0: solvers.solve(A, T0, 1000, tol))
    rows = []
    for n in args.ns:
        key = jax.random.PRNGKey(n)
        A, _, _ = data.sample_sbm(key, n, spec)
        z = jax.jit(lambda A, k: model.spectral_labels(A, K, k))(A, key)
        # a perturbed start so that FW has work to do on every row
        T0 = 0.5 * jax.nn.one_hot(z, K, dtype=jnp.float32) / n + 0.5 / (n * K)
        C = solvers.block_update(T0, A @ T0)
        res = solve(A, T0)
        ours_obj = evaluate._np_objective(np.asarray(A, np.float64), np.asarray(res.T, np.float64),
                                          np.asarray(res.C, np.float64))
        need, free = 4 * 8 * n * n, mem_available_bytes()
        pot_fits = free >= need
        base = {"n": n, "K": K, "dense": True, "pot_run": pot_fits,
                "note": "" if pot_fits else
                f"POT left out: needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"}
        if not pot_fits:
            t_it = median_time(lambda: fw_iterations(A, T0, C), args.repeats)
            t_tol = median_time(lambda: solve(A, T0), args.repeats)
            rows.append({**base, "name": f"fw-iterations x{iters}", "ours_s": t_it,
                         "ours_it_per_s": iters / t_it})
            rows.append({**base, "name": "to-tolerance", "ours_s": t_tol,
                         "ours_iterations": int(res.n_iter), "ours_objective": ours_obj})
            print(f"srgw n={n}: {base['note']}; ours {iters / t_it:.1f} it/s, to tolerance "
                  f"{t_tol:.2f} s", flush=True)
        else:
            A64, T064, C64 = (np.asarray(x, np.float64) for x in (A, T0, C))
            p = np.full(n, 1.0 / n)
            row = compare(f"srgw fw-iterations x{iters} n={n}",
                          ours=lambda: fw_iterations(A, T0, C),
                          reference=lambda: ot.gromov.semirelaxed_gromov_wasserstein(
                              A64, C64, p, symmetric=True, G0=T064, max_iter=iters,
                              tol_rel=0.0, tol_abs=0.0),
                          repeats=args.repeats)
            rows.append({**base, "name": f"fw-iterations x{iters}", "ours_s": row["ours_s"],
                         "pot_s": row["reference_s"], "speedup": row["speedup"],
                         "ours_it_per_s": iters / row["ours_s"],
                         "pot_it_per_s": iters / row["reference_s"]})
            if n < args.pot_tolerance_max_n:
                row = compare(f"srgw to-tolerance n={n}", ours=lambda: solve(A, T0),
                              reference=lambda: evaluate.pot_block_model(A64, T064, tol, 1000),
                              repeats=args.repeats)
                t_ours, t_pot = row["ours_s"], row["reference_s"]
                pot = evaluate.pot_block_model(A64, T064, tol, 1000)
            else:  # POT to tolerance takes minutes here: one run, no warm-up (nothing compiles)
                t_ours = median_time(lambda: solve(A, T0), args.repeats)
                pot, t_pot = timing.cpu_timed(evaluate.pot_block_model, A64, T064, tol, 1000)
                print(f"srgw to-tolerance n={n}: ours {t_ours:.2f} s, POT {t_pot:.2f} s (1 run), "
                      f"reference/ours {t_pot / t_ours:.2f}x", flush=True)
            rows.append({**base, "name": "to-tolerance", "ours_s": t_ours, "pot_s": t_pot,
                         "speedup": t_pot / t_ours, "ours_iterations": int(res.n_iter),
                         "pot_outer_iterations": pot[3], "ours_objective": ours_obj,
                         "pot_objective": pot[2], "objective_ratio": ours_obj / pot[2]})
            print(f"    objective ours {ours_obj:.6f} ({int(res.n_iter)} it)   POT {pot[2]:.6f} "
                  f"({pot[3]} outer it)   ours/POT {ours_obj / pot[2]:.5f}", flush=True)
            del A64, T064, C64
        gc.collect()
        if n >= 20000:
            sparse_spec = data.SBMSpec(25.0 / n, 5.0 / n, (1.0, 1.0, 1.0))
            As, _, _ = data.sample_sbm(key, n, sparse_spec)
            Ab = solvers.to_bcoo(As)
            del As
            Ts = jnp.full((n, K), 1.0 / (n * K)) + jax.random.uniform(key, (n, K)) * 1e-3 / n
            Ts = Ts / Ts.sum(1, keepdims=True) / n
            solve = evaluate.Compiled(f"the benchmark's sparse solve at n={n}")
            out, t = solve("sparse", lambda A, T: solvers.solve(A, T, 1000, tol), Ab, Ts)
            rows.append({"n": n, "K": K, "dense": False, "pot_run": False,
                         "name": "to-tolerance (BCOO)", "ours_s": t,
                         "ours_iterations": int(out.n_iter),
                         "note": f"sparse SBM, nnz={int(Ab.nse)}; POT needs the dense matrix"})
            print(f"srgw sparse BCOO n={n} nnz={Ab.nse}: ours to tolerance {t:.2f} s "
                  f"({int(out.n_iter)} it)", flush=True)
    save("srgw", rows, threads=args.threads, iters=iters, tol=tol)


def sparse_one(args) -> None:
    """One sparse configuration ``n,degree,K`` (in a fresh process): print its row as JSON."""
    import json

    from repro26.core.cli import _set_threads

    _set_threads(args.threads or 2)
    from repro26.core.cli import resolve_run_config
    from repro26.srgw import cli, evaluate

    n, degree, K = args.one.split(",")
    _, cfg, _ = resolve_run_config(cli, "srgw", Path(__file__).resolve().parents[1] / "config"
                                   / "config.yaml", "small")
    row = evaluate.scaling_ours(cfg, int(n), float(degree), int(K), 0, cfg.scaling_iters)
    print("ROW " + json.dumps(row), flush=True)


def sparse_main(args) -> None:
    """Every n x degree x K in its own process; merge with the dense rows of the CSV."""
    import json
    import subprocess

    from benchmarks.runner import RESULTS, save
    from repro26.core import io

    threads = args.threads or 2
    rows = []
    for n in args.sparse_ns:
        for degree in args.degrees:
            for K in args.ks:
                cmd = [sys.executable, __file__, "--one", f"{n},{degree},{K}",
                       "--threads", str(threads)]
                before = os.times()
                proc = subprocess.run(cmd, capture_output=True, text=True)
                line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("ROW ")), None)
                if line is None:
                    print(f"srgw sparse n={n} d={degree:g} K={K}: failed\n{proc.stderr[-2000:]}",
                          flush=True)
                    rows.append({"name": "sparse", "n": n, "degree": degree, "K": K,
                                 "dense": False, "note": "failed: " + proc.stderr[-200:]})
                    continue
                r = json.loads(line[4:])
                rows.append({"name": "sparse", "dense": False, "threads": threads, **r,
                             "process_cpu_s": _children_cpu(before)})
                print(f"srgw sparse n={n:,} d={degree:g} K={K}: nnz {r['nnz']:,}, to tolerance "
                      f"{r['time_s']:.2f} s ({r['iterations']} it; sampling {r['sample_s']:.1f} s), "
                      f"{r['iteration_s'] * 1e3:.1f} ms/it = {r['iteration_over_matmul']:.2f}x one "
                      f"A@T ({r['matmul_s'] * 1e3:.1f} ms), peak RSS {r['rss_peak_mb']:.0f} MB, "
                      f"ARI {r['ari']:.3f}", flush=True)
    path = RESULTS / "srgw.csv"
    if path.is_file():
        old = io.read_table(path)
        kept = [dict(zip(old, vals)) for vals in zip(*old.values())]
        new = {(int(r["n"]), float(r["degree"]), int(r["K"])) for r in rows}
        rows = [r for r in kept if str(r.get("name")) != "sparse"
                or (int(r["n"]), float(r["degree"]), int(r["K"])) not in new] + rows
    save("srgw", rows, sparse_threads=threads)


if __name__ == "__main__":
    main()
