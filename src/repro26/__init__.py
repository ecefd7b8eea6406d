"""repro26: pure-JAX reimplementations of 19 NeurIPS 2026 papers and their headline claims."""

__version__ = "0.1.0"
