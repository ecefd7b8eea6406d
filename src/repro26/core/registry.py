"""The 19 methods (one package each) and how the CLI finds their stages.

A method package ``repro26.<name>`` is *implemented* once it has a ``cli`` module defining

* ``Config``: a frozen dataclass of the method's settings (one config section, all scales), and
* ``STAGES``: a mapping from stage name (``data``, ``train``, ``evaluate``, ``figures``,
  ``claims``, ...) to a function ``stage(run: repro26.core.run.Run) -> None``.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from repro26.core.config import UsageError

#: package name -> (abstract number in docs/abstracts.txt, short title)
METHODS: dict[str, tuple[int, str]] = {
    "neural_ctmc": (1, "Neural CTMC: discrete diffusion by exit rate and jump distribution"),
    "rat_ncap": (2, "Rat v2 body and spinal-circuit NCAP controller"),
    "masked_ncm": (3, "Masked neural causal models over a CPDAG"),
    "nbf": (4, "Neural Bayesian filtering"),
    "nbffg": (5, "Neural backward filtering forward guiding on trees"),
    "theseus": (6, "Swapping architectures between training and inference"),
    "srgw": (7, "Graphon and SBM estimation by semi-relaxed Gromov-Wasserstein"),
    "poll": (8, "Planning in multi-activity network games with private information"),
    "nesyproact": (9, "Proactive state grounding for web agents"),
    "nestedvla": (10, "Consolidating VLA skills across tasks and embodiments"),
    "nestrl": (11, "Mutual adaptation in human-AI teaming"),
    "nsmp": (12, "Nerve-skeleton message passing for overlapping-block federated optimisation"),
    "neptuna": (13, "ML surrogates for compressible multiphase flows"),
    "nagnn": (14, "Efficient dynamic graph learning"),
    "progress_advantage": (15, "Process reward models for agents from progress"),
    "negation_neglect": (16, "Negation neglect in finetuned language models"),
    "nemo": (17, "Multi-objective emotional support conversations"),
    "attn_recurrence": (18, "When can attention be replaced by a value-linear recurrence"),
    "kernel_bandits": (19, "Adversarial kernelized bandits by exponential weights"),
}


def is_implemented(method: str) -> bool:
    return importlib.util.find_spec(f"repro26.{method}") is not None and \
        importlib.util.find_spec(f"repro26.{method}.cli") is not None


def implemented_methods() -> list[str]:
    return [m for m in METHODS if is_implemented(m)]


def load_method(method: str) -> ModuleType:
    """Import ``repro26.<method>.cli``; an unknown or unbuilt method is a one-line error."""
    if method not in METHODS:
        raise UsageError(f"method '{method}' is unknown; known: {', '.join(METHODS)}")
    if not is_implemented(method):
        done = ", ".join(implemented_methods()) or "none"
        raise UsageError(f"method '{method}' is not implemented yet; implemented: {done}")
    return importlib.import_module(f"repro26.{method}.cli")


def method_figures(method: str) -> dict:
    """``repro26.<method>.figures.FIGURES`` (name -> :class:`repro26.core.method.Figure`)."""
    return dict(getattr(importlib.import_module(f"repro26.{method}.figures"), "FIGURES", {}))


def method_claims(method: str):
    """``repro26.<method>.claims.CLAIMS`` (a :class:`repro26.core.method.ClaimSet`)."""
    return importlib.import_module(f"repro26.{method}.claims").CLAIMS
