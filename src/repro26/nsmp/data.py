"""Federated problems with overlapping coordinate blocks (the abstract's generalized setting).

Client ``i`` owns a coordinate block ``S_i`` of ``{0..d-1}`` and a local objective

    f_i(x_{S_i}) = sum_k  loss(a_k^T x_{S_i}, b_k)  +  1/2 sum_{j in S_i} (lam / c_j) x_j^2,

where ``c_j`` is the number of clients owning coordinate ``j`` (so the ridge term of the joint
objective ``F = sum_i f_i`` is exactly ``lam/2 ||x||^2``). ``loss`` is squared (ridge and sensor
localisation: quadratic ``F``), logistic or Huber (convex, non-quadratic).

Overlap patterns (how the blocks intersect, i.e. the nerve skeleton's shape):

* ``chain``: block ``i`` shares ``s`` coordinates with block ``i+1`` and nothing else;
* ``tree``: a uniformly random labelled tree; each tree edge owns ``s`` fresh shared coordinates;
* ``loopy``: a random tree plus extra edges between clients at tree distance 2 or 3 (short
  cycles), each with its own shared coordinates: the nerve has cycles, so the running-intersection
  property fails on any spanning tree and separators must be enlarged;
* ``grid`` (sensor localisation): sensors in the unit square, clients are the cells of a
  ``g x g`` grid; a client owns the relative-position measurements whose first endpoint lies in
  its cell (so its block holds its own sensors and the other endpoints), plus anchor readings.

Every generator is a pure function of ``(seed, sizes)`` with numpy's ``default_rng``; nothing is
downloaded. ``s`` is drawn per edge from ``[shared_min, shared_max]`` so that the spanning tree of
maximum weight ``|S_i cap S_j|`` is not arbitrary.
"""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np

from repro26.core.config import Count, NonNegative, NonNegativeInt, Positive, Probability

PROBLEMS = ("ridge", "logistic", "huber", "sensor")
TOPOLOGIES = ("chain", "tree", "loopy", "grid")
QUADRATIC = ("ridge", "sensor")
LOSS_OF_PROBLEM = {"ridge": "squared", "sensor": "squared", "logistic": "logistic", "huber": "huber"}


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Sizes of one problem instance (all from the method config)."""

    n_clients: Count
    private_dim: Count
    shared_min: NonNegativeInt
    shared_max: NonNegativeInt
    extra_edges: NonNegative
    rows_per_client: Count
    ridge: NonNegative
    noise: NonNegative
    sensors_per_client: Count
    sensor_radius: Positive
    anchor_fraction: Probability


@dataclasses.dataclass(frozen=True)
class BlockProblem:
    """``F(x) = sum_i f_i(x[blocks[i]])`` with ``f_i`` given by ``A[i], b[i]``, loss and ridge."""

    d: int
    blocks: tuple[np.ndarray, ...]  # sorted global coordinate indices of S_i
    A: tuple[np.ndarray, ...]  # [m_i, |S_i|] rows a_k restricted to S_i
    b: tuple[np.ndarray, ...]  # [m_i] targets (squared, huber) or labels in {-1, +1} (logistic)
    loss: str
    ridge: float

    @property
    def n(self) -> int:
        return len(self.blocks)

    def owners(self) -> np.ndarray:
        """``c_j``: how many clients own coordinate ``j``."""
        return np.bincount(np.concatenate(self.blocks), minlength=self.d)


def parse_case(case: str) -> tuple[str, str, int | None]:
    """``"ridge-chain"`` -> ``("ridge", "chain", None)``; ``"ridge-chain-n64"`` -> ``(.., 64)``."""
    parts = case.split("-")
    if len(parts) not in (2, 3) or parts[0] not in PROBLEMS or parts[1] not in TOPOLOGIES:
        raise ValueError(
            f"case '{case}': expected <problem>-<topology>[-n<clients>] with problem in "
            f"{', '.join(PROBLEMS)} and topology in {', '.join(TOPOLOGIES)}"
        )
    if (parts[0] == "sensor") != (parts[1] == "grid"):
        raise ValueError(f"case '{case}': the sensor problem goes with the grid topology only")
    n = None
    if len(parts) == 3:
        if not (parts[2].startswith("n") and parts[2][1:].isdigit()):
            raise ValueError(f"case '{case}': the third part must be n<clients>, e.g. n64")
        n = int(parts[2][1:])
    return parts[0], parts[1], n


# ----------------------------------------------------------------------------- overlap patterns


def _edge_sizes(rng: np.random.Generator, m: int, sizes: Sizes) -> np.ndarray:
    return rng.integers(sizes.shared_min, sizes.shared_max + 1, size=m)


def overlap_graph(topology: str, n: int, rng: np.random.Generator, extra_edges: float) -> nx.Graph:
    """The graph whose edges will carry shared coordinates (the designed nerve skeleton)."""
    if topology == "chain":
        return nx.path_graph(n)
    tree = nx.random_labeled_tree(n, seed=int(rng.integers(2**31)))
    if topology == "tree":
        return tree
    graph = nx.Graph(tree)
    n_extra = int(round(extra_edges * n))
    dist = dict(nx.all_pairs_shortest_path_length(tree, cutoff=3))
    candidates = sorted((u, v) for u in range(n) for v, k in dist[u].items() if u < v and k >= 2)
    if candidates:
        pick = rng.choice(len(candidates), size=min(n_extra, len(candidates)), replace=False)
        graph.add_edges_from(candidates[k] for k in np.sort(pick))
    return graph


def graph_blocks(graph: nx.Graph, rng: np.random.Generator, sizes: Sizes) -> tuple[int, list[np.ndarray]]:
    """Blocks from an overlap graph: private coordinates per client, fresh shared ones per edge."""
    n = graph.number_of_nodes()
    blocks: list[list[int]] = [[] for _ in range(n)]
    d = 0
    for i in range(n):
        blocks[i].extend(range(d, d + sizes.private_dim))
        d += sizes.private_dim
    edges = sorted(tuple(sorted(e)) for e in graph.edges)
    for (u, v), s in zip(edges, _edge_sizes(rng, len(edges), sizes)):
        shared = range(d, d + int(s))
        blocks[u].extend(shared)
        blocks[v].extend(shared)
        d += int(s)
    return d, [np.array(sorted(b), dtype=np.int64) for b in blocks]


def linear_model_problem(problem: str, d: int, blocks: list[np.ndarray], rng: np.random.Generator,
                         sizes: Sizes) -> BlockProblem:
    """Regression / classification rows on each client's block, shared ground truth ``x_true``."""
    x_true = rng.standard_normal(d)
    A, b = [], []
    for blk in blocks:
        a = rng.standard_normal((sizes.rows_per_client, blk.size)) / np.sqrt(blk.size)
        u = a @ x_true[blk]
        if problem == "ridge":
            t = u + sizes.noise * rng.standard_normal(u.size)
        elif problem == "huber":  # heavy-tailed noise: Student-t with 2 degrees of freedom
            t = u + sizes.noise * rng.standard_t(2.0, size=u.size)
        else:  # logistic labels in {-1, +1}
            t = np.where(u + sizes.noise * rng.standard_normal(u.size) >= 0, 1.0, -1.0)
        A.append(a)
        b.append(t)
    return BlockProblem(d, tuple(blocks), tuple(A), tuple(b), LOSS_OF_PROBLEM[problem], sizes.ridge)


def sensor_problem(n: int, rng: np.random.Generator, sizes: Sizes) -> BlockProblem:
    """Sensor-localisation least squares on a ``g x g`` grid of clients (``n = g^2``).

    ``k`` sensors per cell at uniform positions ``p_s in R^2``; every pair closer than
    ``radius / g`` gives a noisy relative reading ``p_u - p_v + noise``; each sensor is an anchor
    (noisy absolute reading) with probability ``anchor_fraction`` (at least one anchor).
    Coordinates ``2s, 2s+1`` are sensor ``s``'s position. Measurement ``(u, v)`` with ``u < v``
    (sensors numbered cell by cell) belongs to the client of ``u``'s cell.
    """
    g = int(round(np.sqrt(n)))
    if g * g != n:
        raise ValueError(f"sensor problem needs a square number of clients, got {n}")
    k = sizes.sensors_per_client
    cell = np.repeat(np.arange(n), k)
    corner = np.stack([cell % g, cell // g], axis=1) / g
    pos = corner + rng.uniform(size=(n * k, 2)) / g
    anchors = rng.uniform(size=n * k) < sizes.anchor_fraction
    anchors[rng.integers(n * k)] = True
    diff = pos[:, None, :] - pos[None, :, :]
    close = np.triu(np.linalg.norm(diff, axis=-1) < sizes.sensor_radius / g, k=1)
    d = 2 * n * k
    blocks, A, b = [], [], []
    for c in range(n):
        own = np.flatnonzero(cell == c)
        pairs = [(u, v) for u in own for v in np.flatnonzero(close[u])]
        sensors = np.union1d(own, [v for _, v in pairs]).astype(np.int64)
        blk = np.sort(np.concatenate([2 * sensors, 2 * sensors + 1]))
        slot = {int(j): t for t, j in enumerate(blk)}
        rows, targets = [], []
        for u, v in pairs:
            for ax in range(2):
                row = np.zeros(blk.size)
                row[slot[2 * u + ax]], row[slot[2 * v + ax]] = 1.0, -1.0
                rows.append(row)
                targets.append(pos[u, ax] - pos[v, ax] + sizes.noise * rng.standard_normal())
        for u in own[anchors[own]]:
            for ax in range(2):
                row = np.zeros(blk.size)
                row[slot[2 * u + ax]] = 1.0
                rows.append(row)
                targets.append(pos[u, ax] + sizes.noise * rng.standard_normal())
        blocks.append(blk)
        A.append(np.array(rows).reshape(-1, blk.size))
        b.append(np.array(targets))
    return BlockProblem(d, tuple(blocks), tuple(A), tuple(b), "squared", sizes.ridge)


def make_problem(case: str, seed: int, sizes: Sizes) -> BlockProblem:
    """The problem of ``case`` (``<problem>-<topology>[-n<clients>]``) for one seed."""
    problem, topology, n = parse_case(case)
    n = n or sizes.n_clients
    rng = np.random.default_rng([seed, n, PROBLEMS.index(problem), TOPOLOGIES.index(topology)])
    if problem == "sensor":
        return sensor_problem(n, rng, sizes)
    graph = overlap_graph(topology, n, rng, sizes.extra_edges)
    d, blocks = graph_blocks(graph, rng, sizes)
    return linear_model_problem(problem, d, blocks, rng, sizes)
