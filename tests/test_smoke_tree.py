"""The outputs of the Snakemake `smoke` pipeline, method by method, where one has just run
(``$REPRO26_SMOKE_TREE``, set by CI after its smoke stage; otherwise skipped, and each method's
in-process end-to-end test runs its stages instead)."""

import json
import os
from pathlib import Path

import matplotlib.image
import pytest

from repro26.core.claims import VERDICTS, validate_claims_file
from repro26.core.jobs import logged_job_cost
from repro26.core.registry import implemented_methods, method_figures

TREE = Path(os.environ["REPRO26_SMOKE_TREE"]) if os.environ.get("REPRO26_SMOKE_TREE") else None
pytestmark = pytest.mark.skipif(TREE is None, reason="no smoke pipeline tree: REPRO26_SMOKE_TREE unset")


@pytest.mark.parametrize("method", implemented_methods())
def test_pipeline_wrote_valid_claims(method):
    path = TREE / method / "claims.json"
    assert path.is_file(), f"{path} missing"
    assert validate_claims_file(path) == []
    data = json.loads(path.read_text())
    assert data["claims"], f"{path}: no claims"
    assert {c["verdict"] for c in data["claims"]} <= set(VERDICTS)
    assert data["scale"] == "smoke"


@pytest.mark.parametrize("method", implemented_methods())
def test_pipeline_drew_every_declared_figure(method):
    for name in method_figures(method):
        png = TREE / method / "figures" / f"{name}.png"
        assert (png.with_suffix(".pdf")).is_file(), f"{png.with_suffix('.pdf')} missing"
        height, width = matplotlib.image.imread(png).shape[:2]
        assert height > 100 and width > 100, f"{png}: {width} x {height} pixels"


@pytest.mark.parametrize("method", implemented_methods())
def test_every_stage_job_logged_its_cpu_time(method):
    """Each job run through ``repro26`` (all but the shell-written config) ends its log with its
    CPU seconds, which the report's cost table reads in place of Snakemake's sampled figure."""
    for tsv in sorted((TREE / method / "benchmarks").glob("*.tsv")):
        if tsv.stem != "config":
            log = TREE / method / "logs" / f"{tsv.stem}.log"
            assert logged_job_cost(log) is not None, f"{log}: no job CPU line"
