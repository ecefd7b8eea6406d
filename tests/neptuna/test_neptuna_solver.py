"""The two-phase solver against exact Riemann solutions, invariants and symmetries."""

import functools
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


def test_a_solver_that_hits_its_step_cap_raises():
    """Stopping before the end time is an error, not a frame at the wrong time."""
    q0 = _random_state(jax.random.PRNGKey(0), 16, 24)
    grid = solvers.Grid(24, 16, 1 / 24, 1 / 16, ("periodic",) * 4)
    with pytest.raises(Exception, match="step cap 3"):
        jax.block_until_ready(jax.jit(lambda q: solvers.advance(q, 0.05, grid, max_steps=3))(q0))


def test_x_y_symmetry_of_the_scheme():
    """Transposing the state (and swapping u, v, the spacings and the boundary pairs) transposes
    dq/dt. A square array with dx ≠ dy: both calls share the eagerly compiled operations."""
    q = _random_state(jax.random.PRNGKey(1), 16, 16)
    grid = solvers.Grid(16, 16, 1 / 16, 1 / 9, ("outflow", "outflow", "reflective", "reflective"))
    qt = jnp.swapaxes(q, 1, 2)[jnp.asarray([0, 2, 1, 3, 4, 5])]
    grid_t = solvers.Grid(16, 16, 1 / 9, 1 / 16, ("reflective", "reflective", "outflow", "outflow"))
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


# ----------------------------------------------------------------------------- positivity


def _water_air_states():
    """Three admissible cells (water with tension, mixed, air) whose limited linear
    reconstruction puts c² ∝ (Γ+1)p + Π below zero at a face (found by random search)."""
    alpha = np.asarray([0.42268722, 0.99853374, 0.84689554])
    p = np.asarray([-1939.75757406, 143.65749207, 1543.65305718])
    Gw, Pw = solvers.gamma_functions(data.WATER["gamma"], data.WATER["p_inf"])
    Ga, _ = solvers.gamma_functions(1.4, 0.0)
    Gam, Pi = alpha * Ga + (1 - alpha) * Gw, (1 - alpha) * Pw
    one = np.ones(3)
    w = np.stack([one, 0 * one, 0 * one, p, Gam, Pi])  # (ρ, u, v, p, Γ, Π), 3 cells along axis 1
    w = np.concatenate([w[:, :1], w, w[:, -1:]], axis=1)  # one ghost each side: 5 cells
    return jnp.asarray(w[:, None, :], jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)


def test_reconstruction_falls_back_to_first_order_where_minmod_is_not_admissible():
    w = _water_air_states()
    assert bool(jnp.all(solvers.admissible(w)))
    d = jnp.diff(w, axis=2)
    s = solvers.minmod(d[:, :, :-1], d[:, :, 1:])
    raw_edges = jnp.concatenate([w[:, :, 1:-1] - 0.5 * s, w[:, :, 1:-1] + 0.5 * s], axis=2)
    assert not bool(jnp.all(solvers.admissible(raw_edges)))  # plain MUSCL would break c² > 0
    wl, wr = solvers.muscl_faces(w, axis=2)
    assert bool(jnp.all(solvers.admissible(wl))) and bool(jnp.all(solvers.admissible(wr)))
    # the offending middle cell is first order: both its faces carry its own state
    np.testing.assert_allclose(wl[:, :, 1], w[:, :, 2], rtol=1e-6)
    np.testing.assert_allclose(wr[:, :, 0], w[:, :, 2], rtol=1e-6)


def test_air_bubble_collapse_in_water_stays_admissible():
    """Shock in water (γ = 4.4, p∞ = 6000 bar) on an air bubble, tiny grid: ρ > 0 and c² > 0
    everywhere at every frame, air (α > 0.99) at positive pressure."""
    fields, cs, steps, t_end = data.generate("water", 1, 4, 32, 16, seed=0)
    rho, p, alpha = fields[:, :, 0], fields[:, :, 3], fields[:, :, 4]
    Gw, Pw = solvers.gamma_functions(data.WATER["gamma"], data.WATER["p_inf"])
    Ga, _ = solvers.gamma_functions(1.4, 0.0)
    a = np.clip(alpha, 0, 1)
    c2 = (a * Ga + (1 - a) * Gw + 1) * p + (1 - a) * Pw
    assert np.all(np.isfinite(fields)) and rho.min() > 0 and c2.min() > 0
    assert p[alpha > 0.99].min() > 0 and p.max() > 100  # the water shock (≈ 500 bar) is there
    assert cs[0].p_inf_a == 6000.0 and np.all(steps > 0)


def test_stiffened_shock_satisfies_rankine_hugoniot():
    """Post-shock water state: mass, momentum and energy fluxes continuous in the shock frame."""
    g, pinf, rho1, p1, m = 4.4, 6000.0, 1000 / 1.2, 1.0, 1.03
    rho2, u2, p2 = data.post_shock(m, g, pinf, rho1, p1)
    s = m * np.sqrt(g * (p1 + pinf) / rho1)
    e = lambda rho, p: (p + g * pinf) / ((g - 1) * rho)  # noqa: E731
    assert rho2 * (u2 - s) == pytest.approx(-rho1 * s, rel=1e-10)
    assert rho2 * (u2 - s) ** 2 + p2 == pytest.approx(rho1 * s**2 + p1, rel=1e-10)
    h1, h2 = e(rho1, p1) + p1 / rho1 + 0.5 * s**2, e(rho2, p2) + p2 / rho2 + 0.5 * (u2 - s) ** 2
    assert h2 == pytest.approx(h1, rel=1e-10)


# ----------------------------------------------------------------------------- 3-D


def _random_state3(key, nz, ny, nx):
    k = jax.random.split(key, 4)
    shape = (nz, ny, nx)
    rho = 1.0 + 0.3 * jax.random.uniform(k[0], shape)
    u, v, w = (0.3 * jax.random.normal(kk, shape) for kk in jax.random.split(k[1], 3))
    p = 1.0 + 0.2 * jax.random.uniform(k[2], shape)
    alpha = (jax.random.uniform(k[3], shape) > 0.5).astype(jnp.float32)
    return solvers.to_conserved(rho, u, v, w, p, alpha * 1.5 + (1 - alpha) * 2.5, alpha * 3.0)


@functools.lru_cache
def _steps(grid, n: int):
    """``f(q, dt)``: n SSP-RK2 steps of fixed size dt, jitted once per grid."""
    return jax.jit(lambda q, dt: jax.lax.fori_loop(
        0, n, lambda i, q: solvers.ssp_rk2_step(q, dt, grid), q))


G2 = solvers.Grid(16, 8, 2 / 16, 1 / 8, ("periodic",) * 4)
G3 = solvers.Grid3(16, 8, 2, 2 / 16, 1 / 8, 1 / 8, ("periodic",) * 6)


def test_3d_conservation_to_round_off_on_periodic_domain():
    q0 = _random_state3(jax.random.PRNGKey(5), G3.nz, G3.ny, G3.nx)
    q = _steps(G3, 6)(q0, 0.5 * solvers.cfl_dt(q0, G3, 0.4))
    before, after = np.asarray(q0[:5].sum((1, 2, 3)), float), np.asarray(q[:5].sum((1, 2, 3)), float)
    scale = np.asarray(jnp.abs(q0[:5]).sum((1, 2, 3)), float)
    assert np.all(np.abs(after - before) <= 2e-6 * scale)
    assert float(jnp.abs(q - q0).max()) > 1e-3  # it did move


def test_3d_run_constant_along_z_equals_the_2d_run():
    """The shock–bubble initial state of a cylinder (extruded along z, w = 0) advanced by the 3-D
    solver (HLLC along x, y and z) equals the 2-D run at every z, with the same steps."""
    q2 = data.initial_state(data.cases("bubble", 1, 0)[0], G2)
    q3 = jnp.concatenate([q2[:3], jnp.zeros((1, *q2.shape[1:])), q2[3:]])
    q3 = jnp.repeat(q3[:, None], G3.nz, axis=1)
    dt = solvers.cfl_dt(q3, G3, 0.4)
    out2, out3 = _steps(G2, 6)(q2, dt), _steps(G3, 6)(q3, dt)
    assert float(jnp.abs(out2 - q2).max()) > 1e-2  # the shock moved
    np.testing.assert_allclose(out3[3], 0.0, atol=1e-6)  # no z momentum appears
    for z in range(G3.nz):
        np.testing.assert_allclose(np.asarray(out3[jnp.asarray([0, 1, 2, 4, 5, 6]), z]),
                                   np.asarray(out2), rtol=2e-5,
                                   atol=2e-5 * float(jnp.abs(out2).max()))


def test_3d_shock_bubble_is_positive_and_symmetric_in_y_z():
    """The sphere on the two symmetry walls: swapping y and z (and v, w) leaves the flow alone."""
    fields, cs, steps, _ = data.generate("bubble3d", 1, 2, 12, 6, seed=0, nz=6)
    assert fields.shape == (1, 2, 6, 6, 6, 12) and np.all(np.isfinite(fields))
    assert fields[:, :, 0].min() > 0 and fields[:, :, 4].min() > 0
    swapped = np.swapaxes(fields, -3, -2)[:, :, [0, 1, 3, 2, 4, 5]]
    np.testing.assert_allclose(swapped, fields, atol=1e-4 * np.abs(fields).max())
