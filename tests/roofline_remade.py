"""The lead's windowed H200 roofline captures (tests/fixtures/roofline/windows-h200.{1,2,3}.json, probe
contract 3: eager headlines) re-stated under probe contract 4's rule by the probe's own `stated`, from the
same windows and CUDA-graph replays: what contract 4's probe states of the same measurements. Used where a
test needs a real GPU document with kernel-only headlines (no GPU here)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from harness.analysis import timing
from harness.analysis.roofline import figures as rf
from harness.analysis.roofline import model as rl
from harness.analysis.roofline import reading
from harness.analysis.roofline.explanation import context_of
from harness.probes.roofline.document import stated

FIXTURES = Path(__file__).parent / "fixtures" / "roofline"
RECORD = ("first_call_s", "warmup", "windows", "graph")  # what the timer recorded of a shape
ROTATION = ("input_sets", "rotated_mib", "cache_defeated", "operands")
NOT_REPLAYED = {"unavailable": "not replayed: the contract-3 probe replayed eager calls under 20 us only"}
NO_KERNEL_FLOOR = {"unavailable": "not measured: the contract-3 probe replayed no empty kernel"}


def capture(run: int) -> dict[str, Any]:
    """One of the three captures, as the probe wrote it."""
    return json.loads((FIXTURES / f"windows-h200.{run}.json").read_text())


def contract4(document: dict[str, Any], kernel_floor_s: Any = None) -> dict[str, Any]:
    """DOCUMENT re-stated as contract 4's probe states it: the rule in `timing`, every measured shape's
    figures from its own windows and replay (a shape of 20-40 us eager that contract 3 did not replay says
    so), the summary recomputed; KERNEL_FLOOR_S stands for the empty kernel replayed from a CUDA graph,
    which contract 3 did not measure (default: why not)."""
    remade = copy.deepcopy(document)
    remade["contract_version"] = 4
    remade["timing"].update(
        launch_bound_headline=timing.KERNEL_ONLY, launch_bound_headline_why=timing.LAUNCH_BOUND_HEADLINE_WHY
    )
    remade["device_facts"]["kernel_floor_s"] = NO_KERNEL_FLOOR if kernel_floor_s is None else kernel_floor_s
    views = reading.dtype_documents(remade)
    for part in [remade, *remade.get("dtype_checks", [])]:
        view = views[part["dtype"]]
        context, predictions = context_of(view), {p["label"]: p for p in view["predictions"]["shapes"]}
        for i, shape in enumerate(part["measurements"]["shapes"]):
            if shape.get("status") != "measured":
                continue
            record = {key: shape[key] for key in RECORD if key in shape}
            if "graph" not in record and timing.per_call_s(record["windows"]) < timing.GRAPH_BELOW_S:
                record["graph"] = NOT_REPLAYED
            part["measurements"]["shapes"][i] = {
                "label": shape["label"],
                "status": "measured",
                "measured_at": shape["measured_at"],
                **stated(
                    record,
                    predictions[shape["label"]],
                    context,
                    {k: shape[k] for k in ROTATION if k in shape},
                    shape["clocks"],
                ),
            }
    remade["summary"] = {key: value for key, value in rf.headlines(remade).items() if key in remade["summary"]}
    return remade


def with_roof(document: dict[str, Any], bandwidth_gbps: float) -> dict[str, Any]:
    """DOCUMENT (a capture) as the probe states it when fed BANDWIDTH_GBPS as its memory roof instead: every
    dtype's roofs, ridge and predictions (the probe's own classify), the fusion comparison and the argv. The
    timings are the capture's; re-state them with `contract4`, which explains each against the new roof."""
    remade = copy.deepcopy(document)
    argv = remade["argv"]
    argv[argv.index("--bandwidth-gbps") + 1] = f"{bandwidth_gbps:.6g}"
    for part in [remade, *remade.get("dtype_checks", [])]:
        roofs, precision = part["roofs"], part.get("precision") or remade["precision"]
        roofs["bandwidth_gbps"] = float(f"{bandwidth_gbps:.6g}")
        roofs["ridge_flop_per_byte"] = rl.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"])
        for prediction in part["predictions"]["shapes"]:
            prediction.update(
                rl.classify(
                    *(prediction[d] for d in "mnk"),
                    precision["input_bytes"],
                    precision["output_bytes"],
                    roofs["peak_tflops"],
                    roofs["bandwidth_gbps"],
                )
            )
    fusion = remade.get("fusion")
    if isinstance(fusion, dict) and "comparison" in fusion:
        fusion["comparison"] = rl.fusion_comparison(
            fusion, remade["roofs"]["peak_tflops"], remade["roofs"]["bandwidth_gbps"]
        )
    return remade
