r"""Fits, metrics and the tidy tables every figure and claim reads.

* :func:`fit_family_n` — one (family, n) job: for every seed, sample a graph, choose K (rate
  theory or held-out edge validation, :func:`choose_k`), run srGW and the baselines, record
  MSE of :math:`\hat P` (off-diagonal mean of
  :math:`(\hat P_{ij} - P_{ij})^2`), ARI against the true blocks (SBMs), CPU time, and srGW's
  relaxed / rounded objectives and their gap.
* :func:`pot_compare_seed` — the same block-coordinate estimator with POT's
  ``ot.gromov.semirelaxed_gromov_wasserstein`` as the T-step, from the same initial couplings
  (objective and CPU time; POT is imported only here).
* :func:`fit_real_networks` — the srGW block model on the networkx graphs.
* :func:`summarise` — mean and 95% CI over seeds, log-log slopes and the minimax rate curves.

Wall times exclude JIT compilation (each function is compiled ahead of time with
``jit(...).lower(...).compile()`` before the clock starts).
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import comb

from repro26.core import memory, timing
from repro26.core.config import ConfigError
from repro26.srgw import data, model, solvers
from repro26.srgw.rates import SCALING_MIN_N


# ----------------------------------------------------------------------------- metrics


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Hubert–Arabie adjusted Rand index of two labelings (1 = same partition)."""
    a, b = np.asarray(a), np.asarray(b)
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1))
    np.add.at(table, (ai, bi), 1)
    sum_cells = comb(table, 2).sum()
    sum_a, sum_b = comb(table.sum(1), 2).sum(), comb(table.sum(0), 2).sum()
    expected = sum_a * sum_b / comb(a.size, 2)
    top = 0.5 * (sum_a + sum_b)
    return 1.0 if top == expected else float((sum_cells - expected) / (top - expected))


@jax.jit
def edge_density(A: jax.Array) -> jax.Array:
    r"""The trivial estimator :math:`\hat P_{ij} = \bar\rho`, the off-diagonal edge density
    (the Erdős–Rényi fit): what every estimator must beat before its rate means anything."""
    n = A.shape[0]
    rho = (jnp.sum(A) - jnp.trace(A)) / (n * (n - 1))
    return jnp.full(A.shape, rho, dtype=jnp.float32)


def mse_offdiag(P_hat: jax.Array, P: jax.Array) -> jax.Array:
    """Mean of (P_hat - P)^2 over the off-diagonal entries."""
    n = P.shape[0]
    sq = (P_hat - P) ** 2
    return (jnp.sum(sq) - jnp.sum(jnp.diag(sq))) / (n * (n - 1))


def timed(fn: Callable, *args) -> tuple[Any, float]:
    """Compile ``fn`` for ``args`` ahead of time, then return its result and the CPU seconds of
    this process (all threads; ``repro26.core.timing.cpu_seconds``) the compiled call took."""
    return timing.cpu_timed(jax.jit(fn).lower(*args).compile(), *args)


# ----------------------------------------------------------------------------- families


def n_blocks(cfg, family: str, n: int) -> int:
    """True K for an SBM; ``ceil(k_scale * n ** k_exponent)`` for a smooth graphon."""
    if family in cfg.sbms:
        return len(cfg.sbms[family].sizes)
    return int(math.ceil(cfg.k_scale * n**cfg.k_exponent - 1e-9))


def families(cfg) -> tuple[str, ...]:
    """Every synthetic family of the config: its SBMs, then its graphons."""
    unknown = [g for g in cfg.graphons if g not in data.GRAPHONS]
    if unknown:
        raise ConfigError(f"srgw.graphons: '{unknown[0]}' is unknown; "
                          f"allowed: {', '.join(data.GRAPHONS)}")
    clash = set(cfg.sbms) & set(cfg.graphons)
    if clash:
        raise ConfigError(f"srgw.sbms: name '{sorted(clash)[0]}' is also a graphon name")
    return (*cfg.sbms, *cfg.graphons)


def family_ns(cfg, family: str) -> tuple[int, ...]:
    return cfg.sbm_ns if family in cfg.sbms else cfg.graphon_ns


def graph_key(seed: int, family: str, n: int) -> jax.Array:
    """The key of graph (family, n, seed): the same graph in every stage that needs it."""
    key = jax.random.fold_in(jax.random.PRNGKey(seed), zlib.crc32(family.encode()) & 0x7FFFFFFF)
    return jax.random.fold_in(key, n)


@functools.lru_cache(maxsize=None)
def _sampler(spec: data.SBMSpec | str, n: int):
    """Compiled ``key -> (A, P, latent)`` for one family and n (compiled once, reused by seeds),
    after a memory check of its dense n×n outputs and temporaries (one line and exit 2 when n is
    too big for this machine, instead of an allocation failure inside XLA)."""
    if isinstance(spec, data.SBMSpec):
        fn = jax.jit(lambda key: data.sample_sbm(key, n, spec))
    else:
        fn = jax.jit(lambda key: data.sample_graphon(key, n, spec))
    compiled = fn.lower(jax.random.PRNGKey(0)).compile()
    memory.require_compiled(compiled, f"sampling a dense graph of n={n} nodes")
    return compiled


def sample(cfg, family: str, n: int, seed: int):
    """``(A, P, z_true or None, K)`` of one synthetic graph (K: the rate-theory K)."""
    key = graph_key(seed, family, n)
    if family in cfg.sbms:
        s = cfg.sbms[family]
        A, P, z = _sampler(data.SBMSpec(s.p_in, s.p_out, tuple(s.sizes)), n)(key)
        return A, P, np.asarray(z), len(s.sizes)
    if family not in data.GRAPHONS:
        raise ConfigError(f"graphon: '{family}' is unknown; allowed: {', '.join(data.GRAPHONS)}")
    A, P, _ = _sampler(family, n)(key)
    return A, P, None, n_blocks(cfg, family, n)


def tolerance(cfg) -> float:
    """Relative FW-gap tolerance ``10 ** tol_log10`` (a log10 in the config because the core
    reads the resolved ``config.json`` with a YAML 1.1 loader, which takes ``1e-05`` for a
    string)."""
    return 10.0**cfg.tol_log10


def srgw_estimator(cfg, K: int) -> model.SrgwEstimator:
    return model.SrgwEstimator(K, cfg.n_random_inits, cfg.max_iter, tolerance(cfg))


def baselines(cfg, K: int) -> dict[str, Any]:
    """USVT, sorting-and-smoothing and network histogram (spectral clustering + block means is
    run in :func:`fit_family_n` from the spectral labels it shares with srGW's init)."""
    return {
        "usvt": model.USVT(cfg.usvt_eta, cfg.usvt_k_max),
        "sas": model.SortAndSmooth(K),
        "nh": model.NetworkHistogram(K),
    }


def _srgw_fit(est: model.SrgwEstimator, A, key):
    best, every = est.solve(A, est.initial_couplings(A, key))
    return best, every, model.block_fit(A, solvers.labels(best.T), est.K)


class Compiled:
    """Ahead-of-time compiled functions of one job, keyed by name (which must encode every
    static value, e.g. K): compiled on first use, then reused by every seed, so each call's CPU
    time excludes compilation. Each program's peak memory (XLA's analysis) is checked against
    the machine's before it first runs: ``what`` names the job's size settings in the one-line
    refusal."""

    def __init__(self, what: str):
        self._cache: dict[str, Any] = {}
        self.what = what

    def compile(self, name: str, fn: Callable, *args) -> None:
        """Compile ``fn`` for ``args`` under ``name`` (no-op when already compiled), refusing a
        program too big for this machine."""
        if name not in self._cache:
            compiled = jax.jit(fn).lower(*args).compile()
            memory.require_compiled(compiled, f"{self.what} ({name})")
            self._cache[name] = compiled

    def __call__(self, name: str, fn: Callable, *args) -> tuple[Any, float]:
        """``(fn(*args), CPU seconds of the call)``; ``fn`` is compiled for ``args`` the first
        time ``name`` is seen (compilation is not timed)."""
        self.compile(name, fn, *args)
        return timing.cpu_timed(self._cache[name], *args)


def k_candidates(cfg, family: str, n: int) -> tuple[int, ...]:
    """The K grid of held-out validation: ``k_grid`` multiples of the rate-theory K (>= 2)."""
    K0 = n_blocks(cfg, family, n)
    return tuple(sorted({max(2, int(math.ceil(m * K0 - 1e-9))) for m in cfg.k_grid}))


def heldout_error(A, key, K: int, frac: float, max_iter: int, tol: float):
    r"""Held-out edge validation of a K-block srGW fit: hide each pair :math:`i<j` with
    probability ``frac`` (symmetrically), fit on :math:`\tilde A = A \odot (1-H)/(1-\mathrm{frac})`
    (entrywise unbiased for P, as in network cross-validation by edge sampling, Li, Levina & Zhu
    2020) from the spectral initial coupling, and return the mean of
    :math:`(\hat P_{ij} - A_{ij})^2` over the hidden pairs (its expectation is the MSE of
    :math:`\hat P` there plus the fixed Bernoulli variance)."""
    n = A.shape[0]
    k_mask, k_spec = jax.random.split(key)
    hide = jnp.triu(jax.random.uniform(k_mask, (n, n)) < frac, k=1)
    hide = hide | hide.T
    At = jnp.where(hide, 0.0, A) / (1.0 - frac)
    z = model.spectral_labels(At, K, k_spec)
    best = solvers.solve(At, jax.nn.one_hot(z, K, dtype=jnp.float32) / n, max_iter, tol)
    fit = model.block_fit(At, solvers.labels(best.T), K)
    return jnp.sum(jnp.where(hide, (fit.P_hat - A) ** 2, 0.0)) / jnp.sum(hide)


def choose_k(
    cfg, family: str, n: int, A, key, run: Compiled,
) -> tuple[int, dict[int, float], float]:
    """``(K, {K: held-out error}, seconds)``: the true K for an SBM; for a smooth graphon the
    rate-theory K (``k_rule: theory``) or the held-out-error minimiser over
    :func:`k_candidates` (``k_rule: validation``)."""
    K0 = n_blocks(cfg, family, n)
    if family in cfg.sbms or cfg.k_rule == "theory":
        return K0, {}, 0.0
    errors, secs = {}, 0.0
    for K in k_candidates(cfg, family, n):
        err, t = run(f"heldout{K}", functools.partial(
            heldout_error, K=K, frac=cfg.validation_fraction, max_iter=cfg.max_iter,
            tol=tolerance(cfg)), A, key)
        errors[K], secs = float(err), secs + t
    return min(errors, key=errors.get), errors, secs


def fit_family_n(cfg, family: str, n: int, progress: bool = False) -> list[dict]:
    """All estimators on the graphs of one (family, n), one per seed (one row per seed and
    estimator).

    Seeds loop on the host over one compiled executable per function and K (compiled on the
    first seed), so each graph's CPU time is measured alone and at most one n x n graph is in
    memory; a vmapped batch of seeds would only give the batch's time and hold every graph.
    srGW's spectral initialisation and the spectral-clustering baseline share one spectral
    clustering per graph (computed and timed once; its time is added to both). With
    ``k_rule: validation`` a smooth graphon's K is chosen per graph by :func:`choose_k` (its
    time in ``k_select_s``) and shared by every K-block estimator; srGW at the rate-theory K is
    then also reported as ``srgw_ktheory`` (a copy of the ``srgw`` row where they coincide).
    """
    run = Compiled(f"fitting the {family} graphs of n={n} nodes (sbm_ns, graphon_ns)")
    rows = []
    for seed in cfg.seeds:
        A, P, z_true, K_theory = sample(cfg, family, n, seed)
        key = jax.random.fold_in(graph_key(seed, family, n), 1)
        k_spec, k_rand, k_base = jax.random.split(key, 3)
        K, val_errors, t_select = choose_k(cfg, family, n, A, jax.random.fold_in(key, 2), run)
        base = {"family": family, "kind": "sbm" if z_true is not None else "graphon",
                "n": n, "K": K, "K_theory": K_theory, "seed": seed}
        fits = {"srgw": K}
        if val_errors and K != K_theory:
            fits["srgw_ktheory"] = K_theory
        for name, Kf in fits.items():
            est = srgw_estimator(cfg, Kf)
            z_spec, t_spec = run(f"spectral{Kf}",
                                 lambda A, k, Kf=Kf: model.spectral_labels(A, Kf, k), A, k_spec)
            T0s, t_init = run(f"init{Kf}", est.couplings_from_labels, z_spec, k_rand)
            (best, every), t_solve = run(f"solve{Kf}", est.solve, A, T0s)
            fit, t_fit = run(f"blockfit{Kf}", lambda A, T, Kf=Kf: model.block_fit(
                A, solvers.labels(T), Kf), A, best.T)
            gap, _ = run(f"gap{Kf}", solvers.rounding_gap, A, best.T)
            mse, _ = run("mse", mse_offdiag, fit.P_hat, P)
            rows.append({**base, "K": Kf, "estimator": name, "mse": float(mse),
                         "ari": _ari(z_true, fit.z), "time_s": t_spec + t_init + t_solve + t_fit,
                         "solve_time_s": t_solve, "k_select_s": t_select,
                         "k_validation": " ".join(f"{k}:{e:.6g}" for k, e in val_errors.items()),
                         "objective": float(best.objective), "relaxed": float(gap.relaxed),
                         "rounded": float(gap.rounded), "gap": float(gap.gap),
                         "fractional_rows": float(gap.fractional_rows),
                         "iterations": int(best.n_iter), "fw_gap": float(best.gap),
                         "best_init": "spectral" if int(jnp.argmin(every.objective)) == 0
                         else "random",
                         "gap_bound": _gap_bound(n, fit.C)})
            if name == "srgw":
                sc, t_sc = run(f"sc{K}", lambda A, z: model.block_fit(A, z, K), A, z_spec)
                mse, _ = run("mse", mse_offdiag, sc.P_hat, P)
                rows.append({**base, "estimator": "sc", "mse": float(mse),
                             "ari": _ari(z_true, sc.z), "time_s": t_spec + t_sc})
                srgw_row = rows[-2]
                if val_errors and K == K_theory:  # validation kept the theory K: same fit
                    rows.append({**srgw_row, "estimator": "srgw_ktheory"})
        density, t_density = run("density", edge_density, A)
        mse, _ = run("mse", mse_offdiag, density, P)
        rows.append({**base, "estimator": "density", "mse": float(mse), "ari": float("nan"),
                     "time_s": t_density})
        for name, estimator in baselines(cfg, K).items():
            out, secs = run(f"{name}{K}", estimator, A, k_base)
            mse, _ = run("mse", mse_offdiag, out.P_hat, P)
            rows.append({**base, "estimator": name, "mse": float(mse),
                         "ari": _ari(z_true, out.z), "time_s": secs})
        if progress:
            r = srgw_row
            print(f"srgw {family} n={n} seed {seed} K={K}: mse={r['mse']:.3g} "
                  f"({r['time_s']:.2f}s, {r['iterations']} it"
                  + (f"; K chosen from {sorted(val_errors)} in {t_select:.1f}s" if val_errors
                     else "") + ")", flush=True)
    return rows


def _ari(z_true, z) -> float:
    if z_true is None or z is None:
        return float("nan")
    return adjusted_rand_index(z_true, np.asarray(z))


def _gap_bound(n: int, C) -> float:
    r""":math:`\sum_i p_i^2 \max_{kl} \bar C_{kl}^2 = \max \bar C^2 / n`: the most the relaxation can
    gain over a deterministic coupling (only the i = j terms are not linear in row i)."""
    return float(jnp.max(C) ** 2 / n)


# ----------------------------------------------------------------------------- POT reference


def pot_block_model(A: np.ndarray, T0: np.ndarray, tol: float, max_iter: int):
    """The same block-coordinate estimator with POT's srGW solver as the T-step.

    Alternates ``T = ot.gromov.semirelaxed_gromov_wasserstein(A, C, p, G0=T)`` (conditional
    gradient to relative tolerance ``tol``) and the closed-form ``C = T'AT / qq'``, until the
    objective changes by less than ``tol`` (relative), as POT's ``semirelaxed_gromov_barycenters``
    does for one graph with ``warmstartT=True, stop_criterion='loss'`` (which cannot start from a
    given coupling). Returns ``(T, C, objective, outer_iterations)``.
    """
    import ot

    p = T0.sum(1)
    T = T0
    C = _np_block_update(A, T)
    prev = np.inf
    for it in range(1, max_iter + 1):
        T, log = ot.gromov.semirelaxed_gromov_wasserstein(
            A, C, p, symmetric=True, G0=T, tol_rel=tol, tol_abs=0.0, log=True, max_iter=max_iter)
        C = _np_block_update(A, T)
        obj = _np_objective(A, T, C)
        if abs(prev - obj) <= tol * abs(obj):
            break
        prev = obj
    return T, C, obj, it


def _np_block_update(A: np.ndarray, T: np.ndarray) -> np.ndarray:
    q = T.sum(0)
    qq = np.outer(q, q)
    C = np.divide(T.T @ A @ T, qq, out=np.zeros_like(qq), where=qq > 1e-12)
    return np.clip(0.5 * (C + C.T), 0.0, 1.0)


def _np_objective(A: np.ndarray, T: np.ndarray, C: np.ndarray) -> float:
    """F(T, C) in float64 numpy (square loss, symmetric A and C)."""
    r, q = T.sum(1), T.sum(0)
    return float(r @ (A * A) @ r + q @ (C * C) @ q - 2.0 * np.sum((A @ T @ C) * T))


def pot_compare_seed(cfg, seed: int, progress: bool = False) -> list[dict]:
    """Ours vs POT from identical initial couplings on the ``pot_families`` x ``pot_ns`` graphs.

    Both run every initial coupling and keep the best objective; ours solves them in one vmapped
    call, POT one after another. Objectives of both are re-evaluated in float64.
    """
    rows = []
    for family in cfg.pot_families:
        if family not in families(cfg):
            raise ConfigError(f"srgw.pot_families: '{family}' is not a family of this config; "
                              f"allowed: {', '.join(families(cfg))}")
        for n in cfg.pot_ns:
            A, _, _, K = sample(cfg, family, n, seed)
            est = srgw_estimator(cfg, K)
            k_spec, k_rand, _ = jax.random.split(jax.random.fold_in(graph_key(seed, family, n), 1), 3)
            z_spec = jax.jit(lambda A, k: model.spectral_labels(A, K, k))(A, k_spec)
            T0s = jax.jit(est.couplings_from_labels)(z_spec, k_rand)
            (best, every), t_ours = timed(est.solve, A, T0s)
            A64, T0s64 = np.asarray(A, np.float64), np.asarray(T0s, np.float64)
            ours = _np_objective(A64, np.asarray(best.T, np.float64),
                                 np.asarray(best.C, np.float64))
            pot = []
            t_pot = timing.cpu_seconds(lambda: pot.extend(
                pot_block_model(A64, T0, tolerance(cfg), cfg.max_iter) for T0 in T0s64))
            pot_obj = min(r[2] for r in pot)
            rows.append({"family": family, "n": n, "K": K, "seed": seed,
                         "inits": int(T0s.shape[0]), "ours_objective": ours,
                         "pot_objective": pot_obj, "objective_ratio": ours / pot_obj,
                         "ours_time_s": t_ours, "pot_time_s": t_pot,
                         "speedup": t_pot / t_ours,
                         "ours_iterations": int(np.sum(np.asarray(every.n_iter))),
                         "pot_outer_iterations": int(sum(r[3] for r in pot))})
            if progress:
                r = rows[-1]
                print(f"srgw pot {family} n={n}: ratio {r['objective_ratio']:.4f} "
                      f"speedup {r['speedup']:.2f}x", flush=True)
    return rows


# ----------------------------------------------------------------------------- real networks


def fit_real_networks(cfg, seed: int) -> tuple[list[dict], dict[str, np.ndarray]]:
    """srGW (and spectral clustering for reference) on each networkx graph of the config."""
    rows, arrays = [], {}
    for i, (name, K) in enumerate(sorted(cfg.real_networks.items())):
        A_np, _, ref = data.real_network(name)
        A = jnp.asarray(A_np)
        key = jax.random.fold_in(jax.random.PRNGKey(seed), i)
        best, _, fit = _srgw_fit(srgw_estimator(cfg, K), A, key)
        sc = model.SpectralBlockMeans(K)(A, key)
        gap = solvers.rounding_gap(A, best.T)
        z = np.asarray(fit.z)
        rows.append({"network": name, "n": A_np.shape[0], "edges": int(A_np.sum() / 2), "K": K,
                     "objective": float(gap.rounded), "gap": float(gap.gap),
                     "ari_srgw": _ari(ref, z), "ari_spectral": _ari(ref, np.asarray(sc.z)),
                     "block_sizes": " ".join(str(int(c)) for c in np.bincount(z, minlength=K))})
        arrays[f"{name}_A"] = A_np
        arrays[f"{name}_z"] = z
        arrays[f"{name}_C"] = np.asarray(fit.C)
    return rows, arrays


# ----------------------------------------------------------------------------- summaries


def k_choice_rows(fits: list[dict]) -> list[dict]:
    """Per (family, n): the rate-theory K, the K srGW used on each seed (validation or theory)
    and how often each value was chosen."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in fits:
        if r["estimator"] == "srgw":
            groups.setdefault((str(r["family"]), int(r["n"])), []).append(r)
    rows = []
    for (family, n), rs in groups.items():
        ks = [int(r["K"]) for r in sorted(rs, key=lambda r: int(r["seed"]))]
        values, counts = np.unique(ks, return_counts=True)
        rows.append({"family": family, "n": n, "K_theory": int(rs[0]["K_theory"]),
                     "K_median": float(np.median(ks)),
                     "K_counts": " ".join(f"{v}x{c}" for v, c in zip(values, counts)),
                     "K_by_seed": " ".join(map(str, ks))})
    return rows


# ----------------------------------------------------------------------------- sparse scaling


def rss_mb() -> tuple[float, float]:
    """``(current, peak)`` resident set size of this process in MB (``VmRSS`` and ``VmHWM`` of
    /proc/self/status; NaN where it cannot be read)."""
    values = {"VmRSS:": float("nan"), "VmHWM:": float("nan")}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key = line.split(maxsplit=1)[0] if line.strip() else ""
                if key in values:
                    values[key] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return values["VmRSS:"], values["VmHWM:"]


def reset_peak_rss() -> None:
    """Reset the peak RSS (``VmHWM``) to the current RSS (Linux >= 4.0: ``5`` to clear_refs), so
    that a later peak excludes e.g. the compiler's transient memory."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def mem_total_gb() -> float:
    """``MemTotal`` of /proc/meminfo in GiB (NaN where it cannot be read)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def sparse_sbm_spec(n: int, degree: float, K: int, ratio: float) -> data.SBMSpec:
    r"""Balanced K-block SBM with mean degree ``degree`` and :math:`p_{in} = \mathrm{ratio}\,
    p_{out}`: :math:`\mathrm{degree} \approx (n/K)(p_{in} + (K-1) p_{out})`."""
    p_out = degree * K / (n * (ratio + K - 1))
    return data.SBMSpec(min(1.0, ratio * p_out), p_out, (1.0,) * K)


def scaling_problem(cfg, n: int, degree: float, K: int, seed: int):
    """The scaling study's sparse (BCOO) SBM of n nodes, its labels, the fit key and a perturbed
    starting coupling ``T0`` (half the true-free one-hot, half Dirichlet, total mass 1)."""
    key = graph_key(seed, f"sparse_sbm_K{K}_d{degree:g}", n)
    k_graph, k_fit, k_pert = jax.random.split(key, 3)
    A, z = data.sample_sbm_sparse(k_graph, n, sparse_sbm_spec(n, degree, K, cfg.scaling_ratio))
    T0 = jax.nn.one_hot(jnp.arange(n) % K, K, dtype=jnp.float32)
    T0 = (0.5 * T0 + 0.5 * jax.random.dirichlet(k_pert, jnp.ones(K), (n,))) / n
    return A, z, k_fit, T0


def fixed_iterations(A, T0, iters: int):
    """``iters`` Frank–Wolfe + block updates from ``T0`` (the cost of an iteration, whatever
    the solve's iteration count)."""
    C0 = solvers.block_update(T0, A @ T0)
    fAr = solvers.elementwise(solvers.SQUARE_LOSS.f1.func, A) @ T0.sum(1)

    def body(_, state):
        T, AT, C = state
        T, AT, _, _ = solvers.fw_step(A, T, AT, C, fAr)
        return T, AT, solvers.block_update(T, AT)

    return jax.lax.fori_loop(0, iters, body, (T0, A @ T0, C0))[0]


def scaling_ours(cfg, n: int, degree: float, K: int, seed: int, iters: int) -> dict:
    """srGW end to end on a sparse (BCOO) SBM of n nodes: O(edges) sampling, spectral init by
    subspace iteration on the sparse matrix, the solve to tolerance, rounding — no n x n array.

    Also times ``iters`` Frank–Wolfe + block updates from a perturbed coupling
    (:func:`fixed_iterations`) and one product ``A @ T`` (the floor of an iteration: each
    iteration needs one), both as the mean over a loop of ``iters`` (a single jitted product
    would also time the per-call setup of the BCOO indices, which the loop hoists). These single-call
    CPU times are findings; the claim's time per iteration is CPU time, all sizes in one job
    (:func:`scaling_cpu`). Memory: peak RSS of the process and RSS before the graph is sampled
    (``rss_base_mb``: the interpreter and JAX); the peak is reset after compilation, so it
    excludes the compiler's transient memory (its retained heap stays in)."""
    rss_base, _ = rss_mb()
    (A, z, k_fit, T0), t_sample = timing.cpu_timed(scaling_problem, cfg, n, degree, K, seed)
    est = model.SrgwEstimator(K, 0, cfg.max_iter, tolerance(cfg), cfg.scaling_power_iters,
                              cfg.scaling_kmeans_restarts)
    loop = lambda A, T0: fixed_iterations(A, T0, iters)

    def chained_products(A, T0):  # each product depends on the last: nothing is hoisted
        return jax.lax.fori_loop(0, iters, lambda _, X: (A @ X) / degree, T0)

    run = Compiled(f"the sparse scaling study at n={n}, mean degree {degree:g}, K={K} "
                   "(scaling_ns, scaling_degrees, scaling_ks)")
    for name, fn, args in (("fit", est.fit_blocks, (A, k_fit)), ("iters", loop, (A, T0)),
                           ("matmul", chained_products, (A, T0))):
        run.compile(name, fn, *args)
    reset_peak_rss()
    fit, t_fit = run("fit", est.fit_blocks, A, k_fit)
    _, t_iters = run("iters", loop, A, T0)
    matmul = min(run("matmul", chained_products, A, T0)[1] for _ in range(2)) / iters
    _, rss_peak = rss_mb()
    it_s = t_iters / iters
    return {"solver": "ours_sparse", "n": n, "degree": degree, "K": K, "seed": seed,
            "nnz": int(A.nse), "sample_s": t_sample, "time_s": t_fit,
            "iterations": int(fit.result.n_iter), "iteration_s": it_s,
            "matmul_s": matmul, "iteration_over_matmul": it_s / matmul,
            "ari": adjusted_rand_index(z, np.asarray(fit.z)),
            "objective": float(fit.result.objective), "gap": float(fit.gap.gap),
            "rss_base_mb": rss_base, "rss_peak_mb": rss_peak,
            "memory_mb": rss_peak - rss_base, "mem_total_gb": mem_total_gb()}


def scaling_cpu(cfg) -> list[dict]:
    """CPU seconds per Frank–Wolfe + block iteration at every n of ``scaling_ns`` (first mean
    degree, K and seed), all sizes in this one process, timed by
    :func:`repro26.core.timing.interleaved_cpu_times` (``scaling_timing_rounds`` interleaved
    rounds, each call ``scaling_iters`` iterations; baseline and control: the smallest n
    >= ``SCALING_MIN_N``, below which fixed per-call costs hide the O(nnz K) term).
    One row per n: the median per-iteration CPU time, its ratio to the smallest n's with the
    interval widened by the noise floor."""
    from repro26.core.timing import interleaved_cpu_times

    degree, K, seed = cfg.scaling_degrees[0], cfg.scaling_ks[0], cfg.scaling_seeds[0]
    loop = jax.jit(lambda A, T0: fixed_iterations(A, T0, cfg.scaling_iters))
    programs, nnz = {}, {}
    for n in cfg.scaling_ns:
        A, _, _, T0 = scaling_problem(cfg, n, degree, K, seed)
        programs[f"n{n}"] = functools.partial(loop, A, T0)
        nnz[n] = int(A.nse)
    base_n = min([n for n in cfg.scaling_ns if n >= SCALING_MIN_N] or cfg.scaling_ns)
    base = f"n{base_n}"
    t = interleaved_cpu_times(programs, base, rounds=cfg.scaling_timing_rounds)
    rows = []
    for n in cfg.scaling_ns:
        ratio = t["ratio"].get(f"n{n}", {"median": 1.0, "interval": [1.0, 1.0]})
        rows.append({"solver": "ours_sparse_cpu", "n": n, "degree": degree, "K": K, "seed": seed,
                     "nnz": nnz[n], "cpu_iteration_s":
                     float(np.median(t["seconds"][f"n{n}"])) / cfg.scaling_iters,
                     "cpu_ratio": ratio["median"], "cpu_ratio_lo": ratio["interval"][0],
                     "cpu_ratio_hi": ratio["interval"][1], "base_n": base_n,
                     "noise_floor": t["noise_floor"], "timing_rounds": t["rounds"],
                     "control_ratio": t["ratio"]["control"]["median"]})
    return rows


def scaling_pot(cfg, n: int, degree: float, K: int, seed: int) -> dict:
    """POT's srGW (the block-coordinate loop of :func:`pot_block_model`, float64, dense) on the
    same graph as :func:`scaling_ours`, from our spectral labels (init time not counted); its
    memory is tracemalloc's peak over the solve (numpy reports its buffers to tracemalloc), plus
    the dense adjacency itself."""
    import tracemalloc

    key = graph_key(seed, f"sparse_sbm_K{K}_d{degree:g}", n)
    k_graph, k_fit, _ = jax.random.split(key, 3)
    A, z = data.sample_sbm_sparse(k_graph, n, sparse_sbm_spec(n, degree, K, cfg.scaling_ratio))
    z0 = jax.jit(lambda A, k: model.spectral_labels(
        A, K, jax.random.split(k)[0], cfg.scaling_power_iters, cfg.scaling_kmeans_restarts))(A, k_fit)
    tracemalloc.start()
    A64 = np.asarray(A.todense(), np.float64)
    T0 = np.asarray(jax.nn.one_hot(z0, K), np.float64) / n
    (T, _, obj, outer), elapsed = timing.cpu_timed(pot_block_model, A64, T0, tolerance(cfg),
                                                   cfg.max_iter)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"solver": "pot_dense", "n": n, "degree": degree, "K": K, "seed": seed,
            "nnz": int(A.nse), "time_s": elapsed, "iterations": outer,
            "ari": adjusted_rand_index(z, T.argmax(1)), "objective": obj,
            "memory_mb": peak / 2**20, "mem_total_gb": mem_total_gb()}


def scaling_rows(cfg, n: int, solver: str, progress: bool = False) -> list[dict]:
    """Every (seed, mean degree, K) of the scaling study at one n for one solver."""
    rows = []
    for seed in cfg.scaling_seeds:
        for degree in cfg.scaling_degrees:
            for K in cfg.scaling_ks:
                if solver == "ours":
                    row = scaling_ours(cfg, n, degree, K, seed, cfg.scaling_iters)
                else:
                    row = scaling_pot(cfg, n, degree, K, seed)
                rows.append(row)
                if progress:
                    print(f"srgw scaling {solver} n={n} d={degree:g} K={K} seed {seed}: "
                          f"{row['time_s']:.2f}s ({row['iterations']} it), ari {row['ari']:.3f}, "
                          f"{row['memory_mb']:.0f} MB", flush=True)
    return rows
