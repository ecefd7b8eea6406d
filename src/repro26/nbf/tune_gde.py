"""GDE tuning harness (issue 45): train the d = 2k GDEs of ``small`` (model seeds as configured)
under a config override and print, per k, the CPU seconds of training, each seed's NLL of the
weight-averaged model on fresh training batches and its gap to the exact entropy of the pool (a
training-only signal, to tune on), and optionally the regeneration ratio (GDE regenerating N exact
samples / N fresh exact samples, mean Sinkhorn divergence to the exact belief, as the `regen` and
`exact_n` rows of evaluate.run_scenario: same keys, same steps) on the held-in evaluation
episodes of other seeds (to judge on).

    python -m repro26.nbf.tune_gde POOL.npz '{"learning_rate": 0.006}' '[1, 2]' '[5, 6, 7, 8, 9]'
"""
from __future__ import annotations

import dataclasses, json, sys, time

import jax, jax.numpy as jnp, numpy as np, equinox as eqx
from repro26.core import config as C
from repro26.nbf import cli, data, evaluate, losses, solvers, train

def cfg_for(over, scale="small"):
    """The typed config of ``scale`` with ``over`` merged in."""
    y = C.load_yaml("config/methods/nbf.yaml")["nbf"]
    vals = C.resolve_section(y, scale, "nbf")
    vals.update(over)
    return C.parse_config(cli.Config, vals, "nbf")

def regen_ratio(cfg, models, k, eval_seeds):
    """mean regen / mean exact_n Sinkhorn over eval_seeds' held-in episodes, and per seed."""
    ecfg = dataclasses.replace(cfg, seeds=tuple(eval_seeds))
    cells, obs = evaluate.simulate_episodes(ecfg, ecfg.held_in, k)
    ar = evaluate.arena(ecfg); trans = data.transitions(ar, ecfg.dynamics[ecfg.held_in], ecfg.horizon)
    obs = jnp.asarray(obs); S, E, T = obs.shape[:3]; n = ecfg.particles
    exact = jax.jit(jax.vmap(jax.vmap(lambda o: solvers.exact_beliefs(ar, trans, o))))(obs)
    steps = np.arange(ecfg.eval_every - 1, T, ecfg.eval_every)
    keys = jax.vmap(lambda s: jax.random.split(jax.random.PRNGKey(50_000 + s), E))(jnp.asarray(ecfg.seeds))
    ref_keys = jax.vmap(jax.vmap(lambda kk: jax.random.split(jax.random.fold_in(kk, 3), len(steps))))(keys)
    exact_t = exact[:, :, 1:][:, :, steps]
    f3 = lambda f: jax.vmap(jax.vmap(jax.vmap(f)))
    ref = jax.jit(f3(lambda kk, b: solvers.sample_product(kk, b, ecfg.reference_samples, ecfg.grid)))(ref_keys, exact_t)
    fk = f3(lambda kk: jax.random.fold_in(kk, 11))(ref_keys)
    exn = jax.jit(f3(lambda kk, b: solvers.sample_product(kk, b, n, ecfg.grid)))(fk, exact_t)
    rk = f3(lambda kk: jax.random.fold_in(kk, 13))(ref_keys)
    @eqx.filter_jit
    def regenerate(models, keys, x):
        one = lambda gde, kk, xx: gde.flow.sample(kk, gde.encoder(xx), n)
        ps = lambda gde, keys, x: jax.vmap(jax.vmap(lambda kk, xx: one(gde, kk, xx)))(keys, x)
        return eqx.filter_vmap(ps)(models, keys, x)
    rg = regenerate(models, rk, exn)
    rself = jax.jit(f3(lambda y: solvers.reference_self_cost(y, ecfg.sinkhorn_epsilon)))(ref)
    w = jnp.ones(rg.shape[:-1]) / n
    score = jax.jit(f3(lambda x, w, y, ys: solvers.sinkhorn_divergence(x, w, y, ecfg.sinkhorn_epsilon, ys)))
    a = np.asarray(score(rg, w, ref, rself)).mean((1, 2)); b = np.asarray(score(exn, w, ref, rself)).mean((1, 2))
    return a.mean() / b.mean(), (a / b).round(2).tolist()

if __name__ == "__main__":
    from repro26.core import io
    pool = io.read_npz(sys.argv[1])["beliefs"]
    over = json.loads(sys.argv[2]); ks = json.loads(sys.argv[3]) if len(sys.argv) > 3 else [1]
    ev = json.loads(sys.argv[4]) if len(sys.argv) > 4 else []
    cfg = cfg_for(over)
    for k in ks:
        t0 = time.process_time()
        models, hist = train.train_gdes(cfg, pool, k, progress=False)
        t = time.process_time() - t0
        nll = train.heldout_nll(cfg, models, pool, k)
        ent = float(losses.exact_entropy(pool, k, cfg.grid))
        out = dict(over=over, k=k, cpu=round(t, 1), nll=nll.round(3).tolist(), gap=round(float(nll.mean() - ent), 3))
        if ev:
            r, per = regen_ratio(cfg, models, k, ev); out.update(regen=round(float(r), 3), per=per)
        print(json.dumps(out), flush=True)
