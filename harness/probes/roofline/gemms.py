"""The roofline probe's measuring machinery: operands, GEMM calls, CPU roofs, fusion.

Standard library and torch only. GEMMs, the launch floor and the fusion chain are timed as bursts
of windows by harness.probes.timing.Bursts (why: harness.analysis.timing); the CPU roofs, measured
before any prediction, time each call with the same module's Clock (`time_each`).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness.analysis.roofline.model import (
    DTYPE_WIDTHS,
    FUSION_CHAIN,
    OPERAND_ALIGN_ELEMENTS,
    fusion_accounting,
    input_set_bytes,
)
from harness.analysis.timing import per_call_s, window_spread
from harness.probes.contract import describe_exception, unavailable
from harness.probes.timing import Bursts, Clock

TORCH_DTYPES = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "tf32": torch.float32,
    "fp8": torch.float8_e4m3fn,
}
FP8_MAX = 448.0  # largest finite float8_e4m3fn
CPU_DTYPES = ("fp32", "bf16")


def time_each(device: str, call: Callable[[int], Any], count: int, first: int = 0) -> list[float]:
    """Seconds for each of `count` calls call(first), call(first+1), ... (harness.probes.timing:
    one marker pair per call; the CPU roofs, measured before any prediction)."""
    return Clock.of(torch, device).each(call, count, first)


def set_matmul_precision(dtype: str) -> None:
    """fp32 means IEEE fp32 (TF32 off); tf32 means fp32 storage through TF32 tensor cores."""
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")


def path_description(dtype: str, device: str) -> str:
    if dtype == "fp8":
        return (
            "torch._scaled_mm, float8_e4m3fn inputs with per-tensor float32 scales, bf16 output, "
            "A row-major, B column-major"
        )
    library = "cuBLAS" if device == "cuda" else "the CPU BLAS"
    mode = {"tf32": " with TF32 tensor-core math", "fp32": " with TF32 off"}.get(dtype, "")
    return f"torch.mm ({library}) in {dtype}{mode}, A row-major, B column-major (x @ W.T)"


class OperandPool:
    """Random operands, never zeros, rotated so that a small GEMM does not run from cache.

    One pool of random elements serves every shape small enough: each input set is a pair of
    views (A and W) at different offsets, so consecutive calls touch different memory. A shape
    too large for the pool gets its own freshly drawn set.
    """

    def __init__(self, dtype: str, device: str, cache_bytes: int, pool_cap_bytes: int) -> None:
        self.dtype, self.device = dtype, device
        self.in_bytes = DTYPE_WIDTHS[dtype][0]
        self.cache_bytes = cache_bytes
        # 4x the cache: any set up to half the pool can still rotate through twice the cache
        self.pool_bytes = min(4 * cache_bytes, pool_cap_bytes)
        self.pool, self.pool_scale = self.random(self.pool_bytes // self.in_bytes)

    def random(self, elements: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Standard normal values in the probe's dtype, and for fp8 the per-tensor scale used."""
        if self.dtype != "fp8":
            return torch.randn(elements, dtype=TORCH_DTYPES[self.dtype], device=self.device), None
        values = torch.randn(elements, dtype=torch.bfloat16, device=self.device)
        scale = (values.abs().max().float() / FP8_MAX).reshape(1)  # dequantize: x = q * scale
        return (values / scale).to(torch.float8_e4m3fn), scale

    def sets(self, m: int, n: int, k: int) -> tuple[Operands, dict[str, Any]]:
        """Input sets (A [m,k] row-major, B [k,n] column-major) and how they were rotated."""
        a_len, w_len = _aligned(m * k), _aligned(n * k)
        set_bytes = input_set_bytes(m, n, k, self.in_bytes)
        wanted = max(1, math.ceil(2 * self.cache_bytes / set_bytes))
        if set_bytes * 2 <= self.pool_bytes:
            count = min(wanted, self.pool_bytes // set_bytes)
            source, scale = self.pool, self.pool_scale
            where = "views into the shared random pool"
        else:
            count = min(wanted, 2)
            source, scale = self.random(count * (a_len + w_len))
            where = "freshly drawn for this shape"
        sets = []
        for i in range(count):
            base = i * (a_len + w_len)
            a = source[base : base + m * k].view(m, k)
            w = source[base + a_len : base + a_len + n * k].view(n, k)
            sets.append((a, w.t()))
        rotated = count * set_bytes
        return Operands(sets, scale), {
            "input_sets": count,
            "rotated_mib": rotated / 2**20,
            "cache_defeated": rotated >= 2 * self.cache_bytes,
            "operands": where,
        }


@dataclass(frozen=True)
class Operands:
    """The rotated input sets of one shape and, for fp8, their per-tensor dequantization scale."""

    sets: list[tuple[torch.Tensor, torch.Tensor]]
    scale: torch.Tensor | None


def _aligned(elements: int) -> int:
    """Operand views start on aligned boundaries: pointer alignment is not what is tested."""
    return -(-elements // OPERAND_ALIGN_ELEMENTS) * OPERAND_ALIGN_ELEMENTS


def gemm_call(dtype: str, device: str, operands: Operands, m: int, n: int) -> Callable[[int], Any]:
    """call(i) runs the GEMM on input set i modulo the number of sets."""
    sets, count, scale = operands.sets, len(operands.sets), operands.scale
    if dtype == "fp8":
        assert scale is not None  # fp8 operands carry their dequantization scale

        def fp8(i: int) -> Any:
            a, b = sets[i % count]
            return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)

        return fp8
    out = torch.empty(m, n, dtype=TORCH_DTYPES[dtype], device=device)

    def mm(i: int) -> Any:
        a, b = sets[i % count]
        return torch.mm(a, b, out=out)

    return mm


def can_run(dtype: str, device: str) -> str | None:
    """None when a small GEMM of this dtype runs here; otherwise the real reason it does not."""
    if device == "cpu" and dtype not in CPU_DTYPES:
        return (
            f"the probe's CPU path runs {' and '.join(CPU_DTYPES)} only, whose CPU roofs it "
            f"measures; {dtype} is a GPU tensor-core path"
        )
    try:
        pool = OperandPool(dtype, device, cache_bytes=2**20, pool_cap_bytes=2**22)
        operands, _ = pool.sets(64, 64, 64)
        gemm_call(dtype, device, operands, 64, 64)(0)
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - the device's own refusal is the recorded reason
        return f"a 64x64x64 {dtype} GEMM failed on {device}: {describe_exception(exc)}"
    return None


def launch_floor(bursts: Bursts, device: str) -> dict[str, Any]:
    """An (almost) empty kernel timed exactly as the GEMMs are: the launch floor per call (and the tensor
    it adds to, `tiny`, for the same kernel replayed from a CUDA graph)."""
    tiny = torch.ones(1, device=device)
    record = bursts.measure(lambda i: tiny.add_(1))
    return {
        "windows": [{k: w[k] for k in ("calls", "seconds", "per_call_s", "gap_before_s")} for w in record["windows"]],
        "median_s": per_call_s(record["windows"]),
        "tiny": tiny,
    }


# ------------------------------------------------------------------------------ CPU roofs


def cpu_cache_bytes() -> Any:
    """The largest CPU cache, from sysfs (the last-level cache)."""
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip()
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        sizes.append(int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
    return max(sizes) if sizes else unavailable("no cache sizes under /sys/devices/system/cpu/cpu0/cache")


def cpu_copy_gbps(buffer_bytes: int, repeats: int = 5) -> dict[str, Any]:
    """CPU memory bandwidth: b.copy_(a) of a buffer larger than the cache, read + write bytes."""
    a = torch.empty(buffer_bytes // 4, dtype=torch.float32).fill_(1.5)
    b = torch.empty_like(a)
    times = time_each("cpu", lambda i: b.copy_(a), repeats + 1)[1:]
    median = statistics.median(times)
    return {
        "copy_gbps": 2 * buffer_bytes / median / 1e9,
        "copy_buffer_mib": buffer_bytes / 2**20,
        "copy_times_s": times,
        "copy_method": "torch b.copy_(a), fp32, bytes read + written, median",
    }


def cpu_gemm_peak(dtype: str, sizes: tuple[int, ...] = (1024, 2048), repeats: int = 3) -> dict[str, Any]:
    """The best square GEMM rate this CPU reaches in the dtype: the CPU's compute roof."""
    results: list[dict[str, Any]] = []
    for size in sizes:
        a = torch.randn(size, size, dtype=TORCH_DTYPES[dtype])
        b = torch.randn(size, size, dtype=TORCH_DTYPES[dtype]).t()
        out = torch.empty(size, size, dtype=TORCH_DTYPES[dtype])
        times = time_each("cpu", lambda i: torch.mm(a, b, out=out), repeats + 1)[1:]  # noqa: B023 - called within this iteration
        results.append(
            {
                "size": size,
                "times_s": times,
                "median_s": statistics.median(times),
                "tflops": 2 * size**3 / statistics.median(times) / 1e12,
            }
        )
    best = max(results, key=lambda r: r["tflops"])
    return {
        "gemm_peak_tflops": best["tflops"],
        "gemm_peak_size": best["size"],
        "gemm_trials": results,
        "gemm_method": f"torch.mm {dtype} squares {', '.join(map(str, sizes))}, best median of {repeats}",
    }


# -------------------------------------------------------------------------------- fusion

CHAIN_TEXT = FUSION_CHAIN["text"]
CHAIN_KERNELS = FUSION_CHAIN["kernels"]
CHAIN_FLOPS_PER_ELEMENT = FUSION_CHAIN["flops_per_element"]


def chain(x: torch.Tensor) -> torch.Tensor:
    """Four elementwise kernels when run eagerly; one when compiled."""
    y = x * 2
    y = y + 1
    y = torch.relu(y)
    return y * y


# The same chain as one CUDA kernel, for torch.cuda.jiterator (NVRTC compiles it at its first call).
# `y < 0 ? 0 : y` is torch.relu, NaN included (a NaN compares false and passes through).
JITERATOR_CHAIN = """
template <typename T> T rig_dossier_chain(T x) {
    T y = x * T(2);
    y = y + T(1);
    y = y < T(0) ? T(0) : y;
    return y * y;
}
"""
JITERATOR = "torch.cuda.jiterator"
COMPILE = "torch.compile"
FUSERS = {
    JITERATOR: "torch.cuda.jiterator._create_jit_fn: the chain written as one CUDA kernel, compiled at run time "
    "by NVRTC (well under a second)",
    COMPILE: "torch.compile (Inductor): the chain traced and generated as one kernel (C++ on a CPU, Triton on a "
    "GPU; tens of seconds on a GPU, with its compile workers)",
}


def jiterator_refusal(device: str) -> str | None:
    """Why torch.cuda.jiterator cannot fuse the chain here, or None when it can."""
    if device != "cuda":
        return "a CPU run: jiterator compiles CUDA kernels only"
    if getattr(torch.version, "hip", None):
        return f"a ROCm build of torch ({torch.version.hip}): jiterator is CUDA-only"
    if not callable(getattr(getattr(torch.cuda, "jiterator", None), "_create_jit_fn", None)):
        return f"torch {torch.__version__} has no torch.cuda.jiterator._create_jit_fn"
    return None


def fuse_and_check(
    device: str, x: torch.Tensor, expected: torch.Tensor
) -> tuple[str, str | None, Callable[[torch.Tensor], torch.Tensor], torch.Tensor, float]:
    """(fuser, why not jiterator, the fused callable, its first output, seconds to build it including that
    first call): jiterator on a CUDA device where torch has it, else torch.compile; a jiterator that fails
    to build falls back to torch.compile, the reason kept."""
    why_not = jiterator_refusal(device)
    if why_not is None:
        try:
            return (JITERATOR, None, *_built(device, lambda: torch.cuda.jiterator._create_jit_fn(JITERATOR_CHAIN), x))
        except Exception as exc:  # noqa: BLE001 - no NVRTC...: torch.compile instead, the reason recorded
            why_not = f"jiterator failed: {describe_exception(exc)}"
    return (COMPILE, why_not, *_built(device, lambda: torch.compile(chain, dynamic=False), x))


def _built(device: str, build: Callable[[], Callable], x: torch.Tensor) -> tuple[Callable, torch.Tensor, float]:
    start = time.perf_counter()
    fused = build()
    got = fused(x)
    if device == "cuda":
        torch.cuda.synchronize()
    return fused, got, time.perf_counter() - start


def measure_fusion(device: str, elements: int, timer: Bursts) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Time the eager chain and its fusion (one kernel) in windows (TIMER); count the bytes each moves."""
    limitations = []
    x = torch.randn(elements, dtype=torch.float32, device=device)
    accounting = fusion_accounting(elements, 4, CHAIN_KERNELS, CHAIN_FLOPS_PER_ELEMENT)
    result: dict[str, Any] = {
        "chain": CHAIN_TEXT,
        "dtype": "fp32",
        "elements": elements,
        "element_bytes": 4,
        "unfused_kernels": CHAIN_KERNELS,
        "flops_per_element": CHAIN_FLOPS_PER_ELEMENT,
        **accounting,
        "unfused": _rates(timer.measure(lambda i: chain(x)), accounting["unfused_bytes"], accounting["flops"]),
    }
    expected = chain(x)
    try:
        fuser, why_not, fused, got, compile_s = fuse_and_check(device, x, expected)
    except Exception as exc:  # noqa: BLE001 - no compiler, no Triton...: recorded, not fatal
        why = f"torch.compile failed: {describe_exception(exc)}"
        result["fused"] = unavailable(why)
        result["outputs_match"] = unavailable(why)
        limitations.append({"what": "fused elementwise chain (torch.compile)", "why": why})
        return result, limitations
    result["fused_by"] = {
        "name": fuser,
        "how": FUSERS[fuser],
        "why": f"jiterator not used: {why_not}" if why_not else "a CUDA device with jiterator",
    }
    result["outputs_match"] = bool(torch.allclose(got, expected))
    result["fused"] = {
        **_rates(timer.measure(lambda i: fused(x)), accounting["fused_bytes"], accounting["flops"]),
        "compile_s": compile_s,
    }
    return result, limitations


def _rates(record: dict[str, Any], nbytes: int, flops: int) -> dict[str, Any]:
    median = per_call_s(record["windows"])
    assert median is not None, "the timer's windows give no time per call"
    return {
        **record,
        "median_s": median,
        "window_spread": window_spread(record["windows"]),
        "achieved_gbps": nbytes / median / 1e9,
        "achieved_tflops": flops / median / 1e12,
    }
