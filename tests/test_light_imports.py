"""Figure and claims jobs only read tables and draw: importing a method's ``figures`` and
``claims`` must not import JAX, its libraries, scipy.stats or pyplot (each costs every such job
up to a CPU-second). One fresh interpreter checks every implemented method."""

import json
import os
import subprocess
import sys
from pathlib import Path

import repro26
from repro26.core.registry import implemented_methods

HEAVY = ("jax", "scipy.stats", "matplotlib.pyplot", "torch", "ott", "optax", "equinox")

SCRIPT = """
import importlib, json, sys
heavy, methods, pulled = json.loads(sys.argv[1]), json.loads(sys.argv[2]), {}
for method in methods:
    before = set(sys.modules)
    for module in ("figures", "claims"):
        importlib.import_module(f"repro26.{method}.{module}")
    new = [h for h in heavy if h in sys.modules and h not in before]
    if new:
        pulled[method] = new
print(json.dumps(pulled))
"""


def test_figures_and_claims_import_no_heavy_library():
    methods = list(implemented_methods())
    src = str(Path(repro26.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [src, *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(HEAVY), json.dumps(methods)],
                         capture_output=True, text=True, env=env, check=True)
    pulled = json.loads(out.stdout.strip().splitlines()[-1])
    assert not pulled, "importing figures and claims pulls in: " + "; ".join(
        f"{m}: {', '.join(libs)}" for m, libs in pulled.items())
