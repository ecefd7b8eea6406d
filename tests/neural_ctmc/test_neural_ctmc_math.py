"""Neural CTMC math against closed forms and independent references (scipy)."""

from __future__ import annotations

import functools
import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.stats

from repro26.neural_ctmc import data as D
from repro26.neural_ctmc import losses, solvers
from repro26.neural_ctmc.model import make_denoiser

EPS = 1e-3


def _softplus_inv(y):
    return jnp.log(jnp.expm1(y))


# ----------------------------------------------------------------------------- forward process


@pytest.mark.parametrize("vocab", [3, 5])
def test_forward_marginals_match_matrix_exponential(vocab):
    """q_t(.|x0) = row x0 of expm(int_0^t Q) = expm(-log(alpha_t) (11^T/V - I))."""
    for t in (0.05, 0.3, 0.7, 0.999):
        sigma = -np.log(1.0 - (1.0 - EPS) * t)
        p = scipy.linalg.expm(sigma * (np.full((vocab, vocab), 1.0 / vocab) - np.eye(vocab)))
        q = losses.uniform_marginal(jnp.arange(vocab), jnp.full(vocab, t), EPS, vocab)
        np.testing.assert_allclose(np.asarray(q), p, atol=2e-6)
        gen = np.asarray(losses.generator(vocab, 1.0))
        np.testing.assert_allclose(gen.sum(1), 0.0, atol=1e-7)


def test_corruption_samples_the_forward_marginal():
    key = jax.random.PRNGKey(0)
    x0 = jnp.zeros((20000, 1), jnp.int32)
    t = jnp.full(20000, 0.6)
    xt = losses.corrupt_uniform(key, x0, t, EPS, 4)[:, 0]
    freq = np.bincount(np.asarray(xt), minlength=4) / 20000
    np.testing.assert_allclose(freq, np.asarray(losses.uniform_marginal(0, 0.6, EPS, 4)), atol=0.015)


# ----------------------------------------------------------------------------- reverse rates


def _toy_marginal(p_data, t, vocab):
    a = 1.0 - (1.0 - EPS) * t
    return a * p_data + (1.0 - a) / vocab


def test_reverse_rates_time_reversal_identity_three_tokens():
    """3-token toy: (i) q(x|x0) R*(x->y|x0) = q(y|x0) Q(y->x) (flux reversal); (ii) the
    posterior-averaged conditional rates are the marginal reverse rates; (iii) they solve the
    reverse-time Kolmogorov equation -dq/dt = q R - q * lambda (finite differences)."""
    vocab, t, dt = 3, 0.4, 1e-3
    p_data = np.array([0.6, 0.3, 0.1])
    beta = (1.0 - EPS) / (1.0 - (1.0 - EPS) * t)
    gen = np.asarray(losses.generator(vocab, beta), np.float64)
    x, x0 = np.meshgrid(np.arange(vocab), np.arange(vocab), indexing="ij")
    r_cond = np.asarray(losses.true_reverse_rates(jnp.asarray(x), jnp.asarray(x0),
                                                  jnp.full(x.shape, t), EPS, vocab), np.float64)
    q_cond = np.asarray(losses.uniform_marginal(jnp.arange(vocab), jnp.full(vocab, t), EPS, vocab),
                        np.float64)  # [x0, x]
    for a, b, c in itertools.product(range(vocab), repeat=3):
        if b != c:
            np.testing.assert_allclose(q_cond[a, b] * r_cond[b, a, c], q_cond[a, c] * gen[c, b],
                                       rtol=1e-5)
    q_t = _toy_marginal(p_data, t, vocab)
    post = (p_data[:, None] * q_cond) / q_t[None, :]  # p(x0 | x_t = x) as [x0, x]
    r_marg = np.einsum("ax,xay->xy", post, r_cond)
    expected = gen.T * q_t[None, :] / q_t[:, None]
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_allclose(r_marg, expected, rtol=1e-5)
    lam = r_marg.sum(1)
    dq_dt = (_toy_marginal(p_data, t + dt, vocab) - _toy_marginal(p_data, t - dt, vocab)) / (2 * dt)
    np.testing.assert_allclose(-dq_dt, q_t @ r_marg - q_t * lam, rtol=1e-4, atol=1e-7)
    lam_star, jump = losses.true_exit_and_jump(jnp.asarray(x), jnp.asarray(x0),
                                               jnp.full(x.shape, t), EPS, vocab)
    np.testing.assert_allclose(np.asarray(lam_star)[..., None] * np.asarray(jump), r_cond, rtol=1e-5)


# ----------------------------------------------------------------------------- path KL


def _toy_batch(vocab=6, n=64, seed=0):
    k = jax.random.split(jax.random.PRNGKey(seed), 5)
    x0 = jax.random.randint(k[0], (n,), 0, vocab)
    x = jax.random.randint(k[1], (n,), 0, vocab)
    t = jax.random.uniform(k[2], (n,), minval=0.01, maxval=1.0)
    return x0, x, t, jax.random.normal(k[3], (n, vocab)), jax.random.normal(k[4], (n,))


@jax.jit
def _terms_at_true_reverse(x0, x, t):
    vocab = 6
    lam, jump = losses.true_exit_and_jump(x, x0, t, EPS, vocab)
    rate_h = _softplus_inv(lam / losses.rate_scale(t, EPS)) - losses.rate_offset(t, EPS, vocab)
    logits = jnp.log(jnp.where(jump > 0, jump, 1.0))
    poisson, direction = losses.neural_ctmc_integrand(logits, rate_h, x, x0, t, EPS)
    q = losses.uniform_marginal(x0, t, EPS, vocab)
    log_ratio = jnp.log(q) - jnp.log(jnp.take_along_axis(q, x[:, None], 1))
    clean = jnp.where(jax.nn.one_hot(x0, vocab) > 0, 30.0, -30.0)
    return (poisson, direction, losses.sedd_integrand(log_ratio, x, x0, t, EPS),
            losses.gidd_integrand(clean, x, x0, t, EPS))


def test_path_kl_zero_when_model_is_true_reverse():
    """Neural CTMC heads = (lambda*, J*); SEDD scores = true ratios; GIDD x_hat = x0: KL = 0."""
    x0, x, t, _, _ = _toy_batch(6)
    poisson, direction, sedd, gidd = _terms_at_true_reverse(x0, x, t)
    np.testing.assert_allclose(np.asarray(poisson), 0.0, atol=1e-4)
    np.testing.assert_allclose(np.asarray(direction), 0.0, atol=1e-4)
    np.testing.assert_allclose(np.asarray(sedd), 0.0, atol=1e-3)
    np.testing.assert_allclose(np.asarray(gidd), 0.0, atol=1e-3)


@functools.partial(jax.jit, static_argnums=0)
def _ours_and_reference(method, x0, x, t, logits, rate_h):
    vocab = logits.shape[-1]
    lam, log_j = losses.model_rates(method, logits, rate_h, x, t, EPS)
    r_theta = lam[:, None] * jnp.exp(log_j)
    reference = losses.path_kl_rates(losses.true_reverse_rates(x, x0, t, EPS, vocab), r_theta)
    if method == "neural_ctmc":
        ours = sum(losses.neural_ctmc_integrand(logits, rate_h, x, x0, t, EPS))
    elif method == "sedd":
        ours = losses.sedd_integrand(logits, x, x0, t, EPS)
    else:
        ours = losses.gidd_integrand(logits, x, x0, t, EPS)
    return ours, reference


@pytest.mark.parametrize("method", ["neural_ctmc", "sedd", "gidd"])
def test_integrands_equal_generic_path_kl(method):
    """Every parameterisation's loss is the path-KL integrand of its own rates (and >= 0)."""
    ours, reference = _ours_and_reference(method, *_toy_batch(6, seed=1))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(reference), rtol=2e-4, atol=1e-4)
    assert np.all(np.asarray(ours) >= -1e-5)


def test_time_sampler_is_unbiased_and_stratification_reduces_variance():
    """E[mean_k w_k f(t_k)] = int_0^1 f for the stratified importance-sampled times (f = beta
    and f = t^2, exact integrals); K = 4 stratified draws beat 4 independent ones."""
    for method, f, exact in (("neural_ctmc", lambda t: losses.beta(t, EPS), -np.log(EPS)),
                             ("mdlm", lambda t: t ** 2, 1.0 / 3.0)):
        t, w = losses.sample_times(jax.random.PRNGKey(3), 50000, 4, EPS, method)
        per_row = np.asarray(jnp.mean(w * f(t), axis=1))
        np.testing.assert_allclose(per_row.mean(), exact, rtol=5e-3)
        t1, w1 = losses.sample_times(jax.random.PRNGKey(4), 200000, 1, EPS, method)
        iid = np.asarray(w1 * f(t1)).reshape(50000, 4).mean(1)
        assert per_row.var() < 0.5 * iid.var(), (method, per_row.var(), iid.var())


def test_batch_wide_times_tile_the_unit_interval_and_stay_unbiased():
    """``across_batch``: the n K draws of a batch fall one in each cell [j/(nK), (j+1)/(nK))
    (MDLM's low-discrepancy sampler), every row keeps one draw per stratum [k/K, (k+1)/K), and
    the batch mean of ``w f(t)`` is unbiased (f = t^2 for MDLM's proposal t = u^2, w = 2 sqrt t:
    the masked-token term ``1[masked] / t`` then has finite variance, ``E[w^2 / t] = 4``)."""
    n, draws = 8, 4
    t, _ = losses.sample_times(jax.random.PRNGKey(5), n, draws, EPS, "mdlm", across_batch=True)
    u = np.sqrt(np.asarray(t))
    np.testing.assert_array_equal(np.sort(np.floor(u.reshape(-1) * n * draws)), np.arange(n * draws))
    np.testing.assert_array_equal(np.floor(u * draws), np.tile(np.arange(draws), (n, 1)))
    means = [float(jnp.mean(w * t ** 2)) for t, w in (
        losses.sample_times(jax.random.PRNGKey(k), n, draws, EPS, "mdlm", across_batch=True)
        for k in range(400))]
    np.testing.assert_allclose(np.mean(means), 1.0 / 3.0, rtol=5e-3)


@pytest.mark.parametrize("pos_scale", [0.02, 1.0])
def test_zero_heads_start_every_uniform_method_at_the_uniform_law(pos_scale):
    """Fair start: zero output heads give Neural CTMC and GIDD the same reverse rates (those of
    uniform data), so their bound estimates agree draw by draw, and E[bound] = log V per token
    (the exact NLL of the uniform law; its path KL to every data point's reverse process is 0
    in expectation). This holds at any scale of the initial position embeddings (``pos_scale``
    is their standard deviation)."""
    vocab, length = 5, 4
    nc = make_denoiser("neural_ctmc", vocab_size=vocab, seq_len=length, d_model=8, n_layers=1,
                       n_heads=1, mlp_ratio=1, pos_scale=pos_scale, key=jax.random.PRNGKey(0))
    gidd = make_denoiser("gidd", vocab_size=vocab, seq_len=length, d_model=8, n_layers=1,
                         n_heads=1, mlp_ratio=1, pos_scale=pos_scale, key=jax.random.PRNGKey(1))
    assert 0.5 * pos_scale < float(jnp.std(nc.pos)) < 1.5 * pos_scale
    x0 = jax.random.randint(jax.random.PRNGKey(2), (256, length), 0, vocab)
    key = jax.random.PRNGKey(3)
    ours = losses.sequence_bound("neural_ctmc", nc, x0, key, EPS, 4)["bound"]
    theirs = losses.sequence_bound("gidd", gidd, x0, key, EPS, 4)["bound"]
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5)
    se = float(ours.std() / np.sqrt(ours.size))
    assert abs(float(ours.mean()) - np.log(vocab)) < 4 * se + 1e-3, (float(ours.mean()), se)


@jax.jit
@functools.partial(jax.vmap, in_axes=(0, None, None))
def _exact_model_integrand(tt, x0, p_data):
    """E_{x_t ~ q_t(.|x0)} of the path-KL integrand against the exact marginal reverse rates."""
    vocab = p_data.shape[0]
    states, x0s = jnp.arange(vocab), jnp.full(vocab, x0)
    p_t = _toy_marginal(p_data, tt, vocab)
    q = losses.uniform_marginal(x0s, jnp.full(vocab, tt), EPS, vocab)[0]
    r_star = losses.true_reverse_rates(states, x0s, jnp.full(vocab, tt), EPS, vocab)
    r_model = losses.beta(tt, EPS) / vocab * p_t[None, :] / p_t[:, None]
    r_model = jnp.where(jnp.eye(vocab, dtype=bool), 0.0, r_model)
    return jnp.sum(q * losses.path_kl_rates(r_star, r_model))


def test_elbo_of_exact_rate_model_equals_true_nll():
    """1-position toy, model rates = the data process's reverse rates
    R_t(x->y) = (beta/V) p_t(y)/p_t(x). Its bound on -log p(x0) equals the true NLL, up to the
    known prior mismatch sum_x q_1(x|x0) log(p_1(x)/pi(x)) (model starts from uniform pi)."""
    vocab = 3
    p_data = jnp.array([0.6, 0.3, 0.1])
    t, w = losses.sample_times(jax.random.PRNGKey(7), 20000, 1, EPS, "neural_ctmc")
    t, w = t[:, 0], w[:, 0]
    for x0 in range(vocab):
        vals = np.asarray(w * _exact_model_integrand(t, x0, p_data))
        q1 = np.asarray(losses.uniform_marginal(x0, 1.0, EPS, vocab))
        p1 = np.asarray(_toy_marginal(p_data, 1.0, vocab))
        bound = losses.prior_kl_uniform(EPS, vocab) + vals.mean()
        truth = -np.log(float(p_data[x0])) + np.sum(q1 * np.log(p1 * vocab))
        se = vals.std() / np.sqrt(vals.size)
        assert abs(bound - truth) < 4 * se + 1e-3, (x0, bound, truth, se)


# ----------------------------------------------------------------------------- samplers


class ExactRates(eqx.Module):
    """Neural CTMC heads set to the true reverse process of a 1-position data distribution."""

    p_data: jax.Array
    eps: float = eqx.field(static=True)

    @property
    def vocab_size(self) -> int:
        return self.p_data.shape[0]

    def __call__(self, x, t):
        vocab = self.vocab_size
        p_t = _toy_marginal(self.p_data, t, vocab)
        rates = losses.beta(t, self.eps) / vocab * p_t[None, :] / p_t[x][:, None]
        own = jax.nn.one_hot(x, vocab, dtype=bool)
        lam = jnp.sum(jnp.where(own, 0.0, rates), axis=-1)
        return jnp.log(rates), (_softplus_inv(lam / losses.rate_scale(t, self.eps))
                                - losses.rate_offset(t, self.eps, vocab))


class ExactClean(eqx.Module):
    """MDLM SUBS prediction for a 1-position toy: x_hat = p_data."""

    p_data: jax.Array

    @property
    def vocab_size(self) -> int:
        return self.p_data.shape[0]

    def __call__(self, x, t):
        return jnp.broadcast_to(jnp.log(self.p_data), (x.shape[0], self.vocab_size)), jnp.zeros(x.shape)


@pytest.mark.parametrize("method,sampler", [("neural_ctmc", "tau"), ("neural_ctmc", "euler"),
                                            ("mdlm", "ancestral")])
def test_exact_rate_sampler_reproduces_data(method, sampler):
    p_data = jnp.array([0.5, 0.25, 0.15, 0.1])
    model = ExactRates(p_data, EPS) if method == "neural_ctmc" else ExactClean(p_data)
    n = 4000
    x = solvers.sample(method, sampler, model, jax.random.PRNGKey(11), n, 1, jnp.int32(256), EPS)
    counts = np.bincount(np.asarray(x)[:, 0], minlength=4)
    assert counts.sum() == n
    _, p_value = scipy.stats.chisquare(counts, n * np.asarray(p_data))
    assert p_value > 1e-3, (counts, p_value)


# ----------------------------------------------------------------------------- data


def test_unigram_entropy_and_text_codec():
    x = jnp.array([[0, 0, 1, 2], [3, 3, 3, 3]])
    ent = np.asarray(D.unigram_entropy(x, 4))
    np.testing.assert_allclose(ent, [scipy.stats.entropy([2, 1, 1]), 0.0], atol=1e-6)
    text = "In the beginning God created the heaven and the earth!"
    assert D.decode_chars(D.encode_chars(text)) == text.lower().replace("!", ".")


# ----------------------------------------------------------------------------- every part learns


@pytest.mark.parametrize("method", ["neural_ctmc", "gidd", "mdlm", "sedd"])
def test_every_parameter_of_each_method_learns(method):
    """Every trainable leaf of each method's backbone (Neural CTMC's exit-rate head included)
    gets gradient from its own bound within a few steps; the scorer too."""
    from repro26.core.learning import assert_every_parameter_learns
    from repro26.neural_ctmc.model import make_scorer, scorer_nll

    model = make_denoiser(method, vocab_size=4, seq_len=5, d_model=8, n_layers=1, n_heads=2,
                          mlp_ratio=2, key=jax.random.PRNGKey(0))
    x = jax.random.randint(jax.random.PRNGKey(1), (8, 5), 0, 4)
    batches = [(x, jax.random.PRNGKey(k)) for k in range(3)]
    assert_every_parameter_learns(
        model, lambda m, b: losses.sequence_bound(method, m, b[0], b[1], EPS, 2)["bound"].mean(),
        batches)
    if method == "neural_ctmc":
        scorer = make_scorer(vocab_size=4, seq_len=5, d_model=8, n_layers=1, n_heads=2,
                             mlp_ratio=2, key=jax.random.PRNGKey(2))
        assert_every_parameter_learns(scorer, lambda m, b: scorer_nll(m, b[0]).mean(), batches)


def test_weight_average_follows_its_recurrence_and_forgets_the_start():
    """``with_ema``: after each optimiser step ``ema <- d_k ema + (1 - d_k) w`` with
    ``d_k = min(decay, (1 + k) / (10 + k))`` (checked against the recurrence run by hand on the
    same weights); the first step already weights the new weights by 0.9."""
    import optax

    from repro26.core.train import optax_step
    from repro26.neural_ctmc.train import EmaState, init_state, with_ema

    tc = type("TC", (), {"ema": 0.99})()
    model = eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0))
    optimizer = optax.sgd(0.1)

    def loss_fn(m, data, key):
        del key
        return jnp.mean((jax.vmap(m)(data) - 1.0) ** 2), {}

    step = with_ema(optax_step(loss_fn, optimizer), tc.ema)
    state = init_state(model, optimizer, tc)
    assert isinstance(state, EmaState)
    data = jnp.ones((4, 2))
    by_hand = np.asarray(model.weight)
    for k in range(30):
        state, _ = step(state, data, jax.random.PRNGKey(k))
        d = min(0.99, (1 + k) / (10 + k))
        by_hand = d * by_hand + (1 - d) * np.asarray(state.train.model.weight)
        if k == 0:
            assert d == pytest.approx(0.1)
    np.testing.assert_allclose(np.asarray(state.ema.weight), by_hand, rtol=1e-5, atol=1e-6)
    assert not np.allclose(np.asarray(state.ema.weight), np.asarray(model.weight))


def test_wsd_schedule_and_its_half_run_branch():
    """``wsd``: linear warm-up to ``lr``, constant, then linear to zero over the last ``decay``
    steps; the schedule of a run of half the steps equals the full one up to its branch point
    (``steps/2 - decay``), so the half run is the same stable phase plus its own decay."""
    import dataclasses

    from repro26.neural_ctmc.cli import TrainConfig
    from repro26.neural_ctmc.train import make_schedule

    tc = TrainConfig(steps=40, batch_size=4, warmup=4, chunk_size=5, checkpoint_every=5,
                     lr=0.5, schedule="wsd", decay=8)
    full, half = make_schedule(tc), make_schedule(tc, 20)
    lr = np.array([float(full(k)) for k in range(41)])
    np.testing.assert_allclose(lr[:5], 0.5 * np.arange(5) / 4, rtol=1e-6)
    np.testing.assert_allclose(lr[4:33], 0.5, rtol=1e-6)
    np.testing.assert_allclose(lr[32:], 0.5 * (40 - np.arange(32, 41)) / 8, rtol=1e-6, atol=1e-7)
    lr_half = np.array([float(half(k)) for k in range(21)])
    np.testing.assert_allclose(lr_half[:13], lr[:13], rtol=1e-6)
    np.testing.assert_allclose(lr_half[12:], 0.5 * (20 - np.arange(12, 21)) / 8, rtol=1e-6,
                               atol=1e-7)
    with pytest.raises(ValueError):
        make_schedule(dataclasses.replace(tc, decay=18), 20)  # decay would start in the warm-up


def test_mdlm_bound_is_the_time_integral_of_the_masked_cross_entropy():
    """A context-free model predicting softmax(t log p) at time t has MDLM bound
    int_0^1 (1/t) P(masked) CE_t(x0) dt = int_0^1 CE_t(x0) dt per token: unbiased under the
    proposal t = u^2 only with its weight 2 sqrt t (per-row and batch-wide times)."""
    import equinox as eqx

    log_p = jnp.log(jnp.array([0.6, 0.3, 0.1]))

    class Tempered(eqx.Module):
        vocab_size: int = 3

        def __call__(self, x, t):
            return jnp.broadcast_to(t * log_p, x.shape + (3,)), jnp.zeros(x.shape)

    x0 = jax.random.categorical(jax.random.PRNGKey(0), log_p, shape=(20000, 4))
    grid = (np.arange(20000) + 0.5) / 20000
    ce = -np.asarray(jax.nn.log_softmax(grid[:, None] * log_p[None, :]))  # (grid, V)
    freq = np.bincount(np.asarray(x0).reshape(-1), minlength=3) / x0.size
    truth = float((ce.mean(0) * freq).sum())
    for across in (False, True):
        b = np.asarray(losses.sequence_bound("mdlm", Tempered(), x0, jax.random.PRNGKey(1), EPS,
                                             2, across)["bound"])
        assert abs(b.mean() - truth) < 4 * b.std() / np.sqrt(b.size) + 1e-3, (across, b.mean())
