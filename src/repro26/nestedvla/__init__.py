"""NestedVLA (issue 23): task-conditioned adapters from a nested hypernetwork vs model merging."""
