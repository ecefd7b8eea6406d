"""Method-agnostic pieces: config, training loop, atomic io, claims, plotting, report, CLI."""
