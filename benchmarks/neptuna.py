"""Two-phase solver throughput: cell-updates per second (cells × SSP-RK2 steps / s), our jitted
JAX solver (:mod:`repro26.neptuna.solvers`, steps in one ``lax.scan``) against a NumPy
implementation of the same scheme written here (primitive MUSCL with minmod and the first-order
fallback where a face state would be inadmissible, HLLC with the
unit-scalar face velocity for the Γ, Π terms, Heun's SSP-RK2, the same boundaries), on the
shock–bubble initial state, fixed dt, float32. One step of each is compared first (max difference of
the state relative to each component's largest magnitude; float32 round-off), so both run the same arithmetic. One thread.

    python benchmarks/neptuna.py [--sizes 64x32 128x64 256x128] [--steps 20]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.runner import compare, save  # noqa: E402
from repro26.neptuna import data, solvers  # noqa: E402


def np_primitive(q):
    rho, mx, my, E, G, P = q
    u, v = mx / rho, my / rho
    return np.stack([rho, u, v, (E - 0.5 * rho * (u * u + v * v) - P) / G, G, P])


def np_pad(w, axis, low, high, normal):
    n = w.shape[axis]

    def side(kind, idx):
        g = np.take(w, idx, axis=axis).copy()
        if kind == "reflective":
            g[normal] *= -1
        return g

    lo = side(low, [1, 0] if low == "reflective" else [0, 0])
    hi = side(high, [n - 1, n - 2] if high == "reflective" else [n - 1, n - 1])
    return np.concatenate([lo, w, hi], axis=axis)


def np_hllc(wl, wr):
    def parts(w):
        rho, un, ut, p, G, P = w
        E = G * p + P + 0.5 * rho * (un * un + ut * ut)
        U = np.stack([rho, rho * un, rho * ut, E, G, P, np.ones_like(rho)])
        F = np.stack([rho * un, rho * un * un + p, rho * un * ut, (E + p) * un, G * un, P * un, un])
        c = np.sqrt(np.maximum(((G + 1) * p + P) / (G * rho), 1e-12))
        return rho, un, ut, p, E, U, F, c

    rl, ul, vl, pl, El, Ul, Fl, cl = parts(wl)
    rr, ur, vr, pr, Er, Ur, Fr, cr = parts(wr)
    sl, sr = np.minimum(ul - cl, ur - cr), np.maximum(ul + cl, ur + cr)
    ss = (pr - pl + rl * ul * (sl - ul) - rr * ur * (sr - ur)) / (rl * (sl - ul) - rr * (sr - ur))

    def star(rho, un, ut, p, E, U, s):
        chi = (s - un) / (s - ss)
        e = E / rho + (ss - un) * (ss + p / (rho * (s - un)))
        return chi * np.stack([rho, rho * ss, rho * ut, rho * e, U[4], U[5], U[6]])

    Fsl = Fl + sl * (star(rl, ul, vl, pl, El, Ul, sl) - Ul)
    Fsr = Fr + sr * (star(rr, ur, vr, pr, Er, Ur, sr) - Ur)
    F = np.where(sl >= 0, Fl, np.where(ss >= 0, Fsl, np.where(sr > 0, Fsr, Fr)))
    return F[:6], F[6]


def np_minmod(a, b):
    return np.where(a * b > 0, np.sign(a) * np.minimum(np.abs(a), np.abs(b)), 0.0)


def np_direction(wp, axis, h, gp):
    order = [0, 1, 2, 3, 4, 5] if axis == 2 else [0, 2, 1, 3, 4, 5]
    other = 1 if axis == 2 else 2
    wp = np.take(wp, np.arange(2, wp.shape[other] - 2), axis=other)
    d = np.diff(wp, axis=axis)
    n = wp.shape[axis]
    s = np_minmod(np.take(d, np.arange(0, n - 2), axis=axis), np.take(d, np.arange(1, n - 1), axis=axis))
    c = np.take(wp, np.arange(1, n - 1), axis=axis)

    def admissible(e):  # ρ > 0 and (Γ+1)p + Π > 0: else the cell falls back to first order
        return (e[0] > 0) & ((e[4] + 1.0) * e[3] + e[5] > 0)

    s = np.where(admissible(c + 0.5 * s) & admissible(c - 0.5 * s), s, 0.0)
    wl = np.take(c + 0.5 * s, np.arange(0, n - 3), axis=axis)
    wr = np.take(c - 0.5 * s, np.arange(1, n - 2), axis=axis)
    F, uf = np_hllc(wl[order], wr[order])
    F = F[order]
    m = F.shape[axis]
    dF = (np.take(F, np.arange(1, m), axis=axis) - np.take(F, np.arange(0, m - 1), axis=axis)) / h
    du = (np.take(uf, np.arange(1, m), axis=axis - 1) - np.take(uf, np.arange(0, m - 1), axis=axis - 1)) / h
    r = -dF
    r[4:6] += gp * du
    return r


def np_rhs(q, grid):
    w = np_primitive(q)
    xl, xh, yl, yh = grid.bc
    wp = np_pad(np_pad(w, 2, xl, xh, 1), 1, yl, yh, 2)
    return np_direction(wp, 2, grid.dx, q[4:6]) + np_direction(wp, 1, grid.dy, q[4:6])


def np_steps(q, dt, steps, grid):
    for _ in range(steps):
        q1 = q + dt * np_rhs(q, grid)
        q = 0.5 * q + 0.5 * (q1 + dt * np_rhs(q1, grid))
    return q


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["64x32", "128x64", "256x128"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        nx, ny = (int(v) for v in size.split("x"))
        grid = data.make_grid(nx, ny)
        case = data.cases("bubble", 1, 0)[0]
        q0 = data.initial_state(case, grid)
        dt = float(solvers.cfl_dt(q0, grid, 0.4))

        @jax.jit
        def run_jax(q):
            return jax.lax.scan(lambda q, _: (solvers.ssp_rk2_step(q, dt, grid), None), q,
                                None, length=args.steps)[0]

        q_np0 = np.asarray(q0)
        q_jax = np.asarray(solvers.ssp_rk2_step(q0, dt, grid))
        diff = np.max(np.abs(q_jax - np_steps(q_np0, np.float32(dt), 1, grid))
                      / np.maximum(np.abs(q_jax).max(axis=(1, 2), keepdims=True), 1e-30))
        row = compare(f"{nx}x{ny} cells, {args.steps} steps", lambda: run_jax(q0),
                      lambda: np_steps(q_np0, np.float32(dt), args.steps, grid), repeats=args.repeats)
        cells = nx * ny * args.steps
        row.update(nx=nx, ny=ny, steps=args.steps, max_rel_diff=float(diff),
                   jax_cell_updates_per_s=cells / row["ours_s"],
                   numpy_cell_updates_per_s=cells / row["reference_s"])
        print(f"  JAX {row['jax_cell_updates_per_s']:.3g} cell-updates/s, NumPy "
              f"{row['numpy_cell_updates_per_s']:.3g}, one-step max relative difference {diff:.1e}")
        rows.append(row)
    save("neptuna", rows, steps=args.steps)


if __name__ == "__main__":
    main()
