"""The shared training loop: convergence, resume after a kill, NaN reporting."""

import os
import signal
import subprocess
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from repro26.core.train import NonFiniteLossError, init_train_state, optax_step, run_loop

W_TRUE = jnp.array([1.0, -2.0])


def regression_loss(model, data, key):
    """Least squares on a fresh batch y = x·w + 0.5 each step."""
    x = jax.random.normal(key, (16, 2))
    err = jax.vmap(model)(x)[:, 0] - (x @ data + 0.5)
    mse = jnp.mean(err**2)
    return mse, {"mse": mse}


OPTIMIZER = optax.adam(5e-2)
STEP = optax_step(regression_loss, OPTIMIZER)


def fresh_state():
    return init_train_state(eqx.nn.Linear(2, 1, key=jax.random.key(0)), OPTIMIZER)


def train(num_steps, ckpt=None):
    return run_loop(STEP, fresh_state(), W_TRUE, key=jax.random.key(1), num_steps=num_steps,
                    chunk_size=25, checkpoint_path=ckpt, checkpoint_every=50 if ckpt else None,
                    progress=False)


@pytest.fixture(scope="module")
def uninterrupted():
    return train(300)


def test_loop_fits_a_linear_model(uninterrupted):
    state, history = uninterrupted
    np.testing.assert_allclose(state.model.weight[0], W_TRUE, atol=1e-3)
    assert history["loss"].shape == (300,) and history["loss"][-1] < 1e-5


def test_resume_reaches_the_same_parameters(tmp_path, uninterrupted):
    ckpt = tmp_path / "run.ckpt"
    train(150, ckpt)  # "killed" after 150 steps: only the checkpoint survives
    state, history = train(300, ckpt)
    ref_state, ref_history = uninterrupted
    for a, b in zip(jax.tree.leaves(eqx.filter(state, eqx.is_array)),
                    jax.tree.leaves(eqx.filter(ref_state, eqx.is_array))):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(history["loss"], ref_history["loss"])


def test_sigkilled_run_resumes_from_its_last_checkpoint(tmp_path, uninterrupted):
    """Kill a real training process mid-run; resuming in this process matches the clean run."""
    ckpt = tmp_path / "run.ckpt"
    code = (
        "import time, jax\n"
        f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import test_train as t\n"
        "from repro26.core.train import run_loop\n"
        "slow = lambda s, d, k: (jax.debug.callback(lambda: time.sleep(0.01)), t.STEP(s, d, k))[1]\n"
        "run_loop(slow, t.fresh_state(), t.W_TRUE, key=jax.random.key(1), num_steps=300,\n"
        f"         chunk_size=25, checkpoint_path={str(ckpt)!r}, checkpoint_every=50, progress=False)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 300  # a loaded machine: the child's imports alone can take a minute
    while time.time() < deadline and not ckpt.exists() and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert ckpt.exists(), "the child never wrote a checkpoint"
    state, _ = train(300, ckpt)
    for a, b in zip(jax.tree.leaves(eqx.filter(state, eqx.is_array)),
                    jax.tree.leaves(eqx.filter(uninterrupted[0], eqx.is_array))):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_nan_stops_with_step_and_term():
    def loss_with_nan(model, data, key):
        x = jax.random.normal(key, (4, 2))
        fit = jnp.mean(jax.vmap(model)(x) ** 2)
        log_term = jnp.log(model.bias[0] - 10.0)  # NaN from the first step
        return fit, {"fit": fit, "log_barrier": log_term}

    step = optax_step(loss_with_nan, OPTIMIZER)
    with pytest.raises(NonFiniteLossError, match=r"step 0: training metric 'log_barrier' is not finite"):
        run_loop(step, fresh_state(), None, key=jax.random.key(0), num_steps=10, chunk_size=5,
                 progress=False)


def test_vmapped_seeds_give_per_seed_metrics():
    states = jax.vmap(lambda k: init_train_state(eqx.nn.Linear(2, 1, key=k), OPTIMIZER))(
        jax.random.split(jax.random.key(0), 3))
    _, history = run_loop(jax.vmap(STEP, in_axes=(0, None, None)), states, W_TRUE,
                          key=jax.random.key(1), num_steps=20, chunk_size=10, progress=False)
    assert history["loss"].shape == (20, 3)


def _same_params(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(
        jax.tree.leaves(eqx.filter(a, eqx.is_array)), jax.tree.leaves(eqx.filter(b, eqx.is_array))))


def test_a_killed_job_resumes_past_the_provenance_of_its_files(tmp_path, uninterrupted, capsys):
    """Inside a job every array file records its provenance (io.write_npz), the metric history
    too; resuming reads the history without it."""
    from repro26.core import jobs

    ckpt = tmp_path / "run.ckpt"
    with pytest.raises(RuntimeError), jobs.job("A", {"stage": "train"}):
        train(150, ckpt)
        raise RuntimeError("killed")
    with jobs.job("A", {"stage": "train"}):
        state, history = train(300, ckpt)
    assert "starts over" not in capsys.readouterr().err
    assert _same_params(state, uninterrupted[0])
    np.testing.assert_array_equal(history["loss"], uninterrupted[1]["loss"])


def test_checkpoint_of_another_job_is_not_resumed(tmp_path, uninterrupted, capsys):
    """The stale-checkpoint fault: a finished checkpoint from a run with another config must not
    make a rerun skip training."""
    from repro26.core import jobs

    ckpt = tmp_path / "run.ckpt"
    with jobs.job("config-A"):
        run_loop(STEP, fresh_state(), W_TRUE * 3, key=jax.random.key(1), num_steps=300,
                 chunk_size=25, checkpoint_path=ckpt, checkpoint_every=50, progress=False)
        raise_later = ckpt.exists()  # kept while the job runs
    assert raise_later and not ckpt.exists(), "a successful job deletes its checkpoints"
    with pytest.raises(RuntimeError):
        with jobs.job("config-A"):  # killed after training: checkpoint stays for a rerun
            run_loop(STEP, fresh_state(), W_TRUE * 3, key=jax.random.key(1), num_steps=300,
                     chunk_size=25, checkpoint_path=ckpt, checkpoint_every=50, progress=False)
            raise RuntimeError("killed before the final output")
    assert ckpt.exists()
    with jobs.job("config-B"):  # the config changed: W_TRUE instead of 3 W_TRUE
        state, history = run_loop(STEP, fresh_state(), W_TRUE, key=jax.random.key(1),
                                  num_steps=300, chunk_size=25, checkpoint_path=ckpt,
                                  checkpoint_every=50, progress=False)
    assert "written by another job" in capsys.readouterr().err
    assert _same_params(state, uninterrupted[0]) and len(history["loss"]) == 300


@pytest.mark.parametrize("damage", ["truncate", "step_150_to_50", "tag", "flip_payload",
                                    "history", "garbage", "empty"])
def test_damaged_checkpoint_restarts_with_one_line(tmp_path, uninterrupted, capsys, damage):
    """Damage to any part of a checkpoint (parameters, step, tag, the metric history beside it)
    gives one line and a fresh start whose result equals the uninterrupted run."""
    ckpt = tmp_path / "run.ckpt"
    train(150, ckpt)
    data = bytearray(ckpt.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "step_150_to_50":
        at = data.index(b'"step": 150')
        data[at:at + 11] = b'"step":  50'
    elif damage == "tag":
        at = data.index(b'"tag": ""')
        data[at:at + 9] = b'"tag":"x"'
    elif damage == "flip_payload":
        data[-7] ^= 0xFF
    elif damage == "history":
        history = ckpt.with_name(ckpt.name + ".history.npz")
        np.savez(history, loss=np.zeros(150, np.float32))
    elif damage == "garbage":
        data = bytearray(b"\x00" * 64)
    else:
        data = bytearray()
    ckpt.write_bytes(bytes(data))
    state, history = train(300, ckpt)
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("repro26:")]
    assert len(err) == 1 and "training starts over" in err[0], err
    assert _same_params(state, uninterrupted[0]) and len(history["loss"]) == 300
    np.testing.assert_array_equal(history["loss"], uninterrupted[1]["loss"])


def test_a_chunk_too_big_for_the_device_is_refused_before_it_runs(monkeypatch):
    """The compiled chunk's own memory (arguments + outputs + temporaries) is checked first: with
    less memory than the parameters alone take, training stops with one line naming the chunk."""
    from repro26.core import memory
    from repro26.core.config import UsageError

    monkeypatch.setattr(memory, "available_bytes", lambda: 8)
    with pytest.raises(UsageError, match="train: one compiled chunk of 25 steps needs about"):
        train(50)


def test_a_gradient_steps_residuals_are_sized_from_shapes_before_compiling():
    """``memory.vjp_bytes``: what reverse mode keeps grows linearly with the data and with the
    steps of a scan, at least the float32 activations kept per element, and nothing runs."""
    import jax.numpy as jnp

    from repro26.core import memory

    def loss(w, x, steps):
        def body(h, _):
            return jnp.tanh(w * h), None
        h, _ = jax.lax.scan(body, x, None, length=steps)
        return jnp.sum(h)

    w = jnp.ones(())
    size = {(n, t): memory.vjp_bytes(lambda w, x, t=t: loss(w, x, t), w, jax.ShapeDtypeStruct((n,), jnp.float32))
            for n in (1000, 2000) for t in (10, 20)}
    assert size[(1000, 10)] >= 4 * 1000 * 10  # one float per element and step at least
    assert size[(2000, 10)] == pytest.approx(2 * size[(1000, 10)], rel=0.01)
    assert size[(1000, 20)] == pytest.approx(2 * size[(1000, 10)], rel=0.01)
    # a 10^12-element activation is sized without being allocated
    big = memory.vjp_bytes(lambda w, x: loss(w, x, 3), w,
                           jax.ShapeDtypeStruct((10**12,), jnp.float32))
    assert big >= 3 * 4 * 10**12


def test_an_allocation_failure_is_described_in_one_line():
    from repro26.core import memory

    xla = jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 2147483648 bytes.")
    assert "one allocation needs about 2 GB of memory" in memory.exhausted_line(xla)
    assert "an allocation failed" in memory.exhausted_line(MemoryError())
    assert memory.exhausted_line(jax.errors.JaxRuntimeError("INTERNAL: something else")) is None
    assert memory.exhausted_line(ValueError("RESOURCE_EXHAUSTED")) is None
