"""Is the stress probe's GEMM bit-for-bit repeatable here? The probe's own operands and call, a
reference kept once, then N more results compared with it: mismatched elements per iteration and
the largest absolute difference. Run before the stress runs, so a probe mismatch on a healthy GPU
can be told apart from cuBLAS choosing a non-repeatable algorithm (which this would show at once).

    python bench/gemm_repeatability.py [--iterations 30] [--dtype bf16 tf32]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from harness.probes.stress.gemm import GemmPlan, Operands
from harness.probes.stress.settings import GPU_FP8_SHAPE, GPU_SHAPE


def repeatability(dtype: str, iterations: int) -> str:
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    m, n, k = GPU_FP8_SHAPE if dtype == "fp8" else GPU_SHAPE
    ops = Operands(GemmPlan(m=m, n=n, k=k, dtype=dtype, device="cuda", seed=16, check=True, bucket_s=1.0))
    for _ in range(3):
        ops.gemm()
    ops.gemm()
    ops.reference.copy_(ops.out)
    counts, worst = [], 0.0
    slot = torch.zeros((), dtype=torch.int64, device="cuda")
    for _ in range(iterations):
        ops.gemm()
        ops.compare_into(slot)
        counts.append(int(slot))
        worst = max(worst, float((ops.out.float() - ops.reference.float()).abs().max()))
    differing = sum(1 for c in counts if c)
    return (
        f"{dtype} {m}x{n}x{k}: {differing} of {iterations} results differ from the reference "
        f"(elements per iteration: max {max(counts)}), largest |difference| {worst:g}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--dtype", nargs="+", default=["bf16", "tf32"])
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 4
    for dtype in args.dtype:
        print(repeatability(dtype, args.iterations), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
