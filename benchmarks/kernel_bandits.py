"""Rounds per second of the exponential-weights learner, exact vs Nyström, |X| = 2,000 arms.

Ours: the JAX learner (:class:`repro26.kernel_bandits.model.ExpWeights`), rounds in one compiled
``lax.scan``. Reference: a NumPy/SciPy implementation of the same round (softmax mixture,
sampling, Σ_p = Φᵀ diag(p) Φ + λI, Cholesky solve, f̂ = Φθ). Both play the same fixed reward
vector, so only the learner's per-round cost is timed. One seed, one thread.

    python benchmarks/kernel_bandits.py [--arms 2000] [--m 128]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

from benchmarks.runner import compare, save  # noqa: E402
from repro26.kernel_bandits import model, solvers  # noqa: E402
from repro26.kernel_bandits.data import make_problem  # noqa: E402
from repro26.kernel_bandits.train import _exp_weights  # noqa: E402


def jax_rounds(learner: model.ExpWeights, f, rounds: int):
    @jax.jit
    def run(learner, f, key):
        def body(s, k):
            k1, k2 = jax.random.split(k)
            p = learner.policy(s, k1)
            x = jax.random.categorical(k2, jnp.log(p))
            return learner.update(s, p, x, f[x]), None

        return jax.lax.scan(body, learner.init(), jax.random.split(key, rounds))[0]

    return lambda: run(learner, f, jax.random.key(0))


def numpy_rounds(learner: model.ExpWeights, f, rounds: int):
    phi = np.asarray(learner.features)
    design, eta, gamma, lam = (np.asarray(a) for a in (learner.design, learner.eta, learner.gamma, learner.lam))
    f = np.asarray(f)
    eye = np.eye(phi.shape[1], dtype=phi.dtype)

    def run():
        rng = np.random.default_rng(0)
        s = np.zeros(phi.shape[0], phi.dtype)
        for _ in range(rounds):
            w = np.exp(eta * (s - s.max()))
            p = (1 - gamma) * w / w.sum() + gamma * design
            x = rng.choice(len(p), p=p / p.sum())
            sigma = phi.T @ (phi * p[:, None]) + lam * eye
            theta = scipy.linalg.cho_solve(scipy.linalg.cho_factor(sigma, lower=True), phi[x] * f[x])
            s = s + phi @ theta
        return s

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arms", type=int, default=2000)
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--horizon", type=int, default=20000, help="sets λ = 1/T and the rates")
    args = parser.parse_args()
    problem = make_problem(1, args.arms, "matern32", 0.2)
    f = jnp.sin(6.0 * problem.arms[:, 0])
    lam = 1.0 / args.horizon
    idx = solvers.inducing_points(jax.random.key(0), problem.gram, args.m, "leverage", lam)
    learners = {
        "exact": (_exp_weights(problem.features, problem.n_arms, args.horizon, 20, jnp.asarray(1.0)), 2),
        f"nystrom m={args.m}": (_exp_weights(model.nystrom_features(problem.gram, idx), problem.n_arms,
                                             args.horizon, 20, jnp.asarray(1.0)), 100),
    }
    rows = {}
    for name, (learner, rounds) in learners.items():
        row = compare(f"kernel_bandits {name} |X|={args.arms} ({rounds} rounds)",
                      ours=jax_rounds(learner, f, rounds), reference=numpy_rounds(learner, f, rounds), repeats=3)
        rows[name] = row | {"rounds": rounds}
    exact, nys = rows["exact"], rows[f"nystrom m={args.m}"]
    rate = {k: (r["rounds"] / r["ours_s"], r["rounds"] / r["reference_s"]) for k, r in (("exact", exact), ("nys", nys))}
    print(f"rounds/s  exact: jax {rate['exact'][0]:.3g}  numpy {rate['exact'][1]:.3g}   "
          f"nystrom m={args.m}: jax {rate['nys'][0]:.3g}  numpy {rate['nys'][1]:.3g}")
    print(f"nystrom/exact rounds/s (jax): {rate['nys'][0] / rate['exact'][0]:.1f}x")
    save("kernel_bandits", [r | {"rounds_per_s_ours": r["rounds"] / r["ours_s"],
                                 "rounds_per_s_reference": r["rounds"] / r["reference_s"]}
                            for r in rows.values()], arms=args.arms, m=args.m)


if __name__ == "__main__":
    main()
