"""Shock-driven two-phase flows generated with :mod:`repro26.neptuna.solvers`, stored as chunked,
gzip-compressed HDF5 (h5py) with their metadata.

Nondimensional units: air at 1 bar is ρ = 1, p = 1, γ = 1.4 (so c_air = √1.4); pressures are in
bar, densities in units of air's (water: ρ = 1000/1.2 = 833.3). Domain [0, 2] × [0, 1], the bubble
or droplet centred at (0.7, 0) on the reflective lower wall (the symmetry axis: half of the
axisymmetric-like planar problem is computed), a planar shock of Mach M (in the ambient medium)
at x = 0.3 moving right into it; outflow left and right, reflective top and bottom:

* ``bubble`` — a light gas bubble (γ = 1.648, helium as in Haas & Sturtevant 1987) in air;
  sweep over Mach M, radius R and density ratio ρ_b/ρ_air;
* ``droplet`` — a shock–droplet analogue: a stiffened-gas liquid droplet (γ = 4.4) in air whose
  p∞ is scaled with its density so its sound speed stays c_d = 3 (water's p∞ would make the
  CFL step ~30× smaller at these grids); sweep over M, R and density ratio ρ_d/ρ_air;
* ``water`` — shock-induced collapse of an air bubble in water: water a stiffened gas with
  γ = 4.4, p∞ = 6×10⁸ Pa = 6000 bar (c ≈ 1,450 m/s ↔ 5.6), ρ = 833.3; the bubble air at 1 bar;
  a shock in water of Mach 1.01–1.05 (a jump to ≈ 200–1,000 bar) hits it; sweep over M, R and
  the density ratio ρ_air/ρ_water around 1.2e-3.
* ``bubble3d`` (3-D, ``paper`` only) — the ``bubble`` case as a sphere in the quarter domain
  [0, 2] × [0, 1] × [0, 1] with reflective walls y = 0 and z = 0 (the two symmetry planes).

Trajectory k of a dataset: parameters drawn uniformly from the configured ranges with key
``fold_in(PRNGKey(seed), k)``; trajectory 0 is the reference case (the ranges' ``reference``).
Frames are equally spaced in time up to t_end: for the gas cases the time the incident shock
needs to cross ``travel`` = 1.2 of the ambient medium; for ``water`` the shock's arrival at the
bubble plus 1.2 Rayleigh collapse times 0.915 R √(ρ_water / (p_shock − p_bubble)). Stored
channels: ρ, u, v, (w,) p, α (volume fraction of the bubble/droplet material,
α = (Γ − Γ_ambient)/(Γ_b − Γ_ambient)).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from repro26.core import memory
from repro26.neptuna import solvers

CHANNELS = ("rho", "u", "v", "p", "alpha")
CHANNELS_3D = ("rho", "u", "v", "w", "p", "alpha")
AIR = {"gamma": 1.4, "p_inf": 0.0, "rho": 1.0, "p": 1.0}
WATER = {"gamma": 4.4, "p_inf": 6000.0, "rho": 1000.0 / 1.2, "p": 1.0}
LX, LY, X_SHOCK, X_CENTRE, TRAVEL = 2.0, 1.0, 0.3, 0.7, 1.2

DATASETS = {
    # name: ambient medium, material gamma, p_inf rule, parameter ranges, reference case, t_end
    "bubble": {"ambient": AIR, "gamma": 1.648, "p_inf": 0.0, "droplet_sound_speed": None,
               "mach": (1.1, 1.5), "radius": (0.2, 0.35), "density_ratio": (0.14, 0.4),
               "reference": (1.22, 0.3, 0.182), "t_end": "travel"},
    "droplet": {"ambient": AIR, "gamma": 4.4, "p_inf": 0.0, "droplet_sound_speed": 3.0,
                "mach": (1.3, 2.0), "radius": (0.15, 0.3), "density_ratio": (5.0, 50.0),
                "reference": (1.5, 0.25, 20.0), "t_end": "travel"},
    "water": {"ambient": WATER, "gamma": AIR["gamma"], "p_inf": 0.0, "droplet_sound_speed": None,
              "mach": (1.01, 1.05), "radius": (0.2, 0.3), "density_ratio": (0.0009, 0.0015),
              "reference": (1.03, 0.25, 0.0012), "t_end": "collapse"},
}
DATASETS_3D = {"bubble3d": "bubble"}  # 3-D dataset -> the 2-D case whose parameters it uses


class Case(NamedTuple):
    mach: float
    radius: float
    density_ratio: float
    gamma_b: float
    p_inf_b: float
    gamma_a: float
    p_inf_a: float
    rho_a: float

    @property
    def materials(self):
        """(γ_ambient, p∞_ambient, γ_b, p∞_b), what the metrics need to form the energy."""
        return np.asarray([self.gamma_a, self.p_inf_a, self.gamma_b, self.p_inf_b], np.float32)


def post_shock(mach, gamma, p_inf, rho, p):
    """Rankine–Hugoniot state behind a shock of Mach ``mach`` running into a stiffened gas at rest:
    the ideal-gas jump in p + p∞ (exact for the stiffened gas)."""
    pt = p + p_inf
    c = np.sqrt(gamma * pt / rho)
    p2 = pt * (1 + 2 * gamma / (gamma + 1) * (mach**2 - 1)) - p_inf
    rho2 = rho * (gamma + 1) * mach**2 / ((gamma - 1) * mach**2 + 2)
    u2 = mach * c * (1 - rho / rho2)
    return rho2, u2, p2


def post_shock_air(mach):
    """Rankine–Hugoniot state behind a shock of Mach ``mach`` running into air at rest."""
    return post_shock(mach, AIR["gamma"], AIR["p_inf"], AIR["rho"], AIR["p"])


def cases(dataset: str, n: int, seed: int) -> list[Case]:
    """Trajectory 0 the reference, the others uniform draws over the ranges."""
    spec = DATASETS[DATASETS_3D.get(dataset, dataset)]
    amb = spec["ambient"]
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
        p_inf = spec["p_inf"] if c is None else d * c**2 / spec["gamma"] - AIR["p"]
        out.append(Case(float(m), float(r), float(d), spec["gamma"], float(p_inf),
                        amb["gamma"], amb["p_inf"], amb["rho"]))
    return out


def t_end_of(dataset: str, case: Case) -> float:
    """Final time of a trajectory (module docstring)."""
    spec = DATASETS[DATASETS_3D.get(dataset, dataset)]
    amb = spec["ambient"]
    c_amb = np.sqrt(amb["gamma"] * (amb["p"] + amb["p_inf"]) / amb["rho"])
    speed = case.mach * c_amb
    if spec["t_end"] == "travel":
        return TRAVEL / speed
    _, _, p2 = post_shock(case.mach, amb["gamma"], amb["p_inf"], amb["rho"], amb["p"])
    rayleigh = 0.915 * case.radius * np.sqrt(amb["rho"] / (p2 - amb["p"]))
    return (X_CENTRE - case.radius - X_SHOCK) / speed + 1.2 * rayleigh


def initial_state(case: Case, grid):
    """Conserved state (d + 4, *spatial) on a :class:`solvers.Grid` or :class:`solvers.Grid3`:
    diffuse (tanh, one cell wide) interface, shock at X_SHOCK."""
    three_d = isinstance(grid, solvers.Grid3)
    x = (jnp.arange(grid.nx) + 0.5) * grid.dx
    y = (jnp.arange(grid.ny) + 0.5) * grid.dy
    if three_d:
        z = (jnp.arange(grid.nz) + 0.5) * grid.dz
        Z, Y, X = jnp.meshgrid(z, y, x, indexing="ij")
        r = jnp.sqrt((X - X_CENTRE) ** 2 + Y**2 + Z**2)
    else:
        Y, X = jnp.meshgrid(y, x, indexing="ij")
        r = jnp.sqrt((X - X_CENTRE) ** 2 + Y**2)
    alpha = 0.5 * (1 - jnp.tanh((r - case.radius) / grid.dx))
    Ga, Pa = solvers.gamma_functions(case.gamma_a, case.p_inf_a)
    Gb, Pb = solvers.gamma_functions(case.gamma_b, case.p_inf_b)
    rho2, u2, p2 = post_shock(case.mach, case.gamma_a, case.p_inf_a, case.rho_a, AIR["p"])
    shocked = X < X_SHOCK
    rho = jnp.where(shocked, rho2, (alpha * case.density_ratio + (1 - alpha)) * case.rho_a)
    u = jnp.where(shocked, u2, 0.0)
    p = jnp.where(shocked, p2, AIR["p"])
    Gam = jnp.where(shocked, Ga, alpha * Gb + (1 - alpha) * Ga)
    Pi = jnp.where(shocked, Pa, alpha * Pb + (1 - alpha) * Pa)
    zero = jnp.zeros_like(u)
    vel = (u, zero, zero) if three_d else (u, zero)
    return solvers.to_conserved(rho, *vel, p, Gam, Pi)


def make_grid(nx: int, ny: int) -> solvers.Grid:
    return solvers.Grid(nx, ny, LX / nx, LY / ny, ("outflow", "outflow", "reflective", "reflective"))


def make_grid3(nx: int, ny: int, nz: int) -> solvers.Grid3:
    return solvers.Grid3(nx, ny, nz, LX / nx, LY / ny, LY / nz,
                         ("outflow", "outflow") + ("reflective",) * 4)


def observe(frames, case_ga, case_gb, dims: int = 2):
    """Stored channels (..., dims + 3, *spatial) from conserved frames (..., dims + 4, *spatial):
    ρ, velocities, p, α; ``case_ga``, ``case_gb`` = Γ of the ambient medium and the material."""
    w = solvers.to_primitive(jnp.moveaxis(frames, -dims - 1, 0))
    alpha = (w[-2] - case_ga) / (case_gb - case_ga)
    return jnp.moveaxis(jnp.concatenate([w[:-2], alpha[None]]), 0, -dims - 1)


def generate(dataset: str, n_traj: int, n_frames: int, nx: int, ny: int, seed: int,
             cfl: float = 0.4, nz: int | None = None):
    """(fields (n_traj, n_frames, C, [nz,] ny, nx) float32, cases, steps (n_traj, n_frames-1),
    t_end); 3-D (C = 6) when ``nz`` is given."""
    grid = make_grid(nx, ny) if nz is None else make_grid3(nx, ny, nz)
    cs = cases(dataset, n_traj, seed)
    q0 = jnp.stack([initial_state(c, grid) for c in cs])
    t_end = np.asarray([t_end_of(dataset, c) for c in cs], np.float32)
    frame_dt = jnp.asarray(t_end / (n_frames - 1))
    ga = jnp.asarray([1.0 / (c.gamma_a - 1.0) for c in cs])
    gb = jnp.asarray([1.0 / (c.gamma_b - 1.0) for c in cs])

    @jax.jit
    def run(q0, frame_dt, ga, gb):
        frames, steps = solvers.trajectory(q0, frame_dt, n_frames, grid, cfl)
        return observe(frames, ga, gb, 2 if nz is None else 3), steps

    batched = (q0, frame_dt, ga, gb)
    # 3-D: one trajectory at a time (memory); 2-D: all at once
    solve = (jax.jit(lambda *b: jax.lax.map(lambda a: run(*a), b)) if nz is not None
             else jax.jit(jax.vmap(run)))
    # the compiled program's memory (the frames it returns and the solver's working arrays) is
    # checked before anything runs: one line instead of an allocation failure in XLA
    compiled = solve.lower(*batched).compile()
    cells = "x".join(str(v) for v in (nx, ny, nz) if v is not None)
    memory.require_compiled(compiled, f"neptuna data {dataset}: {n_traj} trajectories of "
                                      f"{n_frames} frames on {cells} cells")
    fields, steps = compiled(*batched)
    return np.asarray(fields, np.float32), cs, np.asarray(steps), t_end


def h5_bytes(path: str | Path) -> int:
    """Bytes of the stored ``fields`` array once read (float32), from its shape alone."""
    import h5py

    with h5py.File(path, "r") as f:
        return int(np.prod(f["fields"].shape)) * 4


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
            f.attrs["channels"] = ",".join(CHANNELS_3D if fields.ndim == 6 else CHANNELS)
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


def materials(params: dict) -> np.ndarray:
    """(n, 4) rows (γ_ambient, p∞_ambient, γ_b, p∞_b) from the stored parameters."""
    return np.stack([params[k] for k in ("gamma_a", "p_inf_a", "gamma_b", "p_inf_b")], 1)
