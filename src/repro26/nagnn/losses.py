"""Training objective: binary cross-entropy of future links against random destinations.

For every event ``(u, v)`` of a training snapshot ``t >= 1`` the model scores the positive pair
and one negative ``(u, w)``, ``w`` uniform over the destination pool (redrawn every step), from
what it may know at that moment (``model.stream_scores``), and minimises

    L = mean_{t, e} [ softplus(-s(u, v)) + softplus(s(u, w)) ] / 2,

the mean of ``-log sigma(s_pos) - log(1 - sigma(s_neg))``. Snapshot 0 has no history and is
only folded into the state.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from repro26.nagnn.data import Stream
from repro26.nagnn.model import stream_scores


def training_queries(stream: Stream, dst_pool, key):
    """``(q_src, q_dst)`` of shape T x E x 2: the positive and one random destination."""
    neg = jax.random.choice(key, dst_pool, stream.dst.shape)
    q_src = jnp.stack([stream.src, stream.src], -1)
    q_dst = jnp.stack([stream.dst, neg], -1)
    return q_src, q_dst


def link_loss(model, data, key, remat: bool = False):
    """``data = (stream, dst_pool)`` restricted to the training snapshots; ``remat``: the
    stream's scan checkpointed in blocks (``model.scan_steps``)."""
    stream, dst_pool = data
    q_src, q_dst = training_queries(stream, dst_pool, key)
    logits = stream_scores(model, stream, q_src, q_dst, remat)[1:]
    labels = jnp.broadcast_to(jnp.array([1.0, 0.0]), logits.shape)
    loss = optax.sigmoid_binary_cross_entropy(logits, labels).mean()
    accuracy = ((logits > 0) == (labels > 0)).mean()
    return loss, {"accuracy": accuracy}
