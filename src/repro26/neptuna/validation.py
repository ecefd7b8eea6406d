"""Validation of the solver on 1-D problems (an nx × 1 grid of the 2-D solver) against the exact
Riemann solutions of :mod:`exact`:

* ``sod``       — Sod's tube (ρ, u, p) = (1, 0, 1) | (0.125, 0, 0.1), γ = 1.4, t = 0.2;
* ``air_helium`` — the same pressures with helium (γ = 1.648, ρ = 0.138) on the right, t = 0.15;
* ``liquid_gas`` — a stiffened liquid (γ = 4.4, p∞ = 10, ρ = 5, p = 10) against air (1, 0, 1);
* ``contact``   — an air/helium interface advected at u = 1 through a periodic domain at p = 1:
  the exact solution keeps p = 1 and u = 1 everywhere, so max |p − 1| is the spurious
  pressure oscillation.
L1 errors are cell averages of |q_num − q_exact| over [0, 1], the exact solution sampled at the
cell centres.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from repro26.core.stats import loglog_slope
from repro26.neptuna import exact, solvers

CASES = {
    "sod": (exact.Side(1.0, 0.0, 1.0, 1.4), exact.Side(0.125, 0.0, 0.1, 1.4), 0.2),
    "air_helium": (exact.Side(1.0, 0.0, 1.0, 1.4), exact.Side(0.138, 0.0, 0.1, 1.648), 0.15),
    "liquid_gas": (exact.Side(5.0, 0.0, 10.0, 4.4, 10.0), exact.Side(1.0, 0.0, 1.0, 1.4), 0.08),
}


def tube_initial(left: exact.Side, right: exact.Side, n: int):
    x = (np.arange(n) + 0.5) / n
    is_left = x < 0.5

    def pick(a, b):
        return jnp.asarray(np.where(is_left, a, b), jnp.float32)[None]

    Gl, Pl = solvers.gamma_functions(left.gamma, left.p_inf)
    Gr, Pr = solvers.gamma_functions(right.gamma, right.p_inf)
    return x, solvers.to_conserved(pick(left.rho, right.rho), pick(left.u, right.u),
                                   pick(0.0, 0.0), pick(left.p, right.p), pick(Gl, Gr),
                                   pick(Pl, Pr))


def tube_grid(n: int, bc=("outflow", "outflow", "reflective", "reflective")):
    return solvers.Grid(n, 1, 1.0 / n, 1.0 / n, bc)


def shock_tube(case: str, n: int, cfl: float = 0.4):
    """(x, numerical (ρ, u, p), exact (ρ, u, p)) at the case's final time."""
    left, right, t = CASES[case]
    x, q0 = tube_initial(left, right, n)
    q, _ = jax.jit(lambda q: solvers.advance(q, t, tube_grid(n), cfl))(q0)
    w = np.asarray(solvers.to_primitive(q))[:, 0]
    rho, u, p, _ = exact.sample(left, right, x, t)
    return x, (w[0], w[1], w[3]), (rho, u, p)


def moving_contact(n: int, t: float = 0.2, cfl: float = 0.4):
    """max |p − 1|, max |u − 1| after advecting an air/helium slab (p = u = 1, periodic)."""
    x = (np.arange(n) + 0.5) / n
    slab = (np.abs(x - 0.5) < 0.2)
    Ga, _ = solvers.gamma_functions(1.4, 0.0)
    Gh, _ = solvers.gamma_functions(1.648, 0.0)
    one = jnp.ones((1, n), jnp.float32)
    q0 = solvers.to_conserved(jnp.asarray(np.where(slab, 0.138, 1.0), jnp.float32)[None], one,
                              0 * one, one, jnp.asarray(np.where(slab, Gh, Ga), jnp.float32)[None],
                              0 * one)
    grid = tube_grid(n, ("periodic", "periodic", "reflective", "reflective"))
    q, _ = jax.jit(lambda q: solvers.advance(q, t, grid, cfl))(q0)
    w = np.asarray(solvers.to_primitive(q))
    return float(np.max(np.abs(w[3] - 1))), float(np.max(np.abs(w[1] - 1)))


def run_all(ns, cfl: float = 0.4):
    """Rows (case, n, L1 of ρ, u, p, fitted order) and the Sod profile at the largest n ≤ 400."""
    rows = []
    for case in CASES:
        errs = []
        for n in ns:
            _, num, ex = shock_tube(case, n, cfl)
            e = [float(np.mean(np.abs(a - b))) for a, b in zip(num, ex)]
            errs.append(e[0])
            rows.append({"case": case, "n": n, "l1_rho": e[0], "l1_u": e[1], "l1_p": e[2],
                         "max_dp": np.nan, "max_du": np.nan})
        order = -loglog_slope(ns, errs) if len(ns) > 1 else np.nan
        for r in rows[-len(ns):]:
            r["order_rho"] = order
    for n in ns:
        dp, du = moving_contact(n, cfl=cfl)
        rows.append({"case": "contact", "n": n, "l1_rho": np.nan, "l1_u": np.nan, "l1_p": np.nan,
                     "max_dp": dp, "max_du": du, "order_rho": np.nan})
    n_prof = max([n for n in ns if n <= 400] or [min(ns)])
    x, num, ex = shock_tube("sod", n_prof, cfl)
    profile = [{"n": n_prof, "x": float(x[i]), "rho": float(num[0][i]), "u": float(num[1][i]),
                "p": float(num[2][i]), "rho_exact": float(ex[0][i]), "u_exact": float(ex[1][i]),
                "p_exact": float(ex[2][i])} for i in range(len(x))]
    return rows, profile
