"""negation_neglect (issue 28): does finetuning on negated documents make a small LM believe the
claim? (abstract 16)."""
