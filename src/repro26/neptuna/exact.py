"""Exact solution of the 1-D Riemann problem for two stiffened gases (Toro 2009, ch. 4, with
p replaced by p + p∞ on each side), the independent reference of the solver's tests and of the
Sod figure. NumPy + ``scipy.optimize.brentq``; ideal gases are p∞ = 0.

For side K with (ρ, u, p, γ, p∞) and P = p + p∞_K, the velocity change across the wave at star
pressure p* (P* = p* + p∞_K) is

    shock:        f_K = (P* − P_K) √(A_K / (P* + B_K)),  A_K = 2/((γ+1)ρ_K), B_K = (γ−1)/(γ+1) P_K
    rarefaction:  f_K = 2 c_K/(γ−1) ((P*/P_K)^((γ−1)/(2γ)) − 1),  c_K² = γ P_K / ρ_K,

and p* solves f_L(p*) + f_R(p*) + u_R − u_L = 0; u* = ½(u_L + u_R + f_R − f_L).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq


class Side(NamedTuple):
    rho: float
    u: float
    p: float
    gamma: float = 1.4
    p_inf: float = 0.0


def _f(p, s: Side):
    P, Ps = s.p + s.p_inf, p + s.p_inf
    g = s.gamma
    if Ps > P:
        A, B = 2.0 / ((g + 1) * s.rho), (g - 1) / (g + 1) * P
        return (Ps - P) * np.sqrt(A / (Ps + B))
    c = np.sqrt(g * P / s.rho)
    return 2 * c / (g - 1) * ((Ps / P) ** ((g - 1) / (2 * g)) - 1)


def star_state(left: Side, right: Side) -> tuple[float, float]:
    """(p*, u*) by Brent's method on the pressure function."""
    lo = max(-left.p_inf, -right.p_inf) + 1e-12 * max(left.p + left.p_inf, right.p + right.p_inf)

    def g(p):
        return _f(p, left) + _f(p, right) + right.u - left.u

    hi = max(left.p, right.p) + max(left.p_inf, right.p_inf) + 1.0
    while g(hi) < 0:
        hi *= 2.0
    if g(lo) > 0:
        raise ValueError("vacuum is generated; no positive star pressure")
    p = brentq(g, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
    u = 0.5 * (left.u + right.u + _f(p, right) - _f(p, left))
    return float(p), float(u)


def _side_sample(xi, s: Side, p_star, u_star, sign):
    """ρ, u, p at similarity coordinate xi = x/t on side ``sign`` (-1 left, +1 right)."""
    g, pinf = s.gamma, s.p_inf
    P, Ps = s.p + pinf, p_star + pinf
    c = np.sqrt(g * P / s.rho)
    rho, u, p = (np.full_like(xi, s.rho), np.full_like(xi, s.u), np.full_like(xi, s.p))
    if Ps > P:  # shock
        ratio = Ps / P
        gm = (g - 1) / (g + 1)
        rho_star = s.rho * (ratio + gm) / (gm * ratio + 1)
        speed = s.u + sign * c * np.sqrt((g + 1) / (2 * g) * ratio + (g - 1) / (2 * g))
        inside = sign * (xi - speed) < 0
        rho = np.where(inside, rho_star, rho)
        u = np.where(inside, u_star, u)
        p = np.where(inside, p_star, p)
        return rho, u, p
    rho_star = s.rho * (Ps / P) ** (1 / g)
    c_star = c * (Ps / P) ** ((g - 1) / (2 * g))
    head, tail = s.u + sign * c, u_star + sign * c_star
    fan_u = 2 / (g + 1) * (-sign * c + (g - 1) / 2 * s.u + xi)
    fan_c = np.maximum(2 / (g + 1) * (c - sign * (g - 1) / 2 * (s.u - xi)), 0.0)  # used in the fan only
    fan_rho = s.rho * (fan_c / c) ** (2 / (g - 1))
    fan_p = P * (fan_c / c) ** (2 * g / (g - 1)) - pinf
    in_fan = (sign * (xi - head) < 0) & (sign * (xi - tail) > 0)
    in_star = sign * (xi - tail) <= 0
    rho = np.where(in_fan, fan_rho, np.where(in_star, rho_star, rho))
    u = np.where(in_fan, fan_u, np.where(in_star, u_star, u))
    p = np.where(in_fan, fan_p, np.where(in_star, p_star, p))
    return rho, u, p


def sample(left: Side, right: Side, x, t: float, x0: float = 0.5):
    """(ρ, u, p, left-material indicator) at positions ``x`` and time ``t`` > 0."""
    p_star, u_star = star_state(left, right)
    xi = (np.asarray(x, float) - x0) / t
    rl, ul, pl = _side_sample(xi, left, p_star, u_star, -1)
    rr, ur, pr = _side_sample(xi, right, p_star, u_star, +1)
    is_left = xi < u_star
    return (np.where(is_left, rl, rr), np.where(is_left, ul, ur), np.where(is_left, pl, pr),
            is_left.astype(float))
