"""Nerve skeleton, spanning tree, running intersection and the tree-elimination schedule.

*Nerve skeleton* (abstract): the graph on clients with an edge ``{i, j}`` whenever
``S_i cap S_j`` is non-empty, weighted by ``|S_i cap S_j|``. NSMP runs on a spanning tree ``T`` of
it; we take the maximum-weight spanning tree (``networkx.maximum_spanning_tree``), so that the
largest overlaps are exchanged directly.

*Running-intersection property* (RIP): for every coordinate ``j`` the clients owning ``j`` form
a connected subtree of ``T``. On a tree-shaped nerve the maximum-weight spanning tree is the nerve
itself and RIP holds; on a loopy nerve it fails for the coordinates of the dropped edges. The
repair enlarges blocks: ``j`` is added to every client on the ``T``-paths between its owners (the
Steiner subtree of its owners in ``T``), exactly the junction-tree construction. Enlarged
coordinates only pass through a client (its ``f_i`` does not depend on them).

*Tree-elimination schedule*: root ``T`` at its centre (smallest height, so fewest sequential
rounds); node ``i`` sends to its parent ``p`` after all its children, over the separator
``S~_i cap S~_p``, and eliminates ``S~_i minus S~_p`` -- by RIP each such coordinate appears
nowhere outside ``i``'s subtree, so partial minimisation there is exact. Each depth level is one
synchronous round; a pass takes ``height`` rounds and ``n - 1`` messages.

:class:`Instance` packs a problem and its schedule into padded arrays (one extra dummy client
``n`` and dummy coordinate ``d``; out-of-range scatter indices are dropped), so one compiled
program serves every seed and ``jax.vmap`` runs the seeds together.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax.numpy as jnp
import networkx as nx
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from repro26.nsmp.data import BlockProblem


def nerve_skeleton(blocks: tuple[np.ndarray, ...]) -> nx.Graph:
    """Graph on clients; edge weight ``|S_i cap S_j|`` for every overlapping pair."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(blocks)))
    for own in _owners(blocks).values():
        for a in range(len(own)):
            for c in own[a + 1:]:
                w = graph.get_edge_data(own[a], c, {"weight": 0})["weight"]
                graph.add_edge(own[a], c, weight=w + 1)
    return graph


def spanning_tree(nerve: nx.Graph) -> nx.Graph:
    """Maximum-weight spanning tree; components of a disconnected nerve are joined by
    weight-0 edges (their messages then carry only the objective constant)."""
    tree = nx.maximum_spanning_tree(nerve, weight="weight")
    comps = [min(c) for c in nx.connected_components(tree)]
    for a, c in zip(comps, comps[1:]):
        tree.add_edge(a, c, weight=0)
    return tree


def _owners(blocks: tuple[np.ndarray, ...]) -> dict[int, list[int]]:
    owners: dict[int, list[int]] = {}
    for i, blk in enumerate(blocks):
        for j in blk.tolist():
            owners.setdefault(j, []).append(i)
    return owners


def rip_violations(tree: nx.Graph, blocks: tuple[np.ndarray, ...]) -> list[int]:
    """Coordinates whose owners do not induce a connected subtree of ``tree``."""
    return sorted(j for j, own in _owners(blocks).items()
                  if len(own) > 1 and not nx.is_connected(tree.subgraph(own)))


def enlarge_blocks(tree: nx.Graph, blocks: tuple[np.ndarray, ...]) -> tuple[tuple[np.ndarray, ...], int]:
    """Add each violating coordinate to the clients on the tree paths between its owners.

    Returns the enlarged blocks and the number of (client, coordinate) pairs added.
    """
    extra: list[set[int]] = [set() for _ in blocks]
    owners = _owners(blocks)
    for j in rip_violations(tree, blocks):
        own = owners[j]
        paths = nx.single_source_shortest_path(tree, own[0])
        for o in own[1:]:
            for i in paths[o]:
                extra[i].add(j)
    added = 0
    out = []
    for blk, ex in zip(blocks, extra):
        new = np.union1d(blk, np.fromiter(ex, dtype=np.int64, count=len(ex)))
        added += new.size - blk.size
        out.append(new.astype(np.int64))
    return tuple(out), added


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Rooted spanning tree with enlarged blocks and separators (numpy; built once per problem)."""

    tree: nx.Graph
    root: int
    parent: np.ndarray  # [n], -1 at the root
    depth: np.ndarray  # [n]
    blocks: tuple[np.ndarray, ...]  # enlarged blocks S~_i
    separators: tuple[np.ndarray, ...]  # S~_i cap S~_parent (empty at the root)
    violations: int  # coordinates violating RIP before the repair
    added: int  # (client, coordinate) pairs added by the repair

    @property
    def height(self) -> int:
        return int(self.depth.max())

    def floats_up(self, newton: bool) -> int:
        """Floats of one leaf-to-root pass: per message the separator's quadratic
        (``s(s+1)/2 + s``) and the reduced constant; Newton rounds also carry ``sum f_i``."""
        s = np.array([sep.size for sep in self.separators])[self.parent >= 0]
        return int(np.sum(s * (s + 1) // 2 + s + 1 + int(newton)))

    def floats_down(self, newton: bool) -> int:
        """Floats of one root-to-leaf pass: the separator's values (+ the step size)."""
        s = np.array([sep.size for sep in self.separators])[self.parent >= 0]
        return int(np.sum(s + int(newton)))


def build_schedule(blocks: tuple[np.ndarray, ...], repair: bool = True, tree: nx.Graph | None = None,
                   root: int | None = None) -> Schedule:
    """Nerve skeleton -> max-weight spanning tree (or the given ``tree``) -> RIP repair -> schedule."""
    if tree is None:
        tree = spanning_tree(nerve_skeleton(blocks))
    violations = len(rip_violations(tree, blocks))
    added = 0
    if violations and not repair:
        raise ValueError(f"the spanning tree violates the running intersection property for "
                         f"{violations} coordinate(s): message passing on it returns a wrong "
                         f"optimum; build the schedule with repair=True")
    if violations:
        blocks, added = enlarge_blocks(tree, blocks)
    if root is None:
        root = int(nx.center(tree)[0])
    n = len(blocks)
    parent = -np.ones(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for u, v in nx.bfs_edges(tree, root):
        parent[v], depth[v] = u, depth[u] + 1
    seps = tuple(np.intersect1d(blocks[i], blocks[parent[i]]) if parent[i] >= 0
                 else np.zeros(0, np.int64) for i in range(n))
    return Schedule(tree, root, parent, depth, tuple(blocks), seps, violations, added)


# ----------------------------------------------------------------------------- padded arrays


class Instance(eqx.Module):
    """One problem with its schedule as padded arrays (leading seed axis when stacked).

    Client rows ``0..n-1`` are real, row ``n`` is a dummy; coordinate ``d`` is a dummy sink.
    Local slot ``t`` of client ``i`` holds global coordinate ``idx[i, t]`` of the enlarged block.
    """

    idx: Int[Array, "n1 B"]
    valid: Bool[Array, "n1 B"]  # slot belongs to the enlarged block S~_i
    owned: Bool[Array, "n1 B"]  # slot belongs to the original block S_i (f_i depends on it)
    A: Float[Array, "n1 M B"]
    b: Float[Array, "n1 M"]
    rowmask: Bool[Array, "n1 M"]
    r: Float[Array, "n1 B"]  # ridge weight lam / c_j on owned slots
    sep: Bool[Array, "n1 B"]  # slot is in the separator with the parent
    ppos: Int[Array, "n1 B"]  # the slot's position in the parent's layout (B: none)
    parent: Int[Array, " n1"]  # parent client (n + 1: none)
    levels: Int[Array, "L W"]  # clients at each depth (padded with the dummy n)
    cmask: Bool[Array, " d1"]  # coordinate is used by the problem
    counts: Float[Array, " d1"]  # c_j (1 for unused coordinates)
    loss: str = eqx.field(static=True)

    @property
    def shared(self) -> Bool[Array, "n1 B"]:
        """Owned slots of coordinates owned by several clients (what baselines communicate)."""
        return self.owned & (self.counts[self.idx] > 1)


def instance_arrays(problem: BlockProblem, sched: Schedule, B: int, M: int, L: int, W: int,
                    D: int) -> dict[str, np.ndarray]:
    """Padded numpy arrays of one instance (sizes at least those of the problem)."""
    n = problem.n
    counts = problem.owners()
    out = {
        "idx": np.full((n + 1, B), D, np.int32), "valid": np.zeros((n + 1, B), bool),
        "owned": np.zeros((n + 1, B), bool), "A": np.zeros((n + 1, M, B)),
        "b": np.zeros((n + 1, M)), "rowmask": np.zeros((n + 1, M), bool),
        "r": np.zeros((n + 1, B)), "sep": np.zeros((n + 1, B), bool),
        "ppos": np.full((n + 1, B), B, np.int32), "parent": np.full(n + 1, n + 1, np.int32),
        "levels": np.full((L, W), n, np.int32), "cmask": np.zeros(D + 1, bool),
        "counts": np.ones(D + 1),
    }
    out["cmask"][: problem.d] = counts > 0
    out["counts"][: problem.d] = np.maximum(counts, 1)
    for i in range(n):
        blk, own = sched.blocks[i], problem.blocks[i]
        k = blk.size
        out["idx"][i, :k] = blk
        out["valid"][i, :k] = True
        pos = np.searchsorted(blk, own)
        out["owned"][i, pos] = True
        m = problem.A[i].shape[0]
        out["A"][i, :m, pos] = problem.A[i].T
        out["b"][i, :m] = problem.b[i]
        out["rowmask"][i, :m] = True
        out["r"][i, pos] = problem.ridge / counts[own]
        if sched.parent[i] >= 0:
            p = sched.parent[i]
            sep = sched.separators[i]
            out["sep"][i, np.searchsorted(blk, sep)] = True
            out["ppos"][i, np.searchsorted(blk, sep)] = np.searchsorted(sched.blocks[p], sep)
            out["parent"][i] = p
    for lev in range(sched.height + 1):
        nodes = np.flatnonzero(sched.depth == lev)
        out["levels"][lev, : nodes.size] = nodes
    return out


def pack(problems: list[BlockProblem], schedules: list[Schedule]) -> dict[str, np.ndarray]:
    """Stack several instances (one per seed) padded to common sizes; same ``n`` required."""
    if len({p.n for p in problems}) != 1:
        raise ValueError("pack: every instance needs the same number of clients")
    B = max(max(b.size for b in s.blocks) for s in schedules)
    M = max(max(a.shape[0] for a in p.A) for p in problems)
    L = max(s.height + 1 for s in schedules)
    W = max(int(np.bincount(s.depth).max()) for s in schedules)
    D = max(p.d for p in problems)
    arrays = [instance_arrays(p, s, B, M, L, W, D) for p, s in zip(problems, schedules)]
    return {k: np.stack([a[k] for a in arrays]) for k in arrays[0]}


def to_instance(arrays: dict[str, np.ndarray], loss: str, dtype) -> Instance:
    """Arrays (from :func:`pack` or an ``.npz``) as an :class:`Instance` in ``dtype``."""
    fields = {f.name for f in dataclasses.fields(Instance)} - {"loss"}
    cast = {k: jnp.asarray(arrays[k], dtype) if np.issubdtype(arrays[k].dtype, np.floating)
            else jnp.asarray(arrays[k]) for k in fields}
    return Instance(**cast, loss=loss)
