"""Bad input, as a new user makes it: each case exits with code 2, prints exactly one line
naming what is wrong, shows no traceback, and leaves nothing half-written.

The stages run in-process through ``repro26.core.cli.main`` (the console script), mostly on
srgw's declared figure and claims stages and on core, so almost no case compiles a JAX program
(nbffg's oversized training step builds its smoke task's guide first, a few seconds). The cases
marked "found by `repro26 probe`" are what the paper-shape probe ran into.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from repro26.core import io, jobs
from repro26.core.cli import main
from repro26.core.registry import METHODS, implemented_methods

REPO = Path(__file__).resolve().parents[1]
CONFIG = str(REPO / "config" / "config.yaml")
UNBUILT = sorted(set(METHODS) - set(implemented_methods()))


def _tables(folder: Path) -> dict[str, Path]:
    """Valid-looking inputs of srgw's figures and claims (content is irrelevant: every case
    fails before it is read, or on reading it)."""
    (folder / "real").mkdir(parents=True, exist_ok=True)
    paths = {"fits.csv": folder / "tables" / "fits.csv", "pot.csv": folder / "tables" / "pot.csv",
             "real.csv": folder / "real" / "real.csv", "real.npz": folder / "real" / "real.npz"}
    for name in ("fits.csv", "pot.csv", "real.csv"):
        io.write_table(paths[name], [{"n": 10, "seed": 0, "value": 1.0},
                                     {"n": 20, "seed": 0, "value": 0.5}], {"source": "test"})
    io.write_npz(paths["real.npz"], karate_A=np.eye(3))
    # readable files of the right shape but the wrong origin
    for name, origin in (("other_scale.csv", {"method": "srgw", "stage": "fit", "scale": "small"}),
                         ("other_method.csv", {"method": "nbf", "stage": "fit", "scale": "smoke"})):
        paths[name] = folder / "tables" / name
        io.write_table(paths[name], [{"n": 10, "seed": 0, "value": 1.0}], origin)
    paths["small.h5"] = folder / "small.h5"
    import h5py

    with h5py.File(paths["small.h5"], "w") as f:
        f.create_dataset("fields", data=np.zeros((3, 4, 5, 8, 16), np.float32))
        f.attrs.update({"method": "neptuna", "stage": "data", "scale": "small",
                        "variant": "dataset=bubble"})
    paths["garbage.h5"] = _write(folder / "garbage.h5", "not an HDF5 file")
    # readable neptuna-like files at smoke: one without its fields, one of another dataset
    for name, variant, fields in (("no_fields.h5", "dataset=bubble", False),
                                  ("droplet.h5", "dataset=droplet", True)):
        paths[name] = folder / name
        with h5py.File(paths[name], "w") as f:
            if fields:
                f.create_dataset("fields", data=np.zeros((3, 4, 5, 8, 16), np.float32))
            f.attrs.update({"method": "neptuna", "stage": "data", "scale": "smoke",
                            "variant": variant})
    # π_ref's weights renamed as π_RL's; an nbffg task's data in another task's folder
    paths["rl_kl.eqx"] = folder / "renamed" / "rl_kl.eqx"
    with jobs.job("t", {"method": "progress_advantage", "stage": "train", "scale": "smoke",
                        "variant": "model=ref"}):
        io.save_checkpoint(paths["rl_kl.eqx"], {"w": np.zeros(2)}, 0)
    for seed in (0, 1):
        with jobs.job("t", {"method": "nbffg", "stage": "data", "scale": "smoke",
                            "variant": "task=linear_balanced_4"}):
            io.write_npz(folder / "nbffg" / "ctmc_random_4" / f"seed{seed}.npz", parent=np.zeros(3))
        io.write_npz(folder / "nbffg" / "linear_balanced_4" / f"seed{seed}.npz", parent=np.zeros(3))
    paths["bipartite.npz"] = folder / "nagnn" / "bipartite.npz"
    with jobs.job("t", {"method": "nagnn", "stage": "data", "scale": "smoke",
                        "variant": "dataset=bipartite"}):
        io.write_npz(paths["bipartite.npz"], src=np.zeros(3))
    paths["personas.npz"] = folder / "personas.npz"
    io.write_npz(paths["personas.npz"], x=np.zeros(2))
    paths["policy.ckpt"] = folder / "policy.ckpt"
    with jobs.job("t", {"method": "nemo", "stage": "train", "scale": "smoke",
                        "variant": "method=emotion_only"}):
        io.save_checkpoint(paths["policy.ckpt"], {"w": np.zeros(2)}, 1)
    return paths


def _damage(path: Path, how: str) -> Path:
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "empty": b"",
                      "garbage": bytes(range(256)) * 4}[how])
    return path


# Each case: (id, function of the temp folder and its inputs -> argv, expected text in the line)
CASES = [
    ("unknown_method", lambda t, p: ["srgv", "data"], "method 'srgv' is unknown"),
    ("unknown_stage", lambda t, p: ["srgw", "train"], "stage 'train' is unknown for srgw"),
    ("figure_without_name", lambda t, p: ["srgw", "figure"], "figure: name one of error_vs_n"),
    ("unknown_figure", lambda t, p: ["srgw", "figure", "rate"], "--variant name: 'rate' is not allowed"),
    ("name_on_a_stage", lambda t, p: ["srgw", "data", "extra"], "takes no positional argument"),
    ("variant_missing", lambda t, p: ["srgw", "fit"], "--variant: stage 'fit' needs n=..."),
    ("variant_old_grammar", lambda t, p: ["srgw", "fit", "--variant", "absdiff:48"],
     "--variant: 'absdiff:48' is not allowed"),
    ("variant_bad_type", lambda t, p: ["srgw", "fit", "--variant", "n=many"],
     "--variant n: expected an integer, got 'many'"),
    ("variant_not_on_grid", lambda t, p: ["srgw", "fit", "--variant", "n=7",
                                          "--scale", "smoke", "--out", str(t / "o.csv")],
     "--variant n: 7 is on no family's grid"),
    ("variant_on_plain_stage", lambda t, p: ["srgw", "data", "--variant", "n=3"], "takes no variant"),
    ("seed_missing", lambda t, p: ["srgw", "pot"], "--seed: stage 'pot' needs a seed"),
    ("seed_not_integer", lambda t, p: ["srgw", "pot", "--seed", "one"], "invalid int value: 'one'"),
    ("seed_negative", lambda t, p: ["srgw", "pot", "--seed", "-1"], "--seed: must be a non-negative"),
    ("seed_on_an_all_seeds_stage", lambda t, p: ["srgw", "claims", "--seed", "0"], "takes no --seed"),
    ("seeds_repeated", lambda t, p: _srgw_section(t, smoke="{seeds: [0, 0]}"),
     "srgw.smoke.seeds: seed 0 is listed twice"),
    ("seeds_empty", lambda t, p: _srgw_section(t, smoke="{seeds: []}"), "srgw.smoke.seeds: empty"),
    ("seeds_negative", lambda t, p: _srgw_section(t, smoke="{seeds: [1, -1]}"),
     "srgw.smoke.seeds: seed -1 is negative"),
    ("names_repeated", lambda t, p: _section(t, "neptuna", "{datasets: [bubble, bubble]}"),
     "neptuna.smoke.datasets: 'bubble' is listed twice"),
    ("grid_values_repeated", lambda t, p: _section(t, "progress_advantage", "{bon_ns: [1, 2, 2]}"),
     "progress_advantage.bon_ns: distinct values"),
    ("threads_zero", lambda t, p: ["srgw", "data", "--threads", "0"], "--threads: must be a positive integer"),
    ("scale_unknown", lambda t, p: ["srgw", "data", "--scale", "huge"], "scale: 'huge' is not allowed"),
    ("config_missing", lambda t, p: ["srgw", "data", "--config", str(t / "nope.yaml")],
     "does not exist"),
    ("config_bad_yaml", lambda t, p: ["srgw", "data", "--config", str(_write(t / "c.yaml", "srgw: [\n"))],
     "line 2 is not valid YAML"),
    ("config_wrong_type", lambda t, p: _srgw_section(t, common="{max_iter: many}"),
     "srgw.smoke.max_iter: expected an integer, got 'many'"),
    ("config_unknown_key", lambda t, p: _srgw_section(t, common="{max_iters: 5}"),
     "srgw.smoke.max_iters: unknown field"),
    ("input_missing", lambda t, p: ["srgw", "figure", "gap_vs_n", "--input", str(t / "none.csv")],
     "does not exist"),
    ("figure_input_not_given", lambda t, p: ["srgw", "figure", "time_vs_n", "--input",
                                             str(p["fits.csv"]), "--out", str(t / "f" / "t.png")],
     "stage 'figure' needs a file named tables/pot.csv"),
    ("claims_without_inputs", lambda t, p: ["srgw", "claims", "--out", str(t / "claims.json")],
     "needs a file named tables/fits.csv"),
    ("csv_truncated", lambda t, p: ["srgw", "figure", "gap_vs_n", "--input",
                                    str(_damage(p["fits.csv"], "truncate")), "--out", str(t / "f" / "g.png")],
     "fits.csv"),
    ("csv_empty", lambda t, p: ["srgw", "figure", "gap_vs_n", "--input",
                                str(_damage(p["fits.csv"], "empty")), "--out", str(t / "f" / "g.png")],
     "is empty"),
    ("csv_garbage", lambda t, p: ["srgw", "figure", "gap_vs_n", "--input",
                                  str(_damage(p["fits.csv"], "garbage")), "--out", str(t / "f" / "g.png")],
     "fits.csv"),
    ("csv_wrong_table", lambda t, p: ["srgw", "figure", "gap_vs_n", "--input", str(p["fits.csv"]),
                                      "--out", str(t / "f" / "g.png")], "no column"),
    ("npz_truncated", lambda t, p: ["srgw", "figure", "real_networks", "--input", str(p["real.csv"]),
                                    str(_damage(p["real.npz"], "truncate")), "--out", str(t / "f" / "r.png")],
     "is not a readable .npz archive"),
    ("npz_garbage", lambda t, p: ["srgw", "figure", "real_networks", "--input", str(p["real.csv"]),
                                  str(_damage(p["real.npz"], "garbage")), "--out", str(t / "f" / "r.png")],
     "is not a readable .npz archive"),
    ("figure_out_not_png", lambda t, p: ["srgw", "figure", "gap_vs_n", "--input", str(p["fits.csv"]),
                                         "--out", str(t / "f" / "g.svg")], "--out: a figure is written as NAME.png"),
    ("out_under_a_file", lambda t, p: ["srgw", "data", "--scale", "smoke", "--out",
                                       str(_write(t / "plain", "x") / "data")], "Not a directory"),
    ("size_beyond_memory", lambda t, p: ["kernel_bandits", "data", "--variant",
                                         "kernel=matern52,grid=1000000", "--scale", "smoke",
                                         "--out", str(t / "d.npz")], "needs about"),
    ("input_from_another_scale", lambda t, p: ["srgw", "figure", "gap_vs_n", "--scale", "smoke",
                                               "--input", str(p["other_scale.csv"]),
                                               "--out", str(t / "f" / "g.png")],
     "written for scale 'small'; this job is scale 'smoke'"),
    ("input_from_another_method", lambda t, p: ["srgw", "figure", "gap_vs_n", "--scale", "smoke",
                                                "--input", str(p["other_method.csv"]),
                                                "--out", str(t / "f" / "g.png")],
     "written for method 'nbf'"),
    ("input_from_another_variant", lambda t, p: ["nemo", "evaluate", "--variant", "method=nemo",
                                                 "--scale", "smoke", "--input",
                                                 str(p["personas.npz"]), str(p["policy.ckpt"]),
                                                 "--out", str(t / "e.csv")],
     "written for method=emotion_only; this job is method=nemo"),
    ("setting_out_of_range", lambda t, p: _section(t, "nestrl", "{gamma: 1.5}"),
     "nestrl.smoke.gamma: must be in [0, 1], got 1.5"),
    ("step_count_negative", lambda t, p: _section(t, "theseus", "{image_train: {guide_steps: -20}}"),
     "guide_steps: must be >= 1, got -20"),
    ("pools_beyond_memory", lambda t, p: _section(t, "attn_recurrence", "{train_sequences: 100000000}",
                                                  stage="data"), "needs about"),
    # found by `repro26 probe`: neptuna's datasets (HDF5) now record and check their origin
    ("h5_input_from_another_scale", lambda t, p: ["neptuna", "train", "--variant",
                                                  "dataset=bubble",
                                                  "--scale", "smoke", "--input", str(p["small.h5"]),
                                                  "--out", str(t / "runs" / "bubble")],
     "written for scale 'small'; this job is scale 'smoke'"),
    # found by `repro26 probe`: nbffg's 64-leaf shapes task aborted inside XLA; a training step
    # is now sized from shapes before it is compiled
    ("training_step_beyond_memory", lambda t, p: _nbffg_train(t, "{train: {batch: 10000000}}"),
     "one training step's gradient (2 seeds x 10000000 samples"),
    ("h5_garbage", lambda t, p: ["neptuna", "train", "--variant", "dataset=bubble",
                                 "--scale", "smoke", "--input", str(p["garbage.h5"]),
                                 "--out", str(t / "runs" / "bubble")],
     "garbage.h5 is not a readable HDF5 file"),
    ("h5_without_fields", lambda t, p: ["neptuna", "train", "--variant",
                                        "dataset=bubble", "--scale", "smoke",
                                        "--input", str(p["no_fields.h5"]),
                                        "--out", str(t / "runs" / "bubble")],
     "not a neptuna dataset (HDF5 with a 'fields' array)"),
    ("h5_of_another_dataset", lambda t, p: ["neptuna", "train", "--variant",
                                            "dataset=bubble", "--scale", "smoke",
                                            "--input", str(p["droplet.h5"]),
                                            "--out", str(t / "runs" / "bubble")],
     "written for dataset=droplet; this job is dataset=bubble"),
    # found by `repro26 probe`: the paper's datasets (20 GB arrays) aborted in XLA; the solver's
    # compiled program is now sized before it runs (here 3 trajectories x 10^5 frames)
    ("dataset_beyond_memory", lambda t, p: _section(t, "neptuna", "{n_frames: 100000, nx: 1024, "
                                                    "ny: 512, datasets_3d: []}", stage="data")
     + ["--variant", "dataset=bubble"], "neptuna data bubble: 3 trajectories of 100000 frames"),
    ("model_file_of_another_model", lambda t, p: ["progress_advantage", "train", "--variant",
                                                  "model=prm", "--scale", "smoke", "--input",
                                                  str(p["rl_kl.eqx"]), "--out", str(t / "prm.eqx")],
     "written as model=ref; this stage reads it as model=rl_kl"),
    ("data_of_another_task", lambda t, p: _nbffg_inputs(t, "ctmc_random_4"),
     "written for task=linear_balanced_4; this job is task=ctmc_random_4"),
    ("data_of_another_dataset", lambda t, p: ["nagnn", "train", "--variant",
                                              "model=nagnn,dataset=dsbm", "--scale", "smoke",
                                              "--input", str(p["bipartite.npz"]),
                                              "--out", str(t / "runs" / "dsbm" / "nagnn.eqx")],
     "written for dataset=bipartite; this job is dataset=dsbm"),
    ("data_without_its_arrays", lambda t, p: _nbffg_inputs(t, "linear_balanced_4"),
     "not an nbffg task's data (no length, truth, obs, observed)"),
    ("report_out_is_a_folder", lambda t, p: ["report", "--scale", "smoke", "--out", str(t)],
     "is a folder; name the report file"),
    ("report_claims_garbage", lambda t, p: ["report", "--scale", "smoke", "--input",
                                            str(_write(t / "claims.json", "{not json")), "--out", str(t / "r.md")],
     "is not valid JSON"),
    ("report_claims_wrong", lambda t, p: ["report", "--scale", "smoke", "--input",
                                          str(_write(t / "claims.json", "{}")), "--out", str(t / "r.md")],
     "missing field 'method'"),
]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _srgw_section(t: Path, common: str = "{}", smoke: str = "{}") -> list[str]:
    """argv of srgw's data stage at smoke with a config file holding only an srgw section."""
    text = f"srgw:\n  common: {common}\n  smoke: {smoke}\n  small: {{}}\n  paper: {{}}\n"
    return ["srgw", "data", "--config", str(_write(t / "c.yaml", text)), "--scale", "smoke"]


def _section(t: Path, method: str, smoke: str, stage: str = "claims") -> list[str]:
    """argv of the method's ``stage`` at smoke (claims: the config is parsed first), its shipped
    config with ``smoke`` merged into the smoke settings."""
    import yaml

    from repro26.core.config import deep_merge, load_yaml

    shipped = load_yaml(REPO / "config" / "methods" / f"{method}.yaml")
    section = shipped.get(method, shipped)
    section = {**section, "smoke": deep_merge(section.get("smoke") or {}, yaml.safe_load(smoke))}
    path = t / "c.yaml"
    path.write_text(yaml.safe_dump({method: section}))
    return [method, stage, "--config", str(path), "--scale", "smoke", "--out", str(t / "out")]


def _nbffg_train(t: Path, smoke: str) -> list[str]:
    """argv of nbffg's train stage on its smoke task linear_balanced_4 with ``smoke`` merged
    into the smoke settings; the task's data (every seed) written beside it."""
    from repro26.core.cli import resolve_run_config
    from repro26.nbffg import cli as nbffg_cli, data as D

    argv = _section(t, "nbffg", smoke, stage="train")
    _, cfg, _ = resolve_run_config(nbffg_cli, "nbffg", Path(argv[3]), "smoke")
    task = D.parse_task("linear_balanced_4", "test")
    for seed, arrays in zip(cfg.seeds, D.generate(cfg, task, cfg.seeds)):
        path = t / "data" / task.name / f"seed{seed}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        D.save(path, arrays)
    inputs = [str(t / "data" / task.name / f"seed{s}.npz") for s in cfg.seeds]
    return [*argv[:-2], "--variant", "task=linear_balanced_4", "--input", *inputs,
            "--out", str(t / "train" / task.name)]


def _nbffg_inputs(t: Path, task: str) -> list[str]:
    """argv of nbffg's train stage on ``task`` at smoke, the data of both seeds from the folder
    ``results/nbffg/<task>`` that :func:`_tables` wrote."""
    folder = t / "results" / "nbffg" / task
    return ["nbffg", "train", "--variant", f"task={task}", "--scale", "smoke", "--input",
            str(folder / "seed0.npz"), str(folder / "seed1.npz"), "--out", str(t / "train" / task)]


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("argv", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, argv, expected):
    inputs = _tables(tmp_path / "results")
    args = argv(tmp_path, inputs)
    if "--config" not in args and args[0] != "report":
        args += ["--config", CONFIG]
    before = _files(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("repro26: error: "), err
    assert expected in err[0], err[0]
    assert _files(tmp_path) == before, "a failed stage left files behind"


@pytest.mark.skipif(not UNBUILT, reason="every method is built")
def test_unbuilt_method_is_named(capsys):
    assert main([UNBUILT[0], "data", "--config", CONFIG]) == 2
    assert "is not implemented yet" in capsys.readouterr().err


def test_console_script_prints_no_traceback(tmp_path):
    """The real console script, once: one line on stderr, exit 2."""
    result = subprocess.run([sys.executable, "-m", "repro26.core.cli", "srgw", "figure",
                             "nope", "--config", CONFIG], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr


@pytest.mark.parametrize("error", [
    "xla", "host"], ids=["xla_resource_exhausted", "host_memory_error"])
def test_allocation_that_fails_after_all_is_one_line(tmp_path, capsys, monkeypatch, error):
    """The safety net found by `repro26 probe` (neptuna's datasets at paper shapes): a stage
    without a pre-check whose allocation fails stops with one line naming the size, exit 2."""
    import jax

    from repro26.core.method import Stage
    from repro26.srgw import cli as srgw_cli

    def allocate(run):
        if error == "xla":
            raise jax.errors.JaxRuntimeError(
                "RESOURCE_EXHAUSTED: Out of memory allocating 21495808000 bytes.")
        np.zeros((2**45,), np.uint8)

    monkeypatch.setitem(srgw_cli.STAGES, "data", Stage(allocate))
    assert main(["srgw", "data", "--config", CONFIG, "--scale", "smoke",
                 "--out", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("repro26: error: out of memory: "), err
    assert ("needs about 20 GB of memory" if error == "xla" else "needs about 3.28e+04 GB") \
        in err[0], err[0]
    assert not list(tmp_path.rglob("*.*"))
