"""Fleets: a dossier of every node of a Slurm cluster, and the comparison of its nodes.

`script` generates the job (sbatch script and per-node script, pure text), `submit` writes and
submits it, `slurm` talks to the cluster (sbatch, scontrol), `metrics` reads the compared figures
from a node's raw JSON, `collect` gathers, verifies and compares the node bundles, `report`
renders fleet.md, `package` lists the fleet bundle's members and `sealing` signs and writes it
with the bundle modules. The outlier rule itself is pure and shared: harness/analysis/fleet.py.
See docs/fleet.md.
"""
