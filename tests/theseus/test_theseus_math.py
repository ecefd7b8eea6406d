"""Representational similarity, losses and the network surgery against closed forms,
invariances and brute-force references."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import softmax as sp_softmax
from scipy.stats import ortho_group

from repro26.theseus import data, losses, train
from repro26.theseus import model as M


def cka_reference(x, y):
    """tr(KHLH) / sqrt(tr(KHKH) tr(LHLH)) with the centring matrix H written out."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    n = x.shape[0]
    h = np.eye(n) - 1.0 / n
    k, l_ = h @ x @ x.T @ h, h @ y @ y.T @ h
    return np.trace(k @ l_) / np.sqrt(np.trace(k @ k) * np.trace(l_ @ l_))


RNG = np.random.default_rng(0)
X = RNG.normal(size=(24, 6)).astype(np.float32)
Y = (X @ RNG.normal(size=(6, 9)) + 0.5 * RNG.normal(size=(24, 9))).astype(np.float32)


@pytest.mark.parametrize("shape", [(24, 6), (8, 40)])  # feature form and Gram form
def test_cka_matches_the_centred_gram_formula_in_both_forms(shape):
    x = RNG.normal(size=shape).astype(np.float32)
    y = (x @ RNG.normal(size=(shape[1], shape[1] + 3)) + RNG.normal(size=(shape[0], shape[1] + 3))).astype(np.float32)
    assert float(losses.linear_cka(x, y)) == pytest.approx(cka_reference(x, y), rel=1e-4)


def test_cka_is_one_for_identical_and_invariant_to_rotation_scale_and_shift():
    q = ortho_group.rvs(9, random_state=1).astype(np.float32)
    assert float(losses.linear_cka(X, X)) == pytest.approx(1.0, abs=1e-5)
    base = float(losses.linear_cka(X, Y))
    assert 0.0 < base < 1.0
    assert float(losses.linear_cka(X, 3.7 * Y @ q + 2.0)) == pytest.approx(base, abs=1e-5)
    assert float(losses.linear_cka(-0.2 * X, Y)) == pytest.approx(base, abs=1e-5)


def test_soft_mnn_is_one_for_identical_and_invariant_to_rotation_and_scale():
    q = ortho_group.rvs(6, random_state=2).astype(np.float32)
    assert float(losses.soft_mutual_nn(X, X)) == pytest.approx(1.0, abs=1e-5)
    base = float(losses.soft_mutual_nn(X, Y))
    assert 0.0 < base < 1.0
    assert float(losses.soft_mutual_nn(4.0 * X @ q, Y)) == pytest.approx(base, abs=1e-5)


def test_soft_mnn_tends_to_the_mutual_nearest_neighbour_fraction():
    """tau -> 0: the fraction of points whose nearest (cosine) neighbour agrees, by brute force."""
    def nearest(z):
        z = z / np.linalg.norm(z, axis=1, keepdims=True)
        s = z @ z.T
        np.fill_diagonal(s, -np.inf)
        return s.argmax(1)

    brute = np.mean(nearest(X) == nearest(Y))
    assert float(losses.soft_mutual_nn(X, Y, tau=1e-4)) == pytest.approx(brute, abs=1e-3)


def test_cka_and_mnn_gradients_match_finite_differences():
    from jax.test_util import check_grads

    y = jnp.asarray(Y)
    check_grads(lambda x: losses.linear_cka(x, y), (jnp.asarray(X),), order=1, modes=["rev"],
                atol=2e-2, rtol=2e-2, eps=1e-2)
    check_grads(lambda x: losses.soft_mutual_nn(x, y, 0.5), (jnp.asarray(X),), order=1,
                modes=["rev"], atol=2e-2, rtol=2e-2, eps=1e-2)


def test_distillation_gradient_is_the_softened_probability_difference():
    """d/ds T^2 KL(softmax(t/T) || softmax(s/T)) = T (softmax(s/T) - softmax(t/T)) / n."""
    s, t, temp = RNG.normal(size=(5, 7)), RNG.normal(size=(5, 7)), 2.5
    grad = jax.grad(losses.distillation_kl)(jnp.asarray(s, jnp.float32), jnp.asarray(t, jnp.float32), temp)
    expected = temp * (sp_softmax(s / temp, 1) - sp_softmax(t / temp, 1)) / 5
    np.testing.assert_allclose(np.asarray(grad), expected, atol=1e-5)
    assert float(losses.distillation_kl(jnp.asarray(t), jnp.asarray(t), temp)) == pytest.approx(0.0, abs=1e-6)


def test_cross_entropy_matches_numpy():
    logits, labels = RNG.normal(size=(6, 4)), np.array([0, 3, 1, 1, 2, 0])
    expected = -np.mean(np.log(sp_softmax(logits, 1)[np.arange(6), labels]))
    assert float(losses.cross_entropy(jnp.asarray(logits), jnp.asarray(labels))) == pytest.approx(expected, rel=1e-5)


# ----------------------------------------------------------------------------- networks

KEY = jax.random.PRNGKey(0)
CANVAS, CHANNELS = 12, (2, 3, 4)


def _image_pair():
    return M.make_cnn(KEY, CANVAS, CHANNELS), M.make_mlp(jax.random.PRNGKey(1), CANVAS, CHANNELS)


def _text_pair(rnn="gru"):
    make = lambda k, mixer: M.make_sequence_model(k, 7, 8, 2, 2, 2, mixer)  # noqa: E731
    return make(KEY, "attention"), make(jax.random.PRNGKey(1), rnn)


def test_mlp_stages_have_the_cnn_stage_shapes():
    cnn, mlp = _image_pair()
    x = jnp.ones((CANVAS, CANVAS))
    shapes = [h.shape for h in cnn.features(x)]
    assert shapes == [h.shape for h in mlp.features(x)] == M.image_shapes(CANVAS, CHANNELS)


@pytest.mark.parametrize("pair", [_image_pair, _text_pair])
def test_replacing_a_part_by_an_exact_copy_leaves_outputs_unchanged(pair):
    guide, target = pair()
    x = (jax.random.uniform(KEY, (CANVAS, CANVAS)) if guide.part == "stage"
         else jax.random.randint(KEY, (5,), 0, 7))
    copy = jax.tree_util.tree_map(lambda a: a, guide)
    for k in range(M.n_parts(guide)):
        np.testing.assert_array_equal(M.swap(guide, k, copy)(x), guide(x))
        assert not np.allclose(M.swap(guide, k, target)(x), guide(x))


@pytest.mark.parametrize("pair", [_image_pair, _text_pair])
def test_the_stage_schedule_visits_every_part_once_and_ends_in_the_target(pair):
    guide, target = pair()
    schedule = train.stage_schedule(M.n_parts(guide))
    assert [k for k, _ in schedule] == list(range(M.n_parts(guide)))
    assert all(aligned == tuple(range(k + 1)) for k, aligned in schedule)
    net = guide
    for k, _ in schedule:
        before = [type(M.get_part(net, j)) for j in range(M.n_parts(net))]
        net = M.swap(net, k, target)
        after = [type(M.get_part(net, j)) for j in range(M.n_parts(net))]
        assert [j for j in range(len(after)) if after[j] != before[j]] == [k]
    for k in range(M.n_parts(net)):
        assert eqx.tree_equal(M.get_part(net, k), M.get_part(target, k))


def test_the_conversion_budget_is_split_in_fixed_proportions_and_adds_up():
    """Every target gets K x stage_steps steps; a conversion splits them 1 : ... : 1 : w."""
    from types import SimpleNamespace

    tc = SimpleNamespace(stage_steps=600, last_stage_weight=2)
    assert train.stage_budget(tc, 3) == [450, 450, 900]
    assert train.stage_budget(SimpleNamespace(stage_steps=400), 2) == [400, 400]
    with pytest.raises(ValueError, match="split exactly"):
        train.stage_budget(SimpleNamespace(stage_steps=1, last_stage_weight=2), 3)


@pytest.mark.parametrize("mixer", ["attention", "gru", "linear"])
def test_token_mixers_are_causal(mixer):
    net = M.make_sequence_model(KEY, 7, 8, 2, 2, 2, mixer)
    x = jnp.array([1, 2, 3, 4, 5, 6])
    changed = x.at[4].set(0)
    np.testing.assert_allclose(net(x)[:4], net(changed)[:4], atol=1e-6)
    assert not np.allclose(net(x)[4:], net(changed)[4:])


def test_linear_rnn_scan_matches_the_sequential_recurrence():
    mixer = M.LinearRNNMixer(5, key=KEY)
    x = jax.random.normal(KEY, (9, 5))
    a = jax.nn.sigmoid(mixer.nu)
    h, hs = np.zeros(5), []
    for t in range(9):
        h = a * h + (1 - a) * mixer.inp(x[t])
        hs.append(mixer.out(h))
    np.testing.assert_allclose(mixer(x), np.stack(hs), atol=1e-5)


def test_rotary_keeps_norms_and_makes_scores_depend_on_offsets_only():
    q = jax.random.normal(KEY, (1, 1, 8))
    k = jax.random.normal(jax.random.PRNGKey(3), (1, 1, 8))
    tile = lambda v, t: jnp.tile(v, (t, 1, 1))  # noqa: E731
    rq, rk = M.rotary(tile(q, 6)), M.rotary(tile(k, 6))
    np.testing.assert_allclose(jnp.linalg.norm(rq, axis=-1), jnp.linalg.norm(tile(q, 6), axis=-1), rtol=1e-5)
    s = jnp.einsum("thd,shd->ts", rq, rk)
    np.testing.assert_allclose(s[3, 1], s[4, 2], rtol=1e-4)


def test_ngram_linear_matches_a_loop():
    net = M.make_text_linear(KEY, 5, 3)
    x = np.array([4, 0, 2, 2, 1])
    w, b = np.asarray(net.head.weight), np.asarray(net.head.bias)
    expected = [b + sum(w[i][x[t - i]] for i in range(3) if t - i >= 0) for t in range(5)]
    np.testing.assert_allclose(net(jnp.asarray(x)), np.stack(expected), atol=1e-6)


def test_glyph_images_are_valid_and_reproducible():
    bank = data.glyph_bank(8)
    assert bank.shape == (len(data.FONT_FILES), 10, 8, 8) and 0 <= bank.min() and bank.max() <= 1
    assert (bank.reshape(len(data.FONT_FILES), 10, -1).max(-1) > 0.5).all()  # every glyph has ink
    x1, y1 = data.make_images(KEY, bank, 6, 16, 2, 3, 0.05)
    x2, y2 = data.make_images(KEY, bank, 6, 16, 2, 3, 0.05)
    np.testing.assert_array_equal(x1, x2)
    assert x1.shape == (6, 16, 16) and set(np.asarray(y1)) <= set(range(10))
    assert float(x1.min()) >= 0 and float(x1.max()) <= 1


def test_im2col_convolution_matches_lax_conv():
    stage = M.ConvStage(3, 5, False, key=KEY)
    x = jax.random.normal(KEY, (3, 7, 9))
    ref = jax.lax.conv_general_dilated(x[None], stage.weight, (1, 1), ((1, 1), (1, 1)))[0]
    np.testing.assert_allclose(stage.conv(x), ref + stage.bias[:, None, None], atol=1e-5)
    pooled = stage(x)
    assert pooled.shape == (5, 3, 4)
    np.testing.assert_allclose(pooled[:, 1, 2], jax.nn.relu(stage.conv(x))[:, 2:4, 4:6].max(axis=(1, 2)))


def test_every_parameter_of_every_network_learns():
    """Guide CNN, target MLP, linear image model, guide transformer, GRU / linear-RNN targets and
    the c-gram linear model: each trainable leaf gets gradient from the cross-entropy; a hybrid
    trained with the CKA alignment too (the frozen guide is not part of the trained model)."""
    from repro26.core.learning import assert_every_parameter_learns

    cnn, mlp = _image_pair()
    x = jax.random.uniform(KEY, (6, CANVAS, CANVAS))
    y = jnp.arange(6) % 3
    images = [(x, y)] * 3

    def ce(net, b):
        return losses.cross_entropy(jax.vmap(net)(b[0]), b[1])

    for net in (cnn, mlp, M.make_image_linear(KEY, CANVAS)):
        assert_every_parameter_learns(net, ce, images)
    hybrid = M.swap(cnn, 0, mlp)

    def aligned(net, b):
        h, g = jax.vmap(net.features)(b[0])[0], jax.vmap(cnn.features)(b[0])[0]
        pairs = [(h.reshape(h.shape[0], -1), jax.lax.stop_gradient(g.reshape(g.shape[0], -1)))]
        return ce(net, b) + losses.alignment_loss("cka", pairs, 0.1)

    assert_every_parameter_learns(hybrid, aligned, images)
    # the converted network on the last stage's loss (the component term included)
    from types import SimpleNamespace

    cfg = SimpleNamespace(match_weight=1.0, align_weight=1.0, mnn_tau=0.1, component_weight=1.0)
    every = tuple(range(len(CHANNELS)))
    last = train.make_loss(cfg, "not", every, every, len(CHANNELS))
    converted = M.swap_all(cnn, every, mlp)
    assert_every_parameter_learns(converted, lambda net, b: last(net, *b, cnn)[0], images)
    tokens = jax.random.randint(KEY, (4, 6), 0, 7)
    text = [(tokens[:, :-1], tokens[:, 1:])] * 3
    guide, gru = _text_pair("gru")
    for net in (guide, gru, _text_pair("linear")[1], M.make_text_linear(KEY, 7, 3)):
        assert_every_parameter_learns(net, ce, text)


def test_batched_evaluation_and_cka_match_one_pass_per_seed(monkeypatch):
    """The test set goes through the networks in batches of EVAL_BATCH (300 inputs: one full
    batch and a remainder): NLL and accuracy equal one vmap over all inputs per seed; layer CKA
    equals linear CKA of each seed's stage outputs; a CKA too big for memory is one line."""
    from types import SimpleNamespace

    from repro26.core import memory
    from repro26.core.config import UsageError

    assert train.EVAL_BATCH < 300
    make = lambda k: M.make_cnn(k, CANVAS, CHANNELS)  # noqa: E731
    net = train.stacked(make, [0, 1], "target")
    guide = train.stacked(make, [0, 1], "guide")
    x = jax.random.uniform(KEY, (300, CANVAS, CANVAS))
    y = jnp.arange(300) % 3
    task = SimpleNamespace(name="images", x_test=np.asarray(x), y_test=np.asarray(y))
    got = train.evaluate(net, task)
    cka = train.layer_cka(net, guide, task, 40)
    for i in range(2):
        one = jax.tree_util.tree_map(lambda a: a[i] if eqx.is_array(a) else a, net)
        ref = jax.tree_util.tree_map(lambda a: a[i] if eqx.is_array(a) else a, guide)
        logits = jax.vmap(one)(x)
        np.testing.assert_allclose(got["nll"][i], losses.cross_entropy(logits, y), rtol=1e-5)
        np.testing.assert_allclose(got["accuracy"][i], np.mean(np.argmax(logits, -1) == y))
        for k, (a, b) in enumerate(zip(jax.vmap(one.features)(x[:40]),
                                       jax.vmap(ref.features)(x[:40]))):
            np.testing.assert_allclose(cka[i, k], losses.linear_cka(a.reshape(40, -1),
                                                                    b.reshape(40, -1)), rtol=1e-4)
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**10)
    with pytest.raises(UsageError, match="CKA of images models on cka_samples=40"):
        train.layer_cka(net, guide, task, 40)


# ----------------------------------------------------------------------------- conversion parts


@pytest.mark.parametrize(("in_shape", "global_pool"), [((2, 6, 6), False), ((3, 5, 7), False),
                                                       ((3, 3, 3), True)])
def test_the_maxout_stage_can_compute_the_conv_stage_exactly(in_shape, global_pool):
    """The replacement part has the capacity of the part it replaces: conv -> ReLU -> max-pool
    is one weight setting of the MLP (maxout) stage, with the hidden size make_mlp gives it."""
    conv = M.ConvStage(in_shape[0], 4, global_pool, key=KEY)
    dense = M.maxout_from_conv(conv, in_shape)
    x = jax.random.normal(jax.random.PRNGKey(5), (6, *in_shape))
    np.testing.assert_allclose(jax.vmap(dense)(x), jax.vmap(conv)(x), atol=1e-5)
    # unit by unit: the conv's units before the pool, in the order the component term takes
    # them (pooling windows for a 2x2 pool), are the built maxout's hidden units
    np.testing.assert_allclose(jax.vmap(dense.units)(x), jax.vmap(conv.units)(x), atol=1e-5)
    cnn, mlp = _image_pair()
    for j, (c, m) in enumerate(zip(cnn.stages, mlp.stages, strict=True)):
        side = CANVAS >> j  # the last one: a maxout over every position of each channel
        built = M.maxout_from_conv(c, (c.weight.shape[1], side, side))
        assert built.linear.weight.shape == m.linear.weight.shape and built.pool == m.pool
        assert built.out_shape == m.out_shape


def test_random_shift_translates_each_image_with_zeros_shifted_in():
    x = jnp.arange(2 * 5 * 6, dtype=jnp.float32).reshape(2, 5, 6) + 1.0
    s = 2
    out = train.random_shift(x, jax.random.PRNGKey(3), s)
    assert out.shape == x.shape
    pad = np.pad(np.asarray(x), ((0, 0), (s, s), (s, s)))
    for i in range(2):
        hits = [(a, b) for a in range(2 * s + 1) for b in range(2 * s + 1)
                if np.array_equal(pad[i, a:a + 5, b:b + 6], np.asarray(out[i]))]
        assert len(hits) == 1
    offsets = jax.vmap(lambda k: train.random_shift(x[:1], k, s))(jax.random.split(KEY, 64))
    assert len({np.asarray(o).tobytes() for o in offsets}) > 10  # many different offsets


def test_output_match_closed_forms_and_no_rotation_invariance():
    """0 for h = g; p (the number of units) for the best constant; a rotation of the centred g,
    which CKA cannot see (CKA = 1), is penalised."""
    g = jnp.asarray(RNG.normal(size=(50, 6)).astype(np.float32)) + 3.0
    assert float(losses.output_match(g, g)) == pytest.approx(0.0, abs=1e-6)
    const = jnp.broadcast_to(g.mean(0), g.shape)
    assert float(losses.output_match(const, g)) == pytest.approx(6.0, rel=1e-5)
    q = jnp.asarray(ortho_group.rvs(6, random_state=3).astype(np.float32))
    rotated = (g - g.mean(0)) @ q + g.mean(0)
    assert float(losses.linear_cka(rotated, (g - g.mean(0)) @ q)) == pytest.approx(1.0, abs=1e-5)
    assert float(losses.output_match(rotated, g)) > 1.0


def test_component_match_closed_forms_and_the_last_parts_hidden_units():
    """component_match = (q / p) output_match: 0 for h = g, q for the best constant. In the
    conversion loss, the maxout replacing the globally pooled conv stage has its hidden units
    matched to the conv's units before the pool: 0 when it is built from the conv, the closed
    form for a fresh one; no such term towards an untrained guide."""
    from types import SimpleNamespace

    g = jnp.asarray(RNG.normal(size=(40, 12)).astype(np.float32)) + 1.0
    const = jnp.broadcast_to(g.mean(0), g.shape)
    assert float(losses.component_match(g, g, 3)) == pytest.approx(0.0, abs=1e-6)
    assert float(losses.component_match(const, g, 3)) == pytest.approx(3.0, rel=1e-5)
    h = g + jnp.asarray(RNG.normal(size=g.shape).astype(np.float32))
    assert float(losses.component_match(h, g, 3)) == pytest.approx(
        0.25 * float(losses.output_match(h, g)), rel=1e-6)

    cfg = SimpleNamespace(match_weight=1.0, align_weight=0.5, mnn_tau=0.1, component_weight=0.3)
    cnn, mlp = _image_pair()
    conv, last = cnn.stages[-1], mlp.stages[-1]
    side = CANVAS >> (len(CHANNELS) - 1)
    exact = M.maxout_from_conv(conv, (CHANNELS[-2], side, side))
    x, y = jax.random.uniform(KEY, (6, CANVAS, CANVAS)), jnp.arange(6) % 3
    g_in = jax.vmap(cnn.features)(x)[-2]
    np.testing.assert_allclose(jax.vmap(exact.units)(g_in), jax.vmap(conv.units)(g_in), atol=1e-5)
    last_only = (len(CHANNELS) - 1,)
    loss = train.make_loss(cfg, "not", last_only, last_only, len(CHANNELS))
    _, terms = loss(eqx.tree_at(lambda n: n.stages[-1], cnn, exact), x, y, cnn)
    assert set(terms) == {"ce", "match", "component"}
    assert float(terms["component"]) == pytest.approx(0.0, abs=1e-4)
    hybrid = M.swap(cnn, len(CHANNELS) - 1, mlp)
    total, terms = loss(hybrid, x, y, cnn)
    expected = losses.component_match(jax.vmap(last.units)(g_in), jax.vmap(conv.units)(g_in),
                                      CHANNELS[-1])
    assert float(terms["component"]) == pytest.approx(float(expected), rel=1e-5)
    assert float(total) == pytest.approx(
        float(terms["ce"] + terms["match"] + 0.3 * terms["component"]), rel=1e-5)
    _, terms = train.make_loss(cfg, "not_untrained", last_only, last_only, 3)(hybrid, x, y, cnn)
    assert "component" not in terms

    # every part: 0 for every part built from the guide's stages (maxout_from_conv), the closed
    # form for a fresh first part (q = its output size)
    every = tuple(range(len(CHANNELS)))
    loss = train.make_loss(cfg, "not", every, every, len(CHANNELS))
    built = tuple(M.maxout_from_conv(c, (c.weight.shape[1], CANVAS >> j, CANVAS >> j))
                  for j, c in enumerate(cnn.stages[:-1]))
    _, terms = loss(eqx.tree_at(lambda n: n.stages, cnn, (*built, exact)), x, y, cnn)
    assert float(terms["component"]) == pytest.approx(0.0, abs=1e-4)
    loss0 = train.make_loss(cfg, "not", (0,), (0,), len(CHANNELS))
    _, terms = loss0(M.swap(cnn, 0, mlp), x, y, cnn)
    stem = jax.vmap(cnn.stem)(x)
    expected = losses.component_match(jax.vmap(mlp.stages[0].units)(stem),
                                      jax.vmap(cnn.stages[0].units)(stem),
                                      CHANNELS[0] * (CANVAS // 2) ** 2)
    assert float(terms["component"]) == pytest.approx(float(expected), rel=1e-5)


def test_matching_is_used_where_a_guide_part_reads_the_stage():
    """Stage j is matched when part j + 1 (or the head, after the last stage) is the guide's."""
    assert [train.consumer_is_guide(j, (0,), 3) for j in range(3)] == [True, True, True]
    assert [train.consumer_is_guide(j, (0, 1), 3) for j in (0, 1)] == [False, True]
    assert [train.consumer_is_guide(j, (0, 1, 2), 3) for j in range(3)] == [False, False, True]


def test_an_untrained_guide_is_aligned_by_similarity_alone():
    """Towards a trained guide, stage j is output-matched where a guide part reads it and
    CKA-aligned elsewhere; towards an untrained guide (a random function, nothing to preserve)
    every aligned stage is CKA-aligned, and the loss has no output-matching term: its value is
    CE + lambda sum (1 - CKA), computed here by hand."""
    from types import SimpleNamespace

    assert train.alignment_split("not", (0, 1), (0, 1), 3) == ((1,), (0,))
    assert train.alignment_split("not_mnn", (0,), (0,), 3) == ((0,), ())
    for aligned in ((0,), (0, 1), (0, 1, 2)):
        assert train.alignment_split("not_untrained", aligned, aligned, 3) == ((), aligned)
    cfg = SimpleNamespace(match_weight=1.0, align_weight=0.5, mnn_tau=0.1, component_weight=0.3)
    cnn, mlp = _image_pair()
    hybrid = M.swap(cnn, 0, mlp)
    x, y = jax.random.uniform(KEY, (6, CANVAS, CANVAS)), jnp.arange(6) % 3
    _, trained = train.make_loss(cfg, "not", (0,), (0,), 3)(hybrid, x, y, cnn)
    total, untrained = train.make_loss(cfg, "not_untrained", (0,), (0,), 3)(hybrid, x, y, cnn)
    assert set(trained) == {"ce", "match", "component"} and set(untrained) == {"ce", "align"}
    h, g = jax.vmap(hybrid.features)(x)[0], jax.vmap(cnn.features)(x)[0]
    cka = losses.linear_cka(h.reshape(6, -1), g.reshape(6, -1))
    ce = losses.cross_entropy(jax.vmap(hybrid)(x), y)
    assert float(total) == pytest.approx(float(ce + 0.5 * (1 - cka)), rel=1e-5)


def test_kd_fmse_and_mnn_conversion_losses_are_their_closed_forms():
    """The distillation, FitNets and mutual-NN conversion losses, written out by hand (these
    models share their training path with scratch / NoT, which the smoke run covers)."""
    from types import SimpleNamespace

    cfg = SimpleNamespace(match_weight=1.0, align_weight=0.5, mnn_tau=0.1, kd_temperature=2.0,
                          kd_weight=0.25, fmse_weight=0.1, component_weight=0.2)
    cnn, mlp = _image_pair()
    x, y = jax.random.uniform(KEY, (6, CANVAS, CANVAS)), jnp.arange(6) % 3
    ce = lambda net: losses.cross_entropy(jax.vmap(net)(x), y)  # noqa: E731
    rows = lambda hs: [h.reshape(6, -1) for h in hs]  # noqa: E731
    total, terms = train.make_loss(cfg, "kd", ())(mlp, x, y, cnn)
    kd = losses.distillation_kl(jax.vmap(mlp)(x), jax.vmap(cnn)(x), 2.0)
    assert set(terms) == {"ce", "kd"}
    assert float(total) == pytest.approx(float(0.75 * ce(mlp) + 0.25 * kd), rel=1e-5)
    total, terms = train.make_loss(cfg, "fmse", (0, 1, 2))(mlp, x, y, cnn)
    pairs = list(zip(rows(jax.vmap(mlp.features)(x)), rows(jax.vmap(cnn.features)(x))))
    fm = sum(np.mean(np.sum((np.asarray(h) - np.asarray(g)) ** 2, 1)) for h, g in pairs)
    assert set(terms) == {"ce", "feature_mse"}
    assert float(total) == pytest.approx(float(ce(mlp) + 0.1 * fm), rel=1e-5)
    hybrid = M.swap_all(cnn, (0, 1), mlp)  # stage 0 is read by a target part: similarity
    total, terms = train.make_loss(cfg, "not_mnn", (0,), (0, 1), 3)(hybrid, x, y, cnn)
    hs, gs = jax.vmap(hybrid.features)(x), jax.vmap(cnn.features)(x)
    h, g = rows(hs)[0], rows(gs)[0]
    assert set(terms) == {"ce", "align", "component"}
    stem = jax.vmap(cnn.stem)(x)
    component = sum(losses.component_match(jax.vmap(mlp.stages[k].units)(hi),
                                           jax.vmap(cnn.stages[k].units)(gi), q)
                    for k, hi, gi, q in ((0, stem, stem, gs[0][0].size),
                                         (1, hs[0], gs[0], gs[1][0].size)))
    expected = ce(hybrid) + 0.5 * (1 - losses.soft_mutual_nn(h, g, 0.1)) + 0.2 * component
    assert float(total) == pytest.approx(float(expected), rel=1e-5)


def test_one_replacement_of_a_trained_guide_keeps_its_accuracy():
    """A tiny CNN trained on glyph digits; its first stage replaced by a fresh MLP stage and the
    hybrid trained on CE + output matching: test accuracy stays within a few points."""
    from types import SimpleNamespace

    from repro26.theseus.claims import FEW_POINTS

    bank = data.glyph_bank(8)
    x, y = data.make_images(jax.random.PRNGKey(7), bank, 1024, 12, 0, 3, 0.0)
    x, y = np.asarray(x), np.asarray(y)
    channels = (4, 8, 16)
    tc = SimpleNamespace(batch_size=32, lr=0.005, warmup=20, weight_decay=1e-4, grad_clip=1.0,
                         chunk_size=50, checkpoint_every=50)
    task = train.Task("images", x[:512], y[:512], x[512:], y[512:],
                      lambda k: M.make_cnn(k, 12, channels), lambda k: M.make_mlp(k, 12, channels),
                      lambda k: M.make_image_linear(k, 12), tc)
    cfg = SimpleNamespace(match_weight=1.0, align_weight=1.0, mnn_tau=0.1, component_weight=1.0)
    guide, _ = train.fit(train.stacked(task.make_guide, [0], "guide"), None, task,
                         train.make_loss(cfg, "guide", ()), [0], 400, 1, None, "guide", False)
    acc_guide = float(train.evaluate(guide, task)["accuracy"][0])
    assert acc_guide > 0.5  # the guide learned the task (chance: 0.1)
    hybrid = M.swap(guide, 0, train.stacked(task.make_target, [0], "target"))
    assert float(train.evaluate(hybrid, task)["accuracy"][0]) < acc_guide - 0.3  # fresh part
    hybrid, _ = train.fit(hybrid, guide, task, train.make_loss(cfg, "not", (0,), (0,), 3), [0],
                          400, 10, None, "stage 1", False)
    assert 100 * (acc_guide - float(train.evaluate(hybrid, task)["accuracy"][0])) < FEW_POINTS
