"""Neural Bayesian Filtering (paper 4): beliefs as learned distribution embeddings, updated by
regenerating particles from a conditional generator, propagating, weighting and re-embedding."""
