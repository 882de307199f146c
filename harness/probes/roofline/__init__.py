"""M1T2 roofline probe: GEMMs classified before they run, timed, then explained.

The roofs are the measured HBM bandwidth (the bandwidth probe's sustained median, given with
--bandwidth-gbps) and the dense peak of the dtype actually used (--peak-tflops, else the
catalogue entry of the SKU NVML identifies). On a CPU both roofs are measured here: a copy
larger than the last-level cache and the best square GEMM the CPU reaches.

Every GEMM is timed as bursts (harness.probes.timing.Bursts; the rules: harness.analysis.timing): its
first call alone, a warm-up by time, then three windows, each one pair of CUDA events around
back-to-back calls, with idle gaps so that the power limiter never engages; launch-bound shapes are also replayed from a CUDA graph (the
kernels alone). With --check-dtypes the fixed burst-best shapes are timed in more dtypes in the same
process (what `dossier run` uses for acceptance: one process instead of one per dtype).

Order, recorded in `timeline`: roofs established (on a CPU: measured) -> predictions recorded (FLOPs,
fewest bytes, intensity, bound and attainable rate, every dtype) -> pre-heat -> GEMMs timed ->
the other dtypes' checks -> fusion timed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.analysis.roofline import gemm_shapes
from harness.analysis.roofline import model as analysis
from harness.probes.contract import Option, options_parser, probe_main, real
from harness.probes.policy import SHAPE, TILE, at_most, matching, refuse, remake, take
from harness.probes.roofline.roofs import parse_tile, requested_shapes
from harness.probes.roofline.run import Run
from harness.probes.roofline.sizing import CPU_MAX_SQUARE

NAME = "roofline"
DTYPES = tuple(analysis.DTYPE_WIDTHS)


def _check_dtypes(values: list[str] | None) -> str | None:
    return "a dtype appears twice" if values and len(set(values)) != len(values) else None


OPTIONS = (
    Option(
        ("--bandwidth-gbps",),
        dict(
            type=real,
            metavar="B",
            help="memory roof in GB/s: the bandwidth probe's sustained median (required on a GPU; "
            "measured here on a CPU unless given)",
        ),
        replay=remake("the memory roof: this run's own bandwidth step's median"),
    ),
    Option(("--dtype",), dict(choices=DTYPES, default="bf16", help="GEMM dtype (default bf16)"), replay=take()),
    Option(
        ("--peak-tflops",),
        dict(
            type=real,
            metavar="P",
            help="dense compute roof for the dtype in TFLOPS (default: the catalogue's figure "
            "for the identified SKU; measured on a CPU)",
        ),
        replay=take(at_most(100_000, "TFLOPS")),
    ),
    Option(
        ("--check-dtypes",),
        dict(
            nargs="+",
            choices=DTYPES,
            default=[],
            metavar="DTYPE",
            help="also time the fixed burst-best shapes in these dtypes, in the same process, each on its "
            "catalogue peak (what `dossier run` does on a GPU: fp8 fp16 tf32 fp32)",
        ),
        check=_check_dtypes,
        replay=take(),
    ),
    Option(
        ("--shapes",),
        dict(nargs="+", default=[], metavar="MxNxK[:label]", help="extra GEMM shapes, C[M,N] = A[M,K] @ B[K,N]"),
        replay=take(matching(SHAPE, "MxNxK[:label] shapes")),
    ),
    Option(
        ("--shapes-file",),
        dict(type=Path, metavar="F", help="extra shapes, one 'MxNxK[:label]' per line, '#' comments"),
        replay=refuse("a file of their machine"),
    ),
    Option(
        ("--no-default-shapes",),
        dict(action="store_true", help="run only the shapes given with --shapes/--shapes-file"),
        replay=take(),
    ),
    Option(
        ("--max-square",),
        dict(
            type=int,
            metavar="N",
            help=f"largest square size (default: 16384 on a GPU, memory permitting; {CPU_MAX_SQUARE} on a CPU)",
        ),
        replay=take(at_most(65_536)),
    ),
    Option(
        ("--prefill-tokens",),
        dict(
            type=int,
            nargs="+",
            metavar="M",
            default=list(gemm_shapes.DEFAULT_PREFILL_TOKENS),
            help="prefill-like M for the model projections (2048..8192; default 2048 8192)",
        ),
        replay=take(at_most(1_048_576)),
    ),
    Option(
        ("--decode-tokens",),
        dict(
            type=int,
            nargs="+",
            metavar="M",
            default=list(gemm_shapes.DEFAULT_DECODE_TOKENS),
            help="decode-like M for the model projections (1..64; default 1 64)",
        ),
        replay=take(at_most(1_048_576)),
    ),
    Option(
        ("--max-shape-seconds",),
        dict(
            type=real,
            metavar="S",
            help="skip a shape whose predicted warm-up and timed windows exceed S seconds "
            "(default 5 on a GPU, 2 on a CPU)",
        ),
        replay=take(at_most(600, "s")),
    ),
    Option(
        ("--max-operand-mib",),
        dict(
            type=real,
            metavar="MIB",
            help="skip a shape whose inputs and output exceed this (default: a quarter of free "
            "GPU memory; 512 on a CPU)",
        ),
        replay=take(at_most(1_048_576, "MiB")),
    ),
    Option(
        ("--tile",),
        dict(
            metavar="MxN",
            help="output tile the wave model assumes (default 128x256 for tensor-core dtypes, 128x128 for fp32)",
        ),
        replay=take(matching(TILE, "an MxN tile")),
    ),
    Option(("--no-fusion",), dict(action="store_true", help="skip the elementwise fusion comparison"), replay=take()),
    Option(
        ("--fusion-elements",),
        dict(
            type=int,
            metavar="N",
            help="elements in the fusion chain (default 2^28 on a GPU, memory permitting; 2^26 on a CPU)",
        ),
        replay=take(at_most(2**34)),
    ),
    Option(
        ("--device",),
        dict(choices=("auto", "cuda", "cpu"), default="auto", help="where to run (default: cuda when available)"),
        replay=take(),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    return options_parser(NAME, __doc__, OPTIONS)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    requested_shapes(args, max_square=0)  # bad shapes or token counts fail before any work
    parse_tile(args.tile, args.dtype)
    return Run(args).measure()


if __name__ == "__main__":
    raise SystemExit(probe_main(NAME, build_parser, measure))
