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


VERDICTS = ("held", "not held", "inconclusive")


class SmokeStages:
    """One method's stages at `smoke` scale, run in this process through ``run_stage`` (the
    CLI's own path) with the repository's config. ``cfg`` may be replaced before running."""

    def __init__(self, method: str):
        import importlib

        from repro26.core.cli import resolve_run_config

        self.method = method
        cli = importlib.import_module(f"repro26.{method}.cli")
        self.scale, self.cfg, _ = resolve_run_config(cli, method, REPO / "config" / "config.yaml",
                                                     "smoke")

    def __call__(self, stage, out, inputs=(), variant=None, name=None):
        from repro26.core.cli import run_stage

        run_stage(self.method, stage, name=name, cfg=self.cfg, scale=self.scale, out=out,
                  variant=variant, inputs=inputs, progress=False)

    def figures_and_claims(self, folder: Path, tables, claim_tables=None) -> dict[str, dict]:
        """Draw every declared figure from ``tables`` (PNG and PDF must appear), judge the claims
        on ``claim_tables`` (default ``tables``); return the claims by id, each with one of the
        three verdicts, and the file validating against the claims schema
        (:func:`repro26.core.claims.validate_claims_file`)."""
        import json

        from repro26.core.cli import method_figures

        for name in method_figures(self.method):
            self("figure", folder / "figures" / f"{name}.png", tables, name=name)
            assert (folder / "figures" / f"{name}.pdf").is_file(), name
        self("claims", folder / "claims.json", tables if claim_tables is None else claim_tables)
        from repro26.core.claims import validate_claims_file

        claims = {c["id"]: c for c in json.loads((folder / "claims.json").read_text())["claims"]}
        assert all(c["verdict"] in VERDICTS for c in claims.values())
        assert validate_claims_file(folder / "claims.json") == []
        return claims


@pytest.fixture
def smoke_stages():
    """``smoke_stages("poll")``: a :class:`SmokeStages` runner for one method."""
    return SmokeStages


#: The tests that run one method's whole `smoke` pipeline in this process.
END_TO_END_TESTS = ("test_smoke_end_to_end", "test_smoke_pipeline_end_to_end",
                    "test_all_stages_end_to_end")


def pytest_collection_modifyitems(config, items):
    """Where CI has already run every method's `smoke` pipeline through Snakemake, each method's
    in-process end-to-end test would run the same stages a second time: it is skipped, and
    tests/test_smoke_tree.py checks that pipeline's outputs instead."""
    tree = os.environ.get("REPRO26_SMOKE_TREE")
    if not tree:
        return
    skip = pytest.mark.skip(reason=f"the smoke pipeline ran this method end to end in {tree}; "
                                   "tests/test_smoke_tree.py checks its outputs")
    for item in items:
        if item.originalname in END_TO_END_TESTS and item.path.parent.parent == REPO / "tests":
            item.add_marker(skip)
