"""Metrics and the evaluation / timing jobs, writing tidy rows.

Ranking metrics over the test snapshots (``t >= n_train_snapshots``), per seed:

* AP = sum_k (R_k - R_{k-1}) P_k over the distinct score thresholds in decreasing order
  (precision P_k and recall R_k of "score >= threshold k"; ties share a threshold);
* AUROC = P(s_pos > s_neg) + P(s_pos = s_neg) / 2 (Mann-Whitney);
* MRR = mean over positives of 1 / rank among the positive and its K random destinations,
  rank = 1 + #(s_neg > s_pos) + #(s_neg = s_pos) / 2.

Negatives (``data.negatives``): random, historical and inductive; MRR uses the K random
destinations. Timing (``speed_rows``): per-process CPU time in interleaved rounds with a control
(:mod:`repro26.core.timing`), compile excluded, of a training step (an epoch over the training
snapshots, forward and backward) and of an inference pass (the whole stream, scoring each event
and one negative); peak memory is XLA's buffer size for the compiled training step.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.nagnn import model as models
from repro26.nagnn.data import Stream
from repro26.nagnn.losses import training_queries

NEGATIVES = ("random", "historical", "inductive")


# ----------------------------------------------------------------------------- metrics


def average_precision(pos: np.ndarray, neg: np.ndarray) -> float:
    """AP over distinct thresholds (module docstring); ties count together."""
    scores = np.concatenate([pos, neg]).astype(np.float64)
    labels = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    order = np.argsort(-scores, kind="mergesort")
    scores, labels = scores[order], labels[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]
    tp = np.cumsum(labels)[last_of_tie]
    precision = tp / (last_of_tie + 1)
    recall = tp / len(pos)
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def auroc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(pos > neg) + P(pos = neg) / 2, from average ranks."""
    scores = np.concatenate([pos, neg]).astype(np.float64)
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
    ends = np.r_[starts[1:], len(scores)]
    for a, b in zip(starts, ends):
        ranks[order[a:b]] = (a + b + 1) / 2
    n_pos, n_neg = len(pos), len(neg)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def mrr(pos: np.ndarray, neg: np.ndarray) -> float:
    """``pos``: (n,), ``neg``: (n, K); ties count half."""
    greater = (neg > pos[:, None]).sum(1)
    ties = (neg == pos[:, None]).sum(1)
    return float(np.mean(1.0 / (1 + greater + ties / 2)))


# ----------------------------------------------------------------------------- evaluation


def evaluation_queries(src, dst, neg: dict):
    """T x E x (4 + K) queries: positive, random, historical, inductive, K random (MRR)."""
    K = neg["mrr_dst"].shape[-1]
    q_src = np.concatenate([np.stack([src, src, neg["hist_src"], neg["ind_src"]], -1),
                            np.repeat(src[..., None], K, -1)], -1)
    q_dst = np.concatenate([np.stack([dst, neg["rand_dst"], neg["hist_dst"], neg["ind_dst"]], -1),
                            neg["mrr_dst"]], -1)
    return q_src, q_dst


def scores_for(name: str, stacked_models, stream: Stream, q_src, q_dst) -> np.ndarray:
    """Scores of every query for every seed (leading axis), learned model or heuristic."""
    if name in models.HEURISTICS:
        fn = jax.jit(jax.vmap(lambda s, a, b: models.heuristic_scores(name, s, a, b)))
        return np.asarray(fn(stream, q_src, q_dst))
    fn = eqx.filter_jit(eqx.filter_vmap(models.stream_scores))
    return np.asarray(fn(stacked_models, stream, q_src, q_dst))


def ideal_scores(cfg, dataset: str, stream: Stream, latent, q_src, q_dst) -> np.ndarray:
    """The ideal row: every query scored by its probability under the generator's true law
    (``data.dsbm_probability`` / ``data.bipartite_probability``), for every seed."""
    from repro26.nagnn import data

    if dataset == "dsbm":
        law = lambda s, z, a, b: data.dsbm_probability(
            s, z, a, b, cfg.affinity, cfg.frac_repeat, cfg.frac_triadic, cfg.frac_echo,
            cfg.echo_window)
    else:
        law = lambda s, z, a, b: data.bipartite_probability(
            s, z, a, b, cfg.bipartite_users, cfg.n_item_clusters, cfg.p_pref, cfg.frac_repeat,
            cfg.frac_echo, cfg.echo_window)
    return np.asarray(jax.jit(jax.vmap(law))(stream, latent, q_src, q_dst))


def occupancy(stacked_models, stream: Stream) -> list[dict]:
    """Per seed, over the nodes with at least ``S`` distinct neighbours after the whole stream:
    the mean fraction of reservoir slots used (``slots_used``) and what a uniform hash would
    use on average, ``1 - (1 - 1/S)^k`` (``slots_used_uniform``)."""
    used, k = eqx.filter_jit(eqx.filter_vmap(models.slot_occupancy))(stacked_models, stream)
    S = 2 ** stacked_models.planes.shape[2]
    used, k = np.asarray(used), np.asarray(k)
    out = []
    for u, d in zip(used, k):
        busy = d >= S
        out.append({"slots_used": float(u[busy].mean()) if busy.any() else float("nan"),
                    "slots_used_uniform": float(np.mean(1 - (1 - 1 / S) ** d[busy]))
                    if busy.any() else float("nan")})
    return out


def metric_rows(dataset: str, name: str, seeds, scores: np.ndarray, neg: dict,
                n_train: int, extra: list[dict] | None = None) -> list[dict]:
    """One row per seed and negative kind: AP, AUROC (and MRR on the random rows); ``extra``:
    more columns per seed (reservoir occupancy of NAGNN; NaN for the other models)."""
    extra = extra or [{"slots_used": float("nan"), "slots_used_uniform": float("nan")}] * len(seeds)
    rows = []
    for i, seed in enumerate(seeds):
        s = scores[i, n_train:]
        pos = s[..., 0].ravel()
        for j, kind in enumerate(NEGATIVES):
            negs = s[..., 1 + j].ravel()
            ok = {"random": None, "historical": "hist_ok", "inductive": "ind_ok"}[kind]
            from_pool = float(np.mean(neg[ok][i, n_train:])) if ok else 1.0
            rows.append({"dataset": dataset, "model": name, "seed": seed, "negatives": kind,
                         "ap": average_precision(pos, negs), "auroc": auroc(pos, negs),
                         "mrr": mrr(pos, s[..., 4:].reshape(len(pos), -1)) if kind == "random"
                         else float("nan"),
                         "negatives_from_pool": from_pool, **extra[i]})
    return rows


# ----------------------------------------------------------------------------- timing


def speed_rows(cfg, dataset: str, stream: Stream, dst_pool) -> list[dict]:
    """CPU time of a training step and of an inference pass of every learned model, measured
    in one process by :func:`repro26.core.timing.interleaved_cpu_times` (``timing_rounds``
    interleaved rounds, a control ratio for the noise floor), each against NAGNN's program of
    the same kind; seed 0's stream and initialisation (every seed has the same shapes).

    Returns one row per (model, kind): CPU seconds per call (median and quartiles over rounds),
    events per CPU second, the ratio to NAGNN (median and noise-widened interval), the noise
    floor, rounds and control ratio of that measurement (what the claims read)."""
    from repro26.core.timing import interleaved_cpu_times
    from repro26.nagnn import train as training
    from repro26.nagnn.losses import link_loss

    n_nodes, feature_dim = stream.x.shape[1:]
    T, E = stream.src.shape[1:]
    n_train = cfg.n_train_snapshots
    one = Stream(*(a[0] for a in stream))
    pool = jnp.asarray(dst_pool[0])
    train = (Stream(*(a[:n_train] for a in one[:3]), one.x), pool)
    key = jax.random.PRNGKey(cfg.seeds[0])
    opt = training.optimizer(cfg)

    @eqx.filter_jit
    def train_step(model, opt_state, data, key):
        grads = eqx.filter_grad(lambda m: link_loss(m, data, key, cfg.remat)[0])(model)
        updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return eqx.apply_updates(model, updates), opt_state

    @eqx.filter_jit
    def infer(model, s, pool, key):
        return models.stream_scores(model, s, *training_queries(s, pool, key))

    programs: dict[str, dict] = {"train": {}, "infer": {}}
    memory_mb = {}
    for name in cfg.models:
        model = models.build(name, n_nodes, feature_dim, cfg.hidden, cfg.lsh_tables,
                             cfg.lsh_bits, training.model_key(cfg.seeds[0], name))
        opt_state = opt.init(eqx.filter(model, eqx.is_inexact_array))
        programs["train"][name] = (lambda m=model, o=opt_state: train_step(m, o, train, key))
        programs["infer"][name] = (lambda m=model: infer(m, one, pool, key))
        memory = train_step.lower(model, opt_state, train, key).compile().compiled.memory_analysis()
        memory_mb[name] = ((memory.temp_size_in_bytes + memory.argument_size_in_bytes
                            + memory.output_size_in_bytes) / 2**20 if memory is not None
                           else float("nan"))
    events = {"train": n_train * E, "infer": T * E}
    rows = []
    for kind, progs in programs.items():
        t = interleaved_cpu_times(progs, baseline="nagnn", rounds=cfg.timing_rounds)
        for name in cfg.models:
            sec = np.asarray(t["seconds"][name])
            q25, med, q75 = np.quantile(sec, [0.25, 0.5, 0.75])
            ratio = t["ratio"].get(name, {"median": 1.0, "interval": [1.0, 1.0]})
            rows.append({"dataset": dataset, "model": name, "kind": kind, "cpu_s": float(med),
                         "cpu_s_q25": float(q25), "cpu_s_q75": float(q75),
                         "events_per_cpu_s": events[kind] / float(med),
                         "ratio_to_nagnn": ratio["median"],
                         "ratio_lo": ratio["interval"][0], "ratio_hi": ratio["interval"][1],
                         "noise_floor": t["noise_floor"], "rounds": t["rounds"],
                         "control_ratio": t["ratio"]["control"]["median"],
                         "peak_memory_mb": memory_mb[name]})
    return rows
