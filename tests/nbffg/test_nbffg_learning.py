"""Every parameter of the NBFFG networks learns (``assert_every_parameter_learns``): the drift
residual (continuous traits) and the jump-rate correction (discrete traits), both on their
training loss, the pathwise-subsampled ELBO at the smoke scale's settings."""

from pathlib import Path

import jax
import pytest

from repro26.core.cli import resolve_run_config
from repro26.core.learning import assert_every_parameter_learns
from repro26.nbffg import cli
from repro26.nbffg import data as D
from repro26.nbffg import losses as L
from repro26.nbffg import train as T

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("task", ["doublewell_random_4", "ctmc_random_4"])
def test_every_parameter_learns(task):
    _, cfg, _ = resolve_run_config(cli, "nbffg", ROOT / "config" / "config.yaml", "smoke")
    task = D.parse_task(task)
    problem = L.build_problem(cfg, task, D.generate(cfg, task, [0])[0])
    model = T.init_residual(cfg, task, problem, jax.random.key(0))
    loss = L.make_loss(2, cfg.train.paths_per_step)  # the training loss, subsampled
    # x_scale (the largest observation, under stop_gradient) is a constant of the data
    frozen = [] if task.dynamics == "ctmc" else [".x_scale"]
    assert_every_parameter_learns(model, lambda m, k: loss(m, problem, k)[0],
                                  jax.random.split(jax.random.key(1), 3), frozen=frozen)
