"""Generators, the CSV loader and the negative samplers."""

import jax
import numpy as np

from repro26.nagnn import data


def _dsbm(seed=0):
    return data.dsbm(jax.random.PRNGKey(seed), n_nodes=30, n_snapshots=6, events=20,
                     n_communities=3, affinity=8.0, drift=0.05, frac_repeat=0.3,
                     frac_triadic=0.3, feature_dim=4, feature_noise=0.5)


def _codes(src, dst, N):
    return np.asarray(src, np.int64) * N + np.asarray(dst, np.int64)


def test_dsbm_has_no_self_loops_and_recurring_and_triadic_edges():
    s = _dsbm()
    src, dst = np.asarray(s.src), np.asarray(s.dst)
    assert src.shape == (6, 20) and s.x.shape == (30, 4)
    assert np.all(src != dst)
    assert np.all(np.diff(np.asarray(s.time), axis=1) >= 0)
    und = lambda t: set(zip(np.minimum(src[t], dst[t]), np.maximum(src[t], dst[t])))
    seen = set().union(*(und(t) for t in range(3)))
    assert len(und(3) & seen) >= 6  # 30% of 20 events re-draw past edges


def test_bipartite_stream_goes_from_users_to_items():
    s = data.bipartite(jax.random.PRNGKey(0), n_users=10, n_items=15, n_snapshots=4, events=12,
                       n_item_clusters=3, p_pref=0.8, drift=0.05, frac_repeat=0.3,
                       feature_dim=4, feature_noise=0.5)
    assert np.all(np.asarray(s.src) < 10) and np.all((np.asarray(s.dst) >= 10) & (np.asarray(s.dst) < 25))


def test_negative_samplers_never_return_a_positive_of_the_snapshot():
    s = _dsbm(1)
    N, n_train = 30, 4
    neg = data.negatives(s, n_train, np.arange(N), k_mrr=5, seed=0)
    src, dst = np.asarray(s.src), np.asarray(s.dst)
    codes = _codes(src, dst, N)
    train = set(codes[:n_train].ravel().tolist())
    for t in range(1, 6):
        pos = set(codes[t].tolist())
        for a, b in ((src[t], neg["rand_dst"][t]), (neg["hist_src"][t], neg["hist_dst"][t]),
                     (neg["ind_src"][t], neg["ind_dst"][t])):
            assert not set(_codes(a, b, N).tolist()) & pos
        mrr = _codes(np.repeat(src[t][:, None], 5, 1), neg["mrr_dst"][t], N)
        assert not set(mrr.ravel().tolist()) & pos
        hist = _codes(neg["hist_src"][t], neg["hist_dst"][t], N)[neg["hist_ok"][t]]
        assert set(hist.tolist()) <= set(codes[:t].ravel().tolist())
        ind = _codes(neg["ind_src"][t], neg["ind_dst"][t], N)[neg["ind_ok"][t]]
        assert not set(ind.tolist()) & train
    assert neg["hist_ok"][1:].all()


def test_event_csv_is_cut_into_snapshots_of_consecutive_events(tmp_path):
    path = tmp_path / "wiki.csv"
    lines = ["user_id,item_id,timestamp,state_label,f0"]
    rng = np.random.default_rng(0)
    for k in range(47):
        lines.append(f"u{rng.integers(5)},i{rng.integers(7)},{100 - k}.0,0,0.1")
    path.write_text("\n".join(lines) + "\n")
    stream, pool = data.load_event_csv(path, events=10, max_snapshots=9, feature_dim=3,
                                       key=jax.random.PRNGKey(0))
    assert stream.src.shape == (4, 10)
    n_users = int(stream.src.max()) + 1
    assert np.all(stream.dst >= n_users) and set(pool.tolist()) >= set(stream.dst.ravel().tolist())
    assert np.all(np.diff(stream.time.ravel()) >= 0)  # time-sorted (the file is reversed)
