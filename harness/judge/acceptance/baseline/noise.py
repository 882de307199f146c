"""The run-to-run noise a baseline's tolerances are floored by: the project's one noise model.

It is the floor of every tolerance a baseline sets: with a golden unit's few bundles the MAD says
little, and a fail line tighter than the noise would fail the golden unit itself on its next run.

There is no table here: `dossier reproduce`, `dossier diff` and `dossier baseline` all read
harness.analysis.noise's model, whose measurements (the SKU's `noise_campaign`), rule and stated
defaults live in the catalogue (harness/data/gpus.json, each with its source). A baseline holds a unit
of the SKU that need not be the golden one, so the tolerance is the campaign's for another GPU of the
SKU, at the share of the false-alarm rate each of the baseline's FAMILY rate figures gets (the rule
`dossier reproduce` applies to its deciding rates). A figure no campaign measured gets its stated
default, marked `measured: False`, its source saying so.
"""

from __future__ import annotations

from harness.analysis.noise import Noise, noise_model

GPU_VS_NODE = "gpu_vs_node"  # the catalogue's stated default for one GPU against its node's median


def run_to_run(sku_id: str | None, figure_id: str, kind: str, family: int = 1) -> Noise:
    """How far FIGURE_ID (a figure of KIND, one of FAMILY judged together) may move between clean runs on two
    units of SKU_ID: measured, else a stated default."""
    return noise_model(sku_id).noise(figure_id, kind, same_unit=False, family=family)


def gpu_vs_node(sku_id: str | None) -> Noise:
    """The tolerance of one GPU against its node's median where the SKU's block states none."""
    stated = noise_model(sku_id).default(GPU_VS_NODE)
    if stated is None:
        raise ValueError(f"the catalogue's repeatability.defaults has no {GPU_VS_NODE} entry")
    return stated
