"""The Masked NCM: masking, exact likelihood and query vs Gumbel-max simulation of the SCM."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.masked_ncm import losses
from repro26.masked_ncm.model import MaskedNCM, sample

D, K = 3, 2
ASSIGN = jnp.asarray(losses.all_assignments(D, K))
CHAIN = jnp.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], jnp.float32)  # 0 -> 1 -> 2


def _model(key, num_latent=1):
    return MaskedNCM(D, K, embed_dim=8, heads=2, hidden=16, num_latent=num_latent, key=key)


def _problem(mask, conf, x=1, y=2):
    return losses.Problem(freq=jnp.full(K ** D, 1.0 / K ** D), mask=mask, conf=conf,
                          x=jnp.array(x), y=jnp.array(y), n=jnp.array(100.0), sign=jnp.array(1.0))


def test_mechanisms_read_only_their_parents_in_the_mask():
    model = _model(jax.random.key(0))
    conf = jnp.zeros(D)
    logits = eqx.filter_jit(lambda v: jax.vmap(lambda x: model.logits(x, 0, CHAIN, conf))(v))
    base, flip0, flip2 = logits(jnp.array([[0, 0, 0], [1, 0, 0], [0, 0, 1]]))
    # flipping V0 changes only V1's input; V2 is nobody's parent
    assert np.allclose(base[jnp.array([0, 2])], flip0[jnp.array([0, 2])], atol=1e-6)
    assert not np.allclose(base[1], flip0[1], atol=1e-4)
    assert np.allclose(base, flip2, atol=1e-6)


@pytest.mark.parametrize("num_latent", [1, 4])
def test_exact_likelihood_and_query_match_gumbel_max_simulation(num_latent):
    """P(v) and P(Y=1 | do(X=1)) from the finite sums equal the frequencies of the SCM run with
    Gumbel-max noise (and a sampled confounder shared by X and Y when num_latent > 1)."""
    model = _model(jax.random.key(1), num_latent)
    model = eqx.tree_at(lambda m: m.latent_logits, model, jnp.array([0.5, -0.3, 1.0, 0.0][:num_latent]))
    conf = jnp.array([0.0, 1.0, 1.0]) if num_latent > 1 else jnp.zeros(D)
    order = jnp.array([0, 1, 2])
    num = 40_000
    draw = eqx.filter_jit(sample)
    obs = draw(model, CHAIN, conf, order, jax.random.key(2), num)
    freq = np.bincount(np.ravel_multi_index(np.asarray(obs).T, (K,) * D), minlength=K ** D) / num
    exact = np.exp(np.asarray(losses.log_joint(model, CHAIN, conf, ASSIGN)))
    assert exact.sum() == pytest.approx(1.0, abs=1e-5)
    assert np.abs(freq - exact).max() < 4 * np.sqrt(0.25 / num)
    do = draw(model, CHAIN, conf, order, jax.random.key(3), num, do_var=1, do_val=1)
    _, q = losses.nll_and_query(model, _problem(CHAIN, conf), ASSIGN)
    assert np.all(np.asarray(do[:, 1]) == 1)
    assert float(np.mean(np.asarray(do[:, 2]) == 1)) == pytest.approx(float(q), abs=4 * np.sqrt(0.25 / num))
