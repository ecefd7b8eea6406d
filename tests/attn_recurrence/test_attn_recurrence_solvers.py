"""The rank obstruction against closed forms and independent references (numpy SVD, explicit
recurrence scans, a naive numpy GPT-2 attention)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.attn_recurrence import data, evaluate, model, solvers
from repro26.core.config import ConfigError

T = 12


def dense_recurrence_matrix(key, T, N):
    """M of ``h_t = A_t h_{t-1} + B_t v_t, y_t = C_t h_t`` (dense random A_t), built by running
    the recurrence on unit impulses (column s = response to v = e_s)."""
    ka, kb, kc = jax.random.split(key, 3)
    A = 0.5 * jax.random.normal(ka, (T, N, N)) / np.sqrt(N)
    B = jax.random.normal(kb, (T, N))
    C = jax.random.normal(kc, (T, N))
    M = np.zeros((T, T))
    for s in range(T):
        h = np.zeros(N)
        for t in range(T):
            h = np.asarray(A[t]) @ h + np.asarray(B[t]) * (t == s)
            M[t, s] = np.asarray(C[t]) @ h
    return M


def random_causal_attention(key, T):
    return np.asarray(data.causal_softmax(2.0 * jax.random.normal(key, (T, T))))


def test_spectrum_matches_numpy_svd_of_each_block():
    P = random_causal_attention(jax.random.PRNGKey(0), T)
    spec = np.asarray(solvers.semiseparable_spectrum(jnp.asarray(P)))
    for tau in range(1, T):
        ref = np.linalg.svd(P[tau:, :tau], compute_uv=False)
        np.testing.assert_allclose(spec[tau - 1, : len(ref)], ref, atol=1e-5)
        assert np.all(spec[tau - 1, len(ref):] < 1e-5)


def test_randomized_svd_matches_numpy_on_a_low_rank_plus_noise_matrix():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(80, 6)) @ rng.normal(size=(6, 60)) + 1e-3 * rng.normal(size=(80, 60))
    ref = np.linalg.svd(A, compute_uv=False)[:8]
    approx = np.asarray(solvers.randomized_singular_values(jnp.asarray(A, jnp.float32), 8,
                                                           jax.random.PRNGKey(1)))
    np.testing.assert_allclose(approx[:6], ref[:6], rtol=1e-5)  # the rank-6 part
    # the noise tail: sigma_i(Q^T A) <= sigma_i(A) (interlacing), close after 2 power iterations
    assert np.all(approx[6:] <= ref[6:] * (1 + 1e-5)) and np.all(approx[6:] >= 0.95 * ref[6:])
    # the randomized spectrum of a long attention matrix agrees with the exact one
    P = jnp.asarray(random_causal_attention(jax.random.PRNGKey(2), 48))
    exact = np.asarray(solvers.semiseparable_spectrum(P))[7::8, :4]
    fast = np.asarray(solvers.semiseparable_spectrum(P, 4, jax.random.PRNGKey(3), 8))
    np.testing.assert_allclose(fast, exact, rtol=2e-2, atol=1e-4)


@pytest.mark.parametrize("N", [1, 2, 3])
def test_bound_is_attained_by_truncated_svd_on_a_single_split(N):
    """P = diagonal + one block X = P[tau:, :tau]: the bound is sigma_{N+1}(X) and the rank-N
    truncated SVD of X (an N-semiseparable matrix) attains it, in both norms."""
    rng = np.random.default_rng(N)
    tau = 5
    P = np.diag(rng.uniform(0.2, 1.0, T))
    P[tau:, :tau] = rng.uniform(size=(T - tau, tau))
    s = np.linalg.svd(P[tau:, :tau], compute_uv=False)
    spec = solvers.semiseparable_spectrum(jnp.asarray(P))
    assert float(solvers.operator_bound(spec, N)) == pytest.approx(s[N], rel=1e-4)
    assert float(solvers.frobenius_bound(spec, N)) == pytest.approx(np.sqrt(np.sum(s[N:] ** 2)), rel=1e-4)
    M = np.asarray(solvers.truncate_split(jnp.asarray(P), tau, N))
    assert np.linalg.norm(P - M, 2) == pytest.approx(s[N], rel=1e-4)
    assert np.linalg.norm(P - M) == pytest.approx(np.sqrt(np.sum(s[N:] ** 2)), rel=1e-4)
    assert int(np.max(np.asarray(solvers.off_diagonal_ranks(jnp.asarray(M))))) <= N


@pytest.mark.parametrize("N", [1, 2, 4])
def test_random_recurrences_of_state_N_have_off_diagonal_ranks_at_most_N(N):
    key = jax.random.PRNGKey(N)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    X = data.features(jax.random.randint(k1, (T,), 0, 8), jnp.full((T,), 3), 8)
    mats = {
        "dense_scan": dense_recurrence_matrix(k2, T, N),
        "diag": np.asarray(model.DiagRecurrence(k3, X.shape[1], 6, N).mixing(X))[..., 0, 0],
        "linattn": np.asarray(model.LinearAttention(k4, X.shape[1], 6, N).mixing(X))[..., 0, 0],
    }
    P = jnp.asarray(random_causal_attention(k1, T))
    mats["svd_sweep"] = np.asarray(solvers.svd_sweep(P, N))
    mats["random"] = np.asarray(solvers.random_recurrence(P, N, k2))
    for name, M in mats.items():
        ranks = np.asarray(solvers.off_diagonal_ranks(jnp.asarray(M, jnp.float32), 1e-4))
        assert ranks.max() <= N, name
        assert np.allclose(np.triu(M, 1), 0), name
    # and each has error >= the bound, in both norms
    spec = solvers.semiseparable_spectrum(P)
    for name in ("svd_sweep", "random"):
        E = np.asarray(P) - mats[name]
        assert np.linalg.norm(E, 2) >= float(solvers.operator_bound(spec, N)) - 1e-5
        assert np.linalg.norm(E) >= float(solvers.frobenius_bound(spec, N)) - 1e-5


def test_diag_recurrence_mixing_equals_running_the_recurrence():
    """M from the closed form C_t diag(exp(L_t - L_s)) B_s against the explicit scan of
    h_t = a_t * h_{t-1} + B_t v_t, y_t = C_t h_t + D_t v_t (vector values, d_v = 2)."""
    key = jax.random.PRNGKey(5)
    X = data.features(jax.random.randint(key, (T,), 0, 8), jnp.full((T,), 3), 8)
    m = model.DiagRecurrence(key, X.shape[1], 5, 3, value_dim=2)
    M = np.asarray(m.mixing(X))
    U = np.concatenate([X, np.maximum(X @ m.features.W_1 + m.features.b_1, 0)], 1)
    a = np.exp(-np.asarray(jax.nn.softplus(U @ m.W_a + m.b_a)))
    B = np.einsum("tf,fsd->tsd", U, m.W_B) * np.asarray(m.mask)[None, :, None]
    C = np.einsum("tf,fds->tds", U, m.W_C)
    D = np.asarray(U @ m.w_D)
    v = np.random.default_rng(0).normal(size=(T, 2))
    h, y = np.zeros(5), np.zeros((T, 2))
    for t in range(T):
        h = a[t] * h + B[t] @ v[t]
        y[t] = C[t] @ h + D[t] * v[t]
    np.testing.assert_allclose(np.einsum("tsij,sj->ti", M, v), y, atol=1e-4)


@pytest.mark.parametrize("N", [1, 2, 3])
def test_bound_is_zero_and_svd_sweep_exact_for_an_N_semiseparable_P(N):
    M = dense_recurrence_matrix(jax.random.PRNGKey(10 + N), T, N)
    P = jnp.asarray(M + np.diag(np.ones(T)), jnp.float32)
    spec = solvers.semiseparable_spectrum(P)
    scale = float(jnp.linalg.norm(P, 2))
    assert float(solvers.operator_bound(spec, N)) <= 1e-5 * scale
    assert float(solvers.frobenius_bound(spec, N)) <= 1e-5 * scale
    assert float(solvers.operator_bound(spec, N - 1)) > 1e-3 * scale  # rank exactly N
    np.testing.assert_allclose(np.asarray(solvers.svd_sweep(P, N)), np.asarray(P),
                               atol=2e-4 * scale)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_vector_value_bound_is_the_bound_of_the_kronecker_operator(d):
    """sigma_{S+1}(P[tau:, :tau] (x) I_d), computed on the explicit Kronecker block."""
    P = random_causal_attention(jax.random.PRNGKey(d), 8)
    spec = solvers.semiseparable_spectrum(jnp.asarray(P))
    for S in range(0, 10):
        ref_op, ref_fro = 0.0, 0.0
        for tau in range(1, 8):
            s = np.linalg.svd(np.kron(P[tau:, :tau], np.eye(d)), compute_uv=False)
            s = np.pad(s, (0, 40))
            ref_op = max(ref_op, s[S])
            ref_fro = max(ref_fro, np.sqrt(np.sum(s[S:] ** 2)))
        assert float(solvers.operator_bound(spec, S, d)) == pytest.approx(ref_op, abs=1e-5)
        assert float(solvers.frobenius_bound(spec, S, d)) == pytest.approx(ref_fro, abs=1e-5)


def test_sharp_retrieval_block_needs_state_equal_to_the_queried_keys():
    """Closed form: with beta -> infinity the query rows are one-hot on distinct keys, so the
    key/query block is a selection matrix: sigma_{N+1} = 1 for N < K_queried, 0 beyond."""
    match = jnp.asarray([0, 1, 2, 3, 4, 5, 6, 7, 0, 4, 2, 6, 0, 2])  # keys at 0,2,4,6; 4 queried
    P = data.retrieval_attention(match, 40.0)
    spec = solvers.semiseparable_spectrum(P)
    bounds = [float(solvers.operator_bound(spec, n)) for n in range(6)]
    assert all(b > 0.99 for b in bounds[:4]) and all(b < 1e-6 for b in bounds[4:])
    for d in (2, 3):  # vector values: state 4 d needed
        vb = [float(solvers.operator_bound(spec, n, d)) for n in range(4 * d + 1)]
        assert min(vb[: 4 * d]) > 0.99 and vb[4 * d] < 1e-6


def test_baselines_in_one_program_match_the_per_state_constructions():
    P = jnp.asarray(np.stack([random_causal_attention(jax.random.PRNGKey(i), 10) for i in range(2)]))
    base = evaluate.baseline_errors(P, (0, 1, 3), jax.random.PRNGKey(0))
    for j, N in enumerate((1, 3)):
        ref = np.mean([np.linalg.norm(np.asarray(p) - np.asarray(solvers.svd_sweep(p, N)), 2)
                       for p in P])
        assert float(base["svd_sweep"][j + 1, 0]) == pytest.approx(ref, rel=1e-4)
    diag_only = np.mean([np.linalg.norm(np.asarray(p) - np.diag(np.diag(p)), 2) for p in P])
    assert float(base["svd_sweep"][0, 0]) == pytest.approx(diag_only, rel=1e-5)


# ----------------------------------------------------------------------------- GPT-2 loader


def naive_gpt2_attention(w, ids, n_head):
    """Every head's attention of a GPT-2, written out in numpy from the Hugging Face formulas."""
    def ln(x, g, b):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b

    h = w["wte.weight"][ids] + w["wpe.weight"][: len(ids)]
    n_layer = sum(k.endswith("ln_1.weight") for k in w)
    d = h.shape[1]
    hd = d // n_head
    maps = []
    for i in range(n_layer):
        x = ln(h, w[f"h.{i}.ln_1.weight"], w[f"h.{i}.ln_1.bias"])
        qkv = x @ w[f"h.{i}.attn.c_attn.weight"] + w[f"h.{i}.attn.c_attn.bias"]
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        heads, outs = [], []
        for j in range(n_head):
            sl = slice(j * hd, (j + 1) * hd)
            logits = q[:, sl] @ k[:, sl].T / np.sqrt(hd)
            logits[np.triu_indices(len(ids), 1)] = -np.inf
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            heads.append(p)
            outs.append(p @ v[:, sl])
        h = h + np.concatenate(outs, 1) @ w[f"h.{i}.attn.c_proj.weight"] + w[f"h.{i}.attn.c_proj.bias"]
        x = ln(h, w[f"h.{i}.ln_2.weight"], w[f"h.{i}.ln_2.bias"])
        z = x @ w[f"h.{i}.mlp.c_fc.weight"] + w[f"h.{i}.mlp.c_fc.bias"]
        z = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))
        h = h + z @ w[f"h.{i}.mlp.c_proj.weight"] + w[f"h.{i}.mlp.c_proj.bias"]
        maps.append(np.stack(heads))
    return np.stack(maps)


def tiny_gpt2_weights(seed=0, vocab=50, n_ctx=16, d=12, n_layer=2):
    """A tiny random GPT-2-shaped weight set, made here (nothing downloaded)."""
    rng = np.random.default_rng(seed)
    w = {k: rng.normal(scale=0.3, size=np.shape(v)).astype(np.float32) for k, v in
         model.init_gpt2(jax.random.PRNGKey(seed), vocab, n_ctx, d, n_layer).items()}
    return {f"transformer.{k}": v for k, v in w.items()}  # as Hugging Face prefixes them


def test_gpt2_loader_reads_an_npz_and_reproduces_the_naive_attention(tmp_path):
    w = tiny_gpt2_weights()
    path = tmp_path / "tiny_gpt2.npz"
    np.savez(path, **w)
    net = model.load_gpt2(path, n_head=3)
    ids = np.random.default_rng(1).integers(0, 50, 16)
    maps = np.asarray(net.attention_maps(jnp.asarray(ids)))
    assert maps.shape == (2, 3, 16, 16)
    plain = {k.removeprefix("transformer."): v.astype(np.float64) for k, v in w.items()}
    np.testing.assert_allclose(maps, naive_gpt2_attention(plain, ids, 3), atol=1e-4)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    # round trip through save_gpt2 keeps n_head and the maps
    model.save_gpt2(tmp_path / "again.npz", net)
    again = model.load_gpt2(tmp_path / "again.npz")
    assert again.n_head == 3
    np.testing.assert_allclose(np.asarray(again.attention_maps(jnp.asarray(ids))), maps, atol=1e-6)


def test_gpt2_loader_rejects_incomplete_weights_in_one_line():
    w = tiny_gpt2_weights()
    del w["transformer.h.1.attn.c_attn.bias"]
    with pytest.raises(ConfigError, match="missing 'h.1.attn.c_attn.bias'"):
        model.load_gpt2(w, n_head=3)
    with pytest.raises(ConfigError, match="n_head"):
        model.load_gpt2(tiny_gpt2_weights())


def test_exact_mqar_retrieval_head_has_rank_k_blocks_and_a_large_bound_below_k():
    """The survey's control: one-hot rows; each query row points at the pair token holding its
    key; every split's block has rank <= K (bound 0 at state K), while below the number of
    distinct queried keys the split after the pairs keeps a singular value >= 1."""
    K, n_keys, T = 4, 6, 20
    windows, _ = data.mqar_tokens(jax.random.PRNGKey(3), 8, T, K, n_keys)
    ids = np.asarray(windows[:, :-1])
    P = data.mqar_exact_attention(ids, K, n_keys)
    assert np.all(P.sum(-1) == 1) and np.all(np.triu(P, 1) == 0)
    for w, p in zip(ids, P):
        for t in range(K, T - 1, 2):
            s = int(np.argmax(p[t]))
            assert s < K and (w[s] - 2 * n_keys) // n_keys == w[t]  # the pair with key w[t]
            assert w[t + 1] == n_keys + (w[s] - 2 * n_keys) % n_keys  # whose value follows
        spectrum = solvers.semiseparable_spectrum(jnp.asarray(p))
        assert float(solvers.operator_bound(spectrum, K)) == pytest.approx(0.0, abs=1e-5)
        distinct = len(set(w[K:T:2].tolist()))
        assert float(solvers.operator_bound(spectrum, distinct - 1)) >= 1 - 1e-5
