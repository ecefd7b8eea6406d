"""Reference computations: MEC enumeration, CPDAGs, PC, IDA and Balke-Pearl bounds."""

import itertools
from collections import defaultdict

import networkx as nx
import numpy as np
import pytest

from repro26.masked_ncm import data, solvers


def all_dags(d):
    """Every labelled DAG on d nodes (brute force over the 3 states of each pair)."""
    pairs = list(itertools.combinations(range(d), 2))
    for states in itertools.product(range(3), repeat=len(pairs)):
        adj = np.zeros((d, d), dtype=int)
        for (i, j), s in zip(pairs, states):
            if s == 1:
                adj[i, j] = 1
            elif s == 2:
                adj[j, i] = 1
        if nx.is_directed_acyclic_graph(nx.from_numpy_array(adj, create_using=nx.DiGraph)):
            yield adj


def test_mec_enumeration_matches_brute_force_on_all_4_node_dags():
    dags = list(all_dags(4))
    assert len(dags) == 543  # OEIS A003024
    classes = defaultdict(list)
    for g in dags:
        classes[(solvers.skeleton(g).tobytes(), solvers.v_structures(g))].append(g)
    assert len(classes) == 185  # Markov equivalence classes of 4-node DAGs (OEIS A302545)
    for members in classes.values():
        brute = {g.tobytes() for g in members}
        cpdags = {solvers.cpdag_from_dag(g).tobytes() for g in members}
        assert len(cpdags) == 1, "Markov-equivalent DAGs must share their CPDAG"
        cpdag = solvers.cpdag_from_dag(members[0])
        assert {g.tobytes() for g in solvers.enumerate_mec(cpdag)} == brute
        # CPDAG definition: i -> j directed iff every member has i -> j
        stack = np.stack(members)
        compelled = stack.all(axis=0) & ~stack.transpose(0, 2, 1).any(axis=0)
        assert np.array_equal((cpdag == 1) & (cpdag.T == 0), compelled)


@pytest.mark.parametrize("seed", range(6))
def test_pc_with_oracle_tests_recovers_the_true_cpdag(seed):
    rng = np.random.default_rng(seed)
    d = 4 + seed % 2
    dag = data.random_dag(rng, d, 0.5)
    joint = data.random_joint(rng, dag, 2, 1.0)
    est = solvers.pc(d, solvers.oracle_ci_test(joint, tol=1e-9))
    assert np.array_equal(est, solvers.cpdag_from_dag(dag))


def test_pc_with_g2_tests_on_a_large_sample_recovers_the_true_cpdag():
    rng = np.random.default_rng(3)
    dag = np.array([[0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]])  # 0 -> 2 <- 1, 2 -> 3
    joint = data.random_joint(rng, dag, 2, 0.5)
    counts = data.sample_counts(rng, joint, 1_000_000)
    est = solvers.pc(4, solvers.g2_ci_test(counts, alpha=0.01))
    expected = solvers.cpdag_from_dag(dag)
    assert np.array_equal(est, expected)
    assert np.array_equal(expected, dag)  # the v-structure compels every edge (Meek R1)


def _hand_joint():
    """Z -> X -> Y, Z -> Y (axes Z, X, Y): P(Z=1) = .5, P(X=1|z) = (.2, .8),
    P(Y=1|x,z): (x0,z0) .1, (x1,z0) .5, (x0,z1) .3, (x1,z1) .9."""
    pz = np.array([0.5, 0.5])
    px = np.array([[0.8, 0.2], [0.2, 0.8]])           # [z, x]
    py1 = np.array([[0.1, 0.5], [0.3, 0.9]])          # [z, x]
    py = np.stack([1 - py1, py1], axis=-1)            # [z, x, y]
    return pz[:, None, None] * px[:, :, None] * py


def test_ida_on_the_hand_computed_three_node_example():
    joint = _hand_joint()
    z, x, y = 0, 1, 2
    dag = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]])
    mec = solvers.enumerate_mec(solvers.cpdag_from_dag(dag))
    assert len(mec) == 6  # complete graph: every order
    values = solvers.ida(joint, mec, x, y)
    # pa(X) = {}: P(y1|x1) = .2*.5 + .8*.9 = .82;  pa(X) = {Z}: .5*.5 + .5*.9 = .7;
    # Y in pa(X): P(y1) = .5(.8*.1 + .2*.5) + .5(.2*.3 + .8*.9) = .48
    expected = {(): 0.82, (z,): 0.7, (y,): 0.48, (z, y): 0.48}
    for g, v in zip(mec, values):
        assert v == pytest.approx(expected[tuple(np.flatnonzero(g[:, x]))], abs=1e-12)
    assert (values.min(), values.max()) == pytest.approx((0.48, 0.82))
    truth = solvers.adjustment_query(joint, x, y, (z,))
    assert truth == pytest.approx(0.7)


def test_dag_mle_nll_is_the_cross_entropy_of_the_empirical_cpt_product():
    rng = np.random.default_rng(0)
    dag = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # 0 -> 1 -> 2
    freq = data.sample_counts(rng, data.random_joint(rng, dag, 2, 1.0), 500) / 500
    p0 = freq.sum(axis=(1, 2))
    p1 = freq.sum(axis=2) / p0[:, None]
    p12 = freq.sum(axis=0)
    p2 = p12 / p12.sum(axis=1, keepdims=True)
    model = p0[:, None, None] * p1[:, :, None] * p2[None]
    mask = freq > 0
    assert solvers.dag_mle_nll(freq, dag) == pytest.approx(-np.sum(freq[mask] * np.log(model[mask])))


# p[z, x, y] = P(x, y | z): Lipid Research Clinics trial (Pearl 2009, sec. 8.2.6)
LRC = np.zeros((2, 2, 2))
LRC[0] = [[0.919, 0.081], [0.0, 0.0]]
LRC[1] = [[0.315, 0.073], [0.139, 0.473]]


def test_balke_pearl_reproduces_the_textbook_ace_bounds():
    lo, hi = solvers.response_function_bounds(LRC, solvers.ace_objective())
    assert lo == pytest.approx(0.392, abs=1e-9)
    assert hi == pytest.approx(0.780, abs=1e-9)


def _closed_form_ace(p):
    """Balke & Pearl (1997) closed-form ACE bounds; p_{yx.z} = P(y, x | z)."""
    q = {f"{y}{x}.{z}": p[z, x, y] for z in range(2) for x in range(2) for y in range(2)}
    lower = max(q["11.1"] + q["00.0"] - 1, q["11.0"] + q["00.1"] - 1,
                q["11.0"] - q["11.1"] - q["10.1"] - q["01.0"] - q["10.0"],
                q["11.1"] - q["11.0"] - q["10.0"] - q["01.1"] - q["10.1"],
                -q["01.1"] - q["10.1"], -q["01.0"] - q["10.0"],
                q["00.1"] - q["01.1"] - q["10.1"] - q["01.0"] - q["00.0"],
                q["00.0"] - q["01.0"] - q["10.0"] - q["01.1"] - q["00.1"])
    upper = min(1 - q["01.1"] - q["10.0"], 1 - q["01.0"] - q["10.1"],
                -q["01.0"] + q["01.1"] + q["00.1"] + q["11.0"] + q["00.0"],
                -q["01.1"] + q["11.1"] + q["00.1"] + q["01.0"] + q["00.0"],
                q["11.1"] + q["00.1"], q["11.0"] + q["00.0"],
                -q["10.1"] + q["11.1"] + q["00.1"] + q["11.0"] + q["10.0"],
                -q["10.0"] + q["11.0"] + q["00.0"] + q["11.1"] + q["10.1"])
    return lower, upper


@pytest.mark.parametrize("seed", range(5))
def test_balke_pearl_lp_matches_the_closed_form_on_random_iv_models(seed):
    inst = data.random_iv_instance(np.random.default_rng(seed), concentration=0.5)
    p = inst.p_xy_given_z()
    lo, hi = solvers.response_function_bounds(p, solvers.ace_objective())
    assert (lo, hi) == pytest.approx(_closed_form_ace(p), abs=1e-8)
    qlo, qhi = solvers.response_function_bounds(p, solvers.query_objective())
    assert qlo - 1e-9 <= inst.true_effect() <= qhi + 1e-9


def test_without_an_instrument_the_lp_gives_the_manski_bounds():
    p = np.array([[[0.3, 0.2], [0.1, 0.4]]])  # one z value; P(x, y)
    lo, hi = solvers.response_function_bounds(p, solvers.query_objective())
    assert (lo, hi) == pytest.approx((0.4, 0.4 + 0.5))
