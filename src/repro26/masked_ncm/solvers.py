"""Causal discovery and exact bounds: PC, CPDAGs, Markov equivalence classes, IDA, Balke-Pearl.

These are the reference computations against which the Masked NCM is judged:

* :func:`pc` -- the PC algorithm (PC-stable skeleton, v-structures, Meek rules R1-R3) with a
  G^2 (likelihood-ratio) conditional-independence test on counts, or an oracle test on an exact
  joint distribution (:func:`oracle_ci_test`).
* :func:`cpdag_from_dag` and :func:`enumerate_mec` -- the CPDAG of a DAG and every DAG of a
  Markov equivalence class (same skeleton and same v-structures; Verma & Pearl 1990).
* :func:`adjustment_query` / :func:`ida` -- P(Y=y | do(X=x)) in a DAG by adjusting for the
  parents of X (back-door with pa(X)), over every DAG of the class: the true bounds
  [min_G Q_G, max_G Q_G] of the abstract (exact with the true joint, plug-in with frequencies).
* :func:`response_function_bounds` -- Balke-Pearl LP bounds over canonical response functions
  for the semi-Markovian instrumental-variable graph Z -> X -> Y, X <-> Y (``scipy.optimize``'s
  ``linprog``).

The discrete graph algorithms run in NumPy: they are combinatorial, tiny (<= 6 nodes) and not
differentiated, so JAX would add compile time and nothing else. Hand-written because no
installed library provides PC/MEC enumeration for discrete data (networkx only checks DAGs).

Graphs are ``(d, d)`` 0/1 integer matrices ``A`` with ``A[i, j] = 1`` for an edge i -> j; in a
CPDAG an undirected edge i - j has ``A[i, j] = A[j, i] = 1``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import networkx as nx
import numpy as np
from jaxtyping import Float, Int
from scipy import optimize, stats

Adjacency = Int[np.ndarray, "d d"]
Joint = Float[np.ndarray, "..."]


# ----------------------------------------------------------------------------- graph helpers


def is_dag(adj: Adjacency) -> bool:
    return nx.is_directed_acyclic_graph(nx.from_numpy_array(np.asarray(adj), create_using=nx.DiGraph))


def skeleton(adj: Adjacency) -> Int[np.ndarray, "d d"]:
    adj = np.asarray(adj)
    return ((adj + adj.T) > 0).astype(int)


def v_structures(adj: Adjacency) -> frozenset[tuple[int, int, int]]:
    """Triples (i, k, j), i < j, with i -> k <- j directed and i, j non-adjacent."""
    adj = np.asarray(adj)
    directed = (adj == 1) & (adj.T == 0)
    skel = skeleton(adj)
    d = adj.shape[0]
    out = set()
    for k in range(d):
        parents = [i for i in range(d) if directed[i, k]]
        for i, j in itertools.combinations(parents, 2):
            if not skel[i, j]:
                out.add((i, k, j))
    return frozenset(out)


def _meek(adj: np.ndarray) -> np.ndarray:
    """Apply Meek's rules R1-R3 until no undirected edge can be oriented (Meek 1995)."""
    adj = adj.copy()
    d = adj.shape[0]

    def und(a, b):
        return adj[a, b] == 1 and adj[b, a] == 1

    def dirc(a, b):
        return adj[a, b] == 1 and adj[b, a] == 0

    def adjacent(a, b):
        return adj[a, b] == 1 or adj[b, a] == 1

    changed = True
    while changed:
        changed = False
        for a, b in itertools.permutations(range(d), 2):
            if not und(a, b):
                continue
            # R1: c -> a - b, c and b non-adjacent  =>  a -> b
            r1 = any(dirc(c, a) and not adjacent(c, b) for c in range(d) if c not in (a, b))
            # R2: a -> c -> b and a - b  =>  a -> b
            r2 = any(dirc(a, c) and dirc(c, b) for c in range(d) if c not in (a, b))
            # R3: a - c -> b, a - e -> b, c and e non-adjacent  =>  a -> b
            r3 = any(
                und(a, c) and dirc(c, b) and und(a, e) and dirc(e, b) and not adjacent(c, e)
                for c, e in itertools.combinations([k for k in range(d) if k not in (a, b)], 2)
            )
            if r1 or r2 or r3:
                adj[b, a] = 0
                changed = True
    return adj


def cpdag_from_dag(dag: Adjacency) -> Int[np.ndarray, "d d"]:
    """CPDAG of ``dag``: skeleton, its v-structures, then Meek's rules (Chickering 1995)."""
    dag = np.asarray(dag, dtype=int)
    adj = skeleton(dag)
    for i, k, j in v_structures(dag):
        adj[k, i] = 0
        adj[k, j] = 0
    return _meek(adj)


def enumerate_mec(cpdag: Adjacency) -> list[Int[np.ndarray, "d d"]]:
    """All DAGs with the CPDAG's skeleton, its directed edges and exactly its v-structures.

    Every DAG has a topological order, so orienting the skeleton along each of the d!
    permutations visits every acyclic orientation; we keep those that are Markov equivalent to
    the CPDAG (same skeleton and v-structures, Verma & Pearl 1990). d <= 6 gives <= 720 orders.
    If the CPDAG was estimated and is not a valid CPDAG (conflicting orientations), the
    constraint on v-structures is relaxed to "no v-structures beyond the estimated ones", and
    then to every acyclic orientation of the skeleton, so the class is never empty.
    """
    cpdag = np.asarray(cpdag, dtype=int)
    d = cpdag.shape[0]
    skel = skeleton(cpdag)
    target = v_structures(cpdag)
    forced = (cpdag == 1) & (cpdag.T == 0)
    edges = [(i, j) for i in range(d) for j in range(i + 1, d) if skel[i, j]]
    seen: dict[bytes, np.ndarray] = {}
    for order in itertools.permutations(range(d)):
        rank = np.empty(d, dtype=int)
        rank[list(order)] = np.arange(d)
        dag = np.zeros((d, d), dtype=int)
        for i, j in edges:
            if rank[i] < rank[j]:
                dag[i, j] = 1
            else:
                dag[j, i] = 1
        seen.setdefault(dag.tobytes(), dag)
    orientations = list(seen.values())
    respects = [g for g in orientations if not (forced & (g == 0)).any()]
    exact = [g for g in respects if v_structures(g) == target]
    if exact:
        return _sorted(exact)
    subset = [g for g in respects if v_structures(g) <= target]
    return _sorted(subset or respects or orientations)


def _sorted(dags: list[np.ndarray]) -> list[np.ndarray]:
    return sorted(dags, key=lambda g: tuple(g.reshape(-1)))


# ----------------------------------------------------------------------------- distributions


def marginal(joint: Joint, keep: tuple[int, ...]) -> np.ndarray:
    """Marginal of a joint table (one axis per variable) over the variables ``keep`` (in order)."""
    joint = np.asarray(joint)
    drop = tuple(a for a in range(joint.ndim) if a not in keep)
    m = joint.sum(axis=drop)
    kept_sorted = sorted(keep)
    return np.moveaxis(m, [kept_sorted.index(k) for k in keep], list(range(len(keep))))


def adjustment_query(joint: Joint, x: int, y: int, adjust: tuple[int, ...], x_val: int = 1,
                     y_val: int = 1, pseudo: float = 0.0) -> float:
    """P(Y=y | do(X=x)) = sum_s P(Y=y | X=x, S=s) P(S=s) with S = ``adjust`` (the parents of X).

    If Y is in S the sum collapses to P(Y=y) (Y is not affected by X). ``pseudo`` adds a
    pseudo-count (as a probability mass per cell) so that empty strata of a plug-in estimate
    fall back to the uniform conditional instead of 0/0.
    """
    joint = np.asarray(joint, dtype=float)
    if y in adjust:
        return float(marginal(joint, (y,))[y_val])
    adjust = tuple(sorted(adjust))
    table = marginal(joint, (*adjust, x, y)) + pseudo  # axes: S..., X, Y
    p_s = marginal(joint, adjust) if adjust else np.array(1.0)
    cond = table[..., x_val, y_val] / table[..., x_val, :].sum(axis=-1)
    return float((cond * p_s).sum() / p_s.sum())


def ida(joint: Joint, dags: list[np.ndarray], x: int, y: int, pseudo: float = 0.0) -> np.ndarray:
    """IDA (Maathuis et al. 2009): the query under each DAG of the class, adjusting for pa_G(X)."""
    return np.array([
        adjustment_query(joint, x, y, tuple(np.flatnonzero(g[:, x])), pseudo=pseudo) for g in dags
    ])


# ----------------------------------------------------------------------------- CI tests and PC

CITest = Callable[[int, int, tuple[int, ...]], bool]


def g2_ci_test(counts: Float[np.ndarray, "..."], alpha: float) -> CITest:
    """G^2 test of X _||_ Y | S on a contingency table of counts (one axis per variable).

    G^2 = 2 sum N(x,y,s) log[N(x,y,s) N(s) / (N(x,s) N(y,s))] is chi^2 with
    (|X|-1)(|Y|-1)|S| degrees of freedom under independence (Spirtes et al. 2000, ch. 5).
    Returns True when independence is *not* rejected at level ``alpha``.
    """
    counts = np.asarray(counts, dtype=float)

    def test(i: int, j: int, s: tuple[int, ...]) -> bool:
        n_xys = marginal(counts, (*s, i, j))
        n_xs = n_xys.sum(axis=-1, keepdims=True)
        n_ys = n_xys.sum(axis=-2, keepdims=True)
        n_s = n_xys.sum(axis=(-1, -2), keepdims=True)
        expected = n_xs * n_ys / np.where(n_s > 0, n_s, 1.0)
        mask = n_xys > 0
        g2 = 2.0 * np.sum(n_xys[mask] * np.log(n_xys[mask] / expected[mask]))
        ki, kj = counts.shape[i], counts.shape[j]
        dof = (ki - 1) * (kj - 1) * int(np.prod([counts.shape[k] for k in s])) if s else (ki - 1) * (kj - 1)
        return bool(stats.chi2.sf(g2, dof) > alpha)

    return test


def oracle_ci_test(joint: Joint, tol: float = 1e-10) -> CITest:
    """Exact test on a known joint: independent iff the conditional mutual information is ~0."""
    joint = np.asarray(joint, dtype=float)

    def test(i: int, j: int, s: tuple[int, ...]) -> bool:
        p = marginal(joint, (*s, i, j))
        p_xs = p.sum(axis=-1, keepdims=True)
        p_ys = p.sum(axis=-2, keepdims=True)
        p_s = p.sum(axis=(-1, -2), keepdims=True)
        mask = p > 0
        cmi = np.sum(p[mask] * np.log((p * p_s)[mask] / (p_xs * p_ys)[mask]))
        return abs(float(cmi)) < tol

    return test


def pc(num_nodes: int, ci_test: CITest) -> Int[np.ndarray, "d d"]:
    """PC algorithm (order-independent skeleton phase of Colombo & Maathuis 2014).

    1. Start from the complete undirected graph; for l = 0, 1, ... remove i - j when
       X_i _||_ X_j | S for some S subset of adj(i) \\ {j} with |S| = l (adjacencies frozen per level).
    2. Orient i -> k <- j for non-adjacent i, j with common neighbour k not in sepset(i, j).
    3. Close under Meek's rules R1-R3.
    """
    d = num_nodes
    adj = np.ones((d, d), dtype=int) - np.eye(d, dtype=int)
    sepset: dict[tuple[int, int], tuple[int, ...]] = {}
    level = 0
    while True:
        frozen = {i: set(np.flatnonzero(adj[i])) for i in range(d)}
        if all(len(frozen[i]) - 1 < level for i in range(d)):
            break
        for i, j in itertools.permutations(range(d), 2):
            if not adj[i, j]:
                continue
            for s in itertools.combinations(sorted(frozen[i] - {j}), level):
                if ci_test(i, j, s):
                    adj[i, j] = adj[j, i] = 0
                    sepset[(i, j)] = sepset[(j, i)] = s
                    break
        level += 1
    for i, j in itertools.combinations(range(d), 2):
        if adj[i, j]:
            continue
        for k in range(d):
            if k in (i, j) or not (adj[i, k] and adj[j, k]):
                continue
            # i -> k <- j unless an earlier v-structure already oriented k -> i or k -> j
            # (conflicts only arise from test errors on samples)
            if k not in sepset.get((i, j), ()) and adj[i, k] and adj[j, k]:
                adj[k, i] = adj[k, j] = 0
    return _meek(adj)


def shd(a: Adjacency, b: Adjacency) -> int:
    """Structural Hamming distance between two CPDAGs (each unordered pair counted once)."""
    a, b = np.asarray(a), np.asarray(b)
    d = a.shape[0]
    return int(sum((a[i, j], a[j, i]) != (b[i, j], b[j, i]) for i, j in itertools.combinations(range(d), 2)))


# ----------------------------------------------------------------------------- Balke-Pearl LP


def response_function_bounds(p_xy_given_z: Float[np.ndarray, "z x y"],
                             objective: Float[np.ndarray, "4 4"]) -> tuple[float, float]:
    """Balke-Pearl bounds for binary Z -> X -> Y with unobserved X <-> Y confounding.

    Each unit has a response type (r_x, r_y): r_x maps z -> x, r_y maps x -> y, four functions
    each (0: constant 0, 1: identity, 2: negation, 3: constant 1; :func:`_response`). A distribution q over the 16 types induces
    P(x, y | z) = sum q(r_x, r_y) [r_x(z) = x][r_y(x) = y]; a causal query is linear in q with
    coefficients ``objective[r_x, r_y]``, e.g. P(Y=1 | do(X=1)) has objective [r_y(1) = 1].
    The bounds are min / max of that linear function over the polytope of q matching the
    observed P(x, y | z) -- two ``linprog`` solves. The number of Z values may be 1 (no
    instrument: the Manski bounds). Returns (nan, nan) if the observed table is incompatible.
    """
    p = np.asarray(p_xy_given_z, dtype=float)
    nz = p.shape[0]
    rows, rhs = [], []
    for z in range(nz):
        for x in range(2):
            for y in range(2):
                row = np.zeros((4, 4))
                for rx in range(4):
                    if _response(rx, z) != x:
                        continue
                    for ry in range(4):
                        if _response(ry, x) == y:
                            row[rx, ry] = 1.0
                rows.append(row.reshape(-1))
                rhs.append(p[z, x, y])
    a_eq, b_eq = np.array(rows), np.array(rhs)
    c = np.asarray(objective, dtype=float).reshape(-1)
    out = []
    for sign in (1.0, -1.0):
        res = optimize.linprog(sign * c, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        out.append(sign * res.fun if res.status == 0 else np.nan)
    return float(out[0]), float(out[1])


def _response(r: int, v: int) -> int:
    """Response function number r (0: always 0, 1: identity, 2: negation, 3: always 1) at v."""
    return (0, v, 1 - v, 1)[r]


def query_objective(x_val: int = 1, y_val: int = 1) -> np.ndarray:
    """Objective of P(Y=y | do(X=x)) over response types: [r_y(x) = y]."""
    obj = np.zeros((4, 4))
    for ry in range(4):
        if _response(ry, x_val) == y_val:
            obj[:, ry] = 1.0
    return obj


def ace_objective() -> np.ndarray:
    """Objective of the average causal effect P(Y=1 | do(X=1)) - P(Y=1 | do(X=0))."""
    return query_objective(1, 1) - query_objective(0, 1)


def dag_mle_nll(freq: Joint, dag: Adjacency) -> float:
    """Smallest cross-entropy -sum_v P_hat(v) log P(v) over distributions Markov to ``dag``:
    sum_i H_hat(V_i | pa_i), attained by the empirical CPTs."""
    freq = np.asarray(freq, dtype=float)
    freq = freq / freq.sum()
    total = 0.0
    for i in range(freq.ndim):
        parents = tuple(np.flatnonzero(np.asarray(dag)[:, i]))
        fam = marginal(freq, (*parents, i))
        par = fam.sum(axis=-1, keepdims=True)
        mask = fam > 0
        total -= float(np.sum(fam[mask] * np.log(fam[mask] / np.broadcast_to(par, fam.shape)[mask])))
    return total
