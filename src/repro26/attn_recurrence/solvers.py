"""The rank obstruction: semiseparable spectra, lower bounds and the constructions that meet them.

A value-linear recurrence with state size N,

    h_t = A_t h_{t-1} + B_t v_t,      y_t = C_t h_t + D_t v_t,

maps values to outputs by ``y = M v`` with ``M[t, s] = C_t A_t ... A_{s+1} B_s`` (s < t). At
every split ``tau`` the off-diagonal (Hankel) block factors through the state,

    M[tau:, :tau] = [C_t A_t...A_tau]_t  [A_{tau-1}...A_{s+1} B_s]_s,     rank <= N,

so M is *N-semiseparable*. For a causal attention matrix P, Eckart-Young on each block gives

    ||P - M||_2 >= max_tau sigma_{N+1}(P[tau:, :tau])                       (operator norm)
    ||P - M||_F >= max_tau (sum_{i > N} sigma_i(P[tau:, :tau])^2)^(1/2)       (Frobenius)

The sequence ``sigma(P[tau:, :tau])`` over splits is the *semiseparable spectrum*. With values
of dimension d_v and the same P on every channel the map is ``P (x) I_{d_v}``, whose blocks have
every singular value of ``P[tau:, :tau]`` repeated d_v times: a shared state of size S is bound
by ``sigma_{ceil((S+1)/d_v)}``, so the state needed grows like ``d_v`` times the scalar one.
For a retrieval block (K keys, each queried) the block is a selection matrix with K singular
values near 1: state K (scalar) and K d_v (vector values) are necessary.

Constructions (all exactly N-state recurrences, so their error is >= the bound):

* :func:`truncate_split` — on a P whose only off-diagonal mass is one block, the rank-N
  truncated SVD of that block attains the bound;
* :func:`svd_sweep` — the truncated-SVD construction at every split: a forward sweep keeps as
  state the top-N right singular subspace of the future block ``P[t+1:, :t+1]`` within what
  the previous state and ``v_t`` can reach; exact when P is N-semiseparable;
* :func:`random_recurrence` — random diagonal transitions and inputs, best (least-squares)
  readout C_t per row: the trivial baseline of state N;
* :func:`causal_mean` — ``M[t, s] = 1/(t+1)``, the uniform causal average (state 1).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray


# ----------------------------------------------------------------------------- spectra


def split_block(P: Float[Array, "T T"], tau: Array) -> Float[Array, "T T"]:
    """``P[tau:, :tau]`` embedded in a T x T zero matrix (same singular values)."""
    idx = jnp.arange(P.shape[0])
    return P * ((idx[:, None] >= tau) & (idx[None, :] < tau))


def randomized_singular_values(A: Float[Array, "m n"], k: int, key: PRNGKeyArray,
                               oversample: int = 10, power_iters: int = 2) -> Float[Array, " k"]:
    """Top-``k`` singular values by the randomized range finder (Halko, Martinsson & Tropp
    2011, Alg. 4.4): ``Y = (A A^T)^q A G``, ``Q = qr(Y)``, ``sigma(Q^T A)``."""
    m, n = A.shape
    width = min(k + oversample, m, n)
    Q, _ = jnp.linalg.qr(A @ jax.random.normal(key, (n, width), A.dtype))
    for _ in range(power_iters):
        Z, _ = jnp.linalg.qr(A.T @ Q)
        Q, _ = jnp.linalg.qr(A @ Z)
    s = jnp.linalg.svd(Q.T @ A, compute_uv=False)
    return jnp.pad(s, (0, max(0, k - s.shape[0])))[:k]


@functools.partial(jax.jit, static_argnames=("rank", "stride"))
def semiseparable_spectrum(P: Float[Array, "T T"], rank: int | None = None,
                           key: PRNGKeyArray | None = None, stride: int = 1
                           ) -> Float[Array, "splits r"]:
    """Singular values (descending) of ``P[tau:, :tau]`` for ``tau = stride, 2 stride, ...``.

    ``rank=None``: exact (all T values). Otherwise the top ``rank`` by randomized SVD, for long
    sequences, where a missing value can only lower the bound (it stays valid)."""
    T = P.shape[0]
    splits = jnp.arange(stride, T, stride)
    if rank is None:
        return jax.lax.map(lambda tau: jnp.linalg.svd(split_block(P, tau), compute_uv=False),
                           splits)
    keys = jax.random.split(key, splits.shape[0])
    return jax.lax.map(lambda a: randomized_singular_values(split_block(P, a[0]), rank, a[1]),
                       (splits, keys))


def operator_bound(spectrum: Float[Array, "splits r"], state: Array, value_dim: int = 1
                   ) -> Array:
    """``max_tau sigma_{S+1}(P[tau:, :tau] (x) I_{d_v})`` = ``max_tau sigma_{floor(S/d_v)+1}``
    (0 once the state exceeds the spectrum's length)."""
    index = state // value_dim
    padded = jnp.pad(spectrum, ((0, 0), (0, 1)))
    return jnp.max(padded[:, jnp.minimum(index, spectrum.shape[1])])


def frobenius_bound(spectrum: Float[Array, "splits r"], state: Array, value_dim: int = 1
                    ) -> Array:
    """``max_tau (sum_{i > S} sigma_i(P[tau:, :tau] (x) I_{d_v})^2)^(1/2)``."""
    repeated = jnp.repeat(spectrum, value_dim, axis=1)
    keep = jnp.arange(repeated.shape[1]) >= state
    return jnp.sqrt(jnp.max(jnp.sum(jnp.where(keep, repeated ** 2, 0.0), axis=1)))


def off_diagonal_ranks(M: Float[Array, "T T"], rtol: float = 1e-5) -> Array:
    """Numerical rank of ``M[tau:, :tau]`` for every split (singular values > rtol sigma_max(M))."""
    spec = semiseparable_spectrum(M)
    scale = jnp.linalg.norm(M, 2)
    return jnp.sum(spec > rtol * scale, axis=1)


# ----------------------------------------------------------------------------- constructions


def truncate_split(P: Float[Array, "T T"], tau: int, state: int) -> Float[Array, "T T"]:
    """P with its block ``P[tau:, :tau]`` replaced by the block's rank-``state`` truncated SVD."""
    block = P[tau:, :tau]
    U, s, Vt = jnp.linalg.svd(block, full_matrices=False)
    s = jnp.where(jnp.arange(s.shape[0]) < state, s, 0.0)
    return P.at[tau:, :tau].set((U * s) @ Vt)


def svd_sweep(P: Float[Array, "T T"], state: Array, state_max: int | None = None
              ) -> Float[Array, "T T"]:
    """Truncated-SVD construction at every split (a state-``state`` recurrence).

    The state after ``v_0..v_t`` is ``U_t^T v_{0:t}`` with ``U_t`` (T x N, supported on
    positions <= t). Reachable: ``span U_t <= span [U_{t-1}, e_t]`` (=: W). Choose ``U_t = W R``
    with R the top-N right singular vectors of ``P[t+1:, :t+1] W``; row t+1 of M is the
    projection of ``P[t+1, :t+1]`` onto ``span U_t``; the diagonal is the skip ``D_t = P_tt``.
    ``state`` may be traced (columns beyond it are zero) when ``state_max`` bounds it.
    """
    return _svd_sweep(P, state, int(state) if state_max is None else state_max)


@functools.partial(jax.jit, static_argnames=("state_max",))
def _svd_sweep(P, state, state_max):
    T = P.shape[0]
    idx = jnp.arange(T)
    keep = jnp.arange(state_max) < state

    def step(U, t):
        past = P[t] * (idx < t)
        row = past @ U @ jnp.linalg.pinv(U)  # projection onto span U (columns may be 0)
        W = jnp.concatenate([U, jax.nn.one_hot(t, T, dtype=P.dtype)[:, None]], axis=1)
        future = P * ((idx[:, None] > t) & (idx[None, :] <= t))
        _, _, Vt = jnp.linalg.svd(future @ W, full_matrices=False)
        return (W @ Vt[:state_max].T) * keep, row

    _, rows = jax.lax.scan(step, jnp.zeros((T, state_max), P.dtype), idx)
    return rows + jnp.diag(jnp.diag(P))


def random_recurrence(P: Float[Array, "T T"], state: Array, key: PRNGKeyArray,
                      state_max: int | None = None) -> Float[Array, "T T"]:
    """Random diagonal recurrence of size ``state`` (``a_t ~ U(0.5, 1)``, ``B_t ~ N(0, I)``)
    with the least-squares readout ``C_t`` of each row and the exact skip ``D_t = P_tt``."""
    return _random_recurrence(P, state, key, int(state) if state_max is None else state_max)


@functools.partial(jax.jit, static_argnames=("state_max",))
def _random_recurrence(P, state, key, state_max):
    T = P.shape[0]
    k_a, k_b = jax.random.split(key)
    log_a = jnp.log(jax.random.uniform(k_a, (T, state_max), minval=0.5, maxval=1.0))
    B = jax.random.normal(k_b, (T, state_max)) * (jnp.arange(state_max) < state)
    L = jnp.cumsum(log_a, axis=0)
    idx = jnp.arange(T)
    past = idx[:, None] > idx[None, :]
    # G[t, s, n] = B_sn prod_{r=s+1}^t a_rn for s < t
    G = jnp.where(past[..., None], B[None] * jnp.exp(jnp.minimum(L[:, None] - L[None, :], 0.0)), 0.0)

    def readout(G_t, p_t):
        """Projection of ``p_t`` onto the span of the state features (pseudo-inverse by SVD;
        row 0 has no past and an all-zero G_t)."""
        U, sv, _ = jnp.linalg.svd(G_t, full_matrices=False)
        keep = sv > 1e-6 * jnp.maximum(sv[0], 1e-30)
        return U @ (jnp.where(keep, 1.0, 0.0) * (U.T @ p_t))

    rows = jax.vmap(readout)(G, P * past)
    return rows + jnp.diag(jnp.diag(P))


def causal_mean(T: int) -> Float[Array, "T T"]:
    """``M[t, s] = 1/(t+1)`` for ``s <= t``: the running average (a state-1 recurrence)."""
    return jnp.tril(jnp.ones((T, T))) / jnp.arange(1, T + 1)[:, None]


def kron_error(P: Float[Array, "T T"], M: Float[Array, "T T d d"]) -> tuple[Array, Array]:
    """``(||P (x) I - M||_2, ||P (x) I - M||_F)`` with M given as d x d blocks ``M[t, s]``."""
    T, d = P.shape[0], M.shape[-1]
    E = P[:, :, None, None] * jnp.eye(d) - M
    E = E.transpose(0, 2, 1, 3).reshape(T * d, T * d)
    return jnp.linalg.norm(E, 2), jnp.linalg.norm(E)
