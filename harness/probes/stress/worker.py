"""One GPU (or the CPU) under stress: `python -m harness.probes.stress.worker CONFIG.json INDEX EVENTS.jsonl`.

Started by harness/probes/stress.py, never by hand. The worker owns its device for the whole run:
NVML telemetry and the event set, the GEMM phase, then the memory test, then the error counters
again. Everything it learns travels as JSON lines appended to EVENTS.jsonl and flushed per line
(ready, gemm_started, bucket, samples, nvml_event, gemm_finished, memory_started, memory_pattern,
memory_finished, finish; error on failure), so the probe keeps every finished bucket, sample and XID even when this
process dies half way, which a GPU fault may well make it do.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from harness.probes.collective.worker import Events
from harness.probes.contract import describe_exception, exit_now, unavailable
from harness.probes.lifetime import die_with_parent

TEST_FAULT_ENV = "RIG_DOSSIER_STRESS_FAULT"  # tests: "die:N" SIGKILLs the worker after bucket N is written


class LockedEvents(Events):
    """Events written from several threads (the GEMM loop, the NVML event thread)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> None:
        with self._lock:
            super().emit(event, **fields)


class Worker:
    def __init__(self, config: dict[str, Any], index: int, events: LockedEvents) -> None:
        import torch

        self.torch, self.config, self.index, self.events = torch, config, index, events
        self.cuda = config["device"] == "cuda"
        self.time_zero = time.monotonic()
        self.telemetry: Any = None
        self.watcher: Any = None
        self.counters: Any = None  # reads the error counters again after the load
        self.phase = "setup"

    # -- facts and NVML ------------------------------------------------------------------

    def facts(self) -> dict[str, Any]:
        torch = self.torch
        if not self.cuda:
            from harness.probes.bandwidth.device import cpu_name

            return {
                "name": cpu_name(),
                "uuid": None,
                "torch_version": torch.__version__,
                "torch_threads": torch.get_num_threads(),
            }
        torch.cuda.set_device(self.index)
        props = torch.cuda.get_device_properties(self.index)
        free, total = torch.cuda.mem_get_info(self.index)
        return {
            "name": props.name,
            "uuid": str(getattr(props, "uuid", "")) or None,
            "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count,
            "memory_total_mib": round(total / 2**20, 1),
            "memory_free_mib": round(free / 2**20, 1),
            "torch_version": torch.__version__,
        }

    def start_nvml(self, nvml: Any, uuid: str | None) -> dict[str, Any]:
        """Telemetry, the event set and the counters before the load; unavailable fields with NVML's reason."""
        from harness.probes.nvml import handle_by_uuid
        from harness.probes.stress import nvml as nv

        if not self.cuda:
            why = f"a CPU run: no GPU to read (NVML: {nvml.reason or 'loaded, but the device under test is the CPU'})"
            return {"nvml": unavailable(why)}
        handle = handle_by_uuid(nvml, uuid or "")
        if isinstance(handle, dict):
            return {"nvml": handle}
        self.telemetry = nv.Telemetry(nvml.pynvml, handle, self.config["sample_interval_s"], self.time_zero)
        self.watcher = nv.EventWatcher(
            nvml.pynvml, handle, self.time_zero, lambda event: self.events.emit("nvml_event", record=event)
        )
        found = {
            "nvml": {"matched": "NVML device with torch's UUID"},
            "power_limit_w": nv.power_limit_w(nvml.pynvml, handle),
            "counters_before": nv.error_counters(nvml.pynvml, handle),
            "nvml_events": self.watcher.start(),
        }
        self.counters = lambda: nv.error_counters(nvml.pynvml, handle)
        self.telemetry.start()
        return found

    def flush_samples(self) -> None:
        if self.telemetry is not None:
            samples = self.telemetry.drain()
            if samples:
                self.events.emit("samples", samples=samples)

    # -- phases --------------------------------------------------------------------------

    def gemm_phase(self) -> None:
        from harness.probes.stress.gemm import GemmLoop, GemmPlan

        c = self.config
        inject = c["inject_fault"] == "gemm"
        plan = GemmPlan(
            m=c["shape"]["m"],
            n=c["shape"]["n"],
            k=c["shape"]["k"],
            dtype=c["dtype"],
            device=c["device"],
            seed=c["seed"],
            check=c["check"],
            bucket_s=c["bucket_s"],
            inject_iteration=c["inject_gemm_iteration"] if inject else None,
        )
        self.phase = "GEMM setup"
        loop = GemmLoop(plan, self.time_zero)
        warmup = loop.prepare()
        self.events.emit("gemm_started", warmup=warmup, reference_digest=self.reference_digest(loop, plan))
        self.phase = "GEMM phase"

        def on_bucket(bucket: dict[str, Any]) -> None:
            self.flush_samples()
            self.events.emit("bucket", bucket=bucket)
            apply_test_fault(bucket["index"])

        result = loop.run(c["seconds"], on_bucket)
        del loop
        self.flush_samples()
        self.events.emit("gemm_finished", **result)

    def reference_digest(self, loop: Any, plan: Any) -> dict[str, Any]:
        """The reference result's sha256 and what its bits depend on (harness.analysis.digests)."""
        from harness.probes.result_digest import gemm_libraries, tensor_sha256

        self.phase = "reference digest"
        reference = loop.ops.reference
        return {
            "sha256": tensor_sha256(reference),
            "dtype": str(reference.dtype).removeprefix("torch."),
            "shape": list(reference.shape),
            "bytes": reference.numel() * reference.element_size(),
            "seed": plan.seed,
            "gemm_index": loop.warmup["iterations"] + 1,
            "libraries": gemm_libraries(self.torch, plan.device),
        }

    def memory_phase(self) -> None:
        from harness.analysis.stress.memory_test import plan_region
        from harness.probes.stress.memory import MemoryPlan, MemoryTest

        c, torch = self.config["memory"], self.torch
        self.phase = "memory test setup"
        if self.cuda:
            torch.cuda.empty_cache()
            free, _total = torch.cuda.mem_get_info(self.index)
            where, share, budget = "device memory", c["share"], None
        else:
            free, where, share, budget = None, "host memory", None, c["host_bytes"]
        region, chunk = plan_region(free if free is not None else c["host_bytes"], share or 1.0, c["chunk_bytes"])
        plan = MemoryPlan(
            self.config["device"], region, chunk, self.config["seed"], inject=self.config["inject_fault"] == "memory"
        )
        test = MemoryTest(plan)
        self.events.emit(
            "memory_started",
            where=where,
            free_bytes=free,
            share_of_free=share,
            host_budget_bytes=budget,
            region_bytes=region,
            chunk_bytes=chunk,
            chunks=len(test.chunks),
            start_s=self._now(),
        )
        self.phase = "memory test"

        def on_pattern(record: dict[str, Any]) -> None:
            self.flush_samples()
            self.events.emit("memory_pattern", record=record)

        result = test.run(on_pattern)
        self.events.emit("memory_finished", end_s=self._now(), fault_injected=result["fault_injected"])

    def _now(self) -> float:
        return round(time.monotonic() - self.time_zero, 4)

    def run(self) -> None:
        from harness.probes.nvml import NvmlSession

        self.torch.set_float32_matmul_precision("high" if self.config["dtype"] == "tf32" else "highest")
        facts = self.facts()
        with NvmlSession() as nvml:
            found = self.start_nvml(nvml, facts.get("uuid"))
            self.events.emit("ready", facts=facts, **found)
            try:
                self.gemm_phase()
                if self.config["memory"]["enabled"]:
                    self.memory_phase()
            finally:
                self.finish()

    def finish(self) -> None:
        """Stop the threads; the last samples and the counters after the load."""
        done: dict[str, Any] = {"end_s": self._now()}
        if self.telemetry is not None:
            self.telemetry.stop()
            self.flush_samples()
        if self.watcher is not None:
            broke_off = self.watcher.stop()
            if broke_off:
                done["nvml_events_wait_error"] = broke_off
        if self.counters is not None:
            done["counters_after"] = self.counters()
        self.events.emit("finish", **done)


def apply_test_fault(bucket_index: int) -> None:
    """The test hook: a real death (SIGKILL, as a GPU fault may bring) right after one bucket."""
    kind, _, at = os.environ.get(TEST_FAULT_ENV, "").partition(":")
    if kind == "die" and at.isdigit() and int(at) == bucket_index:
        os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    die_with_parent()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    config = json.loads(Path(argv[0]).read_text())
    events = LockedEvents(Path(argv[2]))
    worker = None
    try:
        worker = Worker(config, int(argv[1]), events)
        worker.run()
    except Exception as exc:  # noqa: BLE001 - the failure is recorded for the probe, then the exit code says it
        events.emit(
            "error",
            phase=worker.phase if worker else "start",
            message=describe_exception(exc),
            traceback=traceback.format_exc()[-4000:],
        )
        return 1
    return 0


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))  # every event is flushed as written: nothing is lost to the fast exit
