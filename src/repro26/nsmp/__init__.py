"""Nerve-Skeleton Message Passing (NSMP): federated optimisation with overlapping coordinate blocks.

Clients own overlapping blocks ``S_i``; NSMP runs a leaf-to-root pass of partial minimisations
(Schur complements) and a root-to-leaf reconstruction on a spanning tree of the nerve skeleton,
against consensus ADMM, FedAvg and FedProx (see ``solvers``).
"""
