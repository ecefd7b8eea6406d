"""Every learned nagnn model learns (DESIGN.md rule 6): each trainable leaf moves under its own
training loss (:func:`repro26.core.learning.assert_every_parameter_learns`), except the leaves
fixed on purpose (the LSH hyperplanes, priorities and node codes; parts a model does not use);
NAGNN's reservoirs spread a node's neighbours over its slots."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.core.learning import assert_every_parameter_learns
from repro26.nagnn import evaluate, model
from repro26.nagnn.data import Stream
from repro26.nagnn.losses import link_loss

FROZEN = {"nagnn": [".planes", ".priority", ".node_codes"],
          # GCN-GRU: no reservoir, so no hashing and no pair features
          "gcn_gru": [".planes", ".priority", ".node_codes"],
          "tgn": [".proj"],  # the JODIE time projection, unused with joint features
          "jodie": []}


@pytest.mark.parametrize("name", model.LEARNED)
def test_every_parameter_learns(name):
    N, T, E = 12, 4, 6
    k = jax.random.split(jax.random.PRNGKey(2), 3)
    stream = Stream(jax.random.randint(k[0], (T, E), 0, N), jax.random.randint(k[1], (T, E), 0, N),
                    jnp.arange(T)[:, None] + jnp.linspace(0, 0.9, E)[None],
                    jax.random.normal(k[2], (N, 4)))
    net = model.build(name, N, 4, 8, n_tables=2, n_bits=2, key=jax.random.PRNGKey(0))
    data = (stream, jnp.arange(N))
    keys = list(jax.random.split(jax.random.PRNGKey(1), 3))
    assert_every_parameter_learns(net, lambda m, k: link_loss(m, data, k)[0], keys,
                                  frozen=FROZEN[name])


def test_random_node_codes_spread_neighbours_over_slots():
    """A hub with 64 distinct neighbours of one community (near-identical features) uses most
    of its 16 slots per table, as a uniform hash would (1 - (15/16)^64 = 0.98)."""
    N, F = 65, 4
    rng = np.random.default_rng(0)
    x = jnp.asarray(np.ones((N, F)) + 0.01 * rng.normal(size=(N, F)), jnp.float32)
    src = jnp.zeros((2, 32), int)
    dst = jnp.arange(1, N).reshape(2, 32)
    stream = Stream(src, dst, jnp.zeros((2, 32)), x)
    net = model.build("nagnn", N, F, 8, n_tables=4, n_bits=4, key=jax.random.PRNGKey(0))
    stacked = jax.tree.map(lambda a: a[None] if isinstance(a, jax.Array) else a, net)
    occ = evaluate.occupancy(stacked, jax.tree.map(lambda a: a[None], stream))[0]
    assert occ["slots_used_uniform"] > 0.95
    assert occ["slots_used"] > 0.85, occ
