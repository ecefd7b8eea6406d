"""Neighbor-Aware GNN (NAGNN): snapshot-based dynamic link prediction with LSH reservoirs."""
