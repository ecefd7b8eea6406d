"""Evaluation: rollouts of trained controllers, gait statistics, ablations, env-steps/s.

Gait statistics of one episode (after a 0.5 s transient), from the recorded kinematics:

* stride frequency (Hz): 1 / median interval between upward zero crossings (swing onsets) of
  the mean-removed hip/shoulder angle, averaged over the limbs that step (a limb steps when
  its hip/shoulder angle has s.d. >= 0.03 rad and at least three onsets);
* duty factor: fraction of time a paw is in contact (< 1.5 mm above the floor), mean of limbs;
* phase lags in [0, 1): for each swing onset of the reference limb, the delay to the next onset
  of the other limb divided by the *reference limb's own* stride period (median interval of
  its onsets), circular mean over strides; left-right hind (LH->RH), left-right fore (LF->RF),
  homolateral (LH->LF), diagonal (LH->RF); each lag is reported whenever both of its limbs
  step (NaN otherwise: a silent fore limb leaves the hind lag intact); phase-locking strength
  of the hind left-right pair: resultant length of its per-stride lags (1 = locked, 0 =
  drifting);
* gait class: when the hind left-right lag is within 0.25 of 0 (synchronous-ish), "pronk"
  if the fore-hind (homolateral) lag is also within 0.25 of 0, else "gallop/bound"; otherwise
  "trot" when the diagonal lag is within 0.125 of 0, else "walk"; "hind only" when the hind
  limbs step and a fore limb does not; "none" when the hind limbs do not both step, or after a
  fall.

Fictive locomotion (:func:`fictive_traces`): the circuit alone, without a body (no afferent
input, no paw load), as in an isolated spinal cord with drug-induced rhythm; the same lag and
phase-locking statistics are taken from the onsets of the RG-F (flexor half-centre) bursts.

Published rat ranges these are compared with (approximate, read from the sources):
stride frequency ~2-5 Hz, rising with speed, duty factor falling from ~0.7 (slow walk) to
~0.4 (gallop), left-right lag ~0.5 in walk and trot (Clarke & Parker 1986, Physiol. Behav.
38:345-351; Gillis & Biewener 2001, J. Exp. Biol. 204:2717-2731).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from repro26.core import tables, timing
from repro26.rat_ncap import body
from repro26.rat_ncap.losses import rollout
from repro26.rat_ncap.model import (
    LPND, LPNH, N_JOINTS, POPULATIONS, RGE, RGF, V0D, V0V, V2A, V3, MLPPolicy, RatNCAP, ravel_policy,
    silence_mask,
)

#: XLA CPU options for programs that run once (evaluation): the legacy loop emitters compile
#: the MJX rollout faster (measured 14.4 -> 11.9 s CPU for the recording rollout, 15.1 -> 9.3 s
#: without recording) and run it ~30% slower, a good trade for one call; training, which runs
#: its program for minutes, keeps the defaults. Other backends (GPU at `paper`) get no options.
FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False}
CONDITIONS: tuple[str, ...] = ("intact", *POPULATIONS)  # intact and one ablation per population
PAIRS = {"lr_hind": (2, 3), "lr_fore": (0, 1), "homolateral": (2, 0), "diagonal": (2, 1)}
CONTACT_M = 1.5e-3
STEP_SD_RAD = 0.03  # a limb steps when its hip/shoulder angle varies at least this much (s.d.)
TRANSIENT_S = 0.5


def _onsets(signal: np.ndarray, dt: float) -> np.ndarray:
    """Times of upward zero crossings of the mean-removed signal (linear interpolation)."""
    s = signal - signal.mean()
    idx = np.nonzero((s[:-1] < 0) & (s[1:] >= 0))[0]
    frac = -s[idx] / (s[idx + 1] - s[idx])
    return (idx + frac) * dt


def stride_lags(ref: np.ndarray, other: np.ndarray, period: float) -> np.ndarray:
    """Per-stride delay of ``other``'s next onset after each of ``ref``'s, in periods, mod 1."""
    lags = []
    for t in ref:
        later = other[other >= t]
        if later.size:
            lags.append(((later[0] - t) / period) % 1.0)
    return np.asarray(lags)


def phase_lag(ref: np.ndarray, other: np.ndarray, period: float) -> float:
    """Circular-mean delay of ``other``'s onsets after ``ref``'s, in units of the period."""
    lags = stride_lags(ref, other, period)
    return float(tables.circular_mean(lags)) if lags.size else float("nan")


def coordination(signals: np.ndarray, dt: float, active: np.ndarray | None = None) -> dict:
    """Stride frequency, the four phase lags and the hind left-right phase-locking strength
    from four limb signals ``(T, 4)`` (LF, RF, LH, RH) whose upward zero crossings mark swing
    onsets. A limb steps when ``active`` (default: all) and it has at least three onsets; the
    frequency is the mean over stepping limbs of 1 / (median onset interval), and each pair's
    lag is its delay over the reference limb's own period, NaN unless both limbs step."""
    nan = float("nan")
    out = {"stride_freq": nan, **{k: nan for k in PAIRS}, "plv_lr_hind": nan}
    active = np.ones(4, bool) if active is None else np.asarray(active, bool)
    onsets = [_onsets(signals[:, i], dt) if active[i] else np.zeros(0) for i in range(4)]
    period = [float(np.median(np.diff(o))) if o.size >= 3 else nan for o in onsets]
    stepping = np.isfinite(period)
    if not stepping.any():
        return out
    out["stride_freq"] = float(np.mean(1.0 / np.asarray(period)[stepping]))
    for name, (a, b) in PAIRS.items():
        if stepping[a] and stepping[b]:
            out[name] = phase_lag(onsets[a], onsets[b], period[a])
    if stepping[2] and stepping[3]:
        lags = stride_lags(onsets[2], onsets[3], period[2])
        out["plv_lr_hind"] = float(tables.resultant_length(lags)) if lags.size else nan
    return out


def gait_class(lags: dict) -> str:
    """Gait from the lags (see the module docstring); pronk and bound differ by fore-hind lag."""
    if not np.isfinite(lags["lr_hind"]):
        return "none"
    if not (np.isfinite(lags["homolateral"]) and np.isfinite(lags["diagonal"])):
        return "hind only"
    if tables.circular_distance(lags["lr_hind"], 0.0) < 0.25:
        return "pronk" if tables.circular_distance(lags["homolateral"], 0.0) < 0.25 else "gallop/bound"
    return "trot" if tables.circular_distance(lags["diagonal"], 0.0) < 0.125 else "walk"


def gait_stats(q: np.ndarray, paw: np.ndarray, x: np.ndarray, alive: np.ndarray, dt: float) -> dict:
    """Gait statistics of one episode; ``q`` (T, 12), ``paw`` (T, 4), ``x`` (T,), ``alive`` (T,)."""
    start = int(round(TRANSIENT_S / dt))
    fell = not bool(alive[-1])
    nan = float("nan")
    out = {"fell": fell, "speed": nan, "duty": nan, "gait": "none",
           **{k: nan for k in ("stride_freq", *PAIRS, "plv_lr_hind")}}
    end = len(x) if not fell else int(np.argmin(alive))
    if end - start > 10:
        out["speed"] = float((x[end - 1] - x[start]) / ((end - 1 - start) * dt))
    if fell or end - start <= 10:  # a fall, or an episode shorter than the transient
        return out
    hips = q[start:, 0::body.JOINTS_PER_LIMB]
    out.update(coordination(hips, dt, active=hips.std(axis=0) >= STEP_SD_RAD))
    if not np.isfinite(out["stride_freq"]):
        return out
    out["duty"] = float(np.mean(paw[start:] < CONTACT_M))
    out["gait"] = gait_class(out)
    return out


def rollout_traces(policy, env: body.Env, params: np.ndarray, speeds, n_steps: int, spec,
                   record_every: int, conditions: tuple[str, ...], key: jax.Array,
                   seed_keys: jax.Array | None = None) -> dict:
    """Traces for every (condition, seed, speed): arrays with leading axes (C, S, V, T).

    All ``C x S x V`` episodes run as one flat batch of :func:`~repro26.rat_ncap.losses.rollout`
    (one compiled program per variant); seed ``s`` uses the same episode key at every
    condition and speed (``seed_keys[s]`` when given, else ``split(key, S)[s]``)."""
    n_c, n_s, n_v = len(conditions), params.shape[0], len(speeds)
    masks = np.stack([silence_mask(() if c == "intact" else (c,)) for c in conditions])
    idx_c, idx_s, idx_v = (a.ravel() for a in np.meshgrid(np.arange(n_c), np.arange(n_s), np.arange(n_v),
                                                            indexing="ij"))
    keys = (jax.random.split(key, n_s) if seed_keys is None else seed_keys)[idx_s]
    batch = (jnp.asarray(params)[idx_s], keys, jnp.asarray(speeds, jnp.float32)[idx_v],
             jnp.asarray(masks)[idx_c])
    run = jax.jit(lambda p, k, v, m: rollout(policy, env, p, k, v, n_steps, spec, m, record_every),
                  compiler_options=FAST_COMPILE if jax.default_backend() == "cpu" else None)
    fit, trace = run(*batch)
    shape = (n_c, n_s, n_v)
    return {"fitness": np.asarray(fit).reshape(shape),
            **{k: np.asarray(v).reshape(shape + v.shape[1:]) for k, v in trace.items()}}


GAIT_DIAGRAM_S = 1.5  # s of paw contacts kept per episode for the gait diagram


def evaluate_variant(policy, env: body.Env, params: np.ndarray, seeds, speeds, cfg: Any, spec,
                     key: jax.Array, conditions: tuple[str, ...] | None = None,
                     seed_keys: jax.Array | None = None) -> tuple[list[dict], list[dict]]:
    """Rows (condition, seed, commanded speed) with reward, success, mean cost of transport
    and gait statistics; and the intact episodes' paw contacts over the first
    :data:`GAIT_DIAGRAM_S` after the transient (rows seed, speed, paw, t, contact)."""
    if conditions is None:
        conditions = ("intact",) if isinstance(policy, MLPPolicy) else CONDITIONS
    record_every = 2
    dt = env.dt * record_every
    n_steps = int(round(cfg.eval_s / env.dt))
    tr = rollout_traces(policy, env, params, speeds, n_steps, spec, record_every, conditions, key, seed_keys)
    start, stop = int(round(TRANSIENT_S / dt)), int(round((TRANSIENT_S + GAIT_DIAGRAM_S) / dt))
    rows, contacts = [], []
    for c, cond in enumerate(conditions):
        for s, seed in enumerate(seeds):
            for v, speed in enumerate(speeds):
                alive = tr["alive"][c, s, v]
                st = gait_stats(tr["q"][c, s, v], tr["paw"][c, s, v], tr["x"][c, s, v], alive, dt)
                success = (not st["fell"]) and abs(st["speed"] - speed) <= cfg.success_tolerance * speed
                live = alive[start:]
                cot = float(np.mean(tr["cot"][c, s, v][start:][live])) if live.any() else float("nan")
                rows.append({"condition": cond, "seed": seed, "v_cmd": float(speed),
                             "reward": float(tr["fitness"][c, s, v]), "success": bool(success),
                             "cot": cot, **st})
                if c == 0:
                    for i, paw in enumerate(body.LIMBS):
                        for t in range(start, min(stop, alive.size)):
                            contacts.append({"seed": seed, "v_cmd": float(speed), "paw": paw,
                                             "t": round(t * dt, 4), "alive": bool(alive[t]),
                                             "contact": bool(tr["paw"][c, s, v, t, i] < CONTACT_M)})
    return rows, contacts


def env_speed(env: body.Env, batch: int, n_steps: int) -> dict:
    """Env steps per CPU second of this process for the vmapped MJX body under a scanned rollout
    (compile excluded), and the trace + compile CPU time of that rollout (first call minus a
    second call), in seconds."""
    keys = jax.random.split(jax.random.PRNGKey(0), batch)

    @jax.jit
    def roll(keys):
        data = jax.vmap(lambda k: env.reset(k, 0.05))(keys)

        def f(d, t):
            u = 0.3 + 0.3 * jnp.sin(20.0 * t * env.dt + jnp.arange(body.N_ACTUATORS))
            return jax.vmap(env.step)(d, jnp.broadcast_to(u, (batch, body.N_ACTUATORS))), None

        return jax.lax.scan(f, data, jnp.arange(n_steps))[0].qpos

    _, first = timing.cpu_timed(roll, keys)
    _, seconds = timing.cpu_timed(roll, keys)
    return {"body": "rat_v2_analogue (MJX, vmapped)", "batch": batch, "steps": n_steps,
            "env_steps_per_s": batch * n_steps / seconds, "compile_s": first - seconds}


def cpu_speed(model, n_steps: int) -> float:
    """Env steps per CPU second of CPU MuJoCo (one environment) for a compiled ``MjModel``,
    after a 0.5 s settle from its initial state (so bodies on a floor are measured standing, in
    contact)."""
    import mujoco

    data = mujoco.MjData(model)
    for _ in range(int(round(0.5 / model.opt.timestep))):
        mujoco.mj_step(model, data)
    _, seconds = timing.cpu_timed(lambda: [mujoco.mj_step(model, data) for _ in range(n_steps)])
    return n_steps / seconds


FICTIVE_TRANSIENT_S = 1.0
#: populations whose mean firing rate (over limbs and time) the fictive table logs
RATE_COLUMNS = {"RGF": RGF, "RGE": RGE, "V0d": V0D, "V0v": V0V, "V2a": V2A, "V3": V3,
                "LPNd": LPND, "LPNh": LPNH}


def fictive_traces(policy: RatNCAP, params: Float[Array, "B P"], keys: jax.Array, v_cmd: Float[Array, " B"],
                   masks: Float[Array, "B 21"], n_steps: int, dt: float, record_every: int):
    """Fictive locomotion of a batch of circuits (no body): joint angles held at the standing
    posture (no Ia, no hip afferent), no paw load. Returns the flexor-minus-extensor RG rate
    per limb ``(B, T, 4)`` every ``record_every`` steps, and the mean rate of every population
    after :data:`FICTIVE_TRANSIENT_S` ``(B, 21)`` (mean over limbs)."""
    _, unravel = ravel_policy(policy)
    rest = jnp.zeros(N_JOINTS)
    skip = int(round(FICTIVE_TRANSIENT_S / (dt * record_every)))

    def episode(flat, key, v, mask):
        circuit = unravel(flat)

        def step(state, _):
            return circuit(state, rest, rest, rest, v, dt, mask)[0], None

        def record(state, _):
            state = jax.lax.scan(step, state, None, length=record_every)[0]
            return state, jnp.clip(state.x, 0.0, 1.0) * mask

        _, rates = jax.lax.scan(record, circuit.init_state(key), None, length=n_steps // record_every)
        return rates[:, :, RGF] - rates[:, :, RGE], jnp.mean(rates[skip:], axis=(0, 1))

    run = jax.jit(jax.vmap(episode), compiler_options=FAST_COMPILE if jax.default_backend() == "cpu" else None)
    signal, rates = run(jnp.asarray(params), keys, jnp.asarray(v_cmd, jnp.float32), jnp.asarray(masks))
    return np.asarray(signal), np.asarray(rates)


def alternating(lag) -> np.ndarray:
    """Whether a hind left-right lag is alternation-like: circular distance from 0 >= 0.25
    (the complement of :func:`gait_class`'s synchronous band); False without a rhythm."""
    lag = np.asarray(lag, float)
    return np.isfinite(lag) & (tables.circular_distance(np.nan_to_num(lag), 0.0) >= 0.25)


def fictive_rows(policy: RatNCAP, params: np.ndarray, seeds, speeds, seconds: float, dt: float,
                 key: jax.Array, circuit: str, conditions: tuple[str, ...] = CONDITIONS,
                 n_states: int = 1) -> list[dict]:
    """Rows (circuit, condition, seed, initial state, commanded speed) of fictive-locomotion
    statistics: the lags and hind left-right phase-locking of RG-F burst onsets after the
    transient, the burst frequency and population rates. ``params[s]`` is seed ``s``'s
    circuit; it runs from ``n_states`` random initial states (:meth:`RatNCAP.init_state`):
    state 0 from ``split(key, S)[s]``, state k > 0 from ``fold_in`` of that key with k. The
    same state is used at every condition and speed, so ablations compare like with like."""
    record_every = 2
    n_c, n_s, n_v = len(conditions), params.shape[0], len(speeds)
    masks = np.stack([silence_mask(() if c == "intact" else (c,)) for c in conditions])
    idx_c, idx_s, idx_k, idx_v = (a.ravel() for a in np.meshgrid(
        np.arange(n_c), np.arange(n_s), np.arange(n_states), np.arange(n_v), indexing="ij"))
    seed_keys = jax.random.split(key, n_s)
    state_keys = jax.vmap(lambda k: jax.vmap(lambda i: jax.random.fold_in(k, i))(jnp.arange(n_states)))(seed_keys)
    state_keys = state_keys.at[:, 0].set(seed_keys)
    keys = state_keys[idx_s, idx_k]
    signal, rates = fictive_traces(policy, params[idx_s], keys, np.asarray(speeds)[idx_v], masks[idx_c],
                                   int(round(seconds / dt)), dt, record_every)
    skip = int(round(FICTIVE_TRANSIENT_S / (dt * record_every)))
    rows = []
    for b in range(len(idx_c)):
        stats = coordination(signal[b, skip:], dt * record_every)
        rows.append({"circuit": circuit, "condition": conditions[idx_c[b]], "seed": seeds[idx_s[b]],
                     "state": int(idx_k[b]), "v_cmd": float(speeds[idx_v[b]]), **stats,
                     "gait": gait_class(stats), "alternating": bool(alternating(stats["lr_hind"])),
                     **{f"rate_{k}": float(rates[b, i]) for k, i in RATE_COLUMNS.items()}})
    return rows
