"""Atomic writes, tables and checkpoints."""

import os
import signal
import subprocess
import sys
import time

import equinox as eqx
import jax
import numpy as np
import pytest

from repro26.core import io


def test_atomic_write_leaves_nothing_when_the_writer_fails(tmp_path):
    target = tmp_path / "result.json"
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_text('{"partial": ')
            raise RuntimeError("killed mid-write")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_keeps_the_old_file_until_the_new_one_is_complete(tmp_path):
    target = tmp_path / "table.csv"
    io.atomic_write_text(target, "old\n")
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_text("new but incomplete")
            raise RuntimeError
    assert target.read_text() == "old\n"


def test_sigkill_during_write_leaves_no_target(tmp_path):
    """A process killed with SIGKILL while writing never leaves a partial target file."""
    target = tmp_path / "big.bin"
    code = (
        "import time, sys\n"
        "from repro26.core.io import atomic_path\n"
        f"with atomic_path({str(target)!r}) as tmp:\n"
        "    with open(tmp, 'wb') as f:\n"
        "        for _ in range(10000):\n"
        "            f.write(b'x' * 1000); f.flush(); time.sleep(0.01)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 30
    while time.time() < deadline and not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        time.sleep(0.05)
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not target.exists()


def test_table_round_trip_with_metadata(tmp_path):
    path = tmp_path / "t.csv"
    meta = {"jax_version": jax.__version__, "config_hash": "abc123"}
    io.write_table(path, [{"n": 10, "err": 0.5, "algo": "exp3"}, {"n": 20, "err": 0.25, "algo": "gp"}], meta)
    table = io.read_table(path)
    np.testing.assert_array_equal(table["n"], [10, 20])
    np.testing.assert_allclose(table["err"], [0.5, 0.25])
    assert list(table["algo"]) == ["exp3", "gp"]
    assert io.read_table_meta(path) == meta
    io.write_table(path, {"x": np.arange(3), "y": np.array([1.0, np.nan, 2.0])}, meta)
    table = io.read_table(path)
    np.testing.assert_array_equal(table["x"], [0, 1, 2])
    assert table["y"].dtype == float and np.isnan(table["y"][1])


def test_npz_round_trip(tmp_path):
    io.write_npz(tmp_path / "a.npz", x=np.arange(4), y=jax.numpy.ones(2))
    with np.load(tmp_path / "a.npz") as data:
        np.testing.assert_array_equal(data["x"], np.arange(4))


def test_npz_written_in_a_stage_records_its_provenance(tmp_path):
    """Inside a job the archive carries the stage's provenance; readers see only the arrays."""
    from repro26.core import jobs

    io.write_npz(tmp_path / "bare.npz", x=np.arange(3))
    with jobs.job("tag", {"git_commit": "abc123", "config_hash": "f00"}):
        io.write_npz(tmp_path / "a.npz", compressed=True, x=np.arange(3))
    assert io.read_npz_provenance(tmp_path / "a.npz") == {"git_commit": "abc123",
                                                          "config_hash": "f00"}
    assert list(io.read_npz(tmp_path / "a.npz")) == ["x"]
    assert io.read_npz_provenance(tmp_path / "bare.npz") == {}


def test_missing_input_table_is_a_usage_error(tmp_path):
    with pytest.raises(io.UsageError, match="does not exist"):
        io.read_table(tmp_path / "absent.csv")


def test_checkpoint_round_trip_of_an_equinox_module(tmp_path):
    model = eqx.nn.MLP(3, 2, 8, 2, key=jax.random.key(0))
    io.save_checkpoint(tmp_path / "m.ckpt", model, step=42)
    blank = eqx.nn.MLP(3, 2, 8, 2, key=jax.random.key(1))
    loaded, step, companions = io.load_checkpoint(tmp_path / "m.ckpt", blank)
    assert step == 42 and companions == {}
    for a, b in zip(jax.tree.leaves(model), jax.tree.leaves(loaded)):
        np.testing.assert_array_equal(a, b)


def test_run_metadata_records_provenance():
    meta = io.run_metadata("deadbeef", method="x")
    assert meta["jax_version"] == jax.__version__
    assert meta["config_hash"] == "deadbeef" and meta["method"] == "x"
    assert meta["git_commit"]


def test_checkpoint_written_in_a_stage_records_its_provenance(tmp_path):
    """A model saved inside a job carries the stage's provenance and still loads."""
    from repro26.core import jobs

    model = eqx.nn.Linear(2, 2, key=jax.random.key(0))
    with jobs.job("tag", {"git_commit": "abc123", "config_hash": "f00"}):
        io.save_checkpoint(tmp_path / "m.eqx", model, step=3, tag="tag")
    assert io.read_checkpoint_provenance(tmp_path / "m.eqx") == {"git_commit": "abc123",
                                                                 "config_hash": "f00"}
    loaded, step, _ = io.load_checkpoint(tmp_path / "m.eqx", model, tag="tag")
    assert step == 3 and eqx.tree_equal(loaded, model)


def test_checkpoint_of_an_older_format_is_refused(tmp_path):
    """Version 3 and older checksummed only the parameters: they are not resumed."""
    (tmp_path / "old.ckpt").write_bytes(b"repro26-ckpt-v3\n" + b"\x00" * 40)
    with pytest.raises(io.CheckpointError, match="older version"):
        io.load_checkpoint(tmp_path / "old.ckpt", eqx.nn.Linear(2, 2, key=jax.random.key(0)))


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage", "other_model"])
def test_damaged_model_input_is_one_usage_error_naming_the_file(tmp_path, damage):
    model = eqx.nn.Linear(2, 2, key=jax.random.key(0))
    path = tmp_path / "m.eqx"
    if damage != "missing":
        io.save_checkpoint(path, eqx.nn.Linear(3, 2, key=jax.random.key(0))
                           if damage == "other_model" else model, step=1)
        data = path.read_bytes()
        path.write_bytes({"truncated": data[:-10], "garbage": bytes(range(256))}.get(damage, data))
    with pytest.raises(io.UsageError, match=r"m\.eqx") as err:
        io.load_model(path, model)
    assert "\n" not in str(err.value)


def test_memory_check_names_the_setting_and_both_sizes():
    from repro26.core import memory

    memory.require(1e9, "grid=10", available=2 * memory.GB)
    with pytest.raises(io.UsageError, match=r"grid=1e8 needs about 4 GB .* has 2 GB available"):
        memory.require(4 * memory.GB, "grid=1e8", available=2 * memory.GB)
    assert 0 < memory.available_bytes() < 2**50


def test_traced_bytes_sizes_outputs_from_shapes_and_takes_modules_with_functions():
    """``traced_bytes`` counts the bytes of what ``fn`` returns without running it, for
    arguments that are modules holding functions (an activation) as well as arrays."""
    import jax.numpy as jnp

    from repro26.core import memory

    mlp = eqx.nn.MLP(3, 5, 4, 1, activation=jax.nn.gelu, key=jax.random.PRNGKey(0))
    x = jnp.ones((7, 3))
    assert memory.traced_bytes(lambda m, x: (jax.vmap(m)(x), x.astype(jnp.float16)), mlp, x) \
        == 7 * 5 * 4 + 7 * 3 * 2


def test_compiled_memory_check_reads_xlas_analysis(monkeypatch):
    """``require_compiled`` takes the peak of a compiled program (plain ``jax.jit`` or
    ``eqx.filter_jit``) from XLA's memory analysis: a 1000×1000 float32 output (4 MB) passes with
    8 MB available and is refused with 1 MB, before the program runs."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from repro26.core import memory

    def ones(x):
        return jnp.ones((1000, 1000)) * x

    for compiled in (jax.jit(ones).lower(1.0).compile(), eqx.filter_jit(ones).lower(1.0).compile()):
        monkeypatch.setattr(memory, "available_bytes", lambda: 8 * 2**20)
        memory.require_compiled(compiled, "ones")
        monkeypatch.setattr(memory, "available_bytes", lambda: 2**20)
        with pytest.raises(io.UsageError, match=r"^ones needs about 0.00\d+ GB"):
            memory.require_compiled(compiled, "ones")


def test_an_hdf5_file_records_its_origin_for_the_input_check(tmp_path):
    import h5py

    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("fields", data=np.zeros(3))
        f.attrs.update({"method": "neptuna", "scale": "small", "variant": "dataset=bubble",
                        "lx": 2.0})
    assert io.read_origin(path) == {"method": "neptuna", "scale": "small",
                                    "variant": "dataset=bubble"}
    (tmp_path / "bad.h5").write_bytes(b"not hdf5")
    assert io.read_origin(tmp_path / "bad.h5") == {}
