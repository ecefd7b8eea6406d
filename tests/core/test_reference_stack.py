"""The pinned JAX stack works together: an ott-jax solver runs and agrees with POT."""

import jax
import jax.numpy as jnp
import numpy as np
import ot
from ott.geometry import geometry, pointcloud
from ott.problems.linear import linear_problem
from ott.problems.quadratic import quadratic_problem
from ott.solvers.linear import sinkhorn
from ott.solvers.quadratic import gromov_wasserstein


def test_ott_sinkhorn_matches_pot():
    x = jax.random.normal(jax.random.key(0), (12, 2))
    y = jax.random.normal(jax.random.key(1), (9, 2)) + 1.0
    geom = pointcloud.PointCloud(x, y, epsilon=0.5)
    out = sinkhorn.Sinkhorn(threshold=1e-7, max_iterations=5000)(linear_problem.LinearProblem(geom))
    a, b = np.full(12, 1 / 12), np.full(9, 1 / 9)
    plan = ot.sinkhorn(a, b, np.asarray(geom.cost_matrix, float), 0.5, stopThr=1e-10, numItermax=10000)
    np.testing.assert_allclose(np.asarray(out.matrix), plan, atol=1e-5)


def test_ott_gromov_wasserstein_solves_and_respects_marginals():
    x = jax.random.normal(jax.random.key(2), (10, 2))
    rotation = jnp.array([[0.0, -1.0], [1.0, 0.0]])
    geom_x = pointcloud.PointCloud(x)
    geom_y = geometry.Geometry(cost_matrix=pointcloud.PointCloud(x @ rotation).cost_matrix)
    problem = quadratic_problem.QuadraticProblem(geom_x, geom_y)
    solver = gromov_wasserstein.GromovWasserstein(
        linear_solver=sinkhorn.Sinkhorn(max_iterations=2000), epsilon=1e-2, max_iterations=30)
    out = solver(problem)
    coupling = np.asarray(out.matrix)
    np.testing.assert_allclose(coupling.sum(1), np.full(10, 0.1), atol=1e-3)
    np.testing.assert_allclose(coupling.sum(0), np.full(10, 0.1), atol=1e-3)
    # A rotated copy is isometric: the optimal coupling is the identity matching.
    assert (coupling.argmax(1) == np.arange(10)).mean() >= 0.9
