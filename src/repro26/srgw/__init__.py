"""srgw (issue 4): graphon and SBM estimation by semi-relaxed Gromov–Wasserstein (abstract 7)."""
