r"""Graphs to estimate: stochastic block models, smooth graphons, networkx's shipped networks.

Every synthetic graph is a pure function of ``(key, family, n)``: latent positions
:math:`\xi_i` (block labels for an SBM, :math:`U(0,1)` for a graphon), the edge-probability matrix
:math:`P_{ij} = W(\xi_i, \xi_j)` and an undirected simple graph with
:math:`A_{ij} = A_{ji} \sim \mathrm{Bernoulli}(P_{ij})`, :math:`i<j`, zero diagonal. Graphs are
regenerated from their key wherever they are needed (a 5,000-node adjacency is 100 MB; its key is
8 bytes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
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
