"""Shared test setup: JAX on one CPU thread with the pipeline's persistent compile cache (a
rerun of the tests, or the `smoke` pipeline after them, reuses compiled programs), and the
repository root for workflow tests."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("REPRO26_JAX_CACHE", str(REPO / ".cache" / "jax"))

from repro26.core.cli import enable_compile_cache  # noqa: E402

enable_compile_cache()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's in-memory compiled programs after each test module. One pytest process runs
    every method's tests; kept alive, their thousands of XLA executables exhaust the process's
    memory maps (vm.max_map_count) and the compiler crashes. Recompiles hit the disk cache."""
    yield
    import gc

    import jax

    jax.clear_caches()
    gc.collect()
