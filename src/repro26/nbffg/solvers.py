"""Backward filtering forward guiding (BFFG) on trees, its neural variant, and references.

Notation follows the abstract: a process on a rooted tree, root state ``x_0 ~ N(m0, P0)``, along
every edge of length ``l`` an SDE ``dX = b(X)dt + sigma(X)dW``; leaves observed as
``y_v = x_v + N(0, obs_var I)`` (possibly only some of them). The *proxy linear-Gaussian
process* ``dX~ = (B X~ + beta)dt + sigma~ dW`` gives a closed-form *backward filter*
``h~(t, x) = exp(c + F^T x - 1/2 x^T H x)`` on every edge; it guides the forward process

    dX° = [b + a (F - H X°) + sigma u_theta] dt + sigma dW,     a = sigma sigma^T,

and the likelihood ratio of the true conditioned process to the guided one is
``p~(y) psi(X°) dP°/dQ`` with the Girsanov weight

    log psi = sum_edges int (b - b~)^T r - 1/2 tr((a - a~) H) + 1/2 r^T (a - a~) r dt,
    r = F - H X°,
    log dP°/dQ = -int u^T dW - 1/2 int |u|^2 dt.

The ELBO is ``log p~(y) + E_Q[sum_e log psi_e - 1/2 int |u|^2]``. Its edge sum can be estimated
without bias from a few root-to-leaf paths (*pathwise subsampling*), so that a training step
costs path length instead of tree size.

Trees are arrays (parent index, edge length, level table, root-to-leaf path table, all padded
with a dummy node ``n`` whose edge has length 0): the backward pass and the full forward pass
scan over levels and vmap over the nodes of a level; a path is scanned from root to leaf.
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

# ----------------------------------------------------------------------------- trees


class Tree(eqx.Module):
    """A rooted tree as arrays; node 0 is the root, nodes are in breadth-first order.

    Every per-node array has one extra row ``n`` (a dummy node with a zero-length edge) so that
    padded level and path tables can be gathered and scattered without masks.
    """

    parent: Int[Array, " n1"]        # parent of each node; root and dummy point to the dummy
    length: Float[Array, " n1"]      # edge length into the node (0 for root and dummy)
    time: Float[Array, " n1"]        # distance from the root
    levels: Int[Array, "D1 W"]       # nodes at each depth, padded with the dummy
    paths: Int[Array, "L D1"]        # root-to-leaf node sequences, padded with the dummy
    leaves: Int[Array, " L"]         # leaf node indices
    inclusion: Float[Array, " n1"]   # P(edge on a path) for a uniformly drawn leaf
    is_leaf: Float[Array, " n1"]
    n: int = eqx.field(static=True)


def make_tree(parent: np.ndarray, length: np.ndarray) -> Tree:
    """Build a :class:`Tree` from a parent array (root has parent -1) and edge lengths.

    Nodes are relabelled in breadth-first order so that a parent always precedes its children.
    """
    parent, length = np.asarray(parent), np.asarray(length, dtype=np.float64)
    n = parent.size
    children: list[list[int]] = [[] for _ in range(n)]
    root = int(np.flatnonzero(parent < 0)[0])
    for v, p in enumerate(parent):
        if p >= 0:
            children[p].append(v)
    order, depth = [root], {root: 0}
    for v in order:
        for c in children[v]:
            depth[c] = depth[v] + 1
            order.append(c)
    new = {old: i for i, old in enumerate(order)}
    par = np.full(n + 1, n, dtype=np.int32)
    ln = np.zeros(n + 1)
    dep = np.zeros(n + 1, dtype=np.int32)
    for old in order:
        i = new[old]
        if parent[old] >= 0:
            par[i], ln[i] = new[int(parent[old])], length[old]
        dep[i] = depth[old]
    is_leaf = np.zeros(n + 1)
    has_child = np.zeros(n + 1, dtype=bool)
    has_child[par[1:n]] = True
    is_leaf[:n] = ~has_child[:n]
    time = np.zeros(n + 1)
    for i in range(1, n):
        time[i] = time[par[i]] + ln[i]
    max_depth = int(dep[:n].max())
    width = max(int(np.sum(dep[:n] == d)) for d in range(max_depth + 1))
    levels = np.full((max_depth + 1, width), n, dtype=np.int32)
    for d in range(max_depth + 1):
        nodes = np.flatnonzero(dep[:n] == d)
        levels[d, : nodes.size] = nodes
    leaves = np.flatnonzero(is_leaf[:n]).astype(np.int32)
    paths = np.full((leaves.size, max_depth + 1), n, dtype=np.int32)
    counts = np.zeros(n + 1)
    for j, leaf in enumerate(leaves):
        seq, v = [], int(leaf)
        while v != n:
            seq.append(v)
            counts[v] += 1
            v = int(par[v])
        paths[j, : len(seq)] = seq[::-1]
    inclusion = counts / leaves.size
    inclusion[n] = 1.0
    return Tree(jnp.asarray(par), jnp.asarray(ln, jnp.float32), jnp.asarray(time, jnp.float32),
                jnp.asarray(levels), jnp.asarray(paths), jnp.asarray(leaves),
                jnp.asarray(inclusion, jnp.float32), jnp.asarray(is_leaf, jnp.float32), n)


def pad_tree(tree: Tree, depth1: int, width: int) -> Tree:
    """The same tree with its level table padded to ``(depth1, width)`` and its path table to
    ``depth1`` columns with the dummy node. Nothing computed changes (the dummy's edge has length
    0 and its rows are reset or carry 0), but trees with the same number of nodes and different
    shapes (the seeds of a random-tree task) then have equal array shapes: one compiled program,
    and ``jax.vmap`` over the seeds."""
    D1, W = tree.levels.shape
    if depth1 < D1 or width < W:
        raise ValueError(f"pad_tree: ({depth1}, {width}) is smaller than the tree's ({D1}, {W})")
    levels = jnp.pad(tree.levels, ((0, depth1 - D1), (0, width - W)), constant_values=tree.n)
    paths = jnp.pad(tree.paths, ((0, 0), (0, depth1 - D1)), constant_values=tree.n)
    return eqx.tree_at(lambda t: (t.levels, t.paths), tree, (levels, paths))


def common_shape(trees) -> tuple[int, int]:
    """The level-table shape ``(depth + 1, width)`` that every tree of ``trees`` pads to."""
    return (max(t.levels.shape[0] for t in trees), max(t.levels.shape[1] for t in trees))


def stack(trees):
    """Pytrees of equal structure stacked along a new leading (seed) axis: array leaves stacked,
    the rest (static fields, Python floats of the dynamics) taken from the first, which must
    equal the others'."""
    _, static = eqx.partition(trees[0], eqx.is_array)
    arrays = [eqx.filter(t, eqx.is_array) for t in trees]
    return eqx.combine(jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *arrays), static)


def unstack(tree, i: int):
    """Entry ``i`` of a pytree stacked by :func:`stack` (or returned by ``eqx.filter_vmap``)."""
    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.tree_util.tree_map(lambda x: x[i], arrays), static)


# ----------------------------------------------------------------------------- proxy filter


class Proxy(eqx.Module):
    """Linear-Gaussian proxy ``dX~ = (B X~ + beta)dt + sigma~ dW`` with constant coefficients."""

    B: Float[Array, "d d"]
    beta: Float[Array, " d"]
    sigma: Float[Array, "d m"]

    @property
    def a(self) -> Float[Array, "d d"]:
        return self.sigma @ jnp.swapaxes(self.sigma, -1, -2)


def per_node(proxy: Proxy, n1: int) -> Proxy:
    """The proxy of every edge ``(n1, ...)``: a constant proxy is broadcast, a per-edge one (the
    drift linearised around each node's observations, ``data.linearised_proxy``) kept."""
    if proxy.B.ndim == 3:
        return proxy
    return jax.tree_util.tree_map(lambda v: jnp.broadcast_to(v, (n1, *v.shape)), proxy)


def edge_grid(num_steps: int) -> Float[Array, " K1"]:
    """Normalised times ``s_k = tau(k / K)`` of the Euler grid on an edge, ``tau(u) = u (2 - u)``.

    The guiding term ``a H (x - ...)`` is stiff near an observed node (``H ~ 1 / obs_var``); the
    time change makes the last step ``1 / K^2`` of the edge instead of ``1 / K``, so the Euler
    scheme stays stable and the discretised log weight converges (uniform grids overshoot
    ``log p`` at ``a H Delta ~ 1``).
    """
    u = jnp.linspace(0.0, 1.0, num_steps + 1)
    return u * (2.0 - u)


class Message(eqx.Module):
    """``log h(x) = c + F^T x - 1/2 x^T H x`` (information form of a Gaussian message)."""

    H: Float[Array, "*b d d"]
    F: Float[Array, "*b d"]
    c: Float[Array, " *b"]


def expm(A: Float[Array, "k k"], order: int = 12) -> Float[Array, "k k"]:
    """Matrix exponential by scaling and squaring with a Taylor polynomial of ``order``.

    Hand-written because ``jax.scipy.linalg.expm`` (Pade with norm-dependent branches) takes
    tens of seconds to compile under the nested vmaps of the grid filter; here the squaring
    count is a data-dependent ``fori_loop`` (``||A / 2^s||_1 <= 1/2``, Taylor error < 1e-14).
    """
    norm = jnp.max(jnp.sum(jnp.abs(A), axis=-1))
    s = jnp.clip(jnp.ceil(jnp.log2(jnp.maximum(norm, 1e-30) / 0.5)), 0, 60).astype(jnp.int32)
    X = A / (2.0 ** s.astype(A.dtype))
    eye = jnp.eye(A.shape[0], dtype=A.dtype)
    E = eye
    for k in range(order, 0, -1):
        E = eye + X @ E / k
    return jax.lax.fori_loop(0, s, lambda i, E: E @ E, E)


def transition_moments(proxy: Proxy, length: Float[Array, ""]):
    """``X~_l | X~_0 = x ~ N(Phi x + mu, Q)`` via one Van Loan block exponential.

    ``expm([[B, a~, beta], [0, -B^T, 0], [0, 0, 0]] l)`` has blocks ``Phi``, ``G`` with
    ``Q = G Phi^T``, and ``mu = int_0^l e^{B s} beta ds`` in its last column.
    """
    d = proxy.B.shape[0]
    block = jnp.zeros((2 * d + 1, 2 * d + 1), proxy.B.dtype)
    block = block.at[:d, :d].set(proxy.B).at[:d, d:2 * d].set(proxy.a)
    block = block.at[:d, 2 * d].set(proxy.beta).at[d:2 * d, d:2 * d].set(-proxy.B.T)
    E = expm(block * length)
    phi, G, mu = E[:d, :d], E[:d, d:2 * d], E[:d, 2 * d]
    Q = G @ phi.T
    return phi, mu, 0.5 * (Q + Q.T)


def gaussian_pullback(msg: Message, phi, mu, Q) -> Message:
    """``h_0(x) = int N(y; Phi x + mu, Q) h(y) dy`` in closed form, without inverting Q.

    With ``S = (I + H Q)^{-1}``: ``H_0 = Phi^T S H Phi``, ``F_0 = Phi^T S (F - H mu)`` and
    ``c_0 = c - 1/2 log|I + Q H| + 1/2 F^T Q S F + (S F)^T mu - 1/2 mu^T S H mu``.
    """
    d = msg.F.shape[-1]
    eye = jnp.eye(d, dtype=msg.H.dtype)
    M = eye + msg.H @ Q
    SH = jnp.linalg.solve(M, msg.H)
    SH = 0.5 * (SH + SH.T)
    SF = jnp.linalg.solve(M, msg.F)
    _, logdet = jnp.linalg.slogdet(M)
    c0 = msg.c - 0.5 * logdet + 0.5 * msg.F @ Q @ SF + SF @ mu - 0.5 * mu @ SH @ mu
    return Message(phi.T @ SH @ phi, phi.T @ (SF - SH @ mu), c0)


def propagate(msg: Message, proxy: Proxy, length: Float[Array, ""]) -> Message:
    """Backward filter over an edge of ``length`` (closed form of the Riccati ODEs)."""
    return gaussian_pullback(msg, *transition_moments(proxy, length))


def riccati_vector_field(t, msg: Message, proxy: Proxy) -> Message:
    """Backward information-filter ODEs (``d/dt`` in forward time; solve from l down to 0).

    ``dH/dt = -B^T H - H B + H a~ H``, ``dF/dt = -B^T F + H a~ F + H beta``,
    ``dc/dt = -(beta^T F + 1/2 F^T a~ F - 1/2 tr(H a~))``.
    """
    del t
    B, beta, a = proxy.B, proxy.beta, proxy.a
    H, F = msg.H, msg.F
    dH = -B.T @ H - H @ B + H @ a @ H
    dF = -B.T @ F + H @ a @ F + H @ beta
    dc = -(beta @ F + 0.5 * F @ a @ F - 0.5 * jnp.trace(H @ a))
    return Message(dH, dF, dc)


def propagate_ode(msg: Message, proxy: Proxy, length: float, rtol: float = 1e-10) -> Message:
    """The same backward filter by integrating :func:`riccati_vector_field` with diffrax."""
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(riccati_vector_field), diffrax.Tsit5(), t0=length, t1=0.0, dt0=-length / 50,
        y0=msg, args=proxy, stepsize_controller=diffrax.PIDController(rtol=rtol, atol=rtol),
        saveat=diffrax.SaveAt(t1=True),
    )
    return jax.tree_util.tree_map(lambda v: v[0], sol.ys)


def leaf_messages(tree: Tree, obs: Float[Array, "n1 d"], observed: Float[Array, " n1"],
                  obs_var: float) -> Message:
    """Observation messages ``h(x) = N(y; x, obs_var I)`` at observed nodes, 1 elsewhere."""
    d = obs.shape[-1]
    w = observed / obs_var
    H = w[:, None, None] * jnp.eye(d, dtype=obs.dtype)
    F = w[:, None] * obs
    c = observed * (-0.5 * jnp.sum(obs**2, -1) / obs_var - 0.5 * d * jnp.log(2 * jnp.pi * obs_var))
    return Message(H, F, c)


def backward_filter(tree: Tree, leaf_msg: Message, proxy: Proxy) -> Message:
    """Messages at every node (the *end* of its edge): own observation + children's pullbacks.

    Scans the level table from the deepest level to level 1; the pullbacks of a level are
    vmapped and scatter-added into the parents. The dummy node absorbs padding.
    """
    prop = jax.vmap(propagate)
    proxy = per_node(proxy, tree.n + 1)

    def body(acc: Message, level):
        msg = jax.tree_util.tree_map(lambda v: v[level], acc)
        edge_proxy = jax.tree_util.tree_map(lambda v: v[level], proxy)
        pulled = prop(msg, edge_proxy, tree.length[level])
        par = tree.parent[level]
        acc = jax.tree_util.tree_map(lambda A, P: A.at[par].add(P), acc, pulled)
        return acc, None

    acc, _ = jax.lax.scan(body, leaf_msg, tree.levels[1:], reverse=True)
    dummy = tree.n
    return jax.tree_util.tree_map(lambda A, L: A.at[dummy].set(L[dummy]), acc, leaf_msg)


def root_posterior(root_msg: Message, m0, P0):
    """Proxy posterior of the root ``N(mean, cov) ∝ N(m0, P0) h(x)`` and ``log p~(y)``."""
    d = m0.shape[0]
    eye = jnp.eye(d, dtype=m0.dtype)
    prior_at_root = gaussian_pullback(root_msg, eye, m0, P0)
    P0_inv = jnp.linalg.inv(P0)
    cov = jnp.linalg.inv(P0_inv + root_msg.H)
    cov = 0.5 * (cov + cov.T)
    mean = cov @ (P0_inv @ m0 + root_msg.F)
    return mean, cov, prior_at_root.c


class Guide(eqx.Module):
    """Everything theta-independent that guides the forward pass (computed once per task).

    ``H``/``F``: backward filter on the grid ``s_k = edge_grid(K)`` of ``K + 1`` points along
    every edge (physical time ``s l``); ``root_mean``/``root_chol``: proxy posterior of the
    root; ``log_pt``: ``log p~(y)``.
    """

    H: Float[Array, "n1 K1 d d"]
    F: Float[Array, "n1 K1 d"]
    root_mean: Float[Array, " d"]
    root_chol: Float[Array, "d d"]
    log_pt: Float[Array, ""]


@eqx.filter_jit
def make_guide(tree: Tree, leaf_msg: Message, proxy: Proxy, m0, P0, num_steps: int) -> Guide:
    """Backward filter, then ``h~`` at the grid points of every edge by closed-form pullback."""
    node_msg = backward_filter(tree, leaf_msg, proxy)
    s = edge_grid(num_steps)
    remaining = tree.length[:, None] * (1.0 - s[None, :])
    # one node at a time (its K + 1 grid points vmapped): the Van Loan blocks of side 2d + 1 of
    # every (node, grid point) at once took GBs at the paper's shapes task (d = 100)
    grid = jax.lax.map(lambda a: jax.vmap(propagate, in_axes=(None, None, 0))(*a),
                       (node_msg, per_node(proxy, tree.n + 1), remaining))
    root = jax.tree_util.tree_map(lambda v: v[0], node_msg)
    mean, cov, log_pt = root_posterior(root, m0, P0)
    chol = jnp.linalg.cholesky(cov + 1e-9 * jnp.eye(cov.shape[0], dtype=cov.dtype))
    return Guide(grid.H, grid.F, mean, chol, log_pt)


def zero_guide(tree: Tree, d: int, num_steps: int, m0, P0) -> Guide:
    """No guiding (``H = F = 0``): the forward pass is then the unconditioned process."""
    n1 = tree.n + 1
    return Guide(jnp.zeros((n1, num_steps + 1, d, d)), jnp.zeros((n1, num_steps + 1, d)),
                 m0, jnp.linalg.cholesky(P0), jnp.zeros(()))


# ----------------------------------------------------------------------------- forward guiding


def _grid_index(grid: Float[Array, " K1"], t) -> Int[Array, ""]:
    """Index of the grid point nearest to ``t`` (the solver only asks at grid points)."""
    return jnp.argmin(jnp.abs(grid - t))


class GridBrownianPath(diffrax.AbstractPath):
    """Brownian path on ``[0, 1]`` given at the grid points ``s_k`` (``W`` built from
    standard-normal increments scaled by ``sqrt(s_{k+1} - s_k)``).

    Hand-written (instead of ``VirtualBrownianTree``) so that the driving noise is an explicit
    array: the same noise can be replayed on a path and on the full tree (unbiasedness test),
    and moved by pCN (guided-proposal MCMC).
    """

    grid: Float[Array, " K1"]
    W: Float[Array, "K1 m"]
    t0: float = 0.0
    t1: float = 1.0

    def evaluate(self, t0, t1=None, left=True):
        del left
        if t1 is None:
            return self.W[_grid_index(self.grid, t0)]
        return self.W[_grid_index(self.grid, t1)] - self.W[_grid_index(self.grid, t0)]


def edge_solve(dynamics, proxy: Proxy, residual, H: Float[Array, "K1 d d"], F: Float[Array, "K1 d"],
               length: Float[Array, ""], node: Int[Array, ""], x0: Float[Array, " d"],
               noise: Float[Array, "K m"]):
    """Guided SDE along one edge in normalised time ``s = t / l`` (Euler–Maruyama, diffrax) on
    the time-changed grid ``edge_grid(K)`` (fine near the observed end of the edge).

    Stepped manually (``diffrax.Euler().step`` in a ``lax.scan`` over the fixed grid) rather
    than through ``diffeqsolve``: same scheme, but its adaptive-loop machinery made a training
    step take ~30 s to compile on 2 CPU cores.

    ``proxy`` is this edge's proxy. State ``(x, log psi, 1/2 int |u|^2, -int u^T dW)``; returns
    the end state. With ``H = F = 0`` and ``residual = 0`` this is the unconditioned forward SDE.
    """
    K, _ = noise.shape
    d = x0.shape[0]
    a_t = proxy.a
    grid = edge_grid(K).astype(x0.dtype)

    def parts(s, y):
        x = y[:d]
        k = _grid_index(grid, s)
        Hs, Fs = H[k], F[k]
        r = Fs - Hs @ x
        sig = dynamics.diffusion(x)
        u = residual(s, x, a_t @ r, node)
        return x, Hs, r, sig, u

    def drift(s, y, args):
        x, Hs, r, sig, u = parts(s, y)
        a = sig @ sig.T
        da = a - a_t
        b = dynamics.drift(x)
        bt = proxy.B @ x + proxy.beta
        dx = b + a @ r + sig @ u
        dlogpsi = (b - bt) @ r - 0.5 * jnp.sum(da * Hs) + 0.5 * r @ da @ r
        dkl = 0.5 * u @ u
        return length * jnp.concatenate([dx, jnp.stack([dlogpsi, dkl, jnp.zeros_like(dkl)])])

    def diffusion(s, y, args):
        _, _, _, sig, u = parts(s, y)
        return jnp.sqrt(length) * jnp.concatenate([sig, jnp.zeros((2, sig.shape[1]), sig.dtype),
                                                   -u[None, :]])

    dW = noise * jnp.sqrt(jnp.diff(grid))[:, None]
    W = jnp.concatenate([jnp.zeros((1, noise.shape[1]), noise.dtype), jnp.cumsum(dW, 0)])
    terms = diffrax.MultiTerm(diffrax.ODETerm(drift),
                              diffrax.ControlTerm(diffusion, GridBrownianPath(grid, W)))
    y0 = jnp.concatenate([x0, jnp.zeros(3, x0.dtype)])
    solver = diffrax.Euler()

    def step(y, k):
        y, _, _, _, _ = solver.step(terms, grid[k], grid[k + 1], y, None, None, made_jump=False)
        return y, None

    yT, _ = jax.lax.scan(step, y0, jnp.arange(K))
    return yT[:d], yT[d:]


def forward_tree(dynamics, proxy, residual, tree: Tree, guide: Guide, z0: Float[Array, " d"],
                 noise: Float[Array, "n1 K m"]):
    """Guided forward pass over the whole tree (scan over levels, vmap within a level).

    Returns node values ``(n+1, d)`` and per-edge terms ``(n+1, 3)`` =
    ``(log psi_e, 1/2 int |u|^2, -int u^T dW)``; row 0 (root edge) and the dummy row are 0.
    """
    x_root = guide.root_mean + guide.root_chol @ z0
    xs = jnp.zeros((tree.n + 1, x_root.shape[0]), x_root.dtype).at[0].set(x_root)
    terms = jnp.zeros((tree.n + 1, 3), x_root.dtype)
    proxy = per_node(proxy, tree.n + 1)
    solve = jax.vmap(lambda p, H, F, ell, v, x, eps: edge_solve(dynamics, p, residual, H, F,
                                                                 ell, v, x, eps))

    def body(carry, level):
        xs, terms = carry
        edge_proxy = jax.tree_util.tree_map(lambda v: v[level], proxy)
        x_end, t = solve(edge_proxy, guide.H[level], guide.F[level], tree.length[level], level,
                         xs[tree.parent[level]], noise[level])
        return (xs.at[level].set(x_end), terms.at[level].set(t)), None

    (xs, terms), _ = jax.lax.scan(body, (xs, terms), tree.levels[1:])
    dummy = tree.n
    return xs.at[dummy].set(0.0), terms.at[dummy].set(0.0)


def forward_path(dynamics, proxy, residual, tree: Tree, guide: Guide, path: Int[Array, " D1"],
                 z0: Float[Array, " d"], noise: Float[Array, "D K m"]):
    """Guided forward pass along one root-to-leaf path; per-position edge terms ``(D, 3)``."""
    x_root = guide.root_mean + guide.root_chol @ z0
    proxy = per_node(proxy, tree.n + 1)

    def body(x, inp):
        v, eps = inp
        edge_proxy = jax.tree_util.tree_map(lambda a: a[v], proxy)
        x_end, t = edge_solve(dynamics, edge_proxy, residual, guide.H[v], guide.F[v],
                              tree.length[v], v, x, eps)
        return x_end, t

    _, terms = jax.lax.scan(body, x_root, (path[1:], noise))
    return terms


def elbo_terms(terms: Float[Array, "... 3"]):
    """Per-edge ELBO integrand ``log psi - 1/2 int |u|^2`` and log-weight ``+ mart``."""
    return terms[..., 0] - terms[..., 1], terms[..., 0] - terms[..., 1] + terms[..., 2]


def subsampled_edge_sum(values: Float[Array, "M D"], paths: Int[Array, "M D1"], tree: Tree):
    """Horvitz–Thompson estimate ``1/M sum_m sum_{e in path_m} g_e / q_e`` of ``sum_e g_e``.

    ``q_e`` is the probability that a uniformly drawn leaf's path contains edge ``e``; padded
    positions (dummy node) carry ``g = 0``. Unbiased when each path's ``g_e`` has the law of
    the full-tree ``g_e`` (true here: a path's edges are simulated from the root).
    """
    q = tree.inclusion[paths[:, 1:]]
    return jnp.mean(jnp.sum(values / q, axis=-1))


def log_obs_density(xs, obs, observed, obs_var):
    """``sum_v log N(y_v; x_v, obs_var I)`` over observed nodes (naive importance weight)."""
    d = obs.shape[-1]
    ll = -0.5 * jnp.sum((obs - xs) ** 2, -1) / obs_var - 0.5 * d * jnp.log(2 * jnp.pi * obs_var)
    return jnp.sum(observed * ll)


def normalised_ess(log_w: Float[Array, " N"]) -> Float[Array, ""]:
    """ESS / N of self-normalised importance weights."""
    w = jax.nn.softmax(log_w)
    return 1.0 / (jnp.sum(w**2) * log_w.shape[0])


def weighted_mean(log_w: Float[Array, " N"], values: Float[Array, "N ..."]):
    w = jax.nn.softmax(log_w)
    return jnp.tensordot(w, values, axes=1)


# ----------------------------------------------------------------------------- exact reference


def exact_gaussian_tree(parent, length, proxy_np, m0, P0, obs, observed, obs_var):
    """Dense joint-Gaussian conditioning for a linear-Gaussian tree (numpy, float64).

    Builds the joint covariance of all node states and leaf observations and conditions on the
    observations; returns ``(posterior mean (n, d), posterior cov (n d, n d), log p(y))``.
    Independent of the backward filter: the reference for tests and for experiment 1.
    """
    from scipy.linalg import expm

    B, beta, sigma = (np.asarray(v, np.float64) for v in proxy_np)
    a = sigma @ sigma.T
    n = parent.size
    d = B.shape[0]
    mean = np.zeros((n, d))
    A = np.zeros((n * d, (n + 1) * d))  # x = A [x_root_noise, edge noises] + mean
    A[:d, :d] = np.linalg.cholesky(P0)
    mean[0] = m0
    for v in range(1, n):
        p, ell = int(parent[v]), float(length[v])
        block = np.zeros((2 * d + 1, 2 * d + 1))
        block[:d, :d], block[:d, d:2 * d], block[:d, 2 * d] = B, a, beta
        block[d:2 * d, d:2 * d] = -B.T
        E = expm(block * ell)
        phi, G, mu = E[:d, :d], E[:d, d:2 * d], E[:d, 2 * d]
        Q = G @ phi.T
        Q = 0.5 * (Q + Q.T) + 1e-14 * np.eye(d)
        mean[v] = phi @ mean[p] + mu
        A[v * d:(v + 1) * d] = phi @ A[p * d:(p + 1) * d]
        A[v * d:(v + 1) * d, (v + 1) * d:(v + 2) * d] += np.linalg.cholesky(Q)
    cov = A @ A.T
    idx = np.concatenate([np.arange(v * d, (v + 1) * d) for v in np.flatnonzero(observed)])
    y = np.concatenate([obs[v] for v in np.flatnonzero(observed)])
    S = cov[np.ix_(idx, idx)] + obs_var * np.eye(idx.size)
    C = cov[:, idx]
    resid = y - mean.reshape(-1)[idx]
    sol = np.linalg.solve(S, resid)
    post_mean = mean.reshape(-1) + C @ sol
    post_cov = cov - C @ np.linalg.solve(S, C.T)
    _, logdet = np.linalg.slogdet(2 * np.pi * S)
    log_p = -0.5 * (resid @ sol) - 0.5 * logdet
    return post_mean.reshape(n, d), post_cov, log_p


# ----------------------------------------------------------------------------- discrete traits
#
# A CTMC with S states along every edge (rates Q_t, possibly time dependent), root x_0 ~ pi0,
# leaves observed through an emission matrix E (h_leaf(x) = E(x, y_v); 1 if unobserved).
# Backward filter = Felsenstein pruning with a constant-rate proxy Q~: over an edge of length l
# the message pulls back as h~_start = exp(l Q~) h~_end; children's messages multiply at a node
# (log messages add); the root combines with the prior: p~(y) = sum_x pi0(x) h~_root(x).
#
# Forward guiding on a grid of K steps of length d = l / K per edge (t_k = start + k d). The
# target over one step is the kernel P_k = exp(d Q_{t_k}) (rates frozen over a step: the
# time-discretised target that every estimator and the exact reference share). The guided kernel
# is its discrete Doob h-transform
#
#     q°_k(y | x) = P_k(x, y) h~_{k+1}(y) / (P_k h~_{k+1})(x),      h~_k = exp((l - t) Q~) h~_end,
#
# whose generator as d -> 0 is the guided jump rate Q°(x, y) = Q(x, y) h~_t(y) / h~_t(x). With
# p(path)/q°(path) telescoping along the tree, the exact importance weight is
#
#     log w = log p~(y) + sum_edges sum_k log psi_k(x_k),
#     log psi_k(x) = log (P_k h~_{k+1})(x) - log (exp(d Q~) h~_{k+1})(x),
#
# which vanishes when Q = Q~ and tends to the continuous Radon–Nikodym (Girsanov) weight
#
#     log psi_e = int_e sum_y (Q_t - Q~)(X_t, y) h~_t(y) / h~_t(X_t) dt
#               = int_e sum_{y != X_t} (Q_t - Q~)(X_t, y) (h~_t(y) / h~_t(X_t) - 1) dt
#
# (there is no jump sum: the guided rates use the true Q, so the jump factors Q/Q° = h~(x-)/h~(x+)
# telescope against log h~ along the path). The neural correction multiplies the guided jump
# probabilities by exp(u_theta(t, x, node)_y) (y != x) and renormalises, q^u_k = softmax(log q°_k
# + u); as d -> 0 this multiplies the guided jump rates by exp(u). It adds
# sum_k log q°_k(x_{k+1}|x_k) - log q^u_k(x_{k+1}|x_k) (continuous limit:
# int sum_{y != x} Q°(e^u - 1) dt - sum_jumps u) to log w, whose mean is -KL(q^u_k || q°_k); so,
# as in the SDE case, a sample gives the per-edge terms (log psi, KL, martingale) with
# ELBO sample = log p~ + sum(log psi - KL) and log w = ELBO sample + sum(martingale).


def ctmc_transition(Q: Float[Array, "S S"], length: Float[Array, ""]) -> Float[Array, "S S"]:
    """``exp(l Q)`` (``jax.scipy.linalg.expm``), clipped at 0 against rounding."""
    return jnp.maximum(jax.scipy.linalg.expm(Q * length), 0.0)


def log_pullback(P: Float[Array, "S S"], logh: Float[Array, " S"]) -> Float[Array, " S"]:
    """``log (P exp(logh))``, stable in log space."""
    m = jnp.max(logh)
    return m + jnp.log(P @ jnp.exp(logh - m))


def pruning(tree: Tree, leaf_logh: Float[Array, "n1 S"], P_edge: Float[Array, "n1 S S"]):
    """Felsenstein pruning: log message at the end of every edge (own observation + children).

    ``P_edge[v]`` is the transition matrix of the edge into ``v`` (identity for root/dummy).
    Scans levels deepest first; pulled-back child messages are scatter-added into the parents.
    """
    pull = jax.vmap(log_pullback)

    def body(acc, level):
        return acc.at[tree.parent[level]].add(pull(P_edge[level], acc[level])), None

    acc, _ = jax.lax.scan(body, leaf_logh, tree.levels[1:], reverse=True)
    return acc.at[tree.n].set(leaf_logh[tree.n])


def node_marginals(tree: Tree, inside: Float[Array, "n1 S"], P_edge: Float[Array, "n1 S S"],
                   log_pi0: Float[Array, " S"]):
    """Posterior marginals ``p(x_v | y)`` of every node and ``log p(y)`` (inside–outside).

    ``outside_v(y) = log p(x_v = y, observations outside the subtree of v)``, pushed down from
    the root (``outside_root = log pi0``) through ``P_edge``; marginal ∝ ``outside + inside``.
    """
    pulled = jax.vmap(log_pullback)(P_edge, inside)
    outside = jnp.zeros_like(inside).at[0].set(log_pi0)

    def body(outside, level):
        par = tree.parent[level]
        a = outside[par] + inside[par] - pulled[level]
        m = jnp.max(a, -1, keepdims=True)
        down = m + jnp.log(jnp.einsum("wx,wxy->wy", jnp.exp(a - m), P_edge[level]))
        return outside.at[level].set(down), None

    outside, _ = jax.lax.scan(body, outside, tree.levels[1:])
    joint = outside + inside
    return jax.nn.softmax(joint, -1), jax.nn.logsumexp(joint[0])


class CTMCGuide(eqx.Module):
    """Everything theta-independent that guides the discrete forward pass (once per task).

    ``logP``: log target step kernels ``exp(d Q_{t_k})`` per edge and step; ``logh``: log h~ at
    the ``K + 1`` grid points of every edge (max-normalised per point: only ratios matter);
    ``logpsi``: the per-step log weight table ``log psi_k(x)``; ``root_logp``: log of the guided
    root posterior ``∝ pi0 h~_root``; ``log_pt``: ``log p~(y)``.
    """

    logP: Float[Array, "n1 K S S"]
    logh: Float[Array, "n1 K1 S"]
    logpsi: Float[Array, "n1 K S"]
    root_logp: Float[Array, " S"]
    log_pt: Float[Array, ""]


_LOG_FLOOR = -60.0  # log-probability floor: zero-length edges have P = I


def _expm_batch(*generators: Float[Array, "... S S"]) -> list[Float[Array, "... S S"]]:
    """``exp(A)`` of every matrix of every argument in ONE batched ``expm`` call (one compiled
    instance; and equal inputs give bitwise-equal outputs, e.g. ``Q_t == Q~`` below)."""
    S = generators[0].shape[-1]
    flat = jnp.concatenate([g.reshape(-1, S, S) for g in generators])
    E = jax.vmap(ctmc_transition, in_axes=(0, None))(flat, 1.0)
    sizes = np.cumsum([g.size // (S * S) for g in generators])[:-1]
    return [e.reshape(g.shape) for e, g in zip(jnp.split(E, sizes), generators)]


def _step_generators(tree: Tree, dynamics, num_steps: int):
    """``(d Q_{t_k}, d Q~)`` for every edge and step, ``d = l / K``, ``t_k`` the step's start."""
    Q_proxy = dynamics.proxy_rates()
    K = num_steps
    s = jnp.arange(K, dtype=tree.length.dtype) / K
    t = (tree.time - tree.length)[:, None] + s[None, :] * tree.length[:, None]
    Q = jax.vmap(jax.vmap(dynamics.rates))(t)
    dt = (tree.length / K)[:, None, None, None]
    return Q * dt, jnp.broadcast_to(Q_proxy, Q.shape) * dt


@eqx.filter_jit
def make_ctmc_guide(tree: Tree, leaf_logh: Float[Array, "n1 S"], dynamics, num_steps: int) -> CTMCGuide:
    """Pruning with the proxy ``dynamics.proxy_rates()``, h~ on the K-grid of every edge, the
    weight table for the target ``dynamics.rates(t)``, the root (prior ``dynamics.log_prior()``).
    """
    Q_proxy, log_pi0 = dynamics.proxy_rates(), dynamics.log_prior()
    K = num_steps
    s = jnp.linspace(0.0, 1.0, K + 1, dtype=tree.length.dtype)
    remaining = tree.length[:, None] * (1.0 - s[None, :])
    P_grid, P, P_t = _expm_batch(Q_proxy * remaining[..., None, None],
                                 *_step_generators(tree, dynamics, K))
    node = pruning(tree, leaf_logh, P_grid[:, 0])  # P_grid[:, 0] = exp(l Q~)
    logh = jax.vmap(jax.vmap(log_pullback, in_axes=(0, None)))(P_grid, node)
    logh = logh - jnp.max(logh, -1, keepdims=True)
    h_next = jnp.exp(logh[:, 1:])
    num = jnp.einsum("nkxy,nky->nkx", P - P_t, h_next)
    den = jnp.einsum("nkxy,nky->nkx", P_t, h_next)
    logpsi = jnp.log1p(num / den)
    joint = log_pi0 + node[0]
    log_pt = jax.nn.logsumexp(joint)
    return CTMCGuide(jnp.maximum(jnp.log(P), _LOG_FLOOR), logh, logpsi, joint - log_pt, log_pt)


@eqx.filter_jit
def ctmc_naive_guide(tree: Tree, dynamics, num_steps: int) -> CTMCGuide:
    """No guiding (``h~ = 1``, ``psi = 1``, root from the prior): the unconditioned chain."""
    log_pi0 = dynamics.log_prior()
    n1, S = tree.n + 1, log_pi0.shape[0]
    P, _ = _expm_batch(*_step_generators(tree, dynamics, num_steps))
    return CTMCGuide(jnp.maximum(jnp.log(P), _LOG_FLOOR), jnp.zeros((n1, num_steps + 1, S)),
                     jnp.zeros((n1, num_steps, S)), log_pi0 - jax.nn.logsumexp(log_pi0), jnp.zeros(()))


def _kernels(guide: CTMCGuide, correction, tree: Tree, e, k, x, K: int):
    """``(log q°_k(.|x), log q^u_k(.|x))`` on edge ``e``; the correction is off on zero-length
    edges (root, dummy) and on the stay-put transition."""
    lh = guide.logh[e, k + 1]
    logits = guide.logP[e, k, x] + lh
    s = k / K
    t = tree.time[e] - tree.length[e] * (1.0 - s)
    S = lh.shape[0]
    u = correction(s, t, x, lh, e) * (1.0 - jax.nn.one_hot(x, S, dtype=lh.dtype))
    u = jnp.where(tree.length[e] > 0, u, 0.0)
    return jax.nn.log_softmax(logits), jax.nn.log_softmax(logits + u)


def _gumbel(z: Float[Array, "..."]) -> Float[Array, "..."]:
    """Standard Gumbel variables from standard normals (so pCN can move the driving noise)."""
    u = jnp.clip(jax.scipy.special.ndtr(z), 1e-7, 1.0 - 1e-7)
    return -jnp.log(-jnp.log(u))


def ctmc_edge_solve(guide: CTMCGuide, correction, tree: Tree, e: Int[Array, ""], x0: Int[Array, ""],
                    noise: Float[Array, "K S"]):
    """Corrected guided chain along edge ``e`` (``lax.scan`` over the K steps, Gumbel-max
    sampling); returns the end state and the edge terms ``(log psi, KL, martingale)``."""
    K = noise.shape[0]

    def step(x, k):
        logq0, logq = _kernels(guide, correction, tree, e, k, x, K)
        y = jnp.argmax(logq + _gumbel(noise[k]))
        kl = jnp.sum(jnp.exp(logq) * (logq - logq0))
        return y, jnp.stack([guide.logpsi[e, k, x], kl, logq0[y] - logq[y] + kl])

    xK, terms = jax.lax.scan(step, x0, jnp.arange(K))
    return xK, jnp.sum(terms, 0)


def ctmc_forward_tree(guide: CTMCGuide, correction, tree: Tree, z0: Float[Array, " S"],
                      noise: Float[Array, "n1 K S"]):
    """Guided forward pass of the chain over the whole tree; node states ``(n+1,)`` (dummy 0) and
    per-edge terms ``(n+1, 3)``. The root is drawn from the guided root posterior."""
    x_root = jnp.argmax(guide.root_logp + _gumbel(z0))
    xs = jnp.zeros(tree.n + 1, jnp.int32).at[0].set(x_root)
    terms = jnp.zeros((tree.n + 1, 3), guide.logpsi.dtype)
    solve = jax.vmap(lambda e, x, z: ctmc_edge_solve(guide, correction, tree, e, x, z))

    def body(carry, level):
        xs, terms = carry
        x_end, t = solve(level, xs[tree.parent[level]], noise[level])
        return (xs.at[level].set(x_end.astype(jnp.int32)), terms.at[level].set(t)), None

    (xs, terms), _ = jax.lax.scan(body, (xs, terms), tree.levels[1:])
    return xs.at[tree.n].set(0), terms.at[tree.n].set(0.0)


def ctmc_edge_elbo(guide: CTMCGuide, correction, tree: Tree, e: Int[Array, ""], m0: Float[Array, " S"]):
    """Exact expectation over the corrected chain on edge ``e`` started from the distribution
    ``m0``: end marginal and ``sum_k E[log psi_k(x_k) - KL_k(x_k)]`` (forward Kolmogorov
    recursion of the S-vector marginal; differentiable in theta, no sampling)."""
    K = guide.logpsi.shape[1]
    S = m0.shape[0]

    def step(m, k):
        logq0, logq = jax.vmap(lambda x: _kernels(guide, correction, tree, e, k, x, K))(jnp.arange(S))
        kl = jnp.sum(jnp.exp(logq) * (logq - logq0), -1)
        return m @ jnp.exp(logq), m @ (guide.logpsi[e, k] - kl)

    mK, g = jax.lax.scan(step, m0, jnp.arange(K))
    return mK, jnp.sum(g)


def ctmc_tree_elbo(guide: CTMCGuide, correction, tree: Tree):
    """Exact ELBO of the corrected proposal on the whole tree and its node marginals ``(n+1, S)``
    (level scan of :func:`ctmc_edge_elbo`)."""
    m_root = jnp.exp(guide.root_logp)
    marg = jnp.zeros((tree.n + 1, m_root.shape[0]), m_root.dtype).at[0].set(m_root)
    g = jnp.zeros(tree.n + 1, m_root.dtype)
    solve = jax.vmap(lambda e, m: ctmc_edge_elbo(guide, correction, tree, e, m))

    def body(carry, level):
        marg, g = carry
        m_end, ge = solve(level, marg[tree.parent[level]])
        return (marg.at[level].set(m_end), g.at[level].set(ge)), None

    (marg, g), _ = jax.lax.scan(body, (marg, g), tree.levels[1:])
    return guide.log_pt + jnp.sum(g.at[tree.n].set(0.0)), marg.at[tree.n].set(0.0)


def ctmc_path_elbo(guide: CTMCGuide, correction, tree: Tree, path: Int[Array, " D1"]):
    """Per-position exact ELBO terms ``(D,)`` along one root-to-leaf path (padding gives 0)."""
    def body(m, v):
        return ctmc_edge_elbo(guide, correction, tree, v, m)

    _, g = jax.lax.scan(body, jnp.exp(guide.root_logp), path[1:])
    return g
