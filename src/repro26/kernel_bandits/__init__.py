"""Adversarial kernelized (GP) bandits by exponential weights, with a Nyström variant.

Reimplements "kernelized bandits in an adversarial environment": an exponential-weights
learner over a finite arm set X with a kernel-optimal exploration design and an
importance-weighted RKHS reward estimate, whose regret is Õ(√(T γ_T)); its Nyström variant;
the baselines Exp3, GP-UCB, GP-TS and uniform play; oblivious, adaptive and lower-bound
(bump-function) adversaries.
"""
