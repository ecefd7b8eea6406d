"""neptuna (issue 25): shock-driven compressible multiphase flow data and ML surrogates (abstract 13)."""
