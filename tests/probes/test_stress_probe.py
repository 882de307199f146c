"""The stress probe on this CPU, for real: a short run end to end, the self-test faults caught and
named, a worker killed half way with what it wrote kept, and bad arguments refused."""

import json

import pytest
import torch

from harness.analysis import stress as stress_analysis  # discrepancies: the figures' and the records' checks
from harness.analysis.stress import figures as analysis
from harness.probes import stress as probe
from harness.probes.contract import probe_main
from harness.probes.stress import settings as settings_of
from harness.probes.stress.memory import INJECT_BIT, WORD_BYTES, inject_word
from harness.probes.stress.worker import TEST_FAULT_ENV
from harness.run.outcome import Completed, judge
from harness.runners.interface import ProbeInvocation
from harness.runners.local import LocalRunner


def run_probe(*args, env=None, timeout_s=240.0):
    """The probe as its own process through the local runner; the document, validated by its schema."""
    run = LocalRunner().run(ProbeInvocation("stress", tuple(args), timeout_s, env=env or {}))
    outcome = judge(run)
    assert isinstance(outcome, Completed), getattr(outcome, "describe", lambda: outcome)()
    return outcome.document, run.stderr.decode()


@pytest.fixture(scope="module")
def clean():
    return run_probe("--seconds", "2")


def device(document):
    [record] = document["devices"]
    return record


def test_cpu_run_is_complete_checked_and_says_how_it_was_sized(clean):
    document, _ = clean
    record = device(document)
    assert document["device"] == "cpu" and document["settings"]["dtype"] == "fp32"
    assert record["status"] == "completed" and record["failure"] is None and record["faults_injected"] == []
    assert "sized for a CI runner" in document["sizing"] and "host memory" in document["sizing"]
    buckets = record["gemm"]["buckets"]
    assert len(buckets) >= 2 and record["gemm"]["completed"]
    for bucket in buckets:
        assert len(bucket["gemm_ms"]) == len(bucket["mismatched_elements"]) == bucket["iterations"] >= 1
        assert set(bucket["mismatched_elements"]) == {0}
        assert bucket["span_ms"] > 0 and min(bucket["gemm_ms"]) > 0
    iterations = [b["first_iteration"] for b in buckets]
    assert iterations == [sum(b["iterations"] for b in buckets[:i]) for i in range(len(buckets))]


def test_cpu_run_records_nvml_as_unavailable_with_the_real_reason(clean):
    document, _ = clean
    record = device(document)
    for field in ("telemetry", "nvml_events", "counters_before", "counters_after", "power_limit_w"):
        assert record[field]["unavailable"].startswith("a CPU run: no GPU to read (NVML: ")
    assert any(limit["what"].startswith("NVML telemetry") for limit in document["limitations"])
    [no_gpu] = [limit["why"] for limit in document["limitations"] if limit["what"] == "a GPU to stress"]
    assert no_gpu.startswith("the CPU runs instead: ")  # this machine's own reason (no CUDA build, no driver...)


def test_cpu_memory_test_covers_host_memory_with_every_pattern(clean):
    memory = device(clean[0])["memory_test"]
    assert memory["where"] == "host memory" and memory["completed"]
    assert [p["pattern"] for p in memory["patterns"]] == ["walking_ones", "walking_zeros", "address", "random"]
    for pattern in memory["patterns"]:
        assert pattern["bytes_written"] == pattern["bytes_checked"] == memory["region_bytes"]
        assert len(pattern["mismatched_words_per_chunk"]) == memory["chunks"]
        assert set(pattern["mismatched_words_per_chunk"]) == {0} and pattern["first_failure"] is None


def test_clean_run_passes_and_its_summary_is_the_recomputation(clean):
    document, _ = clean
    summary = document["summary"]
    assert summary["verdict"]["status"] == "pass" and summary["verdict"]["failures"] == []
    assert {"power_target", "nvml_events", "clock_event_reasons", "ecc_and_row_remap"} <= set(
        summary["verdict"]["not_measured"]
    )
    checks = {c["name"]: c["status"] for c in summary["devices"][0]["checks"]}
    assert checks["result_check"] == checks["memory_test"] == checks["worker"] == "pass"
    assert stress_analysis.discrepancies(document) == []


def test_progress_lines_name_the_device_and_its_rate(clean):
    _, stderr = clean
    lines = [json.loads(line.split(" ", 1)[1]) for line in stderr.splitlines() if line.startswith("##progress ")]
    assert any("CPU0" in p["what"] and "TFLOPS" in p["what"] for p in lines)
    assert lines[-1]["total"] == 2 and lines[-1]["done"] == 2


def test_an_injected_gemm_fault_is_caught_and_named():
    document, _ = run_probe("--seconds", "1", "--no-memory-test", "--inject-fault", "gemm")
    record = device(document)
    assert record["faults_injected"] == [
        {
            "kind": "gemm",
            "iteration": settings_of.INJECT_GEMM_ITERATION,
            "element": [0, 0],
            "bit": 0,
            "when": "after the GEMM, before its check",
        }
    ]
    counts = [c for b in record["gemm"]["buckets"] for c in b["mismatched_elements"]]
    assert counts[settings_of.INJECT_GEMM_ITERATION] == 1 and sum(counts) == 1
    verdict = document["summary"]["verdict"]
    assert verdict["status"] == "fail"
    [failure] = verdict["failures"]
    assert failure.startswith("CPU (") and "result_check" in failure
    assert f"iteration {settings_of.INJECT_GEMM_ITERATION}: 1 element(s)" in failure
    assert stress_analysis.discrepancies(document) == []


def test_an_injected_memory_fault_is_caught_at_its_address():
    document, _ = run_probe("--seconds", "0.5", "--inject-fault", "memory")
    record = device(document)
    memory = record["memory_test"]
    [fault] = record["faults_injected"]
    offset = inject_word(memory["region_bytes"] // WORD_BYTES) * WORD_BYTES
    assert fault == {
        "kind": "memory",
        "pattern": "walking_ones",
        "byte_offset": offset,
        "bit": INJECT_BIT,
        "when": "after the pattern was written, before it was read back",
    }
    first = memory["patterns"][0]["first_failure"]
    assert first["byte_offset"] == offset and first["chunk"] == offset // memory["chunk_bytes"]
    assert first["chunk_byte_offset"] == offset % memory["chunk_bytes"]
    assert int(first["expected_hex"], 16) ^ int(first["found_hex"], 16) == 1 << INJECT_BIT
    assert [sum(p["mismatched_words_per_chunk"]) for p in memory["patterns"]] == [1, 0, 0, 0]
    [failure] = document["summary"]["verdict"]["failures"]
    assert "memory_test" in failure and f"byte offset {offset}" in failure and "walking_ones" in failure


def test_a_worker_killed_half_way_fails_the_run_and_keeps_what_it_wrote():
    document, _ = run_probe("--seconds", "3", env={TEST_FAULT_ENV: "die:0"})
    record = device(document)
    assert record["status"] == "failed" and record["failure"]["signal"] == "SIGKILL"
    assert record["failure"]["phase"] == "GEMM phase"
    assert [b["index"] for b in record["gemm"]["buckets"]] == [0] and not record["gemm"]["completed"]
    assert "ended before the memory test" in record["memory_test"]["unavailable"]
    assert document["summary"]["verdict"]["failures"][0].endswith("worker 0 killed by SIGKILL during the GEMM phase")
    assert stress_analysis.discrepancies(document) == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["--dtype", "fp8", "--device", "cpu"], "--dtype fp8 needs a GPU"),
        (["--memory-share", "1.5"], "--memory-share 1.5: must be in (0, 0.95]"),
        (["--seconds", "0"], "--seconds 0: must be positive"),
        (["--shape", "8x8"], "--shape '8x8' is not MxNxK"),
        (["--inject-fault", "gemm", "--no-check"], "--inject-fault gemm needs the result check"),
        (["--inject-fault", "memory", "--no-memory-test"], "--inject-fault memory needs the memory test"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(args, message, capsys):
    assert probe_main("stress", probe.build_parser, probe.measure, args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_default_gpu_shapes_say_why_and_keep_checking_cheap():
    assert settings_of.GPU_SHAPE == (8192, 8192, 16384) and settings_of.GPU_FP8_SHAPE == (8192, 8192, 32768)
    for dtype, shape in (
        ("bf16", settings_of.GPU_SHAPE),
        ("tf32", settings_of.GPU_SHAPE),
        ("fp8", settings_of.GPU_FP8_SHAPE),
    ):
        args = probe.build_parser().parse_args(["--dtype", dtype])
        settings = settings_of.settings_for(args, "cuda")
        assert tuple(settings["shape"].values()) == shape and settings["shape_why"] == settings_of.GPU_SHAPE_WHY
        assert settings["flop_per_gemm"] == 2 * shape[0] * shape[1] * shape[2]


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "tf32", "fp32", "fp8"])
def test_every_dtype_is_compared_bit_for_bit_and_a_flipped_bit_is_counted(dtype):
    """The probe's own operands and calls on a small shape (fp8 through torch._scaled_mm, each input
    with its own scale): repeated results match the reference, one flipped bit counts one element."""
    import torch

    from harness.probes.stress.gemm import GemmPlan, Operands

    ops = Operands(GemmPlan(m=64, n=64, k=128, dtype=dtype, device="cpu", seed=16, check=True, bucket_s=1.0))
    ops.gemm()
    ops.reference.copy_(ops.out)
    slot = torch.zeros((), dtype=torch.int64)
    ops.gemm()
    ops.compare_into(slot)
    assert int(slot) == 0 and not torch.isnan(ops.out.float()).any()
    ops.flip_one_bit()
    ops.compare_into(slot)
    assert int(slot) == 1


@pytest.mark.parametrize("numel", [1, 7, 1023, 1024, 1025, 64 * 64, 3 * 1024 + 5])
def test_the_mask_counter_counts_exactly_what_a_plain_sum_counts(numel):
    """Byte lanes never carry: every count from none to all of the mask, on odd sizes too."""
    from harness.probes.stress.count import MaskCounter

    counter = MaskCounter(numel, "cpu")
    slot = torch.zeros((), dtype=torch.int64)
    generator = torch.Generator().manual_seed(numel)
    for share in (0.0, 0.001, 0.5, 1.0):
        values = torch.rand(numel, generator=generator) < share
        counter.mask((numel,)).copy_(values)
        counter.count_into(slot)
        assert int(slot) == int(values.sum())
    counter.mask((numel,)).fill_(True)
    counter.count_into(slot)
    assert int(slot) == numel


def test_two_workers_at_once_each_recorded_checked_and_named(monkeypatch):
    """The multi-GPU path on the CPU: two worker processes at once (as on two GPUs; no two-GPU run
    could be taken), each with its own record and checks, a fault in each counted and failed."""
    from harness.present.tables import stress as table
    from harness.registry import fleet_metrics

    monkeypatch.setattr(probe, "pick_device", lambda args: ("cpu", [0, 1], "test: two CPU workers stand in for GPUs"))
    args = probe.build_parser().parse_args(["--seconds", "1", "--inject-fault", "gemm"])
    document = {"probe": "stress", **probe.measure(args)}
    assert [r["index"] for r in document["devices"]] == [0, 1]
    heads = analysis.headlines(document)
    assert [d["index"] for d in heads["devices"]] == [0, 1]
    assert heads["min_steady_tflops"] == min(d["steady_tflops"] for d in heads["devices"])
    failures = heads["verdict"]["failures"]
    assert len(failures) == 2 and all(": result_check: 1 of " in f for f in failures)
    metrics = {m.name: m.read(heads) for probe_name, m in fleet_metrics() if probe_name == "stress"}
    assert metrics["stress_result_mismatches"] == 2  # one flipped element in each worker, summed
    assert table.render(document).count("| CPU (") == 2
