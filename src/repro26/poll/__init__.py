"""Poll: pricing in multi-activity network games by polling (abstract 8, issue 21)."""
