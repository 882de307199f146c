"""The run-to-run noise model: how far one figure kind moves between clean runs of one SKU.

It is the floor of every tolerance a baseline sets: with a golden unit's few bundles the MAD says
little, and a fail line tighter than the noise would fail the golden unit itself on its next run.

`run_to_run(sku_id, kind)` is the one interface. It reads the SKU's measured spread from the
catalogue (harness/data/gpus.json, the SKU's `repeatability` section: {kind: {"tolerance":
fraction, "source": text}}, which the reproduction work measures from at least five clean dossiers
per SKU, issue 23), and where the catalogue has none for the kind it returns the STATED DEFAULT
below, marked `measured: False` and saying so in its source. The defaults are not run-to-run
measurements; each names the nearest evidence this project has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness import catalogue

DEFAULT_NOTE = "stated default, not a measured run-to-run spread"
# kind -> (tolerance as a share of the median, the nearest evidence); used only where the catalogue has none.
DEFAULTS: dict[str, tuple[float, str]] = {
    "bandwidth_plateau": (0.02, "one run's three repeats agree within 0.01% and the same H200 16 minutes apart read "
                                "0.9999x (issue 23); two lent H200s' copy plateaus on different days: 4232 and 4258 "
                                "GB/s (0.6% apart)"),
    "gemm_burst": (0.05, "bf16 burst best on lent H200s: 786.3 TFLOPS (2026-12-01) and 818 (2026-11-29), 3.9% apart"),
    "gemm_sustained": (0.03, "sustained GEMM on lent H200 SXMs agrees within about 3% (the catalogue's stress_source)"),
    "transfer_pinned": (0.03, "pinned host copies 0.988-1.028x nvbandwidth on the same H200 (tests/fixtures/transfer)"),
    "transfer_bidirectional": (0.08, "both directions at once summed: 93.3-100.9 GB/s in seven runs on one H200 "
                                     "(bench/RESULTS.md, 2026-12-01), 7.5% under the best"),
    "transfer_peer": (0.05, "no repeated peer-read measurement yet"),
    "allreduce_busbw": (0.05, "one two-H200 run (327.6 GB/s, nccl-tests 326.6); no repeats yet"),
    "gpu_vs_node": (0.05, "sustained GEMM of lent H200 SXMs within about 3%; no multi-GPU stress run yet"),
}
FALLBACK = (0.05, "no evidence for this figure kind")


@dataclass(frozen=True)
class Tolerance:
    """A figure kind's run-to-run tolerance (a share of the median) and where it comes from."""

    share: float
    source: str
    measured: bool

    def to_json(self) -> dict[str, Any]:
        return {"share": self.share, "source": self.source, "measured": self.measured}


def run_to_run(sku_id: str | None, kind: str) -> Tolerance:
    """The SKU's measured run-to-run tolerance for KIND, else the stated default (measured False)."""
    sku = catalogue.by_id(sku_id) if sku_id else None
    entry = ((sku or {}).get("repeatability") or {}).get(kind)
    if isinstance(entry, dict) and isinstance(entry.get("tolerance"), (int, float)):
        return Tolerance(float(entry["tolerance"]), f"measured: {entry.get('source')} "
                                                    f"(harness/data/gpus.json {sku_id} repeatability.{kind})", True)
    share, evidence = DEFAULTS.get(kind, FALLBACK)
    return Tolerance(share, f"{DEFAULT_NOTE} for {kind} ({evidence})", False)
