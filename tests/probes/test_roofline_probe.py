"""The roofline probe on this CPU, for real: small shapes, measured CPU roofs, fusion, plot, CLI."""

import copy
import json

import pytest
import torch

from harness.analysis import roofline as roofline_analysis
from harness.catalogue import by_id
from harness.cli import main
from harness.present.plots import roofline as plot
from harness.probes import roofline as probe
from harness.probes.contract import ProbeUsageError, options_argv, probe_main
from harness.probes.roofline import gemms as side
from harness.probes.roofline import roofs as roofs_side
from harness.run.outcome import Completed, judge
from harness.runners.interface import ProbeInvocation
from harness.runners.local import LocalRunner

SMALL = [
    "--dtype",
    "fp32",
    "--max-square",
    "512",
    "--decode-tokens",
    "1",
    "--prefill-tokens",
    "2048",
    "--max-shape-seconds",
    "0.5",
    "--max-operand-mib",
    "70",
    "--shapes",
    "64x96x128:tiny",
]

H200_DENSE = by_id("h200-sxm-141gb")["published"]["dense_tflops"]  # the catalogue is the source


def run_probe(*args, timeout_s=180.0):
    outcome = judge(LocalRunner().run(ProbeInvocation("roofline", tuple(args), timeout_s)))
    assert isinstance(outcome, Completed), getattr(outcome, "describe", lambda: outcome)()
    return outcome.document


@pytest.fixture(scope="module")
def document():
    return run_probe(*SMALL, "--fusion-elements", str(2**22))


def test_cpu_roofs_are_measured_and_said_to_be(document):
    assert document["device"] == "cpu"
    roofs, measured = document["roofs"], document["cpu_roofs"]
    assert roofs["bandwidth_gbps"] == measured["copy_gbps"] > 0
    assert roofs["peak_tflops"] == measured["gemm_peak_tflops"] > 0
    assert roofs["bandwidth_source"].startswith("measured here") and roofs["peak_source"].startswith("measured here")
    assert "CPU" in document["sizing"] and "measured here, not assumed" in document["sizing"]
    assert roofs["ridge_flop_per_byte"] == pytest.approx(roofs["peak_tflops"] * 1e3 / roofs["bandwidth_gbps"])


def test_every_shape_is_predicted_before_any_gemm_is_timed(document):
    recorded = document["predictions"]["recorded_at"]
    measured = [s for s in document["measurements"]["shapes"] if s["status"] == "measured"]
    assert measured, "no shape was measured"
    assert document["measurements"]["started_at"] >= recorded
    assert all(s["measured_at"] > recorded for s in measured)
    events = [e["event"] for e in document["timeline"]]
    assert events.index("predictions recorded") < events.index("first GEMM timed") < events.index("last GEMM timed")
    stamps = [e["at"] for e in document["timeline"]]
    assert stamps == sorted(stamps)
    labels = [p["label"] for p in document["predictions"]["shapes"]]
    assert labels == [s["label"] for s in document["measurements"]["shapes"]]
    for p in document["predictions"]["shapes"]:
        assert p["flops"] == 2 * p["m"] * p["n"] * p["k"]


def test_shapes_cover_squares_production_awkward_and_user(document):
    kinds = {p["kind"] for p in document["predictions"]["shapes"]}
    assert kinds == {"square", "prefill", "decode", "awkward", "reference", "user"}
    by_label = {s["label"]: s for s in document["measurements"]["shapes"]}
    assert by_label["square-256"]["status"] == "measured" and by_label["tiny"]["status"] == "measured"
    assert by_label["ref-1024x1024x1024"]["status"] == "measured"  # the CPU's fixed burst-best shape
    assert by_label["awkward-1000"]["status"] == "measured"
    skipped = [s for s in by_label.values() if s["status"] == "skipped"]
    assert all("budget" in s["reason"] for s in skipped)


def test_measured_shapes_are_timed_in_windows_and_explained_from_their_numbers(document):
    timing = document["timing"]
    assert timing["method"] == "windows" and timing["windows"] == 3 and timing["gap_ratio"] == 0  # no limiter on a CPU
    assert "within one run" not in timing["spread_scope"]["windows"] and "one run" in timing["spread_scope"]["windows"]
    assert document["preheat"] == {"unavailable": "a CPU run: no clock to raise"}
    assert timing["launch_bound_headline"] == "kernel_only" and document["contract_version"] >= 5
    assert document["device_facts"]["kernel_floor_s"] == {"unavailable": "CUDA graphs need a GPU"}
    for shape in document["measurements"]["shapes"]:
        if shape["status"] != "measured":
            continue
        windows = shape["windows"]
        assert len(windows) == 3 and all(w["calls"] >= 1 and w["seconds"] > 0 for w in windows)
        assert shape["warmup"]["calls"] >= 3 and shape["first_call_s"] > 0 and "times_s" not in shape
        means = [w["seconds"] / w["calls"] for w in windows]
        assert [w["per_call_s"] for w in windows] == means
        assert shape["median_s"] == sorted(means)[1]
        assert shape["window_spread"] == pytest.approx((max(means) - min(means)) / sorted(means)[1])
        assert shape["launch_bound"] == (shape["median_s"] < 20e-6) and "graph" not in shape  # no graphs on a CPU
        # contract 4's headline rule applies, but with no CUDA-graph replay every headline is eager
        assert (
            shape["rate_basis"] == "eager" and shape["headline_s"] == shape["median_s"] and "eager_tflops" not in shape
        )
        assert shape["explanation"]["text"].startswith(("Memory-bound", "Compute-side"))
        assert f"{shape['fraction_of_attainable']:.0%}" in shape["explanation"]["text"]
        assert shape["clocks"] == {"unavailable": "no NVML on this device"}


def test_the_document_agrees_with_its_recomputation(document):
    assert roofline_analysis.discrepancies(document) == []
    head = roofline_analysis.headlines(document)
    assert head["device"] == "cpu" and head["dtype"] == "fp32"
    assert head["best_shape"] == "ref-1024x1024x1024"  # the burst best is over the fixed shapes only
    assert head["burst_best_over"] == "the fixed burst-best shapes" and "dtype_checks" not in head
    assert set(head["classifications"]) == {p["label"] for p in document["predictions"]["shapes"]}


def test_tampering_is_caught(document):
    doc = copy.deepcopy(document)
    first = doc["predictions"]["shapes"][0]
    first["bound"] = "memory" if first["bound"] == "compute" else "compute"
    measured = [s for s in doc["measurements"]["shapes"] if s["status"] == "measured"]
    measured[0]["measured_at"] = "2000-01-01T00:00:00.000000Z"
    measured[1]["windows"][0]["seconds"] *= 3
    measured[1]["windows"][0]["per_call_s"] = measured[1]["windows"][0]["seconds"] / measured[1]["windows"][0]["calls"]
    measured[3]["windows"][2]["per_call_s"] *= 2
    measured[2]["launch_bound"] = not measured[2]["launch_bound"]
    doc["summary"]["burst_best_tflops"] *= 2
    found = "\n".join(roofline_analysis.discrepancies(doc))
    assert f"prediction {first['label']}: bound" in found
    assert "precedes the prediction" in found
    assert "summary.burst_best_tflops" in found
    assert f"measurement {measured[1]['label']}: window_spread" in found
    assert f"measurement {measured[2]['label']}: launch_bound" in found
    assert f"measurement {measured[3]['label']}: window 2 per_call_s" in found


def test_the_samples_behind_every_stated_median_are_kept_and_recomputed(document):
    doc = copy.deepcopy(document)
    facts, trials = doc["device_facts"], doc["cpu_roofs"]["gemm_trials"]
    assert len(facts["launch_floor_windows"]) == 3  # the empty kernel timed exactly as the GEMMs are
    assert all(len(t["times_s"]) == 3 for t in trials)
    facts["launch_floor_s"] /= 2
    trials[0]["median_s"] *= 2
    found = "\n".join(roofline_analysis.discrepancies(doc))
    assert "launch_floor_s" in found and "launch_floor_windows" in found
    assert f"cpu_roofs.gemm_trials[{trials[0]['size']}].median_s" in found


def test_fusion_counts_bytes_and_compares_time_with_traffic(document):
    fusion = document["fusion"]
    assert fusion["unfused_bytes"] == 4 * fusion["fused_bytes"] == 4 * 2 * 2**22 * 4
    assert fusion["unfused"]["median_s"] > 0 and len(fusion["unfused"]["windows"]) == 3  # timed like the GEMMs
    if "unavailable" in fusion["fused"]:  # no compiler here: recorded, not a crash
        assert any("torch.compile" in lim["what"] for lim in document["limitations"])
    else:
        assert fusion["outputs_match"] is True
        assert fusion["fused_by"]["name"] == "torch.compile"  # jiterator is CUDA-only: the reason is kept
        assert fusion["fused_by"]["why"] == "jiterator not used: a CPU run: jiterator compiles CUDA kernels only"
        assert "fewer bytes" in fusion["comparison"]["text"]
        assert document["summary"]["fusion_speedup"] == pytest.approx(
            fusion["unfused"]["median_s"] / fusion["fused"]["median_s"]
        )


def test_plot_is_written_non_empty_and_deterministic(document, tmp_path):
    first = plot.render(document, tmp_path / "a" / "roofline")
    second = plot.render(document, tmp_path / "b" / "roofline")
    assert [p.suffix for p in first] == [".png", ".svg"]
    for a, b in zip(first, second, strict=True):
        assert a.stat().st_size > 10_000 and a.read_bytes() == b.read_bytes()
    labelled = [p["label"] for p in plot.points(document)]
    measured = [s["label"] for s in document["measurements"]["shapes"] if s["status"] == "measured"]
    assert labelled[: len(measured)] == measured and "unfused chain" in labelled


def test_fp8_on_cpu_is_a_recorded_limitation_not_a_crash():
    doc = run_probe(
        "--dtype", "fp8", "--no-default-shapes", "--shapes", "64x64x64", "--no-fusion", "--bandwidth-gbps", "20"
    )
    assert doc["limitations"][0]["what"] == "fp8 GEMMs on cpu"
    assert doc["measurements"]["shapes"][0]["status"] == "skipped"
    assert "unavailable" in doc["roofs"]["peak_tflops"] and "unavailable" in doc["predictions"]["shapes"][0]["bound"]


def test_bad_shape_is_a_usage_error_before_any_work(capsys):
    assert probe_main("roofline", probe.build_parser, probe.measure, ["--shapes", "12x"]) == 2
    assert "not MxNxK" in capsys.readouterr().err
    assert probe_main("roofline", probe.build_parser, probe.measure, ["--prefill-tokens", "100"]) == 2


H200_FACTS = {"sku_id": "h200-sxm-141gb", "sku_evidence": "test"}


def gpu_args(*argv):
    return probe.build_parser().parse_args(list(argv))


def test_gpu_roofs_need_the_measured_bandwidth():
    with pytest.raises(ProbeUsageError, match="--bandwidth-gbps is required"):
        roofs_side.gpu_roofs(gpu_args("--dtype", "bf16"), H200_FACTS)


def test_gpu_peak_comes_from_the_catalogue_for_the_dtype_used():
    roofs = roofs_side.gpu_roofs(gpu_args("--dtype", "fp8", "--bandwidth-gbps", "4254"), H200_FACTS)
    assert roofs["peak_tflops"] == H200_DENSE["fp8"] and "h200-sxm-141gb" in roofs["peak_source"]
    roofs = roofs_side.gpu_roofs(
        gpu_args("--dtype", "tf32", "--bandwidth-gbps", "4254", "--peak-tflops", "400"), H200_FACTS
    )
    assert roofs["peak_tflops"] == 400 and roofs["peak_source"] == "given with --peak-tflops"
    with pytest.raises(ProbeUsageError, match="--peak-tflops"):
        roofs_side.gpu_roofs(
            gpu_args("--bandwidth-gbps", "4254"),
            {"sku_id": None, "sku_evidence": "PCI device id 0x1234 is not in the catalogue"},
        )


def test_fp8_call_uses_scaled_mm_with_per_tensor_scales_and_column_major_b():
    pool = side.OperandPool("fp8", "cpu", cache_bytes=2**16, pool_cap_bytes=2**20)
    operands, rotation = pool.sets(32, 48, 64)
    a, b = operands.sets[0]
    assert a.dtype == torch.float8_e4m3fn and b.stride() == (1, 64)  # B is [K, N] column-major
    out = side.gemm_call("fp8", "cpu", operands, 32, 48)(0)
    assert out.dtype == torch.bfloat16 and out.shape == (32, 48)
    reference = (a.float() * operands.scale) @ (b.float() * operands.scale)
    assert torch.allclose(out.float(), reference, rtol=2e-2, atol=2e-2)


def test_operand_sets_rotate_through_distinct_random_memory():
    pool = side.OperandPool("bf16", "cpu", cache_bytes=2**20, pool_cap_bytes=2**24)
    operands, rotation = pool.sets(64, 64, 64)
    assert rotation["input_sets"] == 2 * 2**20 // (2 * 64 * 64 * 2) and rotation["cache_defeated"]
    pointers = {a.data_ptr() for a, _ in operands.sets}
    assert len(pointers) == rotation["input_sets"]
    assert all(bool((a != 0).any()) for a, _ in operands.sets)


def test_command_writes_json_and_plot(tmp_path):
    out = tmp_path / "r" / "roofline.json"
    given = ["--bandwidth-gbps", "20", "--peak-tflops", "0.2"]  # given roofs: nothing to measure first
    assert main(["roofline", *SMALL, *given, "--no-fusion", "--max-square", "256", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["probe"] == "roofline" and doc["fusion"] == {"unavailable": "skipped with --no-fusion"}
    assert doc["roofs"]["peak_source"] == "given with --peak-tflops" and "cpu_roofs" not in doc
    for suffix in (".png", ".svg"):
        assert out.with_suffix(suffix).stat().st_size > 10_000


def test_command_passes_probe_options_through():
    from harness.cli import build_parser

    args = build_parser().parse_args(
        ["roofline", "--dtype", "fp8", "--bandwidth-gbps", "4254", "--shapes", "1x2x3", "4x5x6", "--no-fusion"]
    )
    assert options_argv(args, probe.OPTIONS) == [
        "--bandwidth-gbps",
        "4254.0",
        "--dtype",
        "fp8",
        "--shapes",
        "1x2x3",
        "4x5x6",
        "--no-fusion",
    ]


class FakeNvml:
    """The NVML calls gpu_facts makes, answering what nvidia-smi-query.csv recorded on the H200."""

    NVML_CLOCK_SM = 1

    class Pci:
        pciDeviceId = 0x233510DE

    class Memory:
        total = 143771 * 2**20

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return "h0"

    def nvmlDeviceGetUUID(self, handle):
        return "GPU-ebdc8522-46d8-d0c7-3612-d5a4b8930e9c"

    def nvmlDeviceGetMaxClockInfo(self, handle, clock):
        return 1980

    def nvmlDeviceGetPciInfo_v3(self, handle):
        return self.Pci()

    def nvmlDeviceGetMemoryInfo(self, handle):
        return self.Memory()

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle):
        return 700_000


class FakeTorch:
    class cuda:
        @staticmethod
        def get_device_properties(index):
            from types import SimpleNamespace

            return SimpleNamespace(
                name="NVIDIA H200",
                major=9,
                minor=0,
                multi_processor_count=132,
                L2_cache_size=60 * 2**20,
                uuid="ebdc8522-46d8-d0c7-3612-d5a4b8930e9c",
            )

        @staticmethod
        def mem_get_info(index):
            return 140 * 2**30, 143771 * 2**20


def test_gpu_facts_match_nvml_by_uuid_and_identify_the_h200_sku():
    from harness.probes.nvml import NvmlSession

    session = NvmlSession()
    session.pynvml = FakeNvml()
    facts, handle = roofs_side.gpu_facts(FakeTorch, session, 0)
    assert handle == "h0" and facts["sku_id"] == "h200-sxm-141gb"
    assert facts["sm_count"] == 132 and facts["cache_mib"] == 60 and facts["max_sm_clock_mhz"] == 1980
    roofs = roofs_side.gpu_roofs(gpu_args("--bandwidth-gbps", "4254"), facts)
    assert roofs["peak_tflops"] == H200_DENSE["bf16"]
    session.pynvml.nvmlDeviceGetUUID = lambda handle: "GPU-00000000-0000-0000-0000-000000000000"
    facts, handle = roofs_side.gpu_facts(FakeTorch, session, 0)
    assert handle is None and facts["sku_id"] is None and "no NVML device has torch's UUID" in facts["sku_evidence"]


def test_jiterator_is_refused_with_its_reason_where_it_cannot_run(monkeypatch):
    import torch

    from harness.probes.roofline import gemms as side

    assert side.jiterator_refusal("cpu") == "a CPU run: jiterator compiles CUDA kernels only"
    monkeypatch.setattr(torch.version, "hip", "6.2", raising=False)
    assert "ROCm" in side.jiterator_refusal("cuda")
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.cuda, "jiterator", object(), raising=False)
    assert "has no torch.cuda.jiterator._create_jit_fn" in side.jiterator_refusal("cuda")


def test_the_report_table_names_each_rate_a_burst_with_its_window(document):
    from harness.analysis.roofline.timings import burst_windows
    from harness.present.tables import roofline as table

    text = table.render(document)
    assert "**burst**" in text and "windows x ms" in text and "spread across windows" in text
    assert "says nothing about the next run" in text
    rows = burst_windows(document)
    assert rows and all(r["window_ms"] > 0 and r["timed_calls"] > 0 and r["windows"] == 3 for r in rows)
    # On a CPU no NVML clock is sampled: the cap state says why it is unknown rather than guessing.
    assert all(r["sm_clock_mhz"] is None and "unavailable" in r["power_cap"] for r in rows)


def test_a_dtype_check_is_timed_in_the_same_process_and_verified_with_the_run(document):
    """What --check-dtypes does on a GPU (its own roofs, predictions, windows), run here on the CPU for bf16
    with roofs given: the same code path, the document's own device facts and timer."""
    from harness.analysis.roofline import figures as roofline_figures
    from harness.analysis.roofline import gemm_shapes
    from harness.probes.timing import Bursts

    checked = [
        "--check-dtypes",
        "bf16",
        "--peak-tflops",
        "0.5",
    ]  # bf16's compute roof given: a CPU measures fp32's only
    run = probe.Run(gpu_args("--dtype", "fp32", "--device", "cpu", *checked))
    run.timer = Bursts.of(torch, "cpu")
    roofs = {
        "bandwidth_gbps": document["roofs"]["bandwidth_gbps"],
        "bandwidth_source": document["roofs"]["bandwidth_source"],
        "peak_tflops": 0.5,
        "peak_source": "given with --peak-tflops",
    }
    assert run.finish_roofs(roofs)
    check = run.sweep_of("bf16", [gemm_shapes.Shape("check-64", "user", 64, 96, 128, "test")], roofs, True)
    skipped = []
    cache = document["device_facts"]["cache_mib"]  # the run's own cache, as establish() hands it on (a
    # 480 MiB L3 here made a hard-coded 32 MiB disagree with the document's device facts)
    cache_bytes = int(cache * 2**20) if isinstance(cache, (int, float)) else 32 * 2**20
    entry = run.run_check(check, document, cache_bytes, document["device_facts"], skipped)
    assert entry["dtype"] == "bf16" and entry["precision"]["input_dtype"] == "torch.bfloat16" and not skipped
    [shape] = entry["measurements"]["shapes"]
    assert shape["status"] == "measured" and len(shape["windows"]) == 3
    merged = {**document, "argv": [*document["argv"], *checked], "dtype_checks": [entry]}
    assert roofline_analysis.discrepancies(merged) == []
    assert set(roofline_figures.dtype_headlines(merged)) == {"fp32", "bf16"}
    assert roofline_analysis.headlines(merged)["dtype_burst_best_tflops"] == {
        "bf16": None
    }  # 64x96x128 is no burst-best shape
    for window in shape["windows"]:
        window["seconds"] *= 2
        window["per_call_s"] *= 2
    assert any(
        p.startswith("dtype_checks[bf16] measurement check-64: median_s")
        for p in roofline_analysis.discrepancies(merged)
    )
