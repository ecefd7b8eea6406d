"""Evaluation: rollouts of trained controllers, gait statistics, ablations, env-steps/s.

Gait statistics of one episode (after a 1 s transient), from the recorded kinematics:

* stride frequency (Hz): 1 / median interval between upward zero crossings (swing onsets) of
  the mean-removed hip/shoulder angle, averaged over the four limbs;
* duty factor: fraction of time a paw is in contact (< 1.5 mm above the floor), mean of limbs;
* phase lags in [0, 1): for each swing onset of the reference limb, the delay to the next onset
  of the other limb divided by the reference stride period, circular mean over strides;
  left-right hind (LH->RH), left-right fore (LF->RF), homolateral (LH->LF), diagonal (LH->RF);
* gait class: "gallop/bound" when the hind left-right lag is within 0.25 of 0 (synchronous-
  ish), else "trot" when the diagonal lag is within 0.125 of 0, else "walk"; "none" without
  stepping (hip oscillation below 0.03 rad s.d.) or after a fall.

Published rat ranges these are compared with (approximate, read from the sources):
stride frequency ~2-5 Hz, rising with speed, duty factor falling from ~0.7 (slow walk) to
~0.4 (gallop), left-right lag ~0.5 in walk and trot (Clarke & Parker 1986, Physiol. Behav.
38:345-351; Gillis & Biewener 2001, J. Exp. Biol. 204:2717-2731).
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from repro26.core import tables
from repro26.rat_ncap import body
from repro26.rat_ncap.losses import rollout
from repro26.rat_ncap.model import POPULATIONS, MLPPolicy, silence_mask

#: XLA CPU options for programs that run once (evaluation): the legacy loop emitters compile
#: the MJX rollout faster (measured 14.4 -> 11.9 s CPU for the recording rollout, 15.1 -> 9.3 s
#: without recording) and run it ~30% slower, a good trade for one call; training, which runs
#: its program for minutes, keeps the defaults. Other backends (GPU at `paper`) get no options.
FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False}
CONDITIONS: tuple[str, ...] = ("intact", *POPULATIONS)  # intact and one ablation per population
PAIRS = {"lr_hind": (2, 3), "lr_fore": (0, 1), "homolateral": (2, 0), "diagonal": (2, 1)}
CONTACT_M = 1.5e-3
TRANSIENT_S = 1.0


def _onsets(signal: np.ndarray, dt: float) -> np.ndarray:
    """Times of upward zero crossings of the mean-removed signal (linear interpolation)."""
    s = signal - signal.mean()
    idx = np.nonzero((s[:-1] < 0) & (s[1:] >= 0))[0]
    frac = -s[idx] / (s[idx + 1] - s[idx])
    return (idx + frac) * dt


def phase_lag(ref: np.ndarray, other: np.ndarray, period: float) -> float:
    """Circular-mean delay of ``other``'s onsets after ``ref``'s, in units of the period."""
    lags = []
    for t in ref:
        later = other[other >= t]
        if later.size:
            lags.append(((later[0] - t) / period) % 1.0)
    return float(tables.circular_mean(lags)) if lags else float("nan")

def gait_stats(q: np.ndarray, paw: np.ndarray, x: np.ndarray, alive: np.ndarray, dt: float) -> dict:
    """Gait statistics of one episode; ``q`` (T, 8), ``paw`` (T, 4), ``x`` (T,), ``alive`` (T,)."""
    start = int(round(TRANSIENT_S / dt))
    fell = not bool(alive[-1])
    nan = float("nan")
    out = {"fell": fell, "speed": nan, "stride_freq": nan, "duty": nan, "gait": "none",
           **{k: nan for k in PAIRS}}
    end = len(x) if not fell else int(np.argmin(alive))
    if end - start > 10:
        out["speed"] = float((x[end - 1] - x[start]) / ((end - 1 - start) * dt))
    if fell or end - start <= 10:  # a fall, or an episode shorter than the transient
        return out
    hips = q[start:, 0::2]
    if np.min(hips.std(axis=0)) < 0.03:
        return out
    onsets = [_onsets(hips[:, i], dt) for i in range(4)]
    periods = [np.median(np.diff(o)) for o in onsets if o.size >= 3]
    if len(periods) < 4:
        return out
    period = float(np.mean(periods))
    out["stride_freq"] = 1.0 / period
    out["duty"] = float(np.mean(paw[start:] < CONTACT_M))
    for name, (a, b) in PAIRS.items():
        out[name] = phase_lag(onsets[a], onsets[b], period)
    if tables.circular_distance(out["lr_hind"], 0.0) < 0.25:
        out["gait"] = "gallop/bound"
    elif tables.circular_distance(out["diagonal"], 0.0) < 0.125:
        out["gait"] = "trot"
    else:
        out["gait"] = "walk"
    return out


def rollout_traces(policy, env: body.Env, params: np.ndarray, speeds, n_steps: int, spec,
                   record_every: int, conditions: tuple[str, ...], key: jax.Array) -> dict:
    """Traces for every (condition, seed, speed): arrays with leading axes (C, S, V, T).

    All ``C x S x V`` episodes run as one flat batch of :func:`~repro26.rat_ncap.losses.rollout`
    (one compiled program per variant); seed ``s`` uses the same episode key at every
    condition and speed."""
    n_c, n_s, n_v = len(conditions), params.shape[0], len(speeds)
    masks = np.stack([silence_mask(() if c == "intact" else (c,)) for c in conditions])
    idx_c, idx_s, idx_v = (a.ravel() for a in np.meshgrid(np.arange(n_c), np.arange(n_s), np.arange(n_v),
                                                            indexing="ij"))
    keys = jax.random.split(key, n_s)[idx_s]
    batch = (jnp.asarray(params)[idx_s], keys, jnp.asarray(speeds, jnp.float32)[idx_v],
             jnp.asarray(masks)[idx_c])
    run = jax.jit(lambda p, k, v, m: rollout(policy, env, p, k, v, n_steps, spec, m, record_every),
                  compiler_options=FAST_COMPILE if jax.default_backend() == "cpu" else None)
    fit, trace = run(*batch)
    shape = (n_c, n_s, n_v)
    return {"fitness": np.asarray(fit).reshape(shape),
            **{k: np.asarray(v).reshape(shape + v.shape[1:]) for k, v in trace.items()}}


def evaluate_variant(policy, env: body.Env, params: np.ndarray, seeds, speeds, cfg: Any, spec,
                     key: jax.Array) -> list[dict]:
    """Rows (condition, seed, commanded speed) with reward, success and gait statistics."""
    conditions = ("intact",) if isinstance(policy, MLPPolicy) else CONDITIONS
    record_every = 2
    n_steps = int(round(cfg.eval_s / env.dt))
    tr = rollout_traces(policy, env, params, speeds, n_steps, spec, record_every, conditions, key)
    rows = []
    for c, cond in enumerate(conditions):
        for s, seed in enumerate(seeds):
            for v, speed in enumerate(speeds):
                st = gait_stats(tr["q"][c, s, v], tr["paw"][c, s, v], tr["x"][c, s, v],
                                tr["alive"][c, s, v], env.dt * record_every)
                success = (not st["fell"]) and abs(st["speed"] - speed) <= cfg.success_tolerance * speed
                rows.append({"condition": cond, "seed": seed, "v_cmd": float(speed),
                             "reward": float(tr["fitness"][c, s, v]), "success": bool(success), **st})
    return rows


def env_speed(env: body.Env, batch: int, n_steps: int) -> dict:
    """Env-steps/s of the vmapped MJX body under a scanned rollout (compile excluded), and the
    trace + compile time of that rollout (first call minus a second call), in seconds."""
    keys = jax.random.split(jax.random.PRNGKey(0), batch)

    @jax.jit
    def roll(keys):
        data = jax.vmap(lambda k: env.reset(k, 0.05))(keys)

        def f(d, t):
            u = 0.3 + 0.3 * jnp.sin(20.0 * t * env.dt + jnp.arange(body.N_ACTUATORS))
            return jax.vmap(env.step)(d, jnp.broadcast_to(u, (batch, body.N_ACTUATORS))), None

        return jax.lax.scan(f, data, jnp.arange(n_steps))[0].qpos

    t0 = time.perf_counter()
    roll(keys).block_until_ready()
    t1 = time.perf_counter()
    roll(keys).block_until_ready()
    seconds = time.perf_counter() - t1
    return {"body": "rat_v2_analogue (MJX, vmapped)", "batch": batch, "steps": n_steps,
            "env_steps_per_s": batch * n_steps / seconds, "compile_s": t1 - t0 - seconds}


def cpu_speed(model, n_steps: int) -> float:
    """Env-steps/s of CPU MuJoCo (one environment) for a compiled ``MjModel``, after a 0.5 s
    settle from its initial state (so bodies on a floor are measured standing, in contact)."""
    import mujoco

    data = mujoco.MjData(model)
    for _ in range(int(round(0.5 / model.opt.timestep))):
        mujoco.mj_step(model, data)
    t0 = time.perf_counter()
    for _ in range(n_steps):
        mujoco.mj_step(model, data)
    return n_steps / (time.perf_counter() - t0)
