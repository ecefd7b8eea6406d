"""Masked neural causal models: bounding P(Y=y | do(X=x)) over a CPDAG (abstract 3)."""
