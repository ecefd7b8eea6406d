"""neptuna end to end at a reduced smoke scale (stage functions in a tmp dir) and bad input."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from repro26.core import io
from repro26.core.cli import main, resolve_run_config, run_stage
from repro26.core.config import ConfigError, UsageError
from repro26.neptuna import cli, data

ROOT = Path(__file__).resolve().parents[2]


def _empty_h5(path: Path) -> None:
    """A readable HDF5 file with nothing in it: it passes the inputs' format check, so the stage's
    own argument checks are what a test sees."""
    import h5py

    h5py.File(path, "w").close()


def _smoke_cfg():
    return resolve_run_config(cli, "neptuna", ROOT / "config" / "config.yaml", "smoke")


@pytest.mark.slow
def test_smoke_end_to_end(tmp_path, smoke_stages):
    """Every stage on the smoke config restricted to the U-Net with mse and softadapt."""
    run = smoke_stages("neptuna")
    cfg = run.cfg = dataclasses.replace(run.cfg, models=("unet",), losses=("mse", "softadapt"),
                                        train_steps=10, sod_ns=(20, 40), datasets_3d=(),
                                        nx=16, ny=8, timing_min_seconds=0.005)
    run("validate", tmp_path / "tables")
    h5 = tmp_path / "data" / "bubble.h5"
    run("data", h5, variant="dataset=bubble")
    fields, params, attrs = data.read_h5(h5)
    assert fields.shape == (cfg.n_traj, cfg.n_frames, 5, cfg.ny, cfg.nx)
    assert attrs["channels"] == "rho,u,v,p,alpha" and params["mach"][0] == pytest.approx(1.22)
    run("train", tmp_path / "runs" / "bubble", [h5], variant="dataset=bubble")  # every run
    csvs = [tmp_path / "runs" / ds / f"{m}_{loss}.csv" for ds, m, loss in cli.runs(cfg)]
    pretrained = tmp_path / "runs" / "foundation_pretrained.eqx"
    run("pretrain", pretrained, [h5])
    ft = tmp_path / "runs" / "bubble" / "foundation_mse.csv"
    run("finetune", ft, [h5, pretrained], variant="dataset=bubble")
    run("timing", tmp_path / "tables" / "timing.csv", [h5])
    timing = io.read_table(tmp_path / "tables" / "timing.csv")
    assert set(timing["loss"]) == {"mse", "equal", "softadapt", "gradnorm", "control"}
    # each measurement (calls x steps) spans at least timing_min_seconds of CPU, up to one tick
    assert np.all(timing["calls"] * timing["steps"] * timing["seconds_per_step"]
                  >= 0.5 * cfg.timing_min_seconds)
    run("evaluate", tmp_path / "tables", [h5, *csvs, ft])
    metrics = io.read_table(tmp_path / "tables" / "metrics.csv")
    assert np.sum(metrics["model"] == "foundation") == len(cfg.seeds)
    exact = {k: metrics[k][metrics["model"] == "exact"] for k in ("nrmse", "iou", "ssim")}
    assert len(exact["nrmse"]) == len(cfg.seeds)  # the ideal row: the true frames, perfect scores
    np.testing.assert_allclose(exact["nrmse"], 0.0, atol=1e-6)
    np.testing.assert_allclose(exact["iou"], 1.0)
    # the last quarter's fall of each run's validation curve, 0 for the rows that do not train
    assert np.all(np.isfinite(metrics["tail_gain"]))
    assert np.all(metrics["tail_gain"][np.isin(metrics["model"], ["exact", "persistence"])] == 0)
    tables = [tmp_path / "tables" / f"{n}.csv" for n in
              ("validation", "sod_profile", "rollout", "metrics", "weights", "timing")]
    claims = run.figures_and_claims(tmp_path, [*tables, tmp_path / "data" / "bubble_snapshots.npz",
                                               pretrained.with_suffix(".csv")], tables[3::2])
    assert list(claims) == ["no_single_best", "composite_losses_improve",
                            "softadapt_most_consistent", "softadapt_negligible_overhead"]
    assert claims["no_single_best"]["ideal"] is None
    # the validation curve: every val_every steps and at the end, for every seed
    arrays = io.read_npz(csvs[0].with_suffix(".npz"))
    assert list(arrays["val_steps"]) == [5, 10] and arrays["val"].shape == (2, len(cfg.seeds))
    assert np.all(np.isfinite(io.read_table(csvs[0])["plateau_gain"]))


def test_bad_config_value_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "config.yaml"
    bad.write_text("scale: smoke\nneptuna:\n  common: {models: [unet, resnet]}\n"
                   "  smoke: {seeds: [0], datasets: [bubble], losses: [mse], nx: 32, ny: 16, "
                   "n_traj: 3, n_test: 1, n_frames: 5, train_steps: 2, sod_ns: [20]}\n"
                   "  small: {}\n  paper: {}\n")
    assert main(["neptuna", "data", "--config", str(bad), "--variant", "dataset=bubble",
                 "--out", str(tmp_path / "d.h5")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "models" in err[0]


@pytest.mark.parametrize("variant", ["dataset=nope", "dataset=bubble,model=unet"])
def test_train_variant_must_name_a_configured_dataset(tmp_path, variant):
    _empty_h5(tmp_path / "x.h5")
    with pytest.raises(UsageError, match="--variant"):
        run_stage("neptuna", "train", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "runs", inputs=[tmp_path / "x.h5"], variant=variant,
                  progress=False)


def test_grid_must_fit_the_unet_and_coarsening():
    scale, cfg, _ = _smoke_cfg()
    with pytest.raises(ConfigError, match="nx, ny"):
        cli.check(dataclasses.replace(cfg, nx=30))


def test_finetune_needs_the_pretrained_weights(tmp_path):
    _empty_h5(tmp_path / "bubble.h5")
    with pytest.raises(UsageError, match="pretrained"):
        run_stage("neptuna", "finetune", config=ROOT / "config" / "config.yaml", scale="smoke",
                  out=tmp_path / "f.csv", inputs=[tmp_path / "bubble.h5"],
                  variant="dataset=bubble", progress=False)


@pytest.mark.slow
def test_3d_data_stage_writes_the_volume_and_its_symmetry_plane(tmp_path, smoke_stages):
    run = smoke_stages("neptuna")
    run.cfg = dataclasses.replace(run.cfg, datasets_3d=("bubble3d",), nx3=8, ny3=4, nz3=4,
                                  n_traj_3d=1, n_frames_3d=2)
    h5 = tmp_path / "data" / "bubble3d.h5"
    run("data", h5, variant="dataset=bubble3d")
    fields, params, attrs = data.read_h5(h5)
    assert fields.shape == (1, 2, 6, 4, 4, 8) and attrs["channels"] == "rho,u,v,w,p,alpha"
    snap = io.read_npz(tmp_path / "data" / "bubble3d_snapshots.npz")["fields"]
    np.testing.assert_array_equal(snap[[0, -1]], fields[0, [0, -1], :, 0])
