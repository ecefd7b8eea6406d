"""Random discrete SCMs, their exact joints, observational samples, and the IV variant.

A Markovian instance is a random DAG over d variables with cardinality K and random CPTs
P(V_i | pa_i) ~ Dirichlet(concentration); its joint is the product of the CPTs (one axis per
variable, K^d cells). The query is Q = P(Y=1 | do(X=1)), with X a variable that has an
undirected edge in the CPDAG (so the class disagrees about pa(X)) and Y a possible descendant of
X in some DAG of the class. Observational data are multinomial counts of n i.i.d. draws.

The semi-Markovian instance is the instrumental-variable graph Z -> X -> Y with X <-> Y
confounded, drawn as a random distribution over the 16 Balke-Pearl response types.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from jaxtyping import Float, Int

from repro26.masked_ncm import solvers


@dataclasses.dataclass(frozen=True)
class Instance:
    """One random SCM with its query, CPDAG, Markov equivalence class and exact IDA values."""

    dag: Int[np.ndarray, "d d"]
    joint: Float[np.ndarray, "..."]
    x: int
    y: int
    cpdag: Int[np.ndarray, "d d"]
    mec: list[np.ndarray]
    true_effect: float
    ida_exact: Float[np.ndarray, " m"]

    @property
    def num_nodes(self) -> int:
        return self.dag.shape[0]

    @property
    def card(self) -> int:
        return self.joint.shape[0]


def random_dag(rng: np.random.Generator, d: int, edge_prob: float) -> Int[np.ndarray, "d d"]:
    """Erdos-Renyi DAG: a random order, each forward pair an edge with prob ``edge_prob``."""
    order = rng.permutation(d)
    adj = np.zeros((d, d), dtype=int)
    for a, b in itertools.combinations(range(d), 2):
        if rng.random() < edge_prob:
            adj[order[a], order[b]] = 1
    return adj


def random_joint(rng: np.random.Generator, dag: np.ndarray, card: int,
                 concentration: float) -> Float[np.ndarray, "..."]:
    """Joint table of a DAG with CPTs P(V_i | pa_i) ~ Dirichlet(concentration * 1_K)."""
    d = dag.shape[0]
    joint = np.ones((card,) * d)
    for i in range(d):
        parents = list(np.flatnonzero(dag[:, i]))
        cpt = rng.dirichlet(np.full(card, concentration), size=(card,) * len(parents))
        # broadcast the CPT (axes: parents..., V_i) onto the full joint's axes
        axes = [*parents, i]
        order = np.argsort(axes)
        shape = [card if a in axes else 1 for a in range(d)]
        joint = joint * np.transpose(cpt, order).reshape(shape)
    return joint


def possible_descendants(mec: list[np.ndarray], x: int) -> list[int]:
    """Variables that are descendants of X in at least one DAG of the class."""
    import networkx as nx

    out = set()
    for g in mec:
        out |= nx.descendants(nx.from_numpy_array(g, create_using=nx.DiGraph), x)
    return sorted(out)


def random_instance(rng: np.random.Generator, d: int, card: int, edge_prob: float,
                    concentration: float, max_class_size: int) -> Instance:
    """Draw SCMs until X has an undirected CPDAG edge, Y is a possible descendant of X and the
    class has at most ``max_class_size`` DAGs (so every mask can be optimised)."""
    for _ in range(10_000):
        dag = random_dag(rng, d, edge_prob)
        cpdag = solvers.cpdag_from_dag(dag)
        undirected = np.flatnonzero(((cpdag == 1) & (cpdag.T == 1)).any(axis=1))
        if undirected.size == 0:
            continue
        mec = solvers.enumerate_mec(cpdag)
        if len(mec) > max_class_size:
            continue
        x = int(rng.choice(undirected))
        targets = possible_descendants(mec, x)
        if not targets:
            continue
        y = int(rng.choice(targets))
        joint = random_joint(rng, dag, card, concentration)
        ida_exact = solvers.ida(joint, mec, x, y)
        true_effect = solvers.adjustment_query(joint, x, y, tuple(np.flatnonzero(dag[:, x])))
        return Instance(dag, joint, x, y, cpdag, mec, true_effect, ida_exact)
    raise RuntimeError(f"no admissible random DAG with {d} nodes and edge_prob {edge_prob}")


def sample_counts(rng: np.random.Generator, joint: np.ndarray, n: int) -> Int[np.ndarray, "..."]:
    """Counts of ``n`` i.i.d. draws from ``joint`` (same shape as the joint)."""
    p = np.asarray(joint, dtype=float).reshape(-1)
    return rng.multinomial(n, p / p.sum()).reshape(joint.shape)


# ----------------------------------------------------------------------------- IV variant


@dataclasses.dataclass(frozen=True)
class IVInstance:
    """Z -> X -> Y with X <-> Y: P(Z) and a distribution over the 16 response types."""

    p_z: Float[np.ndarray, " 2"]
    q: Float[np.ndarray, "4 4"]

    def p_xy_given_z(self) -> Float[np.ndarray, "2 2 2"]:
        out = np.zeros((2, 2, 2))
        for z, rx, ry in itertools.product(range(2), range(4), range(4)):
            x = solvers._response(rx, z)
            out[z, x, solvers._response(ry, x)] += self.q[rx, ry]
        return out

    def joint(self) -> Float[np.ndarray, "2 2 2"]:
        """P(z, x, y) with axes (Z, X, Y)."""
        return self.p_z[:, None, None] * self.p_xy_given_z()

    def true_effect(self) -> float:
        return float((self.q * solvers.query_objective()).sum())


def random_iv_instance(rng: np.random.Generator, concentration: float) -> IVInstance:
    pz = rng.uniform(0.3, 0.7)
    q = rng.dirichlet(np.full(16, concentration)).reshape(4, 4)
    return IVInstance(np.array([1 - pz, pz]), q)


# ----------------------------------------------------------------------------- datasets

#: pseudo-count per cell (in counts) for plug-in conditionals of empty strata
PSEUDO = 0.5


def _union(*classes: list[np.ndarray]) -> tuple[list[np.ndarray], list[list[int]]]:
    """The distinct DAGs of several classes, and for each class the indices of its members."""
    dags: dict[bytes, int] = {}
    out: list[np.ndarray] = []
    index = []
    for mec in classes:
        idx = []
        for g in mec:
            g = np.asarray(g, dtype=int)
            if g.tobytes() not in dags:
                dags[g.tobytes()] = len(out)
                out.append(g)
            idx.append(dags[g.tobytes()])
        index.append(idx)
    return out, index


def graph_dataset(seeds, num_nodes: int, card: int, edge_prob: float, concentration: float,
                  max_class_size: int, sample_sizes, pc_alpha: float) -> list[dict]:
    """For every seed: a random instance, and for every n its counts, the PC estimate of the
    CPDAG (G^2 tests at level ``pc_alpha``) and its class, the masks to optimise (the union of
    the true class and PC's), plug-in IDA over both classes, the exact query of every member of
    PC's class, and the single DAG a user would pick: a random consistent extension of PC's
    CPDAG (a uniform member of its class), drawn independently of everything else."""
    out = []
    for seed in seeds:
        rng = np.random.default_rng([seed, num_nodes, 3])
        inst = random_instance(rng, num_nodes, card, edge_prob, concentration, max_class_size)
        pick = np.random.default_rng([seed, num_nodes, 11])
        samples = []
        for n in sample_sizes:
            counts = sample_counts(rng, inst.joint, n)
            est = solvers.pc(num_nodes, solvers.g2_ci_test(counts, pc_alpha))
            pc_mec = solvers.enumerate_mec(est)
            masks, (true_idx, pc_idx) = _union(inst.mec, pc_mec)
            single = pc_mec[int(pick.integers(len(pc_mec)))]
            freq = counts / n
            samples.append({
                "n": n, "counts": counts.reshape(-1), "pc_cpdag": est,
                "pc_shd": solvers.shd(est, inst.cpdag), "pc_mec": pc_mec,
                "masks": masks, "true_index": true_idx, "pc_index": pc_idx,
                "ida_plugin": solvers.ida(freq, inst.mec, inst.x, inst.y, pseudo=PSEUDO / n),
                "ida_plugin_pc": solvers.ida(freq, pc_mec, inst.x, inst.y, pseudo=PSEUDO / n),
                "ida_exact_pc": solvers.ida(inst.joint, pc_mec, inst.x, inst.y),
                "nll_mle": [solvers.dag_mle_nll(freq, g) for g in masks],
                "single_dag": single, "single_nll_mle": solvers.dag_mle_nll(freq, single),
                "single_exact": float(solvers.ida(inst.joint, [single], inst.x, inst.y)[0]),
            })
        out.append({
            "seed": seed, "num_nodes": num_nodes, "card": card, "dag": inst.dag,
            "joint": inst.joint.reshape(-1), "x": inst.x, "y": inst.y, "cpdag": inst.cpdag,
            "mec": inst.mec, "true_effect": inst.true_effect, "ida_exact": inst.ida_exact,
            "samples": samples,
        })
    return out


def natural_bounds(p_xy: Float[np.ndarray, "2 2"]) -> tuple[float, float]:
    """Bounds of P(Y=1 | do(X=1)) from P(x, y) alone, ignoring the instrument (Manski 1990):
    P(X=1, Y=1) <= Q <= P(X=1, Y=1) + P(X=0)."""
    lo = float(p_xy[1, 1])
    return lo, lo + float(p_xy[0].sum())


def iv_dataset(seeds, concentration: float, sample_sizes) -> list[dict]:
    """For every seed: a random IV model, the Balke-Pearl bounds of P(Y=1 | do(X=1)) from the
    true P(x, y | z), and per n the counts over (Z, X, Y), the plug-in LP bounds and the plug-in
    natural bounds (no instrument: the trivial baseline)."""
    out = []
    objective = solvers.query_objective()
    for seed in seeds:
        rng = np.random.default_rng([seed, 7])
        inst = random_iv_instance(rng, concentration)
        lo, hi = solvers.response_function_bounds(inst.p_xy_given_z(), objective)
        samples = []
        for n in sample_sizes:
            counts = sample_counts(rng, inst.joint(), n)
            cond = (counts + PSEUDO) / (counts + PSEUDO).sum(axis=(1, 2), keepdims=True)
            plo, phi = solvers.response_function_bounds(cond, objective)
            joint = counts / counts.sum()
            nat_lo, nat_hi = natural_bounds(joint.sum(axis=0))
            samples.append({"n": n, "counts": counts.reshape(-1), "lp_lo": plo, "lp_hi": phi,
                            "natural_lo": nat_lo, "natural_hi": nat_hi})
        out.append({"seed": seed, "joint": inst.joint().reshape(-1), "true_effect": inst.true_effect(),
                    "lp_lo": lo, "lp_hi": hi, "samples": samples})
    return out
