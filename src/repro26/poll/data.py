"""Instances of the multi-activity network game: graphs (networkx), private technologies, the
peer-effect strength, all pure functions of ``(seed, cfg)``; nothing is downloaded.

Graph families at a target mean degree ``d``: Erdős–Rényi ``G(n, d/(n-1))``, Barabási–Albert
(``d/2`` edges per new node), a two-block SBM (within/between odds ``sbm_ratio``), a random
geometric graph in the unit square (radius giving mean degree ``d``), and the real networks that
networkx ships (karate club, Les Misérables, Florentine families, Davis southern women).

Technology of agent i: ``Σ_i = I_m + h W_i W_iᵀ / m`` with ``W_i`` standard Gaussian (m × m), so
``λ_min(Σ_i) ≥ 1`` and ``h`` (preference heterogeneity) spreads the agents' costs across
activities. Peer effect ``δ = κ / ρ(G)``: then ``δ ρ(G) = κ < ½ ≤ ½ min_i λ_min(Σ_i)``, which
makes ``M = blockdiag(Σ_i) − δ (G ⊗ I_m)`` positive definite (unique equilibrium) and
``blockdiag(Σ_i) − 2δ (G ⊗ I_m)`` positive definite (welfare strictly concave in the price).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from repro26.core.config import ConfigError
from repro26.poll.model import NetworkGame

SYNTHETIC = ("er", "ba", "sbm", "rgg")
REAL = {
    "karate": nx.karate_club_graph,
    "lesmis": nx.les_miserables_graph,
    "florentine": nx.florentine_families_graph,
    "davis": nx.davis_southern_women_graph,
}
REAL_SIZES = {"karate": 34, "lesmis": 77, "florentine": 15, "davis": 32}


def graph(family: str, n: int, seed: int, mean_degree: float, sbm_ratio: float) -> nx.Graph:
    """One graph of ``family`` with ``n`` nodes (real networks ignore ``n``), nodes 0..n-1."""
    if family in REAL:
        return nx.convert_node_labels_to_integers(nx.Graph(REAL[family]()))
    d = min(mean_degree, n - 1)
    if family == "er":
        return nx.fast_gnp_random_graph(n, d / (n - 1), seed=seed)
    if family == "ba":
        return nx.barabasi_albert_graph(n, max(1, round(d / 2)), seed=seed)
    if family == "sbm":
        sizes = [n // 2, n - n // 2]
        # mean degree d: p_in n/2 + p_out n/2 = d with p_in = sbm_ratio p_out
        p_out = 2 * d / (n * (1 + sbm_ratio))
        p_in = min(1.0, sbm_ratio * p_out)
        return _two_block_sbm(sizes, p_in, p_out, seed)
    if family == "rgg":
        radius = math.sqrt(d / (math.pi * (n - 1)))
        return nx.random_geometric_graph(n, radius, seed=seed)
    raise ConfigError(f"poll.families: '{family}' is unknown; allowed: "
                      f"{', '.join((*SYNTHETIC, *REAL))}")


def _two_block_sbm(sizes: list[int], p_in: float, p_out: float, seed: int) -> nx.Graph:
    """Two-block SBM as the union of its independent parts: G(n₁, p_in) on nodes 0..n₁−1,
    G(n₂, p_in) on n₁..n−1 and the bipartite G(n₁, n₂, p_out) between them (each networkx's
    O(n + |E|) generator; ``nx.stochastic_block_model`` is quadratic-time in n here)."""
    n1, n2 = sizes
    rng = np.random.default_rng(seed)
    s1, s2, s3 = (int(x) for x in rng.integers(0, 2**31 - 1, 3))
    g = nx.fast_gnp_random_graph(n1, p_in, seed=s1)
    g.add_nodes_from(range(n1, n1 + n2))
    g.add_edges_from((u + n1, v + n1) for u, v in nx.fast_gnp_random_graph(n2, p_in, seed=s2).edges)
    g.add_edges_from(nx.bipartite.random_graph(n1, n2, p_out, seed=s3).edges)
    return g


def adjacency(g: nx.Graph) -> sp.csr_array:
    """Symmetric 0/1 adjacency without self-loops, CSR, rows sorted by node label."""
    a = nx.to_scipy_sparse_array(g, nodelist=range(g.number_of_nodes()), weight=None,
                                 format="csr").astype(np.float64)
    a.setdiag(0)
    a.eliminate_zeros()
    return sp.csr_array((a + a.T > 0).astype(np.float64))


def spectral_radius(adj: sp.csr_array) -> float:
    """ρ(G), the largest adjacency eigenvalue (dense eigvalsh below 300 nodes, else Lanczos)."""
    n = adj.shape[0]
    if n < 300:
        return float(np.linalg.eigvalsh(adj.toarray())[-1])
    return float(spla.eigsh(adj, k=1, which="LA", return_eigenvectors=False, tol=1e-8)[0])


def technologies(key: jax.Array, n: int, m: int, heterogeneity: float) -> np.ndarray:
    """``Σ_i = I + h W_i W_iᵀ / m`` for ``n`` agents, float64 array (n, m, m)."""
    w = np.asarray(jax.random.normal(key, (n, m, m)), np.float64)
    return np.eye(m) + heterogeneity * np.einsum("nij,nkj->nik", w, w) / m


def game(family: str, n: int, seed: int, cfg, heterogeneity: float) -> tuple[NetworkGame, sp.csr_array]:
    """The game of one seed: (NetworkGame in float32 for JAX, float64 CSR adjacency)."""
    adj = adjacency(graph(family, n, seed, cfg.mean_degree, cfg.sbm_ratio))
    n = adj.shape[0]
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 1)
    sigma = technologies(key, n, cfg.activities, heterogeneity)
    rho = spectral_radius(adj)
    delta = cfg.peer_strength / rho if rho > 0 else 0.0
    return NetworkGame.from_arrays(adj, sigma, delta, np.asarray(cfg.activity_values)), adj


def padded_shape(games: list[NetworkGame]) -> tuple[int, int]:
    """Common (nodes, neighbour entries) for a list of games: nodes rounded up to a power of
    two (at least 64), entries to a power of two at least 8 per node, so that every family's
    graphs at one n — and small real networks — share one compiled program."""
    nodes = 1 << max(6, (max(g.n for g in games) - 1).bit_length())
    longest = max(int(g.neighbours.shape[0]) for g in games)
    return nodes, 1 << max(longest - 1, 8 * nodes - 1).bit_length()


def padded_batch(games: list[NetworkGame]) -> NetworkGame:
    """Stack the seeds' games into one batched game of the common padded shape."""
    nodes, width = padded_shape(games)
    return jax.tree.map(lambda *xs: jnp.stack(xs), *[g.pad(nodes, width) for g in games])
