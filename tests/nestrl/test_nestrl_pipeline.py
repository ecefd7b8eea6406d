"""nestrl end to end at smoke scale (every stage, figures and claims) and bad input."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from repro26.core import io
from repro26.core.cli import main, run_stage
from repro26.core.config import UsageError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages):
    run = smoke_stages("nestrl")
    # one NestRL level: level1, FCP and MEP then have the same shapes (one compiled program)
    cfg = run.cfg = dataclasses.replace(run.cfg, levels=1)
    runs = tmp_path / "runs" / "cramped_room"
    for kind, partners in (("level0", []), ("level1", ["level0"]), ("fcp", ["level0"]),
                           ("mep_pop", []), ("mep", ["mep_pop"]),
                           ("br", ["level0", "fcp", "mep", "level1"])):
        run("train", runs / f"{kind}.npz", [runs / f"{p}.npz" for p in partners],
            variant=f"layout=cramped_room,kind={kind}")
        curve = io.read_table(runs / f"{kind}.csv")
        assert len(curve["return"]) == cfg.updates * len(cfg.seeds) * (
            cfg.sp_members + len(cfg.biases) if kind == "level0" else
            cfg.mep_members if kind == "mep_pop" else 1 if kind in ("fcp", "mep", "br")
            else cfg.level_size)
    assert not list(runs.glob("*.ckpt*"))
    pairs = tmp_path / "tables" / "pairs_cramped_room.csv"
    run("evaluate", pairs, sorted(runs.glob("*.npz")), variant="layout=cramped_room")
    table = io.read_table(pairs)
    n_learned = 4 * len(cfg.seeds)  # sp, fcp, mep, level1 per seed (partners); br only an ego
    assert len(table["return"]) == (n_learned + 3 * len(cfg.seeds)) * (n_learned + 4)
    q = np.stack([table[f"q{i}"] for i in range(1, 5)], 1)
    episodes = np.stack([table[f"episode{j}"] for j in range(1, cfg.eval_repeats + 1)], 1)
    np.testing.assert_allclose(q.sum(1), episodes.mean(1), atol=1e-4)  # quarters add up
    replicas = np.where(table["partner_group"] == "proxy", cfg.proxy_replicas, 1)
    soups = table["return"] * cfg.eval_envs * cfg.eval_repeats * replicas / 20  # whole soups
    np.testing.assert_allclose(soups, np.round(soups), atol=1e-3)
    carried = np.stack([table[f"carried{j}"] for j in range(1, cfg.eval_repeats + 1)], 1)
    np.testing.assert_allclose(table["adapt"], (carried - episodes)[:, 1:].mean(1), atol=1e-4)
    scripted = np.isin(table["ego"], ["random", "subtask"])  # no memory: carrying changes nothing
    np.testing.assert_allclose(carried[scripted], episodes[scripted])
    groups = set(table["partner_group"].tolist())
    assert {"self", "heldout_learned", "proxy"} <= groups
    tables = [pairs, *sorted(runs.glob("*.csv"))]
    claims = run.figures_and_claims(tmp_path, tables)
    assert list(claims) == ["heldout_return", "adaptability", "no_partner_specific_conventions"]


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    section = (ROOT / "config" / "methods" / "nestrl.yaml").read_text()
    bad.write_text("scale: smoke\n" + section.replace("horizon: 16", "horizon: 18"))
    assert main(["nestrl", "train", "--variant", "layout=cramped_room,kind=level0", "--config",
                 str(bad), "--out", str(tmp_path / "a.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "horizon" in err[0]


@pytest.mark.parametrize("variant", ["layout=cramped_room,kind=level9",
                                     "layout=coord_ring,kind=level0", "layout=cramped_room"])
def test_train_variant_must_name_a_configured_layout_and_kind(tmp_path, variant):
    with pytest.raises(UsageError, match="--variant"):
        run_stage("nestrl", "train", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.npz", variant=variant, progress=False)


def test_level2_without_level1_agents_is_refused(tmp_path):
    (tmp_path / "level0.npz").write_bytes(b"")
    with pytest.raises(UsageError, match="level1.npz"):
        run_stage("nestrl", "train", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "x.npz", variant="layout=cramped_room,kind=level2",
                  inputs=[tmp_path / "level0.npz"], progress=False)
