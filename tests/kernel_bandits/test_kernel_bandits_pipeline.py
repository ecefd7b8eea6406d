"""kernel_bandits end to end at smoke scale (stages through ``run_stage``, the CLI's path), every
algorithm against every adversary, and one-line errors for bad config and bad CLI input."""

import dataclasses
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from repro26.core import io
from repro26.core.claims import validate_claims_file
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError, as_dict, config_hash, deep_merge
from repro26.kernel_bandits import cli, train
from repro26.kernel_bandits.data import make_problem

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke_cfg():
    _, cfg, _ = resolve_run_config(cli, "kernel_bandits", REPO / "config/config.yaml", "smoke")
    return cfg


def _run(cfg, stage, out, variant=None, inputs=(), name=None):
    run_stage("kernel_bandits", stage, name=name, cfg=cfg, scale="smoke", out=out, variant=variant,
              inputs=inputs, progress=False)
    return Path(out)


ALGOS = [*train.ALGORITHMS[:1], *train.ALGORITHMS[2:], "nystrom_uniform_m3", "nystrom_leverage_m3"]
KINDS = ["drift", "switch", "adaptive", "bump"]


@pytest.fixture(scope="module")
def tiny_problem():
    return make_problem(1, 8, "matern32", 0.2)


@pytest.mark.parametrize("adversary", KINDS)
def test_adversary_rewards_lie_in_unit_interval(smoke_cfg, tiny_problem, adversary):
    adversaries, bounds = train.build_adversaries(adversary, tiny_problem, 40, [0, 1], smoke_cfg)
    p = np.full(tiny_problem.n_arms, 1.0 / tiny_problem.n_arms, np.float32)
    for s in range(2):
        one = jax.tree.map(lambda a: a[s], adversaries)
        f = np.stack([np.asarray(one.rewards(t, p)) for t in range(0, 40, 7)])
        assert np.abs(f).max() <= 1.0
    if adversary != "bump":
        assert np.all(bounds >= smoke_cfg.adversary.peak_height)


@pytest.mark.parametrize("i", range(len(ALGOS)))
def test_every_algorithm_plays_a_game(smoke_cfg, tiny_problem, i):
    """Each learner (cycling through the adversaries) plays with finite regret; uniform's is ≥ 0."""
    algo, adversary, seeds = ALGOS[i], KINDS[i % len(KINDS)], [0, 1]
    adversaries, _ = train.build_adversaries(adversary, tiny_problem, 40, seeds, smoke_cfg)
    learners = train.build_learners(algo, tiny_problem, 40, seeds, smoke_cfg)
    curve = train.play(learners, adversaries, seeds, tiny_problem.n_arms, 40, chunk_size=20)
    assert curve.shape == (40, 2) and np.isfinite(curve).all()
    if algo == "uniform":
        assert (curve[-1] >= -1e-4).all()


def test_adaptive_adversary_moves_peak_away_from_plays(smoke_cfg):
    problem = make_problem(1, 20, "matern32", 0.2)
    adversaries, _ = train.build_adversaries("adaptive", problem, 10, [0], smoke_cfg)
    one = jax.tree.map(lambda a: a[0], adversaries)
    right = jax.nn.one_hot(19, 20)  # all mass on the right end
    assert np.argmax(np.asarray(one.rewards(0, right) - one.background)) < 10
    assert np.argmax(np.asarray(one.rewards(0, jax.nn.one_hot(0, 20)) - one.background)) >= 10


def test_smoke_pipeline_end_to_end(smoke_cfg, tmp_path):
    cfg = dataclasses.replace(smoke_cfg, adversaries=("adaptive",), horizons=(50, 100),
                              algorithms=("exp_weights", "exp_weights_tuned", "gp_ucb"),
                              nystrom=dataclasses.replace(smoke_cfg.nystrom, m=(4,)))
    main_data = _run(cfg, "data", tmp_path / "data" / f"matern32_n{cfg.grid}.npz", f"kernel=matern32,grid={cfg.grid}")
    gamma = cli.gamma_table_path(main_data)
    assert io.read_table(gamma)["gamma"][-1] > 0
    runs = []
    for adversary in cfg.adversaries:
        tune = _run(cfg, "tune", tmp_path / "tune" / f"{adversary}.csv", f"adversary={adversary}", [main_data])
        for algo in cfg.algorithms:
            inputs = [main_data, tune] if algo == "exp_weights_tuned" else [main_data]
            runs.append(_run(cfg, "simulate", tmp_path / "runs" / f"{adversary}_{algo}.csv",
                             f"algo={algo},adversary={adversary},kernel=matern32,grid={cfg.grid},study=scaling",
                             inputs))
    assert not list(tmp_path.glob("runs/*.ckpt*")), "checkpoints are removed after a finished job"
    fixed = [_run(cfg, "simulate", tmp_path / "fixed" / f"{algo}.csv",
                  f"algo={algo},adversary=drift,kernel=matern32,grid={cfg.grid},study=fixed", [main_data])
             for algo in ("exp_weights", *(train.nystrom_name("leverage", m) for m in cfg.nystrom.m))]
    timing = _run(cfg, "timing", tmp_path / "timing.csv", inputs=[main_data])
    scaling = _run(cfg, "evaluate_scaling", tmp_path / "scaling.csv", inputs=[*runs, gamma])
    fixed_table = _run(cfg, "evaluate_fixed", tmp_path / "fixed.csv", inputs=fixed)
    table = io.read_table(scaling)
    assert len(table["regret"]) == len(cfg.adversaries) * len(cfg.algorithms) * len(cfg.horizons) * len(cfg.seeds)
    np.testing.assert_allclose(table["ratio"], table["regret"] / table["sqrt_T_gamma"], rtol=1e-6)
    for name, inputs in [("regret_vs_t", [scaling]), ("ratio_vs_t", [scaling]), ("nystrom", [fixed_table, timing]),
                         ("arms", [fixed_table]), ("info_gain", [gamma])]:
        png = _run(cfg, "figure", tmp_path / "figures" / f"{name}.png", inputs=inputs, name=name)
        assert png.stat().st_size > 1000 and png.with_suffix(".pdf").is_file()
        assert png.with_suffix(".rst").read_text().strip()
    claims_path = _run(cfg, "claims", tmp_path / "claims.json", inputs=[scaling, fixed_table, timing])
    assert validate_claims_file(claims_path) == []
    claims = json.loads(claims_path.read_text())
    assert [c["id"] for c in claims["claims"]] == ["regret_rate", "gp_ucb_linear", "nystrom_matches_exact"]
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in claims["claims"])
    assert claims["meta"]["config_hash"] == config_hash(as_dict(cfg))


@pytest.mark.parametrize(("override", "message"), [
    ({"horizons": [100, 50]}, "horizons"),
    ({"checkpoint_every": 70}, "checkpoint_every"),
    ({"nystrom": {"m": [1000]}}, "nystrom.m"),
    ({"adversary": {"peak_height": 0.9}}, "peak_height"),
])
def test_bad_config_is_one_line(override, message, tmp_path):
    import yaml

    section = yaml.safe_load((REPO / "config/methods/kernel_bandits.yaml").read_text())
    section["kernel_bandits"]["smoke"] = deep_merge(section["kernel_bandits"]["smoke"], override)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"scale": "smoke", **section}))
    with pytest.raises(ConfigError, match=message) as err:
        resolve_run_config(cli, "kernel_bandits", path, "smoke")
    assert "\n" not in str(err.value)


def test_cli_bad_variant_exits_2(capsys, tmp_path):
    code = main(["kernel_bandits", "simulate", "--config", str(REPO / "config/config.yaml"), "--scale", "smoke",
                 "--variant", "algo=magic,adversary=drift,kernel=matern32,grid=12,study=scaling",
                 "--out", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "algo" in err[0]
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("variant", ["kernel=matern32", "kernel=rbf,grid=12", "kernel=matern32,grid=x",
                                     "matern32:12", "kernel=matern32,grid=0"])
def test_data_variant_is_typed(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("kernel_bandits", "data", config=REPO / "config/config.yaml", scale="smoke",
                  out=tmp_path / "x.npz", variant=variant, progress=False)
