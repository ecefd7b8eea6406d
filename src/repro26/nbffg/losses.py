"""ELBO (full tree and pathwise-subsampled), importance weights, and guided-proposal MCMC.

For a residual ``u_theta`` (``u = 0``: BFFG) one forward sample gives

    ELBO sample  = log p~(y) + sum_e [log psi_e - 1/2 int_e |u|^2 dt],
    log weight   = ELBO sample - sum_e int_e u^T dW           (unbiased for p(y) after exp),

and the *naive* baseline (unguided forward simulation) has log weight ``sum_v log p(y_v | x_v)``.

Discrete traits (``CTMCProblem``): the same three per-edge terms (``solvers`` section "discrete
traits"), node states one-hot so that weighted means are posterior marginals. Sampled discrete
paths are not reparameterisable, so the training ELBO is computed *exactly* by propagating the
proposal's S-vector marginal along each edge (``solvers.ctmc_edge_elbo``) instead of by a
score-function estimator; pathwise subsampling is the same Horvitz–Thompson sum over paths.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

from repro26.core import memory
from repro26.nbffg import data as D
from repro26.nbffg import model as M
from repro26.nbffg import solvers as S


class Problem(eqx.Module):
    """One inference problem: tree, observations, dynamics and the precomputed guide."""

    tree: S.Tree
    guide: S.Guide
    naive_guide: S.Guide
    dynamics: Any
    proxy: S.Proxy
    obs: Float[Array, "n1 d"]
    observed: Float[Array, " n1"]
    obs_var: float = eqx.field(static=True)
    num_steps: int = eqx.field(static=True)
    m: int = eqx.field(static=True)


class CTMCProblem(eqx.Module):
    """A discrete-trait inference problem: tree, leaf log-likelihood table, precomputed guides."""

    tree: S.Tree
    guide: S.CTMCGuide
    naive_guide: S.CTMCGuide
    leaf_logh: Float[Array, "n1 S"]
    num_steps: int = eqx.field(static=True)
    states: int = eqx.field(static=True)


PROXIES = ("paper", "linearised")


def subtree_anchors(parent: np.ndarray, obs: np.ndarray, observed: np.ndarray,
                    m0: np.ndarray) -> np.ndarray:
    """Mean observation of the observed leaves below every node (``m0`` where none), with a
    dummy row: the states the linearised proxy expands around. Nodes in breadth-first order."""
    n = parent.size
    total, count = np.zeros((n, obs.shape[1])), np.zeros(n)
    total[observed > 0], count[observed > 0] = obs[observed > 0], 1.0
    for v in range(n - 1, 0, -1):
        total[parent[v]] += total[v]
        count[parent[v]] += count[v]
    anchors = np.where(count[:, None] > 0, total / np.maximum(count, 1.0)[:, None], m0[None, :])
    return np.concatenate([anchors, np.asarray(m0)[None, :]]).astype(np.float32)


def build_problem(cfg, task: D.Task, arrays: dict, proxy: str = "paper",
                  shape: tuple[int, int] | None = None) -> Problem | CTMCProblem:
    """Tree arrays + observations -> backward filter on the K-grid (theta-independent).

    ``proxy="paper"``: the dynamics' constant proxy (Brownian motion for the double well, the
    OU with frozen diffusion, the flow frozen at the root shape); ``"linearised"``: per-edge
    linearisation around the observations below each edge (``model.linearised_proxy``).
    Discrete traits have one proxy (the time-averaged rates). ``shape``: pad the tree's level
    and path tables to it (``solvers.pad_tree``; see :func:`build_problems`)."""
    tree = S.make_tree(arrays["parent"], arrays["length"])
    if shape is not None:
        tree = S.pad_tree(tree, *shape)
    if task.dynamics == "ctmc":
        return _build_ctmc(cfg, tree, arrays)
    dyn, m0, P0 = D.make_dynamics(cfg, task)
    if proxy == "linearised":
        anchors = subtree_anchors(arrays["parent"], arrays["obs"], arrays["observed"], np.asarray(m0))
        proxy = M.linearised_proxy(dyn, jnp.asarray(anchors))
    else:
        proxy = S.per_node(dyn.proxy(), tree.n + 1)
    pad = lambda v: jnp.concatenate([jnp.asarray(v, jnp.float32), jnp.zeros_like(jnp.asarray(v[:1], jnp.float32))])  # noqa: E731
    obs, observed = pad(arrays["obs"]), pad(arrays["observed"])
    ov = D.obs_var(cfg, task)
    K = cfg.steps_per_edge
    args = (tree, S.leaf_messages(tree, obs, observed, ov), proxy, m0, P0, K)
    # compiled, then checked before it runs: the backward filter at every grid point of every
    # edge holds (nodes x K+1) Van Loan blocks of side 2d+1 (GBs at the paper's shapes task)
    guide = _compiled_guide(args, f"nbffg {task.name}: the guide (backward filter at {K + 1} "
                                  f"points of each of {tree.n} edges, state dimension "
                                  f"{obs.shape[1]})")(*args)
    naive = S.zero_guide(tree, obs.shape[1], K, m0, P0)
    return Problem(tree, guide, naive, dyn, proxy, obs, observed, ov, K, D.noise_dim(cfg, task))


def tree_shape(arrays: list[dict]) -> tuple[int, int]:
    """The level-table shape that the trees of all of a task's seeds pad to: a seed's problem is
    then the same whichever seeds share its batch."""
    return S.common_shape([S.make_tree(a["parent"], a["length"]) for a in arrays])


def build_problems(cfg, task: D.Task, arrays: list[dict], shape: tuple[int, int],
                   proxy: str = "paper"):
    """The problems of several seeds of one task stacked on a leading seed axis (for
    ``eqx.filter_vmap``), every tree padded to ``shape`` (:func:`tree_shape`)."""
    return S.stack([build_problem(cfg, task, a, proxy, shape) for a in arrays])


_GUIDES: dict = {}


def _compiled_guide(args, what: str):
    """``solvers.make_guide`` compiled for the shapes of ``args`` (once per process and shapes:
    the seeds of a task share it), its memory checked before it first runs."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    key = (treedef, tuple((np.shape(v), np.result_type(v)) if eqx.is_array(v) else v
                          for v in leaves))
    if key not in _GUIDES:
        compiled = S.make_guide.lower(*args).compile()
        memory.require_compiled(compiled, what)
        _GUIDES[key] = compiled
    return _GUIDES[key]


def _build_ctmc(cfg, tree: S.Tree, arrays: dict) -> CTMCProblem:
    """Leaf messages ``log E(x, y_v)`` (0 where unobserved), proxy pruning, guide tables."""
    dyn = D.make_ctmc(cfg)
    K = cfg.steps_per_edge
    logE = np.log(D.emission_matrix(cfg))
    obs = np.concatenate([arrays["obs"], np.zeros_like(arrays["obs"][:1])])
    observed = np.concatenate([arrays["observed"], [0.0]]) > 0
    leaf = np.where(observed[:, None], obs @ logE.T, 0.0)
    leaf_logh = jnp.asarray(leaf, jnp.float32)
    return CTMCProblem(tree, S.make_ctmc_guide(tree, leaf_logh, dyn, K),
                       S.ctmc_naive_guide(tree, dyn, K), leaf_logh, K, cfg.ctmc.states)


def draw_noise(key: PRNGKeyArray, problem: Problem | CTMCProblem, rows: int):
    """Standard-normal root variable ``z0`` and edge increments ``(rows, K, m)`` (discrete: one
    normal per state and step, turned into Gumbel variables)."""
    k1, k2 = jax.random.split(key)
    if isinstance(problem, CTMCProblem):
        d, m = problem.states, problem.states
    else:
        d, m = problem.obs.shape[1], problem.m
    return jax.random.normal(k1, (d,)), jax.random.normal(k2, (rows, problem.num_steps, m))


def tree_sample(residual, problem: Problem | CTMCProblem, z0, noise, naive=False):
    """One forward sample of the whole tree: node states, ELBO sample and log weight.

    Guided (``naive=False``): ``log p~(y) + sum_e (log psi_e - 1/2 int|u|^2)`` and the same plus
    ``-int u^T dW``. Naive (``naive=True``, may be traced): the unguided process with the
    residual ignored, both numbers equal to ``sum_v log p(y_v | x_v)``. Discrete traits: node
    states are returned one-hot ``(n+1, S)``.
    """
    guide = problem.guide if naive is False else jax.tree_util.tree_map(
        lambda g, z: jnp.where(naive, z, g), problem.guide, problem.naive_guide)
    if isinstance(problem, CTMCProblem):
        states, terms = S.ctmc_forward_tree(guide, _masked(residual, naive), problem.tree, z0, noise)
        g, lw = S.elbo_terms(terms)
        obs_ll = jnp.sum(jnp.take_along_axis(problem.leaf_logh, states[:, None], 1))
        elbo = jnp.where(naive, obs_ll, problem.guide.log_pt + jnp.sum(g))
        lw = jnp.where(naive, obs_ll, problem.guide.log_pt + jnp.sum(lw))
        return jax.nn.one_hot(states, problem.states, dtype=lw.dtype), elbo, lw
    xs, terms = S.forward_tree(problem.dynamics, problem.proxy, _masked(residual, naive),
                               problem.tree, guide, z0, noise)
    g, lw = S.elbo_terms(terms)
    obs_ll = S.log_obs_density(xs, problem.obs, problem.observed, problem.obs_var)
    elbo = jnp.where(naive, obs_ll, problem.guide.log_pt + jnp.sum(g))
    return xs, elbo, jnp.where(naive, obs_ll, problem.guide.log_pt + jnp.sum(lw))


class _Masked(eqx.Module):
    residual: Any
    off: Any

    def __call__(self, *args):
        return jnp.where(self.off, 0.0, self.residual(*args))


def _masked(residual, off):
    return residual if off is False else _Masked(residual, off)


def path_elbo(residual, problem: Problem | CTMCProblem, key: PRNGKeyArray, num_paths: int):
    """Pathwise-subsampled ELBO sample: ``num_paths`` uniform leaves, Horvitz–Thompson sum."""
    k1, k2 = jax.random.split(key)
    tree = problem.tree
    leaf_idx = jax.random.randint(k1, (num_paths,), 0, tree.leaves.shape[0])
    paths = tree.paths[leaf_idx]
    if isinstance(problem, CTMCProblem):
        g = jax.vmap(lambda p: S.ctmc_path_elbo(problem.guide, residual, tree, p))(paths)
        return problem.guide.log_pt + S.subsampled_edge_sum(g, paths, tree)

    def one(path, k):
        z0, noise = draw_noise(k, problem, path.shape[0] - 1)
        terms = S.forward_path(problem.dynamics, problem.proxy, residual, tree, problem.guide,
                               path, z0, noise)
        return S.elbo_terms(terms)[0]

    g = jax.vmap(one)(paths, jax.random.split(k2, num_paths))
    return problem.guide.log_pt + S.subsampled_edge_sum(g, paths, tree)


def make_loss(num_samples: int, num_paths: int):
    """``loss(model, problem, key) = -ELBO`` averaged over ``num_samples`` draws; full tree when
    ``num_paths == 0``, else pathwise subsampling with ``num_paths`` paths per draw. Discrete
    traits: the full-tree ELBO is exact (no draw), a path's ELBO terms are exact too."""

    def loss_fn(model, problem: Problem | CTMCProblem, key):
        keys = jax.random.split(key, num_samples)
        if num_paths == 0 and isinstance(problem, CTMCProblem):
            elbo = S.ctmc_tree_elbo(problem.guide, model, problem.tree)[0]
            return -elbo, {"elbo": elbo}
        if num_paths == 0:
            def one(k):
                z0, noise = draw_noise(k, problem, problem.tree.n + 1)
                _, elbo, lw = tree_sample(model, problem, z0, noise)
                return elbo
        else:
            def one(k):
                return path_elbo(model, problem, k, num_paths)
        elbo = jax.vmap(one)(keys)
        return -jnp.mean(elbo), {"elbo": jnp.mean(elbo)}

    return loss_fn


def pcn_chain(residual, problem: Problem | CTMCProblem, key: PRNGKeyArray, num_iters, rho: float,
              burn_in):
    """Guided-proposal MCMC (BFFG guide): preconditioned Crank–Nicolson on the driving noise.

    Latent ``Z = (z0, edge increments) ~ N(0, I)`` (discrete traits: normals mapped to the Gumbel
    variables of each sampling step), target ``∝ N(Z; 0, I) psi(X°(Z))``, proposal
    ``Z' = rho Z + sqrt(1 - rho^2) xi`` (prior-reversible, so the acceptance ratio is
    ``psi(Z') / psi(Z)``). ``residual`` must output 0 (pass a zeroed ``Residual`` so the
    compiled forward pass is shared with the importance samplers); ``num_iters`` and ``burn_in``
    may be traced. Returns the posterior mean of node states after burn-in and the acceptance
    rate.
    """
    rows = problem.tree.n + 1

    def evaluate(z):
        xs, _, lw = tree_sample(residual, problem, *z)
        return xs, lw

    k0, key = jax.random.split(key)
    z = draw_noise(k0, problem, rows)
    xs, lw = evaluate(z)

    def body(it, carry):
        z, xs, lw, acc_sum, x_sum = carry
        k1, k2 = jax.random.split(jax.random.fold_in(key, it))
        xi = draw_noise(k1, problem, rows)
        zp = jax.tree_util.tree_map(lambda a, b: rho * a + jnp.sqrt(1 - rho**2) * b, z, xi)
        xsp, lwp = evaluate(zp)
        accept = jnp.log(jax.random.uniform(k2)) < lwp - lw
        z = jax.tree_util.tree_map(lambda a, b: jnp.where(accept, a, b), zp, z)
        xs, lw = jnp.where(accept, xsp, xs), jnp.where(accept, lwp, lw)
        keep = it >= burn_in
        return z, xs, lw, acc_sum + accept, x_sum + keep * xs

    init = (z, xs, lw, jnp.zeros(()), jnp.zeros_like(xs))
    _, _, _, acc, x_sum = jax.lax.fori_loop(0, num_iters, body, init)
    return x_sum / (num_iters - burn_in), acc / num_iters


def zeroed(residual: M.Residual | M.RateCorrection) -> M.Residual | M.RateCorrection:
    """The residual (or rate correction) with its last layer set to 0, i.e. ``u = 0`` (plain
    BFFG), same structure."""
    return eqx.tree_at(lambda r: (r.mlp.layers[-1].weight, r.mlp.layers[-1].bias), residual,
                       replace_fn=jnp.zeros_like)
