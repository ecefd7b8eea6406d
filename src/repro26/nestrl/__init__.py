"""NestRL (issue 24): nested level-k training for human-AI teaming in Overcooked."""
