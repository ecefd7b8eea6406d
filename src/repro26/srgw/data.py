r"""Graphs to estimate: stochastic block models, smooth graphons, networkx's shipped networks.

Every synthetic graph is a pure function of ``(key, family, n)``: latent positions
:math:`\xi_i` (block labels for an SBM, :math:`U(0,1)` for a graphon), the edge-probability matrix
:math:`P_{ij} = W(\xi_i, \xi_j)` and an undirected simple graph with
:math:`A_{ij} = A_{ji} \sim \mathrm{Bernoulli}(P_{ij})`, :math:`i<j`, zero diagonal. Graphs are
regenerated from their key wherever they are needed (a 5,000-node adjacency is 100 MB; its key is
8 bytes).

The samplers above build the dense n x n matrix (O(n^2)); :func:`sample_sbm_sparse` and
:func:`sample_graphon_sparse` draw the same laws in O(n + edges) time and memory and return a
``jax.experimental.sparse.BCOO`` adjacency (their edge count is random, so they run on the host
with numpy, seeded from the JAX key).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
from jax.experimental import sparse
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.core.config import ConfigError

#: The standard smooth test graphons (Chan & Airoldi 2014; Zhang, Levina & Zhu 2017).
GRAPHONS: dict[str, Callable[[Array, Array], Array]] = {
    "uv": lambda u, v: u * v,
    "exp07": lambda u, v: jnp.exp(-(u**0.7 + v**0.7)),
    "poly_sqrt": lambda u, v: 0.25 * (u**2 + v**2 + jnp.sqrt(u) + jnp.sqrt(v)),
    "absdiff": lambda u, v: jnp.abs(u - v),
    "logistic": lambda u, v: 1.0 / (1.0 + jnp.exp(-10.0 * (u**2 + v**2))),
    # full rank (the Brownian-bridge covariance, eigenvalues 1/(k pi)^2): not USVT's best case
    "bridge": lambda u, v: 4.0 * (jnp.minimum(u, v) - u * v),
}

#: networkx graphs with a node attribute that gives a reference partition (None: no labels).
REAL_NETWORKS: dict[str, tuple[Callable[[], nx.Graph], str | None]] = {
    "karate": (nx.karate_club_graph, "club"),
    "lesmis": (nx.les_miserables_graph, None),
    "florentine": (nx.florentine_families_graph, None),
    "davis": (nx.davis_southern_women_graph, "bipartite"),
}


@dataclasses.dataclass(frozen=True)
class SBMSpec:
    """K-block SBM: ``B_kk = p_in``, ``B_kl = p_out``; block sizes proportional to ``sizes``.

    Assortative when ``p_in > p_out``, disassortative when ``p_in < p_out``; balanced when all
    ``sizes`` are equal.
    """

    p_in: float
    p_out: float
    sizes: tuple[float, ...]

    @property
    def K(self) -> int:
        return len(self.sizes)

    def block_matrix(self) -> np.ndarray:
        return np.where(np.eye(self.K, dtype=bool), self.p_in, self.p_out)


def block_labels(key: PRNGKeyArray, n: int, sizes: tuple[float, ...]) -> Int[Array, " n"]:
    """Labels with block k holding round(n * sizes_k / sum(sizes)) nodes, in random order."""
    props = np.asarray(sizes, float) / np.sum(sizes)
    counts = np.floor(props * n).astype(int)
    counts[np.argsort(-(props * n - counts))[: n - counts.sum()]] += 1
    z = np.repeat(np.arange(len(sizes)), counts)
    return jax.random.permutation(key, jnp.asarray(z))


def bernoulli_graph(key: PRNGKeyArray, P: Float[Array, "n n"]) -> Float[Array, "n n"]:
    """Symmetric 0/1 adjacency with independent edges ``A_ij ~ Bernoulli(P_ij)``, ``i < j``."""
    U = jax.random.uniform(key, P.shape, dtype=P.dtype)
    upper = jnp.triu((U < P).astype(P.dtype), k=1)
    return upper + upper.T


def sample_sbm(key: PRNGKeyArray, n: int, spec: SBMSpec):
    """``(A, P, z)``: adjacency, edge probabilities ``P_ij = B_{z_i z_j}``, block labels."""
    k_z, k_a = jax.random.split(key)
    z = block_labels(k_z, n, spec.sizes)
    B = jnp.asarray(spec.block_matrix(), jnp.float32)
    P = B[z[:, None], z[None, :]]
    return bernoulli_graph(k_a, P), P, z


def sample_graphon(key: PRNGKeyArray, n: int, name: str):
    """``(A, P, xi)`` with ``xi ~ U(0,1)`` i.i.d. and ``P_ij = W(xi_i, xi_j)``."""
    if name not in GRAPHONS:
        raise ConfigError(f"graphon: '{name}' is unknown; allowed: {', '.join(GRAPHONS)}")
    k_x, k_a = jax.random.split(key)
    xi = jax.random.uniform(k_x, (n,))
    P = GRAPHONS[name](xi[:, None], xi[None, :]).astype(jnp.float32)
    return bernoulli_graph(k_a, P), P, xi


def host_rng(key: PRNGKeyArray) -> np.random.Generator:
    """A numpy generator seeded from a JAX key (for the host-side samplers of random size)."""
    return np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())


def sample_pairs(rng: np.random.Generator, count: int, prob: float, diagonal_block: bool,
                 ) -> tuple[np.ndarray, np.ndarray]:
    r"""Independent Bernoulli(``prob``) edges on ``count`` x ``count`` pairs (``diagonal_block``:
    the :math:`\binom{h}{2}` pairs :math:`i<j` of one block, ``count`` = h; otherwise a ``count``
    = (h_a, h_b) rectangle), returned as local ``(i, j)`` index arrays.

    Exact: the number of edges is :math:`m \sim \mathrm{Binomial}(N, p)` (N pairs) and, given m,
    the edge set is a uniform m-subset of the pairs (``Generator.choice`` without replacement:
    Floyd's algorithm, O(m)); that is the law of N independent Bernoulli(p) pairs. Time and memory
    O(m)."""
    if diagonal_block:
        h = int(count)
        N = h * (h - 1) // 2
    else:
        ha, hb = count
        N = int(ha) * int(hb)
    if N == 0 or prob <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    m = int(rng.binomial(N, min(prob, 1.0)))
    idx = rng.choice(N, m, replace=False, shuffle=False) if m < N else np.arange(N)
    idx = np.asarray(idx, np.int64)
    if not diagonal_block:
        return idx // int(hb), idx % int(hb)
    # idx -> (i, j), i < j, row-major over the upper triangle: row i starts at i h - i(i+1)/2
    b = 2.0 * h - 1.0
    i = np.floor((b - np.sqrt(b * b - 8.0 * idx)) / 2.0).astype(np.int64)
    start = lambda i: i * h - i * (i + 1) // 2
    i = np.where(start(i) > idx, i - 1, i)  # float rounding: at most one row off either way
    i = np.where(start(i + 1) <= idx, i + 1, i)
    return i, idx - start(i) + i + 1


def edges_to_bcoo(rows: np.ndarray, cols: np.ndarray, n: int) -> sparse.BCOO:
    """Symmetric 0/1 BCOO adjacency (both (i, j) and (j, i) stored, sorted by row) from the
    edge list ``i < j``."""
    flat = np.concatenate([rows * n + cols, cols * n + rows]).astype(np.int64)
    flat.sort()  # row-major order (a sort of int64 keys: ~30x faster than a lexsort)
    indices = np.stack([flat // n, flat % n], axis=1).astype(np.int32)
    return sparse.BCOO((jnp.ones(len(flat), jnp.float32), jnp.asarray(indices)), shape=(n, n),
                       indices_sorted=True, unique_indices=True)


def sample_sbm_sparse(key: PRNGKeyArray, n: int, spec: SBMSpec) -> tuple[sparse.BCOO, np.ndarray]:
    """``(A, z)``: the SBM of :func:`sample_sbm` (same label law) in O(n + edges): per block pair
    a Binomial edge count, then its endpoints uniformly without replacement
    (:func:`sample_pairs`, exact)."""
    k_z, k_a = jax.random.split(key)
    z = np.asarray(block_labels(k_z, n, spec.sizes))
    rng = host_rng(k_a)
    members = [np.flatnonzero(z == k) for k in range(spec.K)]
    B = spec.block_matrix()
    rows, cols = [], []
    for a in range(spec.K):
        for b in range(a, spec.K):
            size = len(members[a]) if a == b else (len(members[a]), len(members[b]))
            i, j = sample_pairs(rng, size, float(B[a, b]), a == b)
            rows.append(members[a][i])
            cols.append(members[b][j])
    return edges_to_bcoo(np.concatenate(rows), np.concatenate(cols), n), z


#: sup of every graphon of GRAPHONS over [0, 1]^2 (each attains at most 1: uv, exp07 and
#: poly_sqrt at a corner, absdiff at (0, 1), logistic below 1, bridge at (1/2, 1/2))
GRAPHON_SUP = 1.0


_CHUNK = 1 << 16


@functools.lru_cache(maxsize=None)
def _graphon_jit(name: str):
    return jax.jit(lambda u, v: GRAPHONS[name](u, v).astype(jnp.float32))


def graphon_values(name: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``W(u, v)`` elementwise, in fixed-size chunks (one compile per graphon, whatever the
    random number of candidate pairs)."""
    out = np.empty(len(u), np.float32)
    for s in range(0, len(u), _CHUNK):
        m = min(_CHUNK, len(u) - s)
        pad = lambda x: np.pad(np.asarray(x[s:s + m], np.float32), (0, _CHUNK - m))
        out[s:s + m] = np.asarray(_graphon_jit(name)(pad(u), pad(v)))[:m]
    return out


def sample_graphon_sparse(
    key: PRNGKeyArray, n: int, name: str, rho: float = 1.0,
) -> tuple[sparse.BCOO, np.ndarray]:
    r"""``(A, xi)``: the graph :math:`A_{ij} \sim \mathrm{Bernoulli}(\rho W(\xi_i, \xi_j))`,
    :math:`\xi_i \sim U(0,1)` (``rho`` = 1: the law of :func:`sample_graphon`; ``rho`` < 1: the
    sparse graphon model), in O(n + edges) by *thinning*: draw an Erdős–Rényi graph with
    :math:`p = \rho \sup W` exactly (:func:`sample_pairs`), then keep each candidate pair with
    probability :math:`W(\xi_i, \xi_j) / \sup W`. Exact: a pair is an edge with probability
    :math:`\rho \sup W \cdot W / \sup W = \rho W`, independently of the others given
    :math:`\xi`. Expected work: edges x :math:`\sup W / \int W` (at most 4x for these
    graphons: uv has :math:`\int W = 1/4`)."""
    if name not in GRAPHONS:
        raise ConfigError(f"graphon: '{name}' is unknown; allowed: {', '.join(GRAPHONS)}")
    k_x, k_a = jax.random.split(key)
    xi = np.asarray(jax.random.uniform(k_x, (n,)), np.float64)
    rng = host_rng(k_a)
    i, j = sample_pairs(rng, n, rho * GRAPHON_SUP, True)
    keep = rng.random(len(i)) * GRAPHON_SUP < graphon_values(name, xi[i], xi[j])
    return edges_to_bcoo(i[keep], j[keep], n), xi


def real_network(name: str) -> tuple[np.ndarray, list[str], np.ndarray | None]:
    """Binary symmetric adjacency of a networkx graph, node names and the reference labels
    (karate: the two clubs after the split; davis: women vs events), or None."""
    if name not in REAL_NETWORKS:
        raise ConfigError(f"real network: '{name}' is unknown; allowed: {', '.join(REAL_NETWORKS)}")
    build, attr = REAL_NETWORKS[name]
    g = build()
    nodes = list(g.nodes)
    A = (nx.to_numpy_array(g, nodelist=nodes, weight=None) > 0).astype(np.float32)
    np.fill_diagonal(A, 0.0)
    ref = None
    if attr is not None:
        values = [g.nodes[v][attr] for v in nodes]
        uniq = sorted(set(map(str, values)))
        ref = np.asarray([uniq.index(str(v)) for v in values])
    return A, [str(v) for v in nodes], ref
