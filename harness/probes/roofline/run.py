"""One roofline probe run: the device picked, its facts and roofs established, the predictions
recorded, the clock pre-heated, every shape of every dtype timed in bursts (and replayed from a CUDA
graph where launch-bound), the fusion chain timed, and the document assembled in that order, each
step marked in `timeline` (harness.probes.roofline's docstring says the order and why)."""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

from harness.analysis import timing as timing_rules
from harness.analysis.roofline import figures, gemm_shapes
from harness.analysis.roofline import model as analysis
from harness.analysis.roofline.explanation import context_of
from harness.probes.contract import (
    CONTRACT_VERSION,
    ProbeUsageError,
    describe_exception,
    log,
    progress,
    unavailable,
    utc_now,
)
from harness.probes.nvml import NvmlSession
from harness.probes.roofline import document as document_records
from harness.probes.roofline import sizing
from harness.probes.roofline.nvml import NvmlReader
from harness.probes.roofline.roofs import cpu_roofs, gpu_facts, gpu_roofs, parse_tile, requested_shapes
from harness.probes.timing import Bursts


class Setup(NamedTuple):
    """What the run settles before predicting: facts, the NVML handle, cache size, roofs."""

    facts: dict[str, Any]
    handle: Any
    cache_bytes: int
    roofs: dict[str, Any]
    known: bool  # both roofs are numbers (else no attainable rate is predicted)
    cannot: str | None  # why this dtype cannot run here (CPU: known now; GPU: checked after predicting)
    cpu_measured: dict[str, Any] | None


class Sweep(NamedTuple):
    """One dtype's shapes, their predictions, its roofs, and why it cannot run (None: it can)."""

    dtype: str
    shapes: list[gemm_shapes.Shape]
    predictions: list[dict[str, Any]]
    roofs: dict[str, Any]
    cannot: str | None


class Run:
    """One probe run: the device, its facts, roofs, the shapes and what happened to each."""

    def __init__(self, args: argparse.Namespace) -> None:
        import torch

        from harness.probes.roofline import gemms as torch_side

        self.args, self.torch, self.side = args, torch, torch_side
        self.device = self.pick_device()
        self.limitations: list[dict[str, str]] = []
        self.timeline: list[dict[str, str]] = []
        self.timer: Bursts | None = None
        self.done, self.total = 0, 0  # shapes finished and to do, over every dtype (progress)

    @property
    def bursts(self) -> Bursts:
        """The timer: made once the device's facts are read, before any GEMM is timed."""
        assert self.timer is not None, "the timer is made before any GEMM is timed"
        return self.timer

    def pick_device(self) -> str:
        available = self.torch.cuda.is_available()
        if self.args.device == "cuda" and not available:
            raise ProbeUsageError(
                "--device cuda: torch sees no CUDA device "
                f"(torch {self.torch.__version__}, CUDA build {self.torch.version.cuda})"
            )
        return "cuda" if self.args.device == "cuda" or (self.args.device == "auto" and available) else "cpu"

    def mark(self, event: str) -> str:
        at = utc_now()
        self.timeline.append({"event": event, "at": at})
        return at

    def measure(self) -> dict[str, Any]:
        args, side = self.args, self.side
        side.set_matmul_precision(args.dtype)
        with NvmlSession() as nvml:
            setup = self.establish(nvml)
            facts, roofs = setup.facts, setup.roofs
            max_square, squares = sizing.square_limit(args, self.device, facts)
            main = self.sweep_of(args.dtype, requested_shapes(args, max_square, self.device), roofs, setup.known)
            checks = [self.check_sweep(dtype, facts, roofs) for dtype in args.check_dtypes if dtype != args.dtype]
            self.total = len(main.shapes) + sum(len(c.shapes) for c in checks)
            recorded_at = self.mark("predictions recorded")
            cannot = side.can_run(args.dtype, "cuda") if self.device == "cuda" else setup.cannot
            if cannot:
                self.limitations.append({"what": f"{args.dtype} GEMMs on {self.device}", "why": cannot})
            main = main._replace(cannot=cannot)
            reader = NvmlReader(nvml.pynvml, setup.handle) if setup.handle is not None and nvml.ok else None
            self.timer = Bursts.of(self.torch, self.device, reader.read if reader is not None else None)
            preheat = self.preheat(main)  # the clock up before anything is timed
            floor = self.side.launch_floor(self.timer, self.device)
            facts["launch_floor_s"], facts["launch_floor_windows"] = floor["median_s"], floor["windows"]
            facts.update(self.kernel_floor(floor.pop("tiny")))
            document: dict[str, Any] = {
                # stamped again by probe_main; here first, since the causes the analysis recomputes depend on it
                "contract_version": CONTRACT_VERSION,
                "device": self.device,
                "dtype": args.dtype,
                "device_facts": facts,
                "roofs": roofs,
                "precision": document_records.precision_record(self.side, args.dtype, self.device),
                "torch_version": self.torch.__version__,
                "torch_cuda_build": self.torch.version.cuda or unavailable("a CPU-only torch build"),
                "predictions": {"shapes": main.predictions, "recorded_at": recorded_at},
                "timing": document_records.timing_record(self.bursts.gap_ratio, self.device),
            }
            if setup.cpu_measured:
                document["cpu_roofs"] = setup.cpu_measured
            document["preheat"] = preheat
            document["measurements"], skipped = self.measure_all(main, document, setup.cache_bytes, facts)
            if args.check_dtypes:
                document["dtype_checks"] = [
                    self.run_check(check, document, setup.cache_bytes, facts, skipped) for check in checks
                ]
                side.set_matmul_precision(args.dtype)
            progress(self.total, self.total, "GEMMs done")
            document["fusion"] = (
                self.fusion(facts, roofs) if not args.no_fusion else unavailable("skipped with --no-fusion")
            )
        document.update(
            timeline=self.timeline,
            limitations=self.limitations,
            sizing=sizing.sizing_sentence(args, self.device, squares, skipped, setup.cache_bytes, facts),
        )
        document["summary"] = {
            key: value
            for key, value in figures.headlines(document).items()
            if key in ("burst_best_tflops", "best_shape", "all_explained", "fusion_speedup", "classifications")
        }
        return document

    def establish(self, nvml: NvmlSession) -> Setup:
        """The device's facts and the roofs (on a CPU: measured, the only GEMMs before the predictions)."""
        args, side = self.args, self.side
        if self.device == "cuda":
            facts, handle = gpu_facts(self.torch, nvml, self.torch.cuda.current_device())
            cache_bytes = int(facts["cache_mib"] * 2**20)
            roofs, cannot, cpu_measured = gpu_roofs(args, facts), None, None  # cannot: checked after predicting
        else:
            handle, cache = None, side.cpu_cache_bytes()
            cache_bytes = cache if isinstance(cache, int) else 32 * 2**20
            facts = {
                "name": "cpu",
                "sm_count": unavailable("a CPU has no SMs: no wave model"),
                "cache_kind": "last-level cache",
                "cache_mib": cache_bytes / 2**20 if isinstance(cache, int) else cache,
                "max_sm_clock_mhz": unavailable("a CPU run: no NVML device"),
                "sku_id": None,
                "sku_evidence": "a CPU run: no GPU SKU",
            }
            cannot = side.can_run(args.dtype, "cpu")
            roofs, cpu_measured = cpu_roofs(args, side, cache_bytes, cannot is None)
        known = self.finish_roofs(roofs)
        tile_m, tile_n, tile_source = parse_tile(args.tile, args.dtype)
        if self.device == "cuda":
            facts.update(tile_m=tile_m, tile_n=tile_n, tile_source=tile_source)
        else:
            facts.update(
                tile_m=unavailable("no tile model on a CPU"),
                tile_n=unavailable("no tile model on a CPU"),
                tile_source="none",
            )
        self.mark(
            "device facts and roofs established"
            if self.device == "cuda"
            else "CPU roofs measured (the only GEMMs before the predictions)"
        )
        return Setup(facts, handle, cache_bytes, roofs, known, cannot, cpu_measured)

    @staticmethod
    def finish_roofs(roofs: dict[str, Any]) -> bool:
        """Adds the ridge (or why there is none); True when both roofs are numbers."""
        known = all(isinstance(roofs[k], (int, float)) for k in ("peak_tflops", "bandwidth_gbps"))
        roofs["ridge_flop_per_byte"] = (
            analysis.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"])
            if known
            else unavailable("no compute roof for this dtype here")
        )
        return known

    def sweep_of(self, dtype: str, shapes: list[gemm_shapes.Shape], roofs: dict[str, Any], known: bool) -> Sweep:
        in_bytes, out_bytes = analysis.DTYPE_WIDTHS[dtype]
        return Sweep(
            dtype, shapes, [document_records.predict(s, roofs, known, in_bytes, out_bytes) for s in shapes], roofs, None
        )

    def check_sweep(self, dtype: str, facts: dict[str, Any], main_roofs: dict[str, Any]) -> Sweep:
        """Another dtype's fixed burst-best shapes on its own roofs (the catalogue's peak for it)."""
        why = None
        if self.device == "cuda":
            try:
                roofs = gpu_roofs(self.args, facts, dtype)
            except ProbeUsageError as exc:
                why = str(exc)
        else:
            why = "a CPU run measures the compute roof of its own dtype only"
        if why:
            roofs = {
                "bandwidth_gbps": main_roofs["bandwidth_gbps"],
                "bandwidth_source": main_roofs["bandwidth_source"],
                "peak_tflops": unavailable(why),
                "peak_source": "none",
            }
        known = self.finish_roofs(roofs)
        return self.sweep_of(dtype, gemm_shapes.reference_shapes(self.device), roofs, known)._replace(cannot=why)

    def preheat(self, main: Sweep) -> Any:
        """A medium GEMM in bursts before the sweep (GPU only), recorded in the timeline."""
        if self.device != "cuda" or main.cannot:
            return unavailable("a CPU run: no clock to raise" if self.device != "cuda" else str(main.cannot))
        m, n, k = timing_rules.PREHEAT_SHAPE
        pool = self.side.OperandPool(main.dtype, self.device, 2**20, 2**26)
        operands, _ = pool.sets(m, n, k)
        call = self.side.gemm_call(main.dtype, self.device, operands, m, n)
        record = self.bursts.preheat(call, f"{m}x{n}x{k} {main.dtype}")
        del pool, operands, call
        self.mark(
            f"pre-heat: {record['bursts']} bursts of {m}x{n}x{k} {main.dtype}, {record['seconds'] * 1e3:.0f} ms "
            f"of GEMMs"
        )
        return record

    def run_check(
        self, check: Sweep, document: dict[str, Any], cache_bytes: int, facts: dict[str, Any], skipped: list[str]
    ) -> dict[str, Any]:
        """Another dtype's burst-best shapes, timed like the main sweep, as one entry of dtype_checks."""
        cannot = check.cannot or self.side.can_run(check.dtype, self.device)
        if cannot:
            self.limitations.append({"what": f"{check.dtype} GEMMs on {self.device} (dtype check)", "why": cannot})
        self.side.set_matmul_precision(check.dtype)
        entry: dict[str, Any] = {
            "dtype": check.dtype,
            "precision": document_records.precision_record(self.side, check.dtype, self.device),
            "roofs": check.roofs,
            "predictions": {"shapes": check.predictions, "recorded_at": document["predictions"]["recorded_at"]},
        }
        if self.device == "cuda":  # the wave model's tile for this dtype (fp32 is not a tensor-core dtype)
            tile_m, tile_n, tile_source = parse_tile(self.args.tile, check.dtype)
            entry["tile"] = {"tile_m": tile_m, "tile_n": tile_n, "tile_source": tile_source}
        view = {**document, **entry, "device_facts": {**facts, **entry.get("tile", {})}}
        entry["measurements"], more = self.measure_all(check._replace(cannot=cannot), view, cache_bytes, facts)
        skipped += more
        return entry

    def measure_all(
        self, sweep: Sweep, document: dict[str, Any], cache_bytes: int, facts: dict[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        seconds_budget, operand_budget = sizing.budgets(self.args, self.device, facts)
        in_bytes, out_bytes = analysis.DTYPE_WIDTHS[sweep.dtype]
        context = context_of(document)
        pool = (
            None
            if sweep.cannot
            else self.side.OperandPool(
                sweep.dtype, self.device, cache_bytes, 2**30 if self.device == "cuda" else 256 * 2**20
            )
        )
        results, skipped = [], []
        started = None
        shapes = sweep.shapes
        what = "GEMM" if sweep.dtype == self.args.dtype else f"{sweep.dtype} GEMM (dtype check)"
        for shape, prediction in zip(shapes, sweep.predictions, strict=True):
            progress(self.done, self.total, f"{sweep.dtype} {shape.label}")
            self.done += 1
            entry: dict[str, Any] = {"label": shape.label}
            operand_bytes = (shape.m * shape.k + shape.n * shape.k) * in_bytes + shape.m * shape.n * out_bytes
            predicted = sizing.predicted_seconds(prediction)
            if sweep.cannot:
                entry.update(status="skipped", reason=sweep.cannot)
            elif operand_bytes > operand_budget:
                entry.update(
                    status="skipped",
                    reason=f"operands {operand_bytes / 2**20:.0f} MiB exceed the "
                    f"{operand_budget / 2**20:.0f} MiB budget",
                )
            elif predicted > seconds_budget:
                entry.update(
                    status="skipped",
                    reason=f"predicted {predicted:.1f} s for the warm-up and the timed "
                    f"windows exceeds the {seconds_budget:g} s budget",
                )
            else:
                started = started or self.mark(f"first {what} timed")
                entry.update(self.measure_shape(shape, prediction, pool, context, sweep.dtype))
            if entry["status"] == "skipped" and not sweep.cannot:
                skipped.append(f"{shape.label} ({sweep.dtype})" if sweep.dtype != self.args.dtype else shape.label)
            results.append(entry)
        finished = self.mark(f"last {what} timed") if started else None
        del pool
        if self.device == "cuda":
            self.torch.cuda.empty_cache()
        return {"started_at": started, "finished_at": finished, "shapes": results}, skipped

    def measure_shape(self, shape, prediction, pool, context, dtype) -> dict[str, Any]:
        torch = self.torch
        try:
            operands, rotation = pool.sets(shape.m, shape.n, shape.k)
            call = self.side.gemm_call(dtype, self.device, operands, shape.m, shape.n)
            measured_at = utc_now()
            record = self.bursts.measure(call)
            eager = timing_rules.per_call_s(record["windows"])
            assert eager is not None, "the timer's windows give no time per call"
            if self.device == "cuda" and eager < timing_rules.GRAPH_BELOW_S:  # the kernels alone
                record["graph"] = self.graph(call, 1 + record["warmup"]["calls"])
        except Exception as exc:  # noqa: BLE001 - one shape's failure is recorded, the rest still run
            why = describe_exception(exc)
            self.limitations.append({"what": f"{dtype} GEMM {shape.label} ({shape.m}x{shape.n}x{shape.k})", "why": why})
            if self.device == "cuda":
                torch.cuda.empty_cache()
            return {"status": "failed", "reason": why}
        return {
            "status": "measured",
            "measured_at": measured_at,
            **document_records.stated(record, prediction, context, rotation, self.clocks(record["windows"])),
        }

    def kernel_floor(self, tiny: Any) -> dict[str, Any]:
        """The empty kernel replayed from a CUDA graph (GPU): the GPU's own cost per kernel, what a
        kernel-only time is compared with (the eager floor above is the host's launch path)."""
        if self.device != "cuda":
            return {"kernel_floor_s": unavailable("CUDA graphs need a GPU")}
        replay = self.graph(lambda i: tiny.add_(1), 0)
        if "unavailable" in replay:
            return {"kernel_floor_s": replay}
        return {"kernel_floor_s": replay["median_s"], "kernel_floor_windows": replay["windows"]}

    def graph(self, call, first: int) -> Any:
        try:
            return self.bursts.graph(call, first)
        except Exception as exc:  # noqa: BLE001 - a capture the device refuses is recorded, the eager figure stands
            return unavailable(f"CUDA graph capture or replay failed: {describe_exception(exc)}")

    def clocks(self, windows: list[dict[str, Any]]) -> Any:
        found = timing_rules.clocks_of(windows)
        if found is not None:
            return found
        return unavailable(
            "no NVML on this device" if self.device == "cpu" else "NVML gave no SM clock around the windows"
        )

    def fusion(self, facts, roofs) -> Any:
        elements = self.args.fusion_elements
        if not elements:
            if self.device == "cuda":
                budget = facts["memory_free_mib"] * 2**20 / 4
                elements = next((2**p for p in range(28, 19, -1) if 4 * 2**p * 4 <= budget), 2**20)
            else:
                elements = 2**26
        log(f"roofline: fusion chain on {elements} elements")
        try:
            result, limitations = self.side.measure_fusion(self.device, elements, self.bursts)
        except Exception as exc:  # noqa: BLE001 - e.g. out of memory: recorded, the GEMMs stand
            why = describe_exception(exc)
            self.limitations.append({"what": "elementwise fusion comparison", "why": why})
            return unavailable(why)
        self.limitations += limitations
        self.mark("fusion timed")
        known = all(isinstance(roofs[k], (int, float)) for k in ("peak_tflops", "bandwidth_gbps"))
        if known and isinstance(result["fused"], dict) and "median_s" in result["fused"]:
            result["comparison"] = analysis.fusion_comparison(result, roofs["peak_tflops"], roofs["bandwidth_gbps"])
        return result
