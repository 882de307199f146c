"""M1T2 roofline probe: GEMMs classified before they run, timed, then explained.

The roofs are the measured HBM bandwidth (the bandwidth probe's sustained median, given with
--bandwidth-gbps) and the dense peak of the dtype actually used (--peak-tflops, else the
catalogue entry of the SKU NVML identifies). On a CPU both roofs are measured here: a copy
larger than the last-level cache and the best square GEMM the CPU reaches.

Order, recorded in `timeline`: roofs established (on a CPU: measured) -> predictions recorded (FLOPs,
fewest bytes, intensity, bound and attainable rate) -> GEMMs timed -> fusion timed.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from harness.analysis.roofline import figures, gemm_shapes
from harness.analysis.roofline import model as analysis
from harness.probes.roofline.roofs import cpu_roofs, gpu_facts, gpu_roofs, parse_tile, requested_shapes
from harness.probes.contract import (Option, ProbeUsageError, describe_exception, log, options_parser, probe_main,
                                     progress, unavailable, utc_now)
from harness.probes.nvml import NvmlSession, Sampler

NAME = "roofline"
DTYPES = tuple(analysis.DTYPE_WIDTHS)
GPU_TIMING = dict(warmup=5, min_iterations=10, max_iterations=100, target_s=0.2)
CPU_TIMING = dict(warmup=1, min_iterations=3, max_iterations=20, target_s=0.1)
CPU_MAX_SQUARE = 1024
SAMPLE_INTERVAL_S = 0.01  # short shapes (~10 ms) must get a clock reading of their own


OPTIONS = (
    Option(("--bandwidth-gbps",), dict(type=float, metavar="B",
        help="memory roof in GB/s: the bandwidth probe's sustained median (required on a GPU; "
             "measured here on a CPU unless given)")),
    Option(("--dtype",), dict(choices=DTYPES, default="bf16", help="GEMM dtype (default bf16)")),
    Option(("--peak-tflops",), dict(type=float, metavar="P",
        help="dense compute roof for the dtype in TFLOPS (default: the catalogue's figure "
             "for the identified SKU; measured on a CPU)")),
    Option(("--shapes",), dict(nargs="+", default=[], metavar="MxNxK[:label]",
        help="extra GEMM shapes, C[M,N] = A[M,K] @ B[K,N]")),
    Option(("--shapes-file",), dict(type=Path, metavar="F",
        help="extra shapes, one 'MxNxK[:label]' per line, '#' comments")),
    Option(("--no-default-shapes",), dict(action="store_true",
        help="run only the shapes given with --shapes/--shapes-file")),
    Option(("--max-square",), dict(type=int, metavar="N",
        help=f"largest square size (default: 16384 on a GPU, memory permitting; "
             f"{CPU_MAX_SQUARE} on a CPU)")),
    Option(("--prefill-tokens",), dict(type=int, nargs="+", metavar="M",
        default=list(gemm_shapes.DEFAULT_PREFILL_TOKENS),
        help="prefill-like M for the model projections (2048..8192; default 2048 8192)")),
    Option(("--decode-tokens",), dict(type=int, nargs="+", metavar="M",
        default=list(gemm_shapes.DEFAULT_DECODE_TOKENS),
        help="decode-like M for the model projections (1..64; default 1 64)")),
    Option(("--max-shape-seconds",), dict(type=float, metavar="S",
        help="skip a shape whose predicted warm-up + minimum timed calls exceed S seconds "
             "(default 5 on a GPU, 2 on a CPU)")),
    Option(("--max-operand-mib",), dict(type=float, metavar="MIB",
        help="skip a shape whose inputs and output exceed this (default: a quarter of free "
             "GPU memory; 512 on a CPU)")),
    Option(("--tile",), dict(metavar="MxN",
        help="output tile the wave model assumes (default 128x256 for tensor-core dtypes, "
             "128x128 for fp32)")),
    Option(("--no-fusion",), dict(action="store_true", help="skip the elementwise fusion comparison")),
    Option(("--fusion-elements",), dict(type=int, metavar="N",
        help="elements in the fusion chain (default 2^28 on a GPU, memory permitting; 2^26 on a CPU)")),
    Option(("--device",), dict(choices=("auto", "cuda", "cpu"), default="auto",
        help="where to run (default: cuda when available)")),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__, OPTIONS)


# ------------------------------------------------------------------------------ the run

class Setup(NamedTuple):
    """What the run settles before predicting: facts, the NVML handle, cache size, roofs."""

    facts: dict[str, Any]
    handle: Any
    cache_bytes: int
    roofs: dict[str, Any]
    known: bool  # both roofs are numbers (else no attainable rate is predicted)
    cannot: str | None  # why this dtype cannot run here (CPU: known now; GPU: checked after predicting)
    cpu_measured: dict[str, Any] | None


class Run:
    """One probe run: the device, its facts, roofs, the shapes and what happened to each."""

    def __init__(self, args: argparse.Namespace) -> None:
        import torch

        from harness.probes.roofline import gemms as torch_side
        self.args, self.torch, self.side = args, torch, torch_side
        self.device = self.pick_device()
        self.limitations: list[dict[str, str]] = []
        self.timeline: list[dict[str, str]] = []
        self.sampler: Sampler | None = None

    def pick_device(self) -> str:
        available = self.torch.cuda.is_available()
        if self.args.device == "cuda" and not available:
            raise ProbeUsageError("--device cuda: torch sees no CUDA device "
                                  f"(torch {self.torch.__version__}, CUDA build {self.torch.version.cuda})")
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
            max_square, sizing = self.square_limit(facts)
            shapes = requested_shapes(args, max_square)
            in_bytes, out_bytes = analysis.DTYPE_WIDTHS[args.dtype]
            predictions = {"shapes": [self.predict(s, roofs, setup.known, in_bytes, out_bytes) for s in shapes]}
            predictions["recorded_at"] = self.mark("predictions recorded")
            cannot = side.can_run(args.dtype, "cuda") if self.device == "cuda" else setup.cannot
            if cannot:
                self.limitations.append({"what": f"{args.dtype} GEMMs on {self.device}", "why": cannot})
            timing = side.Timing(**(GPU_TIMING if self.device == "cuda" else CPU_TIMING))
            facts["launch_floor_s"], facts["launch_floor_times_s"] = side.launch_floor(
                self.device, 200 if self.device == "cuda" else 100)
            document: dict[str, Any] = {
                "device": self.device, "dtype": args.dtype, "device_facts": facts, "roofs": roofs,
                "precision": self.precision_record(in_bytes, out_bytes),
                "torch_version": self.torch.__version__,
                "torch_cuda_build": self.torch.version.cuda or unavailable("a CPU-only torch build"),
                "predictions": predictions,
            }
            if setup.cpu_measured:
                document["cpu_roofs"] = setup.cpu_measured
            with self.sampling(nvml, setup.handle):
                document["measurements"], skipped = self.measure_all(
                    shapes, predictions["shapes"], analysis.context_of(document), cannot, setup.cache_bytes, timing,
                    facts)
            document["fusion"] = self.fusion(timing, facts, roofs) if not args.no_fusion else unavailable(
                "skipped with --no-fusion")
        document.update(timeline=self.timeline, limitations=self.limitations,
                        sizing=self.sizing_sentence(sizing, skipped, setup.cache_bytes, facts))
        document["summary"] = {key: value for key, value in figures.headlines(document).items()
                               if key in ("burst_best_tflops", "best_shape", "all_explained", "fusion_speedup",
                                          "classifications")}
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
            facts = {"name": "cpu", "sm_count": unavailable("a CPU has no SMs: no wave model"),
                     "cache_kind": "last-level cache",
                     "cache_mib": cache_bytes / 2**20 if isinstance(cache, int) else cache,
                     "max_sm_clock_mhz": unavailable("a CPU run: no NVML device"),
                     "sku_id": None, "sku_evidence": "a CPU run: no GPU SKU"}
            cannot = side.can_run(args.dtype, "cpu")
            roofs, cpu_measured = cpu_roofs(args, side, cache_bytes, cannot is None)
        known = all(isinstance(roofs[k], (int, float)) for k in ("peak_tflops", "bandwidth_gbps"))
        roofs["ridge_flop_per_byte"] = (analysis.ridge_flop_per_byte(roofs["peak_tflops"], roofs["bandwidth_gbps"])
                                        if known else unavailable("no compute roof for this dtype here"))
        tile_m, tile_n, tile_source = parse_tile(args.tile, args.dtype)
        if self.device == "cuda":
            facts.update(tile_m=tile_m, tile_n=tile_n, tile_source=tile_source)
        else:
            facts.update(tile_m=unavailable("no tile model on a CPU"), tile_n=unavailable("no tile model on a CPU"),
                         tile_source="none")
        self.mark("device facts and roofs established" if self.device == "cuda"
                  else "CPU roofs measured (the only GEMMs before the predictions)")
        return Setup(facts, handle, cache_bytes, roofs, known, cannot, cpu_measured)

    def precision_record(self, in_bytes: int, out_bytes: int) -> dict[str, Any]:
        dtype, side = self.args.dtype, self.side
        return {"input_dtype": str(side.TORCH_DTYPES[dtype]),
                "output_dtype": "torch.bfloat16" if dtype == "fp8" else str(side.TORCH_DTYPES[dtype]),
                "input_bytes": in_bytes, "output_bytes": out_bytes, "path": side.path_description(dtype, self.device)}

    @contextlib.contextmanager
    def sampling(self, nvml: NvmlSession, handle: Any) -> Iterator[None]:
        """NVML clock samples while the GEMMs run (each shape's clocks are read from them)."""
        if handle is not None and nvml.ok:
            self.sampler = Sampler(nvml.pynvml, handle, interval_s=SAMPLE_INTERVAL_S)
            self.sampler.__enter__()
        try:
            yield
        finally:
            if self.sampler is not None:
                self.sampler.__exit__(None, None, None)

    def square_limit(self, facts: dict[str, Any]) -> tuple[int, str]:
        if self.args.max_square:
            return self.args.max_square, f"squares up to {self.args.max_square} (given with --max-square)"
        if self.device == "cpu":
            return CPU_MAX_SQUARE, f"on a CPU only small squares, up to {CPU_MAX_SQUARE}"
        width = max(analysis.DTYPE_WIDTHS[self.args.dtype])
        budget = facts["memory_free_mib"] * 2**20 / 4
        fits = [s for s in gemm_shapes.SQUARE_SIZES if 3 * s * s * width <= budget]
        top = max(fits) if fits else gemm_shapes.SQUARE_SIZES[0]
        return top, f"squares up to {top} (three operands within a quarter of {facts['memory_free_mib']:.0f} MiB free)"

    def predict(self, shape: gemm_shapes.Shape, roofs: dict[str, Any], known: bool,
                in_bytes: int, out_bytes: int) -> dict[str, Any]:
        if known:
            return {**shape.as_dict(), **analysis.classify(shape.m, shape.n, shape.k, in_bytes, out_bytes,
                                                           roofs["peak_tflops"], roofs["bandwidth_gbps"])}
        flops = analysis.gemm_flops(shape.m, shape.n, shape.k)
        nbytes = analysis.gemm_min_bytes(shape.m, shape.n, shape.k, in_bytes, out_bytes)
        why = unavailable("no compute roof for this dtype on this device")
        return {**shape.as_dict(), "flops": flops, "min_bytes": nbytes, "ai_flop_per_byte": flops / nbytes,
                "bound": why, "attainable_tflops": why}

    def budgets(self, facts: dict[str, Any]) -> tuple[float, float]:
        args = self.args
        seconds = args.max_shape_seconds or (5.0 if self.device == "cuda" else 2.0)
        if args.max_operand_mib:
            operand = args.max_operand_mib * 2**20
        else:
            operand = facts["memory_free_mib"] * 2**20 / 4 if self.device == "cuda" else 512 * 2**20
        return seconds, operand

    def measure_all(self, shapes, predictions, context, cannot, cache_bytes, timing, facts):
        seconds_budget, operand_budget = self.budgets(facts)
        in_bytes, out_bytes = analysis.DTYPE_WIDTHS[self.args.dtype]
        pool = None if cannot else self.side.OperandPool(
            self.args.dtype, self.device, cache_bytes, 2**30 if self.device == "cuda" else 256 * 2**20)
        results, skipped = [], []
        started = None
        for done, (shape, prediction) in enumerate(zip(shapes, predictions)):
            progress(done, len(shapes), shape.label)
            entry: dict[str, Any] = {"label": shape.label}
            operand_bytes = (shape.m * shape.k + shape.n * shape.k) * in_bytes + shape.m * shape.n * out_bytes
            if cannot:
                entry.update(status="skipped", reason=cannot)
            elif operand_bytes > operand_budget:
                entry.update(status="skipped", reason=f"operands {operand_bytes / 2**20:.0f} MiB exceed the "
                                                      f"{operand_budget / 2**20:.0f} MiB budget")
            elif (predicted := (timing.warmup + timing.min_iterations) * prediction["flops"]
                  / (prediction["attainable_tflops"] * 1e12)) > seconds_budget:
                entry.update(status="skipped", reason=f"predicted {predicted:.1f} s for warm-up and the minimum "
                                                      f"calls exceeds the {seconds_budget:g} s budget")
            else:
                started = started or self.mark("first GEMM timed")
                entry.update(self.measure_shape(shape, prediction, pool, timing, context))
            if entry["status"] == "skipped" and not cannot:
                skipped.append(shape.label)
            results.append(entry)
        progress(len(shapes), len(shapes), "GEMMs done")
        finished = self.mark("last GEMM timed") if started else None
        return {"started_at": started, "finished_at": finished, "shapes": results}, skipped

    def measure_shape(self, shape, prediction, pool, timing, context) -> dict[str, Any]:
        side, torch = self.side, self.torch
        try:
            operands, rotation = pool.sets(shape.m, shape.n, shape.k)
            call = side.gemm_call(self.args.dtype, self.device, operands, shape.m, shape.n)
            measured_at = utc_now()
            begin = time.monotonic()
            times, warm = side.timed(self.device, call, timing)
            end = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - one shape's failure is recorded, the rest still run
            why = describe_exception(exc)
            self.limitations.append({"what": f"GEMM {shape.label} ({shape.m}x{shape.n}x{shape.k})", "why": why})
            if self.device == "cuda":
                torch.cuda.empty_cache()
            return {"status": "failed", "reason": why}
        median = statistics.median(times)
        entry = {"status": "measured", "measured_at": measured_at, "warmup": warm, "iterations": len(times),
                 "times_s": times, "median_s": median, **rotation,
                 "achieved_tflops": prediction["flops"] / median / 1e12,
                 "effective_gbps": prediction["min_bytes"] / median / 1e9,
                 "fraction_of_attainable": prediction["flops"] / median / 1e12 / prediction["attainable_tflops"],
                 "clocks": self.clocks_between(begin, end)}
        entry["explanation"] = analysis.explain(prediction, entry, context)
        return entry

    def clocks_between(self, begin: float, end: float) -> Any:
        if self.sampler is None:
            return unavailable("no NVML sampler on this device")
        inside = [s for s in list(self.sampler.samples) if begin <= s["monotonic_s"] <= end]
        clocks = [s["sm_clock_mhz"] for s in inside if isinstance(s["sm_clock_mhz"], int)]
        if not clocks:
            return unavailable(f"no NVML sample fell inside the {(end - begin) * 1e3:.0f} ms this shape ran "
                               f"(sampled every {SAMPLE_INTERVAL_S * 1e3:.0f} ms)")
        reasons = sorted({r for s in inside if isinstance(s["clock_event_reasons"], list)
                          for r in s["clock_event_reasons"]})
        return {"samples": len(clocks), "sm_clock_mhz_samples": clocks, "sm_clock_mhz_median": statistics.median(clocks),
                "clock_event_reasons": reasons}

    def fusion(self, timing, facts, roofs) -> Any:
        elements = self.args.fusion_elements
        if not elements:
            if self.device == "cuda":
                budget = facts["memory_free_mib"] * 2**20 / 4
                elements = next((2**p for p in range(28, 19, -1) if 4 * 2**p * 4 <= budget), 2**20)
            else:
                elements = 2**26
        log(f"roofline: fusion chain on {elements} elements")
        try:
            result, limitations = self.side.measure_fusion(self.device, elements, timing)
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

    def sizing_sentence(self, squares: str, skipped: list[str], cache_bytes: int, facts: dict[str, Any]) -> str:
        where = (f"{facts['name']} ({facts['sm_count']} SMs, {facts['cache_mib']:.0f} MiB L2)"
                 if self.device == "cuda" else f"the CPU ({cache_bytes / 2**20:.0f} MiB last-level cache)")
        seconds, operand = self.budgets(facts)
        if not isinstance(facts["cache_mib"], (int, float)):
            where += f" (cache size unreadable, {cache_bytes / 2**20:.0f} MiB assumed for rotation only)"
        text = (f"On {where}: {squares}; Llama-3-8B projections at prefill M {self.args.prefill_tokens} and "
                f"decode M {self.args.decode_tokens}; small shapes rotate input sets so that twice the "
                f"{cache_bytes / 2**20:.0f} MiB cache separates reuses; a shape is skipped past "
                f"{seconds:g} s predicted or {operand / 2**20:.0f} MiB of operands")
        if self.device == "cpu":
            text += ("; on a CPU the roofs are measured here, not assumed, and the shared input pool is "
                     "capped at 256 MiB, so the smallest shapes may still be served from a cache that large")
        if skipped:
            text += f"; skipped by these limits: {', '.join(skipped)}"
        return text + "."


def measure(args: argparse.Namespace) -> dict[str, Any]:
    requested_shapes(args, max_square=0)  # bad shapes or token counts fail before any work
    parse_tile(args.tile, args.dtype)
    return Run(args).measure()


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
