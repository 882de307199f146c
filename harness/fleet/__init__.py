"""Fleets: a dossier of every node of a Slurm cluster, and the comparison of its nodes.

`script` generates the job (sbatch script and per-node script), `slurm` talks to the cluster
(sbatch, scontrol), `metrics` reads the compared figures from a node's raw JSON, `collect`
gathers, verifies and compares the node bundles, `sealing` writes the signed fleet bundle. The
outlier rule itself is pure and shared: harness/analysis/fleet.py.
"""
