"""Result digests against silent data corruption: what is hashed, and who agrees with whom.

Standard library only. A GPU that computes wrong bits consistently passes a check that compares
each result with its own first one (the stress probe's check): it agrees with itself. Its
neighbours, given the same inputs, the same library build and the same call, must produce the
same bits, so comparing digests across the GPUs of a node (and, in a fleet, across nodes of one
SKU and software stack) names it. The vote is SuperBench's and NVIDIA's quorum rule for silent
data corruption (superbench/analyzer/sdc_quorum.py): group the participants by exact value, the
uniquely largest group wins, everyone outside it is an outlier, and a tie at the top names no one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

STRESS_DIGEST_RULE = (
    "sha256 of the stress probe's reference GEMM result: C = A @ B for the run's fixed-seed inputs "
    "(torch.Generator on the device seeded with settings.seed; A [m,k] then B^T [n,k] drawn with torch.randn "
    "in the run's dtype, fp8 drawn in bf16 and quantized with a per-tensor scale), the output of the "
    "(warm-up + 1)-th identical GEMM on the same buffers (the result every later GEMM is checked against), "
    "copied to the host as a contiguous row-major [m, n] array of the output dtype's bytes in native "
    "(little-endian) order and hashed whole. Equal bits are expected only for the same dtype, shape, seed "
    "and library build (torch, cuBLAS; on a CPU the CPU capability and thread count), recorded beside it"
)
PRECISION_DIGEST_RULE = (
    "sha256 of each format's dequantized output of each tensor (float64, contiguous, row-major, "
    "little-endian) before its error is taken: harness/probes/precision/quantize.py makes these bits the same on "
    "the CPU and on CUDA (single IEEE operations and fixed-order sums), so one digest holds for the "
    "tensor (by its sha256) and the format on any device"
)


@dataclass(frozen=True)
class Agreement:
    """The quorum over participants' digests: the winning digest and who holds it, the outliers
    (participant -> their digest), and whether a tie at the top left no winner."""

    majority: str | None
    agreeing: tuple[str, ...]
    outliers: Mapping[str, str]
    ambiguous: bool

    @property
    def unanimous(self) -> bool:
        return not self.outliers and not self.ambiguous and self.majority is not None


def quorum(digests: Mapping[str, str]) -> Agreement:
    """Participants (in the mapping's order) grouped by exact digest; the uniquely largest group
    wins; a tie at the top is ambiguous (no winner, no outlier named)."""
    groups: dict[str, list[str]] = {}
    for who, digest in digests.items():
        groups.setdefault(digest, []).append(who)
    if not groups:
        return Agreement(None, (), {}, True)
    top = max(len(members) for members in groups.values())
    winners = [d for d, members in groups.items() if len(members) == top]
    if len(winners) > 1:
        return Agreement(None, (), {}, True)
    winner = winners[0]
    outliers = {who: d for d, members in groups.items() if d != winner for who in members}
    return Agreement(winner, tuple(groups[winner]), outliers, False)


def short(digest: str) -> str:
    return digest[:12]


def stress_conditions(record: Mapping) -> dict:
    """What a stress reference digest holds for: the result's dtype and shape, the seed, and the
    library build (torch and cuBLAS version on a GPU; torch, CPU capability and threads on a CPU)."""
    libraries = record.get("libraries") or {}
    cublas = libraries.get("cublas")
    conditions = {
        "dtype": record.get("dtype"),
        "shape": list(record.get("shape") or []),
        "seed": record.get("seed"),
        "torch": libraries.get("torch"),
    }
    if isinstance(cublas, Mapping) and "version" in cublas:
        conditions["cublas"] = cublas["version"]
    elif "cpu_capability" in libraries:
        conditions["cpu_capability"] = libraries.get("cpu_capability")
        conditions["threads"] = libraries.get("threads")
    return conditions
