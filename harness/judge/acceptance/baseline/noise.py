"""The run-to-run noise a baseline's tolerances are floored by: the project's one noise model.

It is the floor of every tolerance a baseline sets: with a golden unit's few bundles the MAD says
little, and a fail line tighter than the noise would fail the golden unit itself on its next run.

There is no table here: `dossier reproduce`, `dossier diff` and `dossier baseline` all read
harness.analysis.repeatability's noise model, whose measurements (the SKU's `run_to_run`), rule
and stated defaults live in the catalogue (harness/data/gpus.json `repeatability`, each with its
source). A figure the SKU's run_to_run does not measure gets its stated default, marked
`measured: False`, its source saying so.
"""

from __future__ import annotations

from harness.analysis.repeatability import Noise, noise_model

GPU_VS_NODE = "gpu_vs_node"  # the catalogue's stated default for one GPU against its node's median


def run_to_run(sku_id: str | None, figure_id: str, kind: str) -> Noise:
    """How far FIGURE_ID (a figure of KIND) moves between clean runs of SKU_ID: measured, else a stated default."""
    return noise_model(sku_id).noise(figure_id, kind)


def gpu_vs_node(sku_id: str | None) -> Noise:
    """The tolerance of one GPU against its node's median where the SKU's block states none."""
    stated = noise_model(sku_id).default(GPU_VS_NODE)
    if stated is None:
        raise ValueError(f"the catalogue's repeatability.defaults has no {GPU_VS_NODE} entry")
    return stated
