"""Training: the guide, the baselines and the Network-of-Theseus conversion, every seed at once.

All seeds of one model train in one job: the network, optimiser state and PRNG stream are
stacked along a leading seed axis and the step is ``vmap``-ed (one compile per network shape).
Every run is ``repro26.core.train.run_loop`` (AdamW, warm-up then cosine decay, global-norm
clipping), with a checkpoint so a killed job resumes. With ``shift`` > 0 every image model
(guide, baselines, conversions alike) draws its minibatches translated by up to ``shift`` pixels
(:func:`random_shift`): the same data law for all, and for a conversion more inputs on which the
new dense parts see the guide's function (an MLP has no translation equivariance of its own).

Models (budget B = ``stage_steps x K`` steps for every target, K = number of parts):

* ``guide``: the guide architecture trained for ``guide_steps`` on the task loss;
* ``linear``: the trivial baseline (softmax regression on pixels / a log-linear c-gram), B steps;
* ``scratch``: the target architecture from random init, task loss, B steps;
* ``kd``: scratch target trained on ``(1 - w) CE + w T^2 KL(guide || target at temperature T)``;
* ``fmse``: scratch target trained on ``CE + w sum_j ||h_j - g_j||^2`` (every stage output
  matched to the guide's, FitNets-style);
* ``oneshot``: every part of the guide replaced by a fresh target part at once, then trained for
  B steps on the conversion loss below;
* ``not`` (Network of Theseus): for k = 0..K-1, replace part k by a fresh target part and train
  the hybrid for its share of B (:func:`stage_budget`) on the conversion loss over the
  converted stages j <= k; the last share ends with ``finetune_steps`` in which the converted
  network (every part a target part) trains on the cross-entropy alone;
  ``not_mnn`` the same with the soft mutual-NN score; ``not_untrained`` towards an *untrained*
  guide (random init of the guide architecture, never trained).

The conversion loss is ``CE + mu sum_{j in M} match(h_j, g_j) + lambda sum_{j in S} (1 - S(h_j,
g_j)) + nu sum_{k in D} (q_k / p_k) match(a_k, b_k)`` (:func:`make_loss`), ``g_j`` the frozen
guide's stage outputs on the same batch; D holds the replaced parts that are maxout parts for
a conv stage (every part of the image conversion), ``a_k``
their p_k hidden units, ``b_k`` the guide stage's p_k units before its pool, q_k the part's
output size (:func:`component_pairs`). The
abstract aligns the replaced components "via representational similarity metrics"; which metric
fits depends on who reads the stage's output. M holds the stages read by a guide part (the next
stage is still the guide's, or the guide's head after the last stage): that part reads fixed
units (a convolution channel c at pixel (i, j), attention fixed residual coordinates), so only
the activations themselves will do, and they are matched (:func:`losses.output_match`). S holds
the stages read by a target part (a dense layer, a recurrence), which can absorb any rotation and
scaling of its input: there representational similarity (linear CKA, which is invariant to just
those) is the alignment, and the exact layout is left free. An untrained guide's function is a random
map, not one to preserve: its conversion (``not_untrained``) aligns every stage by similarity
alone (:func:`alignment_split`). The whole hybrid is trained (new
parts and the guide parts still in it), so later guide parts adapt to the new ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core import memory
from repro26.core.train import init_train_state, optax_step, run_loop
from repro26.theseus import losses
from repro26.theseus import model as M

TASKS: tuple[str, ...] = ("images", "text")
MODELS: tuple[str, ...] = ("guide", "linear", "scratch", "kd", "fmse", "oneshot", "not",
                           "not_mnn", "not_untrained")
NEEDS_TRAINED_GUIDE = frozenset({"kd", "fmse", "oneshot", "not", "not_mnn"})
CONVERSIONS = frozenset({"oneshot", "not", "not_mnn", "not_untrained"})


@dataclasses.dataclass(frozen=True)
class Task:
    """One conversion's data and architectures. ``x``/``y`` are inputs and labels (text: the
    window without its last / first character)."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    make_guide: Callable[[jax.Array], M.Network]
    make_target: Callable[[jax.Array], M.Network]
    make_linear: Callable[[jax.Array], M.Network]
    train_cfg: Any


def make_task(cfg, name: str, arrays: dict[str, np.ndarray]) -> Task:
    if name == "images":
        c = cfg.images
        return Task(
            name, arrays["x_train"], arrays["y_train"], arrays["x_test"], arrays["y_test"],
            lambda k: M.make_cnn(k, c.canvas, c.channels),
            lambda k: M.make_mlp(k, c.canvas, c.channels),
            lambda k: M.make_image_linear(k, c.canvas), cfg.image_train)
    t = cfg.text
    vocab = int(arrays["vocab_size"])

    def seq(mixer):
        return lambda k: M.make_sequence_model(k, vocab, t.d_model, t.n_layers, t.n_heads,
                                               t.mlp_ratio, mixer)

    return Task(name, arrays["train"][:, :-1], arrays["train"][:, 1:], arrays["test"][:, :-1],
                arrays["test"][:, 1:], seq("attention"), seq(t.rnn),
                lambda k: M.make_text_linear(k, vocab, t.ngram_context), cfg.text_train)


def init_key(seed: int, role: str) -> jax.Array:
    """Initial parameters of seed ``seed`` for ``role`` (guide / target / linear): every model of
    one seed starts from the same target init, and the untrained guide is the guide's init."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), ("guide", "target", "linear").index(role))


def stacked(make: Callable[[jax.Array], M.Network], seeds, role: str) -> M.Network:
    keys = jnp.stack([init_key(s, role) for s in seeds])
    return eqx.filter_vmap(make)(keys)


def n_parts(task: Task) -> int:
    return M.n_parts(task.make_guide(jax.random.PRNGKey(0)))


# ----------------------------------------------------------------------------- losses


def as_samples(h: jax.Array, part: str) -> jax.Array:
    """Batch of stage outputs -> rows of samples: one row per image, or per token (text)."""
    return h.reshape(-1, h.shape[-1]) if part == "mixer" else h.reshape(h.shape[0], -1)


def consumer_is_guide(j: int, replaced: tuple[int, ...], n: int) -> bool:
    """Is the part that reads stage j's output still the guide's? Stage j + 1, or the head (kept
    from the guide in every conversion) after the last stage."""
    return j == n - 1 or (j + 1) not in replaced


def alignment_split(model: str, aligned: tuple[int, ...], replaced: tuple[int, ...],
                    n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(matched, similar)``: the aligned stages pulled to the guide's activations by output
    matching, and those aligned by representational similarity. Output matching exists to hand a
    guide part the exact activations it was trained to read, i.e. to keep the guide's *function*;
    an untrained guide's function is a random map, and copying its outputs pulls the converted
    network towards that random map against the task loss. So a conversion from an untrained guide
    (``not_untrained``) aligns every stage by the representational similarity alone (the
    abstract's alignment), whoever reads it; a trained guide's conversion matches outputs where a
    guide part reads them (:func:`consumer_is_guide`) and uses similarity elsewhere."""
    if model == "not_untrained":
        return (), tuple(aligned)
    matched = tuple(j for j in aligned if consumer_is_guide(j, replaced, n))
    return matched, tuple(j for j in aligned if j not in matched)


def component_pairs(net: M.Network, guide: M.Network, x: jax.Array, h: list, g: list,
                    replaced: tuple[int, ...]) -> list[tuple[jax.Array, jax.Array, int]]:
    """``(a_k, b_k, q_k)`` for every replaced part k that is a :class:`~model.MaxoutStage`
    standing in for a :class:`~model.ConvStage` (groups of 4 for a 2x2-pooled stage, of every
    position for the globally pooled last one). ``a_k`` are the part's hidden ReLU units (before
    its group max) on the hybrid's input to part k
    (``h[k-1]``), ``b_k`` the guide stage's ReLU units before its pool on the guide's own input
    (``g[k-1]``), both ``(batch, p)`` with p = channels x positions, and ``q_k`` the part's output
    size. The two layers have equally many units, and ``relu(conv(.))`` is one weight setting of
    the part's hidden layer (a convolution is a dense matrix with tied, local entries); for the
    maxout the guide's units are taken in pooling-window order (:func:`model.window_order`), the
    order in which :func:`model.maxout_from_conv` computes the stage exactly (the term is 0
    there). Matching ``a_k`` to ``b_k`` gives that layer a target it can reach by regression,
    where the part's output alone only constrains the max of each pool."""
    pairs = []
    for k in replaced:
        new, old = M.get_part(net, k), M.get_part(guide, k)
        if isinstance(new, M.MaxoutStage) and isinstance(old, M.ConvStage):
            h_in = h[k - 1] if k else jax.vmap(net.stem)(x)
            g_in = g[k - 1] if k else jax.vmap(guide.stem)(x)
            pairs.append((jax.vmap(new.units)(h_in), jax.vmap(old.units)(g_in),
                          int(np.prod(new.out_shape))))
    return pairs


def make_loss(cfg, model: str, aligned: tuple[int, ...], replaced: tuple[int, ...] = (),
              n: int = 0):
    """``loss(net, (x, y, guide)) -> (loss, terms)`` of ``model`` on a batch; ``aligned`` are the
    stages whose outputs are pulled towards the guide's, ``replaced`` the parts that are target
    modules (of ``n``). A conversion aligns stage j by output matching
    (:func:`losses.output_match`) where the part reading its output is a guide part, and by the
    representational similarity (CKA, or the soft mutual-NN score for ``not_mnn``) where it is a
    target part (a dense layer or a recurrence, which can undo any rotation of its input);
    towards an untrained guide, by the similarity alone (:func:`alignment_split`). Towards a
    trained guide, the hidden units of a replaced maxout stage are also matched
    to the guide stage's units before its pool (:func:`component_pairs`,
    :func:`losses.component_match`, weight ``component_weight``): the abstract aligns the
    replaced *components*, and a dense layer of a conv stage's width can reproduce that stage's
    units exactly."""
    metric = "mnn" if model == "not_mnn" else "cka"
    matched, similar = alignment_split(model, aligned, replaced, n)
    # the components inside a replaced part are matched like a matched stage output: towards a
    # trained guide only (an untrained guide's units are a random map, see alignment_split)
    components = model in CONVERSIONS and model != "not_untrained"

    def loss(net, x, y, guide):
        logits = jax.vmap(net)(x)
        ce = losses.cross_entropy(logits, y)
        terms = {"ce": ce}
        if model in CONVERSIONS or model == "fmse":
            h, g = jax.vmap(net.features)(x), jax.vmap(guide.features)(x)
            pair = lambda j: (as_samples(h[j], net.part),  # noqa: E731
                              jax.lax.stop_gradient(as_samples(g[j], net.part)))
            if model == "fmse":
                terms["feature_mse"] = losses.feature_mse([pair(j) for j in aligned])
                return ce + cfg.fmse_weight * terms["feature_mse"], terms
            total = ce
            if matched:
                terms["match"] = sum(losses.output_match(*pair(j)) for j in matched)
                total = total + cfg.match_weight * terms["match"]
            if similar:
                terms["align"] = losses.alignment_loss(metric, [pair(j) for j in similar],
                                                       cfg.mnn_tau)
                total = total + cfg.align_weight * terms["align"]
            inner = component_pairs(net, guide, x, h, g, replaced) if components else []
            if inner:
                terms["component"] = sum(losses.component_match(a, jax.lax.stop_gradient(b), q)
                                         for a, b, q in inner)
                total = total + cfg.component_weight * terms["component"]
            return total, terms
        if model == "kd":
            teacher = jax.lax.stop_gradient(jax.vmap(guide)(x))
            v = logits.shape[-1]
            terms["kd"] = losses.distillation_kl(logits.reshape(-1, v), teacher.reshape(-1, v),
                                                 cfg.kd_temperature)
            return (1 - cfg.kd_weight) * ce + cfg.kd_weight * terms["kd"], terms
        return ce, terms

    return loss


# ----------------------------------------------------------------------------- the loop


def random_shift(x: jax.Array, key: jax.Array, s: int) -> jax.Array:
    """Each image of the batch ``(n, h, w)`` translated by its own uniform offset in
    ``[-s, s]^2`` pixels, with zeros (the background) shifted in: the digits already sit at
    random offsets, so a translated image is another draw of the same kind, labelled the same.
    Every image model trains on these batches (same law for every model: equal data)."""
    n, h, w = x.shape
    pad = jnp.pad(x, ((0, 0), (s, s), (s, s)))
    off = jax.random.randint(key, (n, 2), 0, 2 * s + 1)
    return jax.vmap(lambda im, o: jax.lax.dynamic_slice(im, (o[0], o[1]), (h, w)))(pad, off)


def optimizer(tc, steps: int) -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(0.0, tc.lr, max(tc.warmup, 1),
                                                  max(steps, tc.warmup + 1), tc.lr * 0.1)
    return optax.chain(optax.clip_by_global_norm(tc.grad_clip),
                       optax.adamw(schedule, weight_decay=tc.weight_decay))


def fit(net: M.Network, guide: M.Network | None, task: Task, loss_fn, seeds, steps: int,
        run_key: int, ckpt: Path | None, desc: str, progress: bool):
    """Train the stacked ``net`` (one copy per seed) for ``steps`` on random minibatches."""
    tc = task.train_cfg
    opt = optimizer(tc, steps)
    seed_ids = jnp.asarray(seeds)

    shift = getattr(tc, "shift", 0)

    def batch_loss(net, data, key):
        x, y, g = data
        k_idx, k_shift = jax.random.split(key)
        idx = jax.random.randint(k_idx, (tc.batch_size,), 0, x.shape[0])
        xb = random_shift(x[idx], k_shift, shift) if shift else x[idx]
        return loss_fn(net, xb, y[idx], g)

    one_step = optax_step(batch_loss, opt)

    def step(state, data, key):
        keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seed_ids)
        by_seed = eqx.if_array(0)
        return eqx.filter_vmap(one_step, in_axes=(by_seed, (None, None, by_seed), 0))(state, data, keys)

    state = eqx.filter_vmap(lambda m: init_train_state(m, opt))(net)
    data = (jnp.asarray(task.x_train), jnp.asarray(task.y_train), guide)
    state, history = run_loop(step, state, data, key=jax.random.PRNGKey(run_key),
                              num_steps=steps, chunk_size=tc.chunk_size, checkpoint_path=ckpt,
                              checkpoint_every=tc.checkpoint_every, desc=desc, progress=progress)
    return state.model, history


# ----------------------------------------------------------------------------- evaluation


EVAL_BATCH = 256  # test inputs through a network at once: evaluation memory ∝ it, not the test set


def _eval_one(net: M.Network, x, y):
    logits = jax.lax.map(net, x, batch_size=min(x.shape[0], EVAL_BATCH))
    nll = losses.cross_entropy(logits, y)
    acc = jnp.mean(jnp.argmax(logits, -1) == y)
    return nll, acc


@eqx.filter_jit
def _eval_stacked(net, x, y):
    return eqx.filter_vmap(_eval_one, in_axes=(eqx.if_array(0), None, None))(net, x, y)


def evaluate(net: M.Network, task: Task, split: str = "test") -> dict[str, np.ndarray]:
    """Per-seed metrics: ``nll`` (nats per label), ``accuracy`` and, for text, perplexity
    ``exp(nll)`` per character, on the test set or (``split="train"``) on the first as many
    training inputs, unshifted; inputs go through in batches of ``EVAL_BATCH``."""
    if split == "test":
        x, y = task.x_test, task.y_test
    else:
        x, y = task.x_train[: len(task.x_test)], task.y_train[: len(task.x_test)]
    nll, acc = _eval_stacked(net, jnp.asarray(x), jnp.asarray(y))
    out = {"nll": np.asarray(nll), "accuracy": np.asarray(acc)}
    out["perplexity"] = np.exp(out["nll"])
    return out


def _stage_features(net, guide, x):
    """Every stage output of each seed's ``net`` and ``guide`` on ``x``."""
    def one(n, g):
        return jax.vmap(n.features)(x), jax.vmap(g.features)(x)

    return eqx.filter_vmap(one)(net, guide)


@eqx.filter_jit
def _layer_cka(net, guide, x):
    cka = jax.vmap(lambda a, b: losses.linear_cka(as_samples(a, net.part), as_samples(b, net.part)))
    return jnp.stack([cka(a, b) for a, b in zip(*_stage_features(net, guide, x))], axis=1)


def layer_cka(net: M.Network, guide: M.Network, task: Task, n: int) -> np.ndarray:
    """``(seeds, K)``: linear CKA between each stage output of ``net`` and of ``guide`` on the
    first ``n`` test inputs (all n at once: CKA compares whole Gram matrices), after a check that
    the stage outputs of both networks fit in memory (twice: features and centred copies)."""
    x = jnp.asarray(task.x_test[:n])
    memory.require(2 * memory.traced_bytes(_stage_features, net, guide, x),
                   f"the CKA of {task.name} models on cka_samples={n} test inputs")
    return np.asarray(_layer_cka(net, guide, x))


# ----------------------------------------------------------------------------- one job


def train_model(cfg, task: Task, model: str, guide: M.Network | None, out: Path,
                progress: bool) -> tuple[M.Network, list[dict]]:
    """Train ``model`` for every seed; returns the stacked final network and the rows of the
    "ship" curve (test and train metrics after every stage; one stage for non-conversions)."""
    seeds, tc = cfg.seeds, task.train_cfg
    K = n_parts(task)
    budget = K * tc.stage_steps
    ckpt = lambda tag: out.with_name(f"{out.stem}.{tag}.ckpt")  # noqa: E731
    rows: list[dict] = []

    def record(net, stage, steps, parts):
        metrics = evaluate(net, task)
        # the same metrics on training inputs: tells a stage that does not fit its training data
        # from one that fits it and does not generalise
        metrics.update({f"train_{k}": v for k, v in evaluate(net, task, "train").items()})
        cka = (layer_cka(net, guide, task, cfg.cka_samples) if guide is not None and parts
               else None)
        for i, seed in enumerate(seeds):
            row = {"task": task.name, "model": model, "seed": seed, "stage": stage,
                   "parts_replaced": parts, "steps": steps,
                   **{k: float(v[i]) for k, v in metrics.items()}}
            if cka is not None:
                row.update({f"cka_{j}": float(cka[i, j]) for j in range(cka.shape[1])})
            rows.append(row)

    if model == "guide":
        net, _ = fit(stacked(task.make_guide, seeds, "guide"), None, task,
                     make_loss(cfg, model, ()), seeds, tc.guide_steps, 1, ckpt("train"),
                     f"{task.name}:guide", progress)
        record(net, 0, tc.guide_steps, 0)
        return net, rows
    if model == "not_untrained":
        guide = stacked(task.make_guide, seeds, "guide")
    target = stacked(task.make_target, seeds, "target")
    if model == "linear":
        net, _ = fit(stacked(task.make_linear, seeds, "linear"), None, task,
                     make_loss(cfg, model, ()), seeds, budget, 2, ckpt("train"),
                     f"{task.name}:linear", progress)
        record(net, 0, budget, 0)
        return net, rows
    if model in ("scratch", "kd", "fmse"):
        net, _ = fit(target, guide, task, make_loss(cfg, model, tuple(range(K))), seeds, budget,
                     3, ckpt("train"), f"{task.name}:{model}", progress)
        record(net, 0, budget, 0)
        return net, rows
    if model == "oneshot":
        hybrid = M.swap_all(guide, range(K), target)
        every = tuple(range(K))
        net, _ = fit(hybrid, guide, task, make_loss(cfg, model, every, every, K), seeds, budget,
                     4, ckpt("train"), f"{task.name}:oneshot", progress)
        record(net, K, budget, K)
        return net, rows
    # Network of Theseus: one part per stage, in order, each with its fixed share of the budget.
    net = guide
    record(net, 0, 0, 0)
    done = 0
    for (k, aligned), steps in zip(stage_schedule(K), stage_budget(tc, K), strict=True):
        net = M.swap(net, k, target)
        # the last stage's share ends with the fine-tune: the converted network on the CE alone
        tune = tc.finetune_steps if k == K - 1 else 0
        net, _ = fit(net, guide, task, make_loss(cfg, model, aligned, aligned, K), seeds,
                     steps - tune, 10 + k, ckpt(f"stage{k}"),
                     f"{task.name}:{model} stage {k + 1}/{K}", progress)
        if tune:
            net, _ = fit(net, None, task, make_loss(cfg, "scratch", ()), seeds, tune, 20,
                         ckpt("finetune"), f"{task.name}:{model} fine-tune", progress)
        done += steps
        record(net, k + 1, done, k + 1)
    return net, rows


def stage_budget(tc, n: int) -> list[int]:
    """Steps of each of the ``n`` conversion stages: the budget ``n x stage_steps`` (the same as
    every other target's) split in the fixed proportions 1 : ... : 1 : ``last_stage_weight``.
    The split is set in the config before any run, not fitted: the last part (images: the
    globally pooled CNN stage) removes the guide's last inductive bias, so the MLP replacing it
    must learn the translation invariance the global pooling gave for free; at an equal share it
    underfitted its training data (train accuracy 80%, after 85% with the stage before)."""
    weights = (1,) * (n - 1) + (getattr(tc, "last_stage_weight", 1),)
    budget = n * tc.stage_steps
    steps = [budget * w // sum(weights) for w in weights]
    if sum(steps) != budget:
        raise ValueError(f"last_stage_weight: the budget {budget} does not split exactly")
    return steps


def stage_schedule(n: int) -> list[tuple[int, tuple[int, ...]]]:
    """Stage k replaces part k and aligns the outputs of stages 0..k (already converted)."""
    return [(k, tuple(range(k + 1))) for k in range(n)]


def remove_checkpoints(out: Path) -> None:
    """Drop a finished job's resume checkpoints (its final network is ``out``)."""
    for path in out.parent.glob(f"{out.stem}.*.ckpt*"):
        path.unlink()


def skeleton(task: Task, model: str, seeds) -> M.Network:
    """The stacked network a job of ``model`` writes (for loading its checkpoint)."""
    K = n_parts(task)
    if model in ("guide",):
        return stacked(task.make_guide, seeds, "guide")
    if model == "linear":
        return stacked(task.make_linear, seeds, "linear")
    target = stacked(task.make_target, seeds, "target")
    if model in CONVERSIONS:
        return M.swap_all(stacked(task.make_guide, seeds, "guide"), range(K), target)
    return target
