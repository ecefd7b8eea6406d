"""NestedVLA (issue 23): task-conditioned adapter generation by a nested hypernetwork vs model merging."""
