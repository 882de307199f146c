"""The roofline's windowed timing, its launch-bound rule and CUDA-graph explanation, and its dtype checks
in one document: on the lead's H200 capture (tests/fixtures/roofline/causes-h200.json) and the committed
H200 bundle's per-dtype steps, and the timer itself on this CPU."""

import copy
import json
import time
from pathlib import Path

import pytest

from harness.analysis import timing
from harness.analysis.roofline import checks as roofline_checks
from harness.analysis.roofline import figures as rf
from harness.analysis.roofline import model as rl
from harness.analysis.roofline.explanation import explain
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.rates import gemm
from harness.judge.facts import BundleFacts
from harness.present.tables import roofline as table
from harness.present.tables import stress as stress_table
from tests.accept_support import h200_documents, h200_raw, resolve, view_of

CAUSES = json.loads((Path(__file__).parents[1] / "fixtures" / "roofline" / "causes-h200.json").read_text())
H200 = json.loads((Path(__file__).parents[1] / "fixtures" / "roofline" / "h200.json").read_text())
DIMS = {
    "square-256": (256, 256, 256),
    "square-1024": (1024, 1024, 1024),
    "square-2048": (2048, 2048, 2048),
    "qkv-decode-64": (64, 6144, 4096),
    "square-8192": (8192, 8192, 8192),
    "down-prefill-2048": (2048, 4096, 14336),
    "gate_up-prefill-8192": (8192, 28672, 4096),
}


def captured_windows(label, run=2):
    """One shape's three windows as the probe records them, from the capture's `windows` method."""
    return [
        {"calls": w["calls"], "seconds": w["s_per_call"] * w["calls"], "gap_before_s": 0.05}
        for w in CAUSES["passes"][run][f"windows/{label}"]["windows"]
    ]


def captured_graph(label, run=2):
    """The capture's CUDA-graph replay of LABEL (50 calls a replay, its median time a call) as one window."""
    seconds = CAUSES["passes"][run][f"graph/{label}"]["s"]
    return {
        "calls_per_replay": 50,
        "windows": [{"replays": 1, "calls": 50, "seconds": 50 * seconds, "gap_before_s": 0.0}],
        "median_s": seconds,
    }


@pytest.mark.parametrize(
    "label, launch_bound",
    [
        ("square-256", True),
        ("square-1024", True),
        ("qkv-decode-64", True),
        ("square-2048", False),
        ("square-8192", False),
        ("down-prefill-2048", False),
    ],
)
def test_the_launch_bound_rule_on_the_h200_windows(label, launch_bound):
    figures = timing.timing_figures({"windows": captured_windows(label)})
    assert figures["launch_bound"] is launch_bound, figures["per_call_s"]
    assert figures["windows"] == 3 and figures["window_spread"] < 0.05  # windows agree within a run


def test_windows_after_an_idle_gap_agree_where_the_gapless_first_one_did_not():
    # The evidence for GAP_RATIO: the first window followed the warm-up with no gap and ran slower on the
    # heavy shapes; windows 2 and 3, each after 50 ms idle (twice a ~25 ms window), agree within 1%.
    for label in ("square-8192", "down-prefill-2048", "gate_up-prefill-8192"):
        windows = CAUSES["passes"][1][f"windows/{label}"]["windows"]
        gapless, *gapped = [w["s_per_call"] for w in windows]
        assert gapless > max(gapped) * 1.08, label
        assert timing.spread(gapped) < 0.01, label
    assert timing.GAP_RATIO * 0.025 == pytest.approx(0.05)


def test_window_sizes_follow_the_measured_time_per_call():
    per_call = CAUSES["passes"][2]["windows/square-8192"]["windows"][0]["s_per_call"]  # ~1.41 ms
    assert timing.calls_per_window(per_call) == 15  # ~20 ms of calls
    assert timing.calls_per_window(0.0216) == 1  # an fp32 8192^3 call (51 TFLOPS) is a window alone
    assert timing.calls_per_window(16e-6) == 1250
    assert timing.gap_after(0.021, timing.GPU_GAP_RATIO) == pytest.approx(0.042)
    assert timing.gap_after(0.021, timing.CPU_GAP_RATIO) == 0


def h200_context():
    return {
        "peak_tflops": H200["peak_bf16_tflops"],
        "bandwidth_gbps": H200["bandwidth_gbps"],
        "in_bytes": 2,
        "out_bytes": 2,
        "path": "torch.mm (cuBLAS) in bf16",
        "launch_floor_s": 6e-6,
        "sm_count": 132,
        "tile_m": 128,
        "tile_n": 256,
        "max_sm_clock_mhz": 1980,
        "cache_mib": 60,
    }


def test_a_window_without_its_call_count_is_named_not_raised():
    """A window stripped of its `calls` (an edited document) is a discrepancy that lists every window's
    count, the missing one as None, beside the captured ones: sorting them must not raise."""
    windows = captured_windows("square-2048")
    del windows[1]["calls"]
    timed = {
        "windows": windows,
        "window_spread": 0.01,
        "warmup": {"seconds": 1.0, "calls": 100, "per_call_s": windows[0]["seconds"] / 900},
    }
    found = roofline_checks.window_discrepancies("measurement square-2048", timed, {"windows": 3, "window_s": 0.02})
    assert any(line.startswith("measurement square-2048: windows of [900, None] calls") for line in found), found


def test_a_launch_bound_shape_is_explained_by_its_graph_replay():
    m, n, k = DIMS["square-256"]
    prediction = {
        "m": m,
        "n": n,
        "k": k,
        **rl.classify(m, n, k, 2, 2, H200["peak_bf16_tflops"], H200["bandwidth_gbps"]),
    }
    windows = captured_windows("square-256")
    measurement = {"median_s": timing.per_call_s(windows), "windows": windows, "graph": captured_graph("square-256")}
    explained = explain(prediction, measurement, h200_context())
    [launch] = [c for c in explained["causes"] if c["cause"] == "launch_overhead"]
    eager, kernel = measurement["median_s"], CAUSES["passes"][2]["graph/square-256"]["s"]
    assert f"takes {eager * 1e6:.1f} us, its kernel alone {kernel * 1e6:.1f} us" in launch["detail"]
    assert f"{(eager - kernel) * 1e6:.1f} us of each call is the host's launch path" in launch["detail"]
    assert timing.host_launch_s(eager, measurement["graph"]) == pytest.approx(eager - kernel)


def test_the_timer_leaves_the_device_idle_twice_each_burst():
    from harness.probes.timing import Bursts, Clock

    timer = Bursts(Clock(), timing.GPU_GAP_RATIO)  # the GPU's rule, run on the CPU (the gaps are host sleeps)
    record = timer.measure(lambda i: time.sleep(0.002))
    bursts = [record["warmup"]["seconds"]] + [w["seconds"] for w in record["windows"]]
    for before, window in zip(bursts, record["windows"], strict=False):
        assert window["gap_before_s"] >= timing.GPU_GAP_RATIO * before
    assert record["warmup"]["calls"] >= timing.WARMUP_MIN_CALLS and len(record["windows"]) == timing.WINDOWS


# --- the dtype checks in one document, against the bundles that ran one step per dtype ----------------


def merged_checks():
    """The committed H200 bundle's roofline and roofline-fp8 documents as one (format 5's layout): the
    fp8 step's precision, roofs, predictions and measurements as a dtype check, unchanged."""
    roofline, fp8 = h200_raw("roofline"), h200_raw("roofline-fp8")
    merged = copy.deepcopy(roofline)
    merged["dtype_checks"] = [{key: fp8[key] for key in ("dtype", "precision", "roofs", "predictions", "measurements")}]
    return merged, fp8


def test_a_dtype_check_gives_the_figures_its_own_step_gave():
    merged, fp8 = merged_checks()
    by_dtype = rf.dtype_headlines(merged)
    assert set(by_dtype) == {"bf16", "fp8"}
    alone = rf.headlines(fp8)
    for key in ("burst_best_tflops", "best_shape", "burst_best_window", "peak_tflops", "classifications"):
        assert by_dtype["fp8"][key] == alone[key], key
    assert rf.headlines(merged)["dtype_burst_best_tflops"] == {"fp8": alone["burst_best_tflops"]}
    assert stress_table.roofline_for("fp8", {"roofline": merged})["measurements"] == fp8["measurements"]
    assert stress_table.roofline_for("fp8", {"roofline-fp8": fp8}) is fp8  # bundles before format 5
    assert "## fp8 (dtype check: the fixed burst-best shapes)" in table.render(merged)


def test_acceptance_judges_each_dtype_in_one_document_as_it_did_in_separate_steps():
    merged, fp8 = merged_checks()
    profile = resolve("h200-sxm-141gb")
    one = {r.name: r for r in gemm(BundleFacts(view_of({**h200_documents(), "roofline": merged})), profile)}
    assert one["gemm_fp8"].status == Verdict.PASS and one["gemm_bf16"].status == Verdict.PASS
    assert one["gemm_fp8"].measured.value == pytest.approx(rf.headlines(fp8)["burst_best_tflops"])
    assert "dtype_checks[fp8] measurements[].windows" in one["gemm_fp8"].evidence
    assert one["gemm_fp16"].status == Verdict.INCOMPLETE and "bf16, fp8 only" in one["gemm_fp16"].why


def test_a_tampered_dtype_check_is_caught_by_verify():
    merged, _ = merged_checks()
    merged["contract_version"] = 1
    found_before = set(rf.discrepancies(merged))
    merged["dtype_checks"][0]["roofs"]["ridge_flop_per_byte"] *= 2
    merged["dtype_checks"][0]["predictions"]["shapes"][0]["bound"] = "memory"
    found = "\n".join(set(rf.discrepancies(merged)) - found_before)
    assert "dtype_checks[fp8] roofs.ridge_flop_per_byte" in found
    assert "dtype_checks[fp8] prediction" in found and ": bound" in found


def test_nvml_around_a_window_reads_clock_power_and_reasons_and_says_why_a_field_is_missing():
    """What the card answered during a copy load (tests/fixtures/h200/nvml-fields.copy-load.json): the
    capture has no field reads, so the instant power is unavailable with that reason, not a default."""
    from harness.probes.roofline.nvml import NvmlReader
    from tests.h200_capture import nvml_fields

    reading = NvmlReader(nvml_fields("nvml-fields.copy-load.json"), "h0").read()
    assert reading["sm_clock_mhz"] == 1980 and reading["power_w"] == 141.739 and reading["clock_event_reasons"] == []
    assert "nvmlDeviceGetFieldValues was not recorded" in reading["power_instant_w"]["unavailable"]
    assert NvmlReader(None, None).read() is None  # a device without NVML: no readings, the windows say nothing


def test_a_dtype_checks_memory_roof_must_be_the_bandwidth_steps_median_too():
    from harness.analysis import cross_checks

    merged, _ = merged_checks()
    steps = [
        {"step": s, "analysis": s, "status": "completed", "output": f"raw/{s}.json"} for s in ("bandwidth", "roofline")
    ]
    documents = {"bandwidth": h200_raw("bandwidth"), "roofline": merged}
    assert cross_checks.roofline_roof_discrepancies(steps, documents) == []
    merged["dtype_checks"][0]["roofs"]["bandwidth_gbps"] = 4800.0
    [(member, problem)] = cross_checks.roofline_roof_discrepancies(steps, documents)
    assert member == "raw/roofline.json" and problem.startswith("dtype_checks[fp8].roofs.bandwidth_gbps 4800 GB/s")
