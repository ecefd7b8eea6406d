"""Shock-driven two-phase flows generated with :mod:`repro26.neptuna.solvers`, stored as chunked,
gzip-compressed HDF5 (h5py) with their metadata.

Two datasets, nondimensional units (ambient air: ρ = 1, p = 1, γ = 1.4, so c_air = √1.4), domain
[0, 2] × [0, 1], the bubble or droplet centred at (0.7, 0) on the reflective lower wall (the
symmetry axis: half of the axisymmetric-like planar problem is computed), a planar shock of
Mach M at x = 0.3 moving right into it; outflow left and right, reflective top and bottom:

* ``bubble`` — a light gas bubble (γ = 1.648, helium as in Haas & Sturtevant 1987) in air;
  sweep over Mach M, radius R and density ratio ρ_b/ρ_air;
* ``droplet`` — a shock–droplet analogue: a stiffened-gas liquid droplet (γ = 4.4) in air whose
  p∞ is scaled with its density so its sound speed stays c_d = 3 (water's p∞ would make the
  CFL step ~30× smaller at these grids); sweep over M, R and density ratio ρ_d/ρ_air.

Trajectory k of a dataset: parameters drawn uniformly from the configured ranges with key
``fold_in(PRNGKey(seed), k)``; trajectory 0 is the reference case (the ranges' ``reference``).
Frames are equally spaced in time up to t_end = travel / (M c_air), the time the incident shock
needs to cross ``travel`` = 1.2 of air. Stored channels: ρ, u, v, p, α (volume fraction of the
bubble/droplet material, α = (Γ − Γ_air)/(Γ_b − Γ_air)).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from repro26.neptuna import solvers

CHANNELS = ("rho", "u", "v", "p", "alpha")
AIR = {"gamma": 1.4, "p_inf": 0.0, "rho": 1.0, "p": 1.0}
LX, LY, X_SHOCK, X_CENTRE, TRAVEL = 2.0, 1.0, 0.3, 0.7, 1.2

DATASETS = {
    # name: material gamma, p_inf rule, parameter ranges and the reference case
    "bubble": {"gamma": 1.648, "droplet_sound_speed": None,
               "mach": (1.1, 1.5), "radius": (0.2, 0.35), "density_ratio": (0.14, 0.4),
               "reference": (1.22, 0.3, 0.182)},
    "droplet": {"gamma": 4.4, "droplet_sound_speed": 3.0,
                "mach": (1.3, 2.0), "radius": (0.15, 0.3), "density_ratio": (5.0, 50.0),
                "reference": (1.5, 0.25, 20.0)},
}


class Case(NamedTuple):
    mach: float
    radius: float
    density_ratio: float
    gamma_b: float
    p_inf_b: float


def post_shock_air(mach):
    """Rankine–Hugoniot state behind a shock of Mach ``mach`` running into air at rest."""
    g, c = AIR["gamma"], np.sqrt(AIR["gamma"] * AIR["p"] / AIR["rho"])
    p2 = AIR["p"] * (1 + 2 * g / (g + 1) * (mach**2 - 1))
    rho2 = AIR["rho"] * (g + 1) * mach**2 / ((g - 1) * mach**2 + 2)
    u2 = mach * c * (1 - AIR["rho"] / rho2)
    return rho2, u2, p2


def cases(dataset: str, n: int, seed: int) -> list[Case]:
    """Trajectory 0 the reference, the others uniform draws over the ranges."""
    spec = DATASETS[dataset]
    out = []
    for k in range(n):
        if k == 0:
            m, r, d = spec["reference"]
        else:
            u = np.asarray(jax.random.uniform(jax.random.fold_in(jax.random.PRNGKey(seed), k), (3,)))
            m, r, d = (lo + (hi - lo) * x for (lo, hi), x in
                       zip((spec["mach"], spec["radius"], spec["density_ratio"]), u))
        c = spec["droplet_sound_speed"]
        # stiffened gas with c² = γ (p + p∞)/ρ = c_d² at p = 1
        p_inf = 0.0 if c is None else d * c**2 / spec["gamma"] - AIR["p"]
        out.append(Case(float(m), float(r), float(d), spec["gamma"], float(p_inf)))
    return out


def initial_state(case: Case, grid: solvers.Grid):
    """Conserved state (6, ny, nx): diffuse (tanh, one cell wide) interface, shock at X_SHOCK."""
    x = (jnp.arange(grid.nx) + 0.5) * grid.dx
    y = (jnp.arange(grid.ny) + 0.5) * grid.dy
    X, Y = jnp.meshgrid(x, y)
    r = jnp.sqrt((X - X_CENTRE) ** 2 + Y**2)
    alpha = 0.5 * (1 - jnp.tanh((r - case.radius) / grid.dx))
    Ga, Pa = solvers.gamma_functions(AIR["gamma"], AIR["p_inf"])
    Gb, Pb = solvers.gamma_functions(case.gamma_b, case.p_inf_b)
    rho2, u2, p2 = post_shock_air(case.mach)
    shocked = X < X_SHOCK
    rho = jnp.where(shocked, rho2, alpha * case.density_ratio * AIR["rho"] + (1 - alpha) * AIR["rho"])
    u = jnp.where(shocked, u2, 0.0)
    p = jnp.where(shocked, p2, AIR["p"])
    Gam = jnp.where(shocked, Ga, alpha * Gb + (1 - alpha) * Ga)
    Pi = jnp.where(shocked, Pa, alpha * Pb + (1 - alpha) * Pa)
    return solvers.to_conserved(rho, u, jnp.zeros_like(u), p, Gam, Pi)


def make_grid(nx: int, ny: int) -> solvers.Grid:
    return solvers.Grid(nx, ny, LX / nx, LY / ny, ("outflow", "outflow", "reflective", "reflective"))


def observe(frames, case_gb):
    """Stored channels (..., 5, ny, nx) from conserved frames; ``case_gb`` = Γ of the material."""
    w = solvers.to_primitive(jnp.moveaxis(frames, -3, 0))
    Ga = 1.0 / (AIR["gamma"] - 1.0)
    alpha = (w[4] - Ga) / (case_gb - Ga)
    return jnp.moveaxis(jnp.stack([w[0], w[1], w[2], w[3], alpha]), 0, -3)


def generate(dataset: str, n_traj: int, n_frames: int, nx: int, ny: int, seed: int,
             cfl: float = 0.4):
    """(fields (n_traj, n_frames, 5, ny, nx) float32, cases, steps (n_traj, n_frames-1), t_end)."""
    grid = make_grid(nx, ny)
    cs = cases(dataset, n_traj, seed)
    q0 = jnp.stack([initial_state(c, grid) for c in cs])
    c_air = np.sqrt(AIR["gamma"] * AIR["p"] / AIR["rho"])
    t_end = np.asarray([TRAVEL / (c.mach * c_air) for c in cs], np.float32)
    frame_dt = jnp.asarray(t_end / (n_frames - 1))
    gb = jnp.asarray([1.0 / (c.gamma_b - 1.0) for c in cs])

    @jax.jit
    def run(q0, frame_dt, gb):
        frames, steps = solvers.trajectory(q0, frame_dt, n_frames, grid, cfl)
        return observe(frames, gb), steps

    fields, steps = jax.vmap(run)(q0, frame_dt, gb)
    return np.asarray(fields, np.float32), cs, np.asarray(steps), t_end


def write_h5(path: str | Path, fields, cs, steps, t_end, attrs: dict) -> None:
    """Chunked (one frame per chunk), gzip-compressed HDF5, written to a temporary name first."""
    import h5py

    from repro26.core import io

    with io.atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.create_dataset("fields", data=fields, chunks=(1, 1, *fields.shape[2:]),
                             compression="gzip", compression_opts=4, shuffle=True)
            for name in Case._fields:
                f.create_dataset(f"params/{name}", data=np.asarray([getattr(c, name) for c in cs]))
            f.create_dataset("steps", data=steps)
            f.create_dataset("t_end", data=t_end)
            f.attrs["channels"] = ",".join(CHANNELS)
            for k, v in attrs.items():
                f.attrs[k] = v


def read_h5(path: str | Path) -> tuple[np.ndarray, dict, dict]:
    """(fields, params {name: array}, attrs)."""
    import h5py

    with h5py.File(path, "r") as f:
        fields = f["fields"][...]
        params = {k: f["params"][k][...] for k in f["params"]}
        params["t_end"] = f["t_end"][...]
        attrs = dict(f.attrs)
    return fields, params, attrs
