"""The two-phase solver against exact Riemann solutions, invariants and symmetries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.neptuna import data, exact, solvers, validation


def test_exact_riemann_matches_toro_tables():
    """Toro (2009) table 4.3, test 1 (Sod): p* = 0.30313, u* = 0.92745; test 3: 460.894, 19.5975."""
    p, u = exact.star_state(exact.Side(1.0, 0.0, 1.0), exact.Side(0.125, 0.0, 0.1))
    assert p == pytest.approx(0.30313, abs=1e-5) and u == pytest.approx(0.92745, abs=1e-5)
    p, u = exact.star_state(exact.Side(1.0, 0.0, 1000.0), exact.Side(1.0, 0.0, 0.01))
    assert p == pytest.approx(460.894, abs=1e-3) and u == pytest.approx(19.5975, abs=1e-4)


def test_stiffened_exact_solution_is_pressure_shift_of_ideal():
    """A stiffened gas with p∞ and pressures p is the ideal gas with pressures p + p∞ (same γ)."""
    L, R = exact.Side(2.0, 0.3, 5.0, 4.4, 7.0), exact.Side(1.0, -0.2, 1.0, 4.4, 7.0)
    p, u = exact.star_state(L, R)
    p0, u0 = exact.star_state(exact.Side(2.0, 0.3, 12.0, 4.4), exact.Side(1.0, -0.2, 8.0, 4.4))
    assert p + 7.0 == pytest.approx(p0, rel=1e-10) and u == pytest.approx(u0, rel=1e-10)


@pytest.fixture(scope="module")
def sod_errors():
    return {n: [float(np.mean(np.abs(a - b))) for a, b in zip(*validation.shock_tube("sod", n)[1:])]
            for n in (50, 100, 200)}


def test_sod_error_bound_and_convergence(sod_errors):
    """L1(ρ) at n = 100 below 1% of the density jump scale, and it falls at ~first order."""
    assert sod_errors[100][0] < 0.01
    order = -np.polyfit(np.log([50, 100, 200]), np.log([sod_errors[n][0] for n in (50, 100, 200)]), 1)[0]
    assert 0.6 < order < 1.3


def test_two_material_tube_converges():
    errs = [np.mean(np.abs(a - b)) for n in (50, 100)
            for a, b in [tuple(zip(*validation.shock_tube("liquid_gas", n)[1:]))[2]]]
    assert errs[1] < 0.7 * errs[0]


def test_moving_contact_keeps_pressure_uniform():
    """γ-model with HLLC face velocity: no spurious pressure at an advected interface."""
    dp, du = validation.moving_contact(64)
    assert dp < 1e-5 and du < 1e-5


def _random_state(key, ny, nx):
    k = jax.random.split(key, 3)
    y, x = jnp.meshgrid(jnp.linspace(0, 2 * jnp.pi, ny, endpoint=False),
                        jnp.linspace(0, 2 * jnp.pi, nx, endpoint=False), indexing="ij")
    rho = 1.0 + 0.3 * jnp.sin(x + jax.random.uniform(k[0])) * jnp.cos(y)
    u, v = 0.4 * jnp.cos(y), 0.3 * jnp.sin(x)
    p = 1.0 + 0.2 * jnp.cos(x - y)
    alpha = (jnp.sin(x) > 0.2).astype(jnp.float32)
    Gam = alpha * 1.5 + (1 - alpha) * 2.5
    Pi = alpha * 3.0
    return solvers.to_conserved(rho, u, v, p, Gam, Pi)


def test_conservation_to_round_off_on_periodic_domain():
    q0 = _random_state(jax.random.PRNGKey(0), 16, 24)
    grid = solvers.Grid(24, 16, 1 / 24, 1 / 16, ("periodic",) * 4)
    q, k = jax.jit(lambda q: solvers.advance(q, 0.05, grid))(q0)
    assert int(k) > 5
    before, after = np.asarray(q0[:4].sum((1, 2)), float), np.asarray(q[:4].sum((1, 2)), float)
    scale = np.asarray(jnp.abs(q0[:4]).sum((1, 2)), float)
    assert np.all(np.abs(after - before) <= 2e-6 * scale)


def test_x_y_symmetry_of_the_scheme():
    """Transposing the state (and swapping u, v and the boundary pairs) transposes dq/dt."""
    q = _random_state(jax.random.PRNGKey(1), 12, 20)
    grid = solvers.Grid(20, 12, 1 / 20, 1 / 12, ("outflow", "outflow", "reflective", "reflective"))
    qt = jnp.swapaxes(q, 1, 2)[jnp.asarray([0, 2, 1, 3, 4, 5])]
    grid_t = solvers.Grid(12, 20, 1 / 12, 1 / 20, ("reflective", "reflective", "outflow", "outflow"))
    r = solvers.rhs(q, grid)
    rt = solvers.rhs(qt, grid_t)
    back = jnp.swapaxes(rt, 1, 2)[jnp.asarray([0, 2, 1, 3, 4, 5])]
    np.testing.assert_allclose(back, r, atol=2e-4 * float(jnp.abs(r).max()))


def test_shock_bubble_positivity_and_volume_fraction_bounds():
    fields, cs, steps, _ = data.generate("bubble", 2, 3, 32, 16, seed=0)
    rho, p, alpha = fields[:, :, 0], fields[:, :, 3], fields[:, :, 4]
    assert np.all(np.isfinite(fields)) and rho.min() > 0 and p.min() > 0
    assert -1e-3 < alpha.min() and alpha.max() < 1 + 1e-3
    assert cs[0].mach == pytest.approx(1.22) and np.all(steps > 0)


def test_post_shock_state_satisfies_rankine_hugoniot():
    rho2, u2, p2 = data.post_shock_air(1.5)
    c1 = np.sqrt(1.4)
    s = 1.5 * c1  # shock speed into air at rest
    # mass and momentum flux continuity in the shock frame
    assert rho2 * (u2 - s) == pytest.approx(-s, rel=1e-10)
    assert rho2 * (u2 - s) ** 2 + p2 == pytest.approx(s**2 + 1.0, rel=1e-10)
