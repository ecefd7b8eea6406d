"""The experiments' jobs and their tidy tables.

* :func:`graphs_job` — the seeds' graphs of one family and n (CSR arrays, ρ(G), δ).
* :func:`poll_job` — ``Poll`` on every seed's game of one (family, n, heterogeneity), all seeds
  in one vmapped ``lax.scan``, next to the trivial baselines (mean-field uniform price, degree
  heuristic, no price) evaluated on the same games: summary rows and trajectory rows.
* :func:`exact_job` — exact computation (dense Cholesky) and the distributed
  baselines (conjugate gradients, best-response dynamics) stopped at the same ε.
* :func:`adversary_job` — best misreports (optax over every positive-definite report) and the
  detection rate / false positives of the first-order-condition test under attack.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.sparse as sp
from jax.experimental import enable_x64

from repro26.core import timing
from repro26.poll import data, model, solvers


# ----------------------------------------------------------------------------- instances


def graphs_job(cfg, family: str, ns: list[int]) -> dict[str, np.ndarray]:
    """CSR arrays of every seed's graph at every n (``n<n>_indptr_<seed>``,
    ``n<n>_indices_<seed>``) and its spectral radius (``n<n>_rho_<seed>``)."""
    arrays = {}
    for n in ns:
        for seed in cfg.seeds:
            adj = data.adjacency(data.graph(family, n, seed, cfg.mean_degree, cfg.sbm_ratio))
            arrays[f"n{n}_indptr_{seed}"] = adj.indptr.astype(np.int64)
            arrays[f"n{n}_indices_{seed}"] = adj.indices.astype(np.int64)
            arrays[f"n{n}_rho_{seed}"] = np.asarray(data.spectral_radius(adj))
    return arrays


def graphs_at(graphs: dict, n: int) -> dict:
    """The arrays of size n from a family's graphs file, keys without the ``n<n>_`` prefix."""
    prefix = f"n{n}_"
    return {k[len(prefix):]: v for k, v in graphs.items() if k.startswith(prefix)}


def load_adjacency(graphs: dict, seed: int) -> sp.csr_array:
    indptr, indices = graphs[f"indptr_{seed}"], graphs[f"indices_{seed}"]
    n = len(indptr) - 1
    return sp.csr_array((np.ones(len(indices)), indices, indptr), shape=(n, n))


class Instance:
    """One seed's game with everything the evaluation knows: exact kernel, truncated-series
    kernel, status-quo efforts for the FOC checks."""

    def __init__(self, cfg, adj: sp.csr_array, rho: float, seed: int, heterogeneity: float):
        n, m = adj.shape[0], cfg.activities
        key = jax.random.fold_in(jax.random.PRNGKey(seed), 1)
        self.sigma = data.technologies(key, n, m, heterogeneity)
        self.delta = cfg.peer_strength / rho if rho > 0 else 0.0
        self.rho, self.adj = rho, adj
        a = np.asarray(cfg.activity_values, np.float64)
        self.existence = solvers.check_equilibrium_exists(adj, self.sigma, self.delta)
        if not self.existence["concave_welfare"]:
            raise ValueError(f"2δρ(G) ≥ min λ_min(Σ_i): {self.existence}")
        self.game = model.NetworkGame.from_arrays(adj, self.sigma, self.delta, a)
        self.centrality = solvers.exact_centralities(adj, self.sigma, self.delta)
        self.exact = model.kernel_numpy(self.centrality, self.sigma)
        self.truncated = solvers.exact_kernel(adj, self.sigma, self.delta, cfg.walk_length)
        x = self.centrality @ a  # status quo p = 0: x_i = C_i a
        noise = cfg.obs_noise * float(np.sqrt(np.mean(x**2)))
        self.checks = solvers.Checks(
            jnp.asarray(a, jnp.float32), jnp.asarray(x, jnp.float32),
            jnp.asarray(adj @ x, jnp.float32), jnp.float32(noise),
            jnp.float32(solvers.chi2_threshold(m, cfg.alpha)))


def instances(cfg, graphs: dict, heterogeneity: float) -> list[Instance]:
    return [Instance(cfg, load_adjacency(graphs, s), float(graphs[f"rho_{s}"]), s, heterogeneity)
            for s in cfg.seeds]


def _batch(insts: list[Instance]):
    games = data.padded_batch([i.game for i in insts])
    stack = lambda *xs: jnp.stack(xs)  # noqa: E731
    exact = jax.tree.map(stack, *[i.exact for i in insts])
    truncated = jax.tree.map(stack, *[i.truncated for i in insts])
    checks = jax.tree.map(stack, *[i.checks for i in insts])
    return games, exact, truncated, checks


def _poll_batched(rounds: int, length: int):
    """``solvers.poll`` vmapped over seeds (games, kernels, checks, masks), jitted once per shape."""
    fn = jax.vmap(lambda key, game, exact, centre, checks, adversarial, attack, drop: solvers.poll(
        key, game, exact, centre, rounds, length, checks, adversarial, attack, drop),
        in_axes=(0, 0, 0, 0, 0, 0, None, None))
    return jax.jit(fn)


def checkpoints(rounds: int, count: int) -> np.ndarray:
    """Log-spaced rounds 1..T (distinct), where trajectories are written."""
    return np.unique(np.geomspace(1, rounds, count).astype(int))


# ----------------------------------------------------------------------------- Poll


def poll_job(cfg, graphs: dict, family: str, n: int, heterogeneity: float):
    """Summary rows (one per seed and method) and trajectory rows of one (family, n, h)."""
    insts = instances(cfg, graphs_at(graphs, n), heterogeneity)
    games, exact, truncated, checks = _batch(insts)
    keys = jnp.stack([jax.random.fold_in(jax.random.PRNGKey(s), 2) for s in cfg.seeds])
    honest = jnp.zeros((len(insts), games.degree.shape[-1]), bool)
    args = (keys, games, exact, truncated, checks, honest, 1.0, False)
    run = _poll_batched(cfg.rounds, cfg.walk_length).lower(*args).compile()  # compile excluded
    trace, seconds = timing.cpu_timed(run, *args)
    seconds_per_seed = seconds / len(insts)
    common = {"family": family, "n": n, "het": heterogeneity}
    summary, trajectory = [], []
    marks = checkpoints(cfg.rounds, cfg.checkpoints)
    for b, (seed, inst) in enumerate(zip(cfg.seeds, insts)):
        a = inst.game.a
        q_star = inst.exact.q(a)
        err, gap = np.asarray(trace.error[b]), np.asarray(trace.gap[b])
        queries, ops = np.asarray(trace.queries[b]), np.asarray(trace.ops[b], np.float64)
        r = solvers.rounds_to_eps(err, cfg.eps)
        censored = r > cfg.rounds
        at = min(r, cfg.rounds) - 1
        degree = np.asarray(inst.game.degree, float)
        info = {**common, "seed": seed, "delta": inst.delta, "rho": inst.rho,
                "degree_cv": float(degree.std() / degree.mean()),
                "p_star_norm": float(jnp.linalg.norm(a - q_star))}
        late = slice(cfg.rounds // 2, cfg.rounds)
        t = np.arange(1, cfg.rounds + 1)
        clt = float(trace.variance[b]) / cfg.eps**2
        summary.append({
            **info, "method": "poll", "price_error": float(err[-1]), "welfare_gap": float(gap[-1]),
            "rounds_to_eps": np.nan if censored else r,
            "queries_to_eps": np.nan if censored else int(queries[at]),
            "ops_to_eps": np.nan if censored else float(ops[at]),
            "time_to_eps_s": np.nan if censored else seconds_per_seed * r / cfg.rounds,
            # the rounds at which the CLT's root-mean-square price error reaches ε, from the
            # per-round variance (solvers.poll), and from one trajectory's late half (noisy)
            "rounds_to_eps_clt": clt,
            "queries_to_eps_clt": clt * queries[-1] / cfg.rounds,
            "ops_to_eps_clt": clt * ops[-1] / cfg.rounds,
            "time_to_eps_clt_s": seconds_per_seed * clt / cfg.rounds,
            "rounds_to_eps_trajectory": float(np.mean(t[late] * err[late] ** 2) / cfg.eps**2),
            "truncation_error": float(model.price_error(inst.truncated.q(a), q_star, a)),
        })
        game = jax.tree.map(lambda x: x[b], games)  # padded: one compile per shape
        for name, kernel in (("mean_field", model.mean_field_kernel(game)),
                             ("degree", model.degree_kernel(game))):
            q = kernel.q(a)
            summary.append({**info, "method": name,
                            "price_error": float(model.price_error(q, q_star, a)),
                            "welfare_gap": float(model.welfare_gap(q, inst.exact, a))})
        q = model.no_price_q(inst.game)
        summary.append({**info, "method": "no_price",
                        "price_error": float(model.price_error(q, q_star, a)),
                        "welfare_gap": float(model.welfare_gap(q, inst.exact, a))})
        for k in marks:
            trajectory.append({**common, "seed": seed, "round": int(k),
                               "price_error": float(err[k - 1]), "welfare_gap": float(gap[k - 1]),
                               "queries": int(queries[k - 1])})
    return summary, trajectory


# ----------------------------------------------------------------------------- exact


def exact_job(cfg, graphs: dict, family: str, ns: list[int]) -> list[dict]:
    """:func:`exact_n` at every n of the family."""
    return [row for n in ns for row in exact_n(cfg, graphs_at(graphs, n), family, n)]


def exact_n(cfg, graphs: dict, family: str, n: int) -> list[dict]:
    """Exact and distributed computation of the optimal price on every seed's game, each
    stopped (iterative ones) at price error ≤ ε; multiply-adds and seconds (compile excluded)."""
    insts = instances(cfg, graphs, cfg.heterogeneity)
    nodes, width = data.padded_shape([i.game for i in insts])
    solvers_jit = {
        "cg": jax.jit(lambda g, q: solvers.conjugate_gradient(g, q, cfg.eps, cfg.max_iter)),
        "best_response": jax.jit(lambda g, q: solvers.best_response_dynamics(
            g, q, cfg.eps, cfg.max_iter)),
    }
    rows = []
    for seed, inst in zip(cfg.seeds, insts):
        game = inst.game.pad(nodes, width)
        q_star = inst.exact.q(game.a)
        base = {"family": family, "n": n, "seed": seed}
        for name, fn in solvers_jit.items():
            jax.block_until_ready(fn(game, q_star))
            res, seconds = timing.cpu_timed(fn, game, q_star)
            rows.append({**base, "method": name, "iterations": int(res.iterations),
                         "ops_to_eps": float(res.ops), "time_s": seconds,
                         "price_error": float(res.error)})
        if n <= cfg.dense_max_n:
            c, ops, seconds = solvers.dense_solve(game)
            q = model.kernel_from_centralities(jnp.asarray(c), game.sigma, game.mask).q(game.a)
            rows.append({**base, "method": "exact_dense", "iterations": 1, "ops_to_eps": ops,
                         "time_s": seconds,
                         "price_error": float(model.price_error(q, q_star, game.a))})
    return rows


# ----------------------------------------------------------------------------- incentives


def _best_misreport(cfg, rounds: int):
    """``(σ_i, C_i, Ŵ¹, Ŵ², final kernel, a, key, s²) ↦`` max over symmetric A, ``‖A‖_F ≤ radius``,
    of the relative net gain of reporting ``R(A)`` in a poll of ``rounds`` rounds (projected
    Adam from A = 0 and ``incentive_starts − 1`` random starts), and the maximising A."""
    opt = optax.adam(0.05)

    def project(A):
        A = 0.5 * (A + A.T)
        return A * jnp.minimum(1.0, cfg.incentive_radius / jnp.maximum(jnp.linalg.norm(A), 1e-12))

    def best(sigma_i, c_i, w1, w2, final, a, key, probe_var):
        def gain(A):
            return solvers.manipulation_gain(A, sigma_i, c_i, w1, w2, final, rounds, a,
                                             probe_var)

        def climb(A0):
            def step(carry, _):
                A, state = carry
                upd, state = opt.update(jax.grad(lambda x: -gain(x))(A), state)
                return (project(A + upd), state), None

            (A, _), _ = jax.lax.scan(step, (A0, opt.init(A0)), None, length=cfg.incentive_steps)
            return gain(A), A

        m = sigma_i.shape[0]
        starts = 0.5 * jax.random.normal(key, (cfg.incentive_starts, m, m))
        starts = jax.vmap(project)(starts.at[0].set(0.0))
        gains, found = jax.vmap(climb)(starts)
        return jnp.max(gains), found[jnp.argmax(gains)]

    return best


KAPPAS = tuple(float(k) for k in np.geomspace(0.25, 4.0, 9))


@functools.partial(jax.jit, static_argnames="rounds")
@functools.partial(jax.vmap, in_axes=(0, 0, 0, 0, 0, None, None, None, None))
def _batched_gain(A, sigma_i, c_i, w1, w2, final, rounds, a, probe_var):
    return solvers.manipulation_gain(A, sigma_i, c_i, w1, w2, final, rounds, a, probe_var)


def _gain_float64(rounds, A, sigma_i, c_i, w1, w2, final, a, probe_var) -> np.ndarray:
    """The net gain of the misreports ``A`` found in float32, re-evaluated in float64.

    The gains are relative utility changes of order 1e-6, the size of float32 round-off in
    ``u(moved) − u(final)``; the verdict must not depend on that round-off."""
    with enable_x64():
        def f64(tree):
            return jax.tree.map(lambda x: jnp.asarray(np.asarray(x), jnp.float64), tree)

        return np.asarray(_batched_gain(*f64((A, sigma_i, c_i, w1, w2, final)), rounds,
                                        f64(a), jnp.float64(probe_var)))


def _incentive_rows(cfg, games, truthful, insts, family: str, rounds: int) -> list[dict]:
    """Per seed, ``incentive_samples`` fresh polls of the last round of a truthful run of
    ``rounds`` rounds: the best misreport's net gain (plain report and probe-scored report;
    searched in float32, its gain evaluated in float64) and the gain along R = κ Σ_i. The
    sampled agents and walks depend on the seed only, not on ``rounds``."""
    n = insts[0].game.n
    walks = jax.vmap(lambda k, i, g: solvers.walk_tail(k, i, g, cfg.walk_length)[0],
                     in_axes=(0, 0, None))
    rules = {"plain": 0.0, "probe": cfg.probe_var}
    best = jax.jit(jax.vmap(_best_misreport(cfg, rounds),
                            in_axes=(0, 0, 0, 0, None, None, 0, None)))
    scaled = jax.jit(jax.vmap(jax.vmap(
        lambda A, s, c, w1, w2, final, a, var: solvers.manipulation_gain(
            A, s, c, w1, w2, final, rounds, a, var),
        in_axes=(0, None, None, None, None, None, None, None)),
        in_axes=(None, 0, 0, 0, 0, None, None, None)))
    log_kappa = jnp.stack([jnp.eye(cfg.activities) * np.log(k) for k in KAPPAS])
    rows = []
    for b, (seed, inst) in enumerate(zip(cfg.seeds, insts)):
        game = jax.tree.map(lambda x: x[b], games)
        final = jax.tree.map(lambda x: x[b], truthful.kernel)
        key = jax.random.fold_in(jax.random.PRNGKey(seed), 5)
        k_agent, k1, k2, k3 = jax.random.split(key, 4)
        count = cfg.incentive_samples
        agents = jax.random.randint(k_agent, (count,), 0, n)
        w1 = walks(jax.random.split(k1, count), agents, game)
        w2 = walks(jax.random.split(k2, count), agents, game)
        sigma_i = jnp.asarray(inst.sigma, jnp.float32)[agents]
        c_i = jnp.asarray(inst.centrality, jnp.float32)[agents]
        starts = jax.random.split(k3, count)
        out = {}
        for rule, var in rules.items():
            _, found = best(sigma_i, c_i, w1, w2, final, game.a, starts, var)
            out[rule] = _gain_float64(rounds, found, sigma_i, c_i, w1, w2, final, game.a, var)
        curves = {rule: np.asarray(scaled(log_kappa, sigma_i, c_i, w1, w2, final, game.a, var))
                  for rule, var in rules.items()}
        for s in range(count):
            row = {"family": family, "n": n, "seed": seed, "rounds": rounds, "sample": s,
                   "agent": int(agents[s])}
            for rule in rules:
                row[f"best_gain_{rule}"] = float(out[rule][s])
                for j, kappa in enumerate(KAPPAS):
                    row[f"gain_{rule}_k{kappa:.3g}"] = float(curves[rule][s, j])
            rows.append(row)
    return rows


def analytic_detection(inst: Instance, adversarial: np.ndarray, attack: float,
                       alpha: float) -> float:
    """The FOC test's exact power against adversaries reporting ``R = κ Σ_i``, averaged over
    the adversarial agents (they are polled uniformly); α for κ = 1.

    With efforts observed as ``x̃ = x_i + σ ξ``, neighbour sums as ``ñ = n_i + σ √d_i ξ'``, the
    residual ``r = R x̃ − a − δ ñ`` is Gaussian with mean ``(κ − 1) Σ_i x_i`` (the truthful
    first-order condition ``Σ_i x_i = a + δ n_i`` holds at the status quo) and covariance
    ``V = σ² (R Rᵀ + δ² d_i I)``, the one the test standardises by; so ``rᵀ V⁻¹ r`` is
    non-central χ² with m degrees of freedom and ``λ_i = μᵀ V⁻¹ μ``, and the power is
    ``P(χ²_m(λ_i) > χ²_{m, 1−α})``."""
    from scipy import stats

    if attack == 1.0:
        return alpha
    tech = np.asarray(inst.sigma, np.float64)
    m = tech.shape[1]
    x = np.einsum("nij,j->ni", np.asarray(inst.centrality, np.float64),
                  np.asarray(inst.game.a, np.float64))
    sigma = float(inst.checks.noise)
    degree = np.asarray(inst.adj.sum(axis=1)).ravel()
    threshold = solvers.chi2_threshold(m, alpha)
    powers = []
    for i in np.nonzero(adversarial)[0]:
        report = attack * tech[i]
        mu = (attack - 1.0) * tech[i] @ x[i]
        cov = sigma**2 * (report @ report.T + inst.delta**2 * degree[i] * np.eye(m))
        lam = float(mu @ np.linalg.solve(cov, mu))
        powers.append(stats.ncx2.sf(threshold, m, lam))
    return float(np.mean(powers)) if powers else np.nan


def adversary_job(cfg, graphs: dict, family: str, n: int) -> tuple[list[dict], list[dict]]:
    """Incentive rows (see :func:`_incentive_rows`, one set per horizon in
    ``incentive_horizons``, each from its own truthful run) and detection rows (per attack
    strength κ, adversaries reporting ``R = κ Σ_i``: detection and false-positive rates of the
    FOC test and its analytic power, final price error with and without dropping flagged
    reports; κ = 1 is the truthful run)."""
    insts = instances(cfg, graphs_at(graphs, n), cfg.heterogeneity)
    games, exact, truncated, checks = _batch(insts)
    nodes = games.degree.shape[-1]
    keys = jnp.stack([jax.random.fold_in(jax.random.PRNGKey(s), 3) for s in cfg.seeds])
    run = _poll_batched(cfg.rounds, cfg.walk_length)
    masks = jnp.stack([jax.random.uniform(jax.random.fold_in(jax.random.PRNGKey(s), 4), (nodes,))
                       < cfg.adversary_fraction for s in cfg.seeds])
    n = insts[0].game.n
    detection, truthful = [], None
    for attack in (1.0, *cfg.attacks):
        adversarial = masks if attack != 1.0 else jnp.zeros_like(masks)
        traces = {drop: run(keys, games, exact, truncated, checks, adversarial, attack, drop)
                  for drop in (False, True)}
        if attack == 1.0:
            truthful = traces[False]
        for b, seed in enumerate(cfg.seeds):
            adv = np.asarray(traces[False].adversarial[b])
            flag = np.asarray(traces[False].flagged[b])
            detection.append({
                "family": family, "n": n, "seed": seed, "attack": attack,
                "adversarial_rounds": int(adv.sum()),
                "detection_rate": float(flag[adv].mean()) if adv.any() else np.nan,
                "analytic_detection_rate": analytic_detection(
                    insts[b], np.asarray(masks[b])[:n], attack, cfg.alpha),
                "false_positive_rate": float(flag[~adv].mean()),
                "price_error_undefended": float(traces[False].error[b, -1]),
                "price_error_defended": float(traces[True].error[b, -1]),
            })
    honest = jnp.zeros_like(masks)
    incentives = []
    for rounds in cfg.incentive_horizons:
        final = truthful if rounds == cfg.rounds else _poll_batched(rounds, cfg.walk_length)(
            keys, games, exact, truncated, checks, honest, 1.0, False)
        incentives += _incentive_rows(cfg, games, final, insts, family, rounds)
    return incentives, detection


def read_rows(paths) -> list[dict]:
    from repro26.core import io

    rows = []
    for path in paths:
        table = io.read_table(Path(path))
        rows.extend(dict(zip(table, vals)) for vals in zip(*table.values()))
    return rows
