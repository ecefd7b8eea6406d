"""NAGNN solves a graph whose links are exactly the closures of common neighbours; the models
see only what their protocol allows."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core.train import init_train_state, optax_step, run_loop
from repro26.nagnn import evaluate, model
from repro26.nagnn.data import Stream
from repro26.nagnn.losses import link_loss


def closure_stream(k=6, T=5, seed=0):
    """Snapshot t: k wedges u - w - v on fresh nodes, and the k closures u - v of snapshot
    t - 1's wedges (snapshot 0: k more wedge edges). A closure's endpoints share exactly one
    neighbour; any other pair with u shares none."""
    rng = np.random.default_rng(seed)
    N = 3 * k * T
    nodes = rng.permutation(N).reshape(T, k, 3)
    src, dst = [], []
    for t in range(T):
        u, w, v = nodes[t].T
        prev = nodes[t - 1].T if t else (w, w, v)
        src.append(np.r_[prev[0], u, w])
        dst.append(np.r_[prev[2], w, v])
    src, dst = np.array(src), np.array(dst)
    time = np.arange(T)[:, None] + np.linspace(0, 0.9, 3 * k)[None]
    x = rng.normal(size=(N, 4)).astype(np.float32)
    return Stream(jnp.asarray(src), jnp.asarray(dst), jnp.asarray(time, jnp.float32),
                  jnp.asarray(x)), N


def test_nagnn_solves_links_predicted_by_common_neighbours():
    stream, N = closure_stream()
    k = stream.src.shape[1] // 3
    nagnn = model.build("nagnn", N, 4, 8, n_tables=8, n_bits=1, key=jax.random.PRNGKey(0))
    opt = optax.adam(1e-2)
    step = optax_step(link_loss, opt)
    train = Stream(*(a[:4] for a in stream[:3]), stream.x)
    state, hist = run_loop(step, init_train_state(nagnn, opt), (train, jnp.arange(N)),
                           key=jax.random.PRNGKey(1), num_steps=30, chunk_size=30,
                           progress=False)
    rng = np.random.default_rng(2)
    pos_src, pos_dst = np.asarray(stream.src[-1, :k]), np.asarray(stream.dst[-1, :k])
    neg_dst = rng.integers(0, N, (k, 20))
    endpoint = (neg_dst == pos_dst[:, None]) | (neg_dst == pos_src[:, None])
    neg_dst = np.where(endpoint, (np.maximum(pos_dst, pos_src)[:, None] + 1) % N, neg_dst)
    q_src = np.zeros((5, 3 * k, 21), np.int64)
    q_dst = np.zeros_like(q_src)
    q_src[-1, :k] = pos_src[:, None]
    q_dst[-1, :k] = np.c_[pos_dst, neg_dst]
    cn = np.asarray(model.heuristic_scores("common_neighbours", stream, q_src, q_dst))[-1, :k]
    assert evaluate.auroc(cn[:, 0], cn[:, 1:].ravel()) == 1.0  # the construction is exact
    scores = np.asarray(model.stream_scores(state.model, stream, q_src, q_dst))[-1, :k]
    assert evaluate.auroc(scores[:, 0], scores[:, 1:].ravel()) > 0.95
    assert hist["loss"][-1] < hist["loss"][0]


def test_snapshot_models_ignore_the_snapshot_they_predict_and_event_models_only_the_future():
    """Changing event e of snapshot t leaves snapshot-model scores of all of t, and event-model
    scores of events <= e, unchanged (no peeking at what is predicted)."""
    stream, N = closure_stream(k=2, T=3)
    q_src = jnp.broadcast_to(stream.src[..., None], (*stream.src.shape, 2))
    q_dst = jnp.stack([stream.dst, (stream.dst + 1) % N], -1)
    altered = stream._replace(dst=stream.dst.at[2, 3].set((stream.dst[2, 3] + 5) % N))
    for name in ("nagnn", "tgn"):
        m = model.build(name, N, 4, 8, 2, 2, jax.random.PRNGKey(0))
        a = model.stream_scores(m, stream, q_src, q_dst)
        b = model.stream_scores(m, altered, q_src, q_dst)
        last = 6 if name == "nagnn" else 4  # snapshot models: all of t = 2; events: up to e = 3
        np.testing.assert_allclose(a[2, :last], b[2, :last], rtol=1e-6, atol=1e-6)
