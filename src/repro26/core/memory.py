"""A size check before allocating: an impossible problem size gets one line ("needs N GB, have
M") and exit 2 instead of an XLA out-of-memory traceback minutes later.

Stages call :func:`require` with an estimate of their largest live arrays, computed from the
config before anything is built. The memory available is the accelerator's free memory when
JAX runs on one (``Device.memory_stats``), else the host's ``MemAvailable`` (Linux) or its
physical memory, and never more than an address-space limit on the process still allows.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from repro26.core.config import UsageError

GB = 2**30


def available_bytes() -> int:
    """Bytes the default JAX device can still allocate (host memory on CPU)."""
    import jax

    device = jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                host = int(line.split()[1]) * 1024
    return min(host, _address_space_left())


def _address_space_left() -> float:
    """What an address-space limit (``RLIMIT_AS``, e.g. ``repro26 probe``'s) still allows this
    process; infinite without one."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    statm = Path("/proc/self/statm")
    if soft == resource.RLIM_INFINITY or not statm.is_file():
        return float("inf")
    return soft - int(statm.read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def traced_bytes(fn, *args) -> int:
    """Bytes of the arrays ``fn(*args)`` returns, from their shapes alone
    (``equinox.filter_eval_shape``: nothing is computed or allocated; arguments may be modules
    holding functions), for :func:`require` before the real call."""
    import equinox as eqx
    import jax
    import numpy as np

    return sum(int(np.prod(leaf.shape)) * leaf.dtype.itemsize
               for leaf in jax.tree.leaves(eqx.filter_eval_shape(fn, *args))
               if isinstance(leaf, jax.ShapeDtypeStruct))


def vjp_bytes(fn, *args) -> int:
    """Bytes of the residuals that reverse-mode differentiation of ``fn(*args)`` with respect to
    its first argument keeps from the forward pass to the backward pass (the activations a
    gradient step holds at its peak), from shapes alone: ``jax.vjp`` under
    ``equinox.filter_eval_shape`` traces the forward pass and returns the pullback, whose leaves
    are the residuals; nothing is compiled or allocated. A lower bound of a training step's peak
    that is known before XLA compiles it (a program too big for the machine can exhaust the
    compiler's own memory before ``require_compiled`` could run)."""
    import equinox as eqx
    import jax

    def pullback(first, *rest):
        diff, static = eqx.partition(first, eqx.is_inexact_array)
        return jax.vjp(lambda d: fn(eqx.combine(d, static), *rest), diff)[1]

    return traced_bytes(pullback, *args)


def require(nbytes: float, what: str, available: int | None = None) -> None:
    """Raise a one-line :class:`UsageError` if ``nbytes`` (an estimate of the peak) exceed the
    memory available; ``what`` names the setting that decides the size."""
    have = available_bytes() if available is None else available
    if nbytes > have:
        raise UsageError(f"{what} needs about {nbytes / GB:.3g} GB of memory; this machine has "
                         f"{have / GB:.3g} GB available (lower it, or run at a scale meant for a "
                         "bigger machine)")


def require_compiled(compiled, what: str) -> None:
    """:func:`require` for a compiled program (``jax.jit(f).lower(...).compile()`` or
    ``eqx.filter_jit``'s, which wraps it as ``.compiled``): its peak is
    taken from XLA's memory analysis as arguments + outputs + temporaries − aliased buffers, so the
    check runs after compiling and before anything is allocated. No analysis (some backends): no
    check."""
    stats = getattr(compiled, "compiled", compiled).memory_analysis()
    if stats is not None:
        require(stats.argument_size_in_bytes + stats.output_size_in_bytes
                + stats.temp_size_in_bytes - stats.alias_size_in_bytes, what)


_XLA_BYTES = re.compile(r"allocating (\d+) bytes")
_NUMPY_SIZE = re.compile(r"Unable to allocate ([\d.]+) (KiB|MiB|GiB|TiB)")
_UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def exhausted_line(err: BaseException) -> str | None:
    """One line for an allocation that failed after all (a stage without a pre-check, or one
    whose estimate fell short): XLA's ``RESOURCE_EXHAUSTED`` or a host ``MemoryError``, with the
    size of the allocation where the message gives it; ``None`` for any other error. The safety
    net of ``repro26 <method> <stage>``: the job stops with this line instead of a traceback."""
    text = str(err)
    if isinstance(err, MemoryError):
        m = _NUMPY_SIZE.search(text)
        size = float(m.group(1)) * _UNITS[m.group(2)] if m else None
    elif type(err).__name__ in ("XlaRuntimeError", "JaxRuntimeError") and \
            "RESOURCE_EXHAUSTED" in text:
        m = _XLA_BYTES.search(text)
        size = float(m.group(1)) if m else None
    else:
        return None
    try:
        have = f"{available_bytes() / GB:.3g} GB"
    except Exception:  # noqa: BLE001  (the line must come out whatever the device says)
        have = "less"
    need = (f"one allocation needs about {size / GB:.3g} GB of memory" if size is not None
            else "an allocation failed")
    return (f"out of memory: {need}; this machine has {have} available (lower the sizes, or "
            "run at a scale meant for a bigger machine)")
