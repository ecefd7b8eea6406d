"""A 2-D / 3-D compressible two-phase solver: the γ-based model of Shyue (1998) / Abgrall (1996).

Mixture Euler equations with a stiffened-gas equation of state, ``p = (γ-1)ρe - γ p∞``, written
with the two material functions Γ = 1/(γ-1) and Π = γ p∞/(γ-1):

    E = Γ p + Π + ½ ρ |u|²,        c² = ((Γ + 1) p + Π) / (Γ ρ).

ρ, ρu, E are conserved; Γ and Π are advected, ∂Γ/∂t + u·∇Γ = 0, in the quasi-conservative
form ∂Γ/∂t + ∇·(uΓ) − Γ ∇·u = 0. Following Johnsen & Colonius (2006), the face velocity of the
non-conservative term is the HLLC flux of a unit scalar, so that a material interface at uniform
pressure and velocity stays at that pressure exactly (no spurious oscillation).

Discretisation (unsplit method of lines, dimension-generic): along each axis in turn the same
MUSCL reconstruction of the primitive variables (ρ, u_1..u_d, p, Γ, Π) with the minmod limiter
and the same HLLC flux (Toro 2009, Davis wave speeds), summed; SSP-RK2 (Heun) in time, CFL time
step Δt = CFL / Σ_axes max(|u_a| + c)/h_a. Positivity: a cell whose limited reconstruction would
put a non-positive density or a non-positive c² ∝ (Γ+1)p + Π (p + p∞ ≤ 0) at either of its faces
falls back to first order (zero slope), which with HLLC and Davis speeds keeps ρ and p + p∞
positive for CFL ≤ ½ (Batten et al. 1997). Boundaries per side: ``outflow`` (zero gradient),
``reflective`` (mirror, normal velocity negated) or ``periodic``.

State layout: ``q`` of shape (d + 4, *spatial) holding (ρ, ρu_1, …, ρu_d, E, Γ, Π), spatial axes
in array order (…, y, x): 2-D (6, ny, nx) with (ρu, ρv); 3-D (7, nz, ny, nx) with (ρu, ρv, ρw).
Velocity component j (1-based, x first) lives along array axis d + 1 − j of ``q``.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

Boundary = Literal["outflow", "reflective", "periodic"]
NG = 2  # ghost cells (MUSCL needs two)


class Grid(NamedTuple):
    """Uniform 2-D grid; ``bc`` is (x-low, x-high, y-low, y-high)."""

    nx: int
    ny: int
    dx: float
    dy: float
    bc: tuple[str, str, str, str] = ("outflow", "outflow", "reflective", "reflective")


class Grid3(NamedTuple):
    """Uniform 3-D grid; ``bc`` is (x-low, x-high, y-low, y-high, z-low, z-high)."""

    nx: int
    ny: int
    nz: int
    dx: float
    dy: float
    dz: float
    bc: tuple[str, str, str, str, str, str] = ("outflow", "outflow") + ("reflective",) * 4


def axes_of(grid) -> list[tuple[int, float, str, str, int]]:
    """(array axis of q, spacing, low bc, high bc, velocity index) for x, y (and z)."""
    if isinstance(grid, Grid3):
        h = (grid.dx, grid.dy, grid.dz)
    else:
        h = (grid.dx, grid.dy)
    d = len(h)
    return [(d - j, h[j], grid.bc[2 * j], grid.bc[2 * j + 1], j + 1) for j in range(d)]


# ----------------------------------------------------------------------------- EOS


def gamma_functions(gamma, p_inf):
    """(Γ, Π) = (1/(γ-1), γ p∞/(γ-1)) of a stiffened gas."""
    return 1.0 / (gamma - 1.0), gamma * p_inf / (gamma - 1.0)


def to_conserved(rho, *velocities_p_gam_pi) -> Float[Array, "n ..."]:
    """q from (ρ, u_1, …, u_d, p, Γ, Π): ``to_conserved(rho, u, v, p, Gam, Pi)`` in 2-D."""
    *vel, p, Gam, Pi = velocities_p_gam_pi
    E = Gam * p + Pi + 0.5 * rho * sum(u * u for u in vel)
    return jnp.stack([rho, *(rho * u for u in vel), E, Gam, Pi])


def to_primitive(q):
    """(ρ, u_1, …, u_d, p, Γ, Π) from the conserved state."""
    rho, *mom, E, Gam, Pi = q
    vel = [m / rho for m in mom]
    p = (E - 0.5 * rho * sum(u * u for u in vel) - Pi) / Gam
    return jnp.stack([rho, *vel, p, Gam, Pi])


def sound_speed(rho, p, Gam, Pi):
    return jnp.sqrt(jnp.maximum(((Gam + 1.0) * p + Pi) / (Gam * rho), 1e-12))


def admissible(w):
    """ρ > 0 and c² > 0 ((Γ+1)p + Π > 0, i.e. p + p∞ > 0) of primitive states (d+4, ...)."""
    return (w[0] > 0) & ((w[-2] + 1.0) * w[-3] + w[-1] > 0)


# ----------------------------------------------------------------------------- boundaries


def _pad_axis(w, axis: int, low: str, high: str, normal_index: int):
    """Two ghost cells on each side of ``axis`` of primitive ``w`` (axis counts from 1)."""
    n = w.shape[axis]

    def take(idx):
        return jnp.take(w, jnp.asarray(idx), axis=axis)

    def side(kind, interior, periodic_src):
        if kind == "periodic":
            return take(periodic_src)
        ghost = take(interior)
        if kind == "reflective":
            ghost = ghost.at[normal_index].multiply(-1.0)
        return ghost

    lo = side(low, [1, 0] if low == "reflective" else [0, 0], [n - 2, n - 1])
    hi = side(high, [n - 1, n - 2] if high == "reflective" else [n - 1, n - 1], [0, 1])
    return jnp.concatenate([lo, w, hi], axis=axis)


# ----------------------------------------------------------------------------- reconstruction


def minmod(a, b):
    return jnp.where(a * b > 0, jnp.sign(a) * jnp.minimum(jnp.abs(a), jnp.abs(b)), 0.0)


def muscl_faces(w, axis: int):
    """Left and right states at the n+1 faces between interior cells along ``axis`` of a padded
    array (NG ghosts each side): limited linear reconstruction of each cell, first order in a
    cell whose reconstructed face states would not be admissible (see :func:`admissible`)."""
    d = jnp.diff(w, axis=axis)
    n = w.shape[axis]
    s = minmod(jax.lax.slice_in_dim(d, 0, n - 2, axis=axis),
               jax.lax.slice_in_dim(d, 1, n - 1, axis=axis))  # slopes of cells 1..n-2
    c = jax.lax.slice_in_dim(w, 1, n - 1, axis=axis)
    s = jnp.where(admissible(c + 0.5 * s) & admissible(c - 0.5 * s), s, 0.0)
    right_edge, left_edge = c + 0.5 * s, c - 0.5 * s  # cells 1..n-2
    m = n - 2
    wl = jax.lax.slice_in_dim(right_edge, 0, m - 1, axis=axis)  # faces between cells
    wr = jax.lax.slice_in_dim(left_edge, 1, m, axis=axis)
    return wl, wr  # faces 1.5 .. n-2.5: the n - 3 = interior + 1 faces


# ----------------------------------------------------------------------------- HLLC


def hllc_flux(wl, wr):
    """HLLC flux in the direction of component 1 (normal velocity) for primitive face states
    (ρ, u_n, u_t…, p, Γ, Π) with any number of tangential components. Returns (F of
    (ρ, ρu_n, ρu_t…, E, Γ, Π), face velocity u_face = HLLC flux of 1)."""
    def parts(w):
        rho, un, *ut, p, Gam, Pi = w
        E = Gam * p + Pi + 0.5 * rho * (un * un + sum(t * t for t in ut))
        U = jnp.stack([rho, rho * un, *(rho * t for t in ut), E, Gam, Pi, jnp.ones_like(rho)])
        F = jnp.stack([rho * un, rho * un * un + p, *(rho * un * t for t in ut), (E + p) * un,
                       Gam * un, Pi * un, un])
        return rho, un, ut, p, E, U, F, sound_speed(rho, p, Gam, Pi)

    rl, ul, vl, pl, El, Ul, Fl, cl = parts(wl)
    rr, ur, vr, pr, Er, Ur, Fr, cr = parts(wr)
    sl = jnp.minimum(ul - cl, ur - cr)
    sr = jnp.maximum(ul + cl, ur + cr)
    sstar = (pr - pl + rl * ul * (sl - ul) - rr * ur * (sr - ur)) / (rl * (sl - ul) - rr * (sr - ur))

    def star(rho, un, ut, p, E, U, s):
        chi = (s - un) / (s - sstar)
        energy = E / rho + (sstar - un) * (sstar + p / (rho * (s - un)))
        return chi * jnp.stack([rho, rho * sstar, *(rho * t for t in ut), rho * energy,
                                U[-3], U[-2], U[-1]])

    Fsl = Fl + sl * (star(rl, ul, vl, pl, El, Ul, sl) - Ul)
    Fsr = Fr + sr * (star(rr, ur, vr, pr, Er, Ur, sr) - Ur)
    F = jnp.where(sl >= 0, Fl, jnp.where(sstar >= 0, Fsl, jnp.where(sr > 0, Fsr, Fr)))
    return F[:-1], F[-1]


# ----------------------------------------------------------------------------- right-hand side


def _direction_rhs(w_pad, axis: int, h: float, gam_pi, vel_index: int):
    """−∂F/∂x_axis (and the non-conservative Γ∇·u, Π∇·u terms) from one direction: the same
    MUSCL + HLLC along ``axis``, with velocity component ``vel_index`` as the normal one."""
    spatial = range(1, w_pad.ndim)
    wl, wr = muscl_faces(w_pad, axis)
    for other in spatial:  # cut the other axes' ghosts
        if other != axis:
            n_other = w_pad.shape[other]
            wl = jax.lax.slice_in_dim(wl, NG, n_other - NG, axis=other)
            wr = jax.lax.slice_in_dim(wr, NG, n_other - NG, axis=other)
    order = list(range(w_pad.shape[0]))
    order[1], order[vel_index] = order[vel_index], order[1]  # a swap: its own inverse
    order = jnp.asarray(order)
    F, uface = hllc_flux(wl[order], wr[order])
    F = F[order]  # back to (ρ, ρu_1, …, E, Γ, Π)
    n = F.shape[axis]
    dF = (jax.lax.slice_in_dim(F, 1, n, axis=axis) - jax.lax.slice_in_dim(F, 0, n - 1, axis=axis)) / h
    du = (jax.lax.slice_in_dim(uface, 1, n, axis=axis - 1)
          - jax.lax.slice_in_dim(uface, 0, n - 1, axis=axis - 1)) / h
    rhs = -dF
    return rhs.at[-2:].add(gam_pi * du)


def rhs(q, grid):
    """dq/dt of the semi-discrete scheme (``grid`` a :class:`Grid` or :class:`Grid3`)."""
    w = to_primitive(q)
    axes = axes_of(grid)
    w_pad = w
    for axis, _, low, high, vel in axes:
        w_pad = _pad_axis(w_pad, axis, low, high, vel)
    gam_pi = q[-2:]
    return sum(_direction_rhs(w_pad, axis, h, gam_pi, vel) for axis, h, _, _, vel in axes)


def max_wave_speed(q):
    """max(|u_j| + c) for each velocity component j = 1..d."""
    w = to_primitive(q)
    c = sound_speed(w[0], w[-3], w[-2], w[-1])
    return tuple(jnp.max(jnp.abs(w[j]) + c) for j in range(1, q.shape[0] - 3))


def cfl_dt(q, grid, cfl: float):
    speeds = max_wave_speed(q)
    return cfl / sum(s / h for s, (_, h, _, _, _) in zip(speeds, axes_of(grid)))


def ssp_rk2_step(q, dt, grid):
    """Heun's method: q1 = q + dt L(q); q_new = ½ q + ½ (q1 + dt L(q1))."""
    q1 = q + dt * rhs(q, grid)
    return 0.5 * q + 0.5 * (q1 + dt * rhs(q1, grid))


def advance(q, t_end, grid, cfl: float = 0.4, max_steps: int = 100_000):
    """Integrate to ``t_end`` with CFL steps (the last one clipped); returns (q, steps taken).
    Stopping short of ``t_end`` (the step cap reached, or a non-finite state that stalls the
    clock) raises rather than returning a state at the wrong time."""
    def cond(carry):
        _, t, k = carry
        return (t < t_end) & (k < max_steps)

    def body(carry):
        q, t, k = carry
        dt = jnp.minimum(cfl_dt(q, grid, cfl), t_end - t)
        return ssp_rk2_step(q, dt, grid), t + dt, k + 1

    q, t, k = jax.lax.while_loop(cond, body, (q, jnp.zeros((), q.dtype), jnp.zeros((), jnp.int32)))
    q = eqx.error_if(q, ~(t >= t_end), f"neptuna solver: stopped before the frame's end time "
                     f"(step cap {max_steps} reached or the state is not finite)")
    return q, k


def trajectory(q0, frame_dt, n_frames: int, grid, cfl: float = 0.4):
    """Frames 0..n_frames-1 at times k·frame_dt (``lax.scan`` over frames, CFL steps within);
    returns (frames (n_frames, d + 4, *spatial), steps per frame)."""
    def body(q, _):
        q_next, k = advance(q, frame_dt, grid, cfl)
        return q_next, (q_next, k)

    _, (frames, steps) = jax.lax.scan(body, q0, None, length=n_frames - 1)
    return jnp.concatenate([q0[None], frames]), steps
