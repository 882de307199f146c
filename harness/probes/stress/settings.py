"""What a stress run is asked to do: the defaults and shapes per device, the settings its document
records (settings_for), the configuration each worker is given (worker_config), and the sentence that
says how the run was sized (sizing)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.analysis.stress import checks as stress_checks
from harness.analysis.stress import figures as analysis
from harness.probes.contract import ProbeUsageError

CPU_DTYPES = ("fp32", "bf16")
DEFAULT_SECONDS = {"cuda": 60.0, "cpu": 3.0}
DEFAULT_DTYPE = {"cuda": "bf16", "cpu": "fp32"}
GPU_SHAPE = (8192, 8192, 16384)
GPU_FP8_SHAPE = (8192, 8192, 32768)
CPU_SHAPE = (512, 512, 1024)
GPU_SHAPE_WHY = (
    "M = N = 8192 as in the 8192^3 bf16 GEMM the baseline measured sustained on the H200 (666-681 TFLOPS, "
    "power-capped); 2048 output tiles of 128x256 fill 132 SMs in 15.5 waves. K = 16384, twice 8192, so one "
    "bit-exact check pass (read the output and the reference, write and sum a one-byte mask: 6 bytes per "
    "16-bit element, 10 per 32-bit one) costs about 3% of the GEMM at the H200's sustained rates; fp8 runs "
    "about twice as fast as bf16, so its K is 32768"
)
CPU_SHAPE_WHY = "small enough for tens of GEMMs a second on a 2-core CI runner, so every bucket holds many"
CPU_REGION_MIB = 64
CPU_CHUNK_MIB = stress_checks.CPU_CHUNK_BYTES // 2**20  # verify holds a CPU run's chunks to it
BUCKET_S = 1.0
INJECT_GEMM_ITERATION = 2
CHECK_WHY = (
    "cuBLAS documents bit-wise reproducible results for the same toolkit, architecture and SM count on "
    "one stream without atomics; the reference is the same call on the same GPU with the same buffers, so "
    "any differing bit is a fault (gpu-burn compares with 0.001 absolute tolerance, and its source notes "
    "that 0 would do). On a CPU the same holds for one process with a fixed thread count"
)


def shape_problem(text: str) -> str | None:
    """A check: TEXT is MxNxK with every dimension at least 1."""
    try:
        m, n, k = (int(v) for v in text.lower().split("x"))
    except ValueError:
        return f"{text!r} is not MxNxK, e.g. 8192x8192x16384"
    return None if min(m, n, k) >= 1 else f"{text!r}: every dimension must be at least 1"


def parse_shape(text: str) -> tuple[int, int, int]:
    why = shape_problem(text)
    if why:
        raise ProbeUsageError(f"--shape {why}")
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def settings_for(args: argparse.Namespace, device: str) -> dict[str, Any]:
    dtype = args.dtype or DEFAULT_DTYPE[device]
    if device == "cpu" and dtype not in CPU_DTYPES:
        raise ProbeUsageError(f"--dtype {dtype} needs a GPU: the CPU path runs {' and '.join(CPU_DTYPES)}")
    if args.shape:
        (m, n, k), why = parse_shape(args.shape), "given with --shape"
    elif device == "cuda":
        (m, n, k), why = (GPU_FP8_SHAPE if dtype == "fp8" else GPU_SHAPE), GPU_SHAPE_WHY
    else:
        (m, n, k), why = CPU_SHAPE, CPU_SHAPE_WHY
    seconds = args.seconds if args.seconds is not None else DEFAULT_SECONDS[device]
    memory_on = not args.no_memory_test
    return {
        "device": device,
        "seconds": seconds,
        "dtype": dtype,
        "shape": {"m": m, "n": n, "k": k},
        "shape_why": why,
        "flop_per_gemm": 2 * m * n * k,
        "gemm_path": _gemm_path(dtype, device),
        "bucket_s": BUCKET_S,
        "sample_interval_s": args.sample_interval_s,
        "seed": args.seed,
        "check": {
            "enabled": not args.no_check,
            "tolerance_bits": analysis.TOLERANCE_BITS,
            "why": CHECK_WHY,
            "method": "torch.ne on an integer view of the output and the reference, mismatched elements "
            "summed on the device into one slot per iteration, copied back once per bucket",
        },
        "memory_test": {
            "enabled": memory_on,
            "share_of_free": args.memory_share if device == "cuda" else None,
            "chunk_bytes": (args.memory_chunk_mib if device == "cuda" else CPU_CHUNK_MIB) * 2**20,
            "word_bytes": analysis.WORD_BYTES,
            "patterns": dict(analysis.MEMORY_PATTERNS),
        },
        "inject_fault": args.inject_fault,
        "inject_gemm_iteration": INJECT_GEMM_ITERATION if args.inject_fault == "gemm" else None,
    }


def _gemm_path(dtype: str, device: str) -> str:
    if dtype == "fp8":
        return (
            "torch._scaled_mm, float8_e4m3fn inputs with a per-tensor float32 scale each, bf16 output, "
            "A row-major, B column-major"
        )
    mode = {"tf32": " with TF32 tensor-core math", "fp32": " with TF32 off"}.get(dtype, "")
    library = "cuBLAS" if device == "cuda" else "the CPU BLAS"
    return f"torch.mm ({library}) in {dtype}{mode}, A row-major, B column-major, one output buffer"


def worker_config(settings: dict[str, Any]) -> dict[str, Any]:
    memory = settings["memory_test"]
    return {
        **{
            k: settings[k]
            for k in (
                "device",
                "seconds",
                "dtype",
                "shape",
                "bucket_s",
                "sample_interval_s",
                "seed",
                "inject_fault",
                "inject_gemm_iteration",
            )
        },
        "check": settings["check"]["enabled"],
        "memory": {
            "enabled": memory["enabled"],
            "share": memory["share_of_free"] or 1.0,
            "chunk_bytes": memory["chunk_bytes"],
            "host_bytes": CPU_REGION_MIB * 2**20,
        },
    }


def _regions(records: list[dict[str, Any]]) -> str:
    sizes = sorted({r["memory_test"]["region_bytes"] for r in records if "region_bytes" in r["memory_test"]})
    if not sizes:
        return "no region (no worker reached the memory test)"
    unit, scale = ("GiB", 2**30) if sizes[-1] >= 2**30 else ("MiB", 2**20)
    low, high = sizes[0] / scale, sizes[-1] / scale
    return (f"{low:.4g}" if low == high else f"{low:.4g}-{high:.4g}") + f" {unit}"


def sizing(settings: dict[str, Any], records: list[dict[str, Any]]) -> str:
    shape = "x".join(str(settings["shape"][d]) for d in "mnk")
    memory = settings["memory_test"]
    chunk = f"{memory['chunk_bytes'] // 2**20} MiB chunks"
    patterns = f"{len(memory['patterns'])} memory patterns"
    if settings["device"] == "cuda":
        names = sorted({r["name"] or "unnamed" for r in records})
        where = f"{len(records)} GPU(s) ({', '.join(names)}) at once, one worker process each"
        mem = (
            f"then {patterns} over {_regions(records)} of device memory per GPU ({memory['share_of_free']:g} "
            f"of the memory free after the GEMM phase, less the scratch chunk), in {chunk}"
        )
        length = f"{settings['seconds']:g} s (the GPU default is 60 s)"
    else:
        where = f"the CPU ({records[0]['name'] if records else 'unknown'}) in one worker process"
        mem = (
            f"then {patterns} over {_regions(records)} of host memory (a {CPU_REGION_MIB} MiB budget less "
            f"the scratch chunk), in {chunk}"
        )
        length = f"{settings['seconds']:g} s, sized for a CI runner (a GPU run lasts 60 s by default)"
    check = (
        "every result compared bit for bit with the reference"
        if settings["check"]["enabled"]
        else "results not checked (--no-check)"
    )
    text = (
        f"On {where}: {settings['dtype']} GEMM {shape} back to back for {length} in {BUCKET_S:g} s buckets, "
        f"{check}; {mem if memory['enabled'] else 'no memory test (--no-memory-test)'}"
    )
    return text + (
        f"; NVML sampled every {settings['sample_interval_s']:g} s."
        if settings["device"] == "cuda"
        else "; no NVML on a CPU run."
    )
