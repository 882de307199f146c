#!/usr/bin/env python3
"""Result digests on a GPU (issue 24): what acceptance will expect of an H200, measured.

1. The stress probe twice (--seconds 5, no memory test) on every visible GPU: each GPU's reference
   GEMM digest, whether the GPUs agree, whether the two runs agree, and the library build the
   digest holds for (torch, cuBLAS version read through cublasGetProperty).
2. The precision quantizers on one seeded tensor, on the CPU and on CUDA: every format's output
   digest on each, and whether they agree (harness/probes/precision/quantize.py claims bit-identity).

Prints one JSON document; run on the device machine from the repository root:

    OUT=$OUT python3 bench/result_digests.py > "$OUT/digests.json"

(`nvidia-h200-x2` shows two GPUs agreeing; `nvidia-h200` one GPU twice.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.analysis.digests import quorum


def stress_run() -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "harness.probes.stress", "--seconds", "5", "--no-memory-test"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=900,
    )
    document = json.loads(out.stdout)
    return {f"GPU{d['index']}": d["gemm"]["reference_digest"] for d in document["devices"]}


def quantizer_digests() -> dict:
    import torch

    from harness.probes.precision import quantize

    x = torch.randn(384, 1536, generator=torch.Generator().manual_seed(3), dtype=torch.float32)
    cpu = {r["format"]: r.get("output_sha256") for r in quantize.measure_formats(x)}
    if not torch.cuda.is_available():
        return {"cpu": cpu, "cuda": None, "agree": None}
    cuda = {r["format"]: r.get("output_sha256") for r in quantize.measure_formats(x.to("cuda"))}
    return {"cpu": cpu, "cuda": cuda, "agree": cpu == cuda, "differ": sorted(f for f in cpu if cpu[f] != cuda.get(f))}


def main() -> int:
    first, second = stress_run(), stress_run()
    vote = quorum(
        {f"run1 {gpu}": r["sha256"] for gpu, r in first.items()}
        | {f"run2 {gpu}": r["sha256"] for gpu, r in second.items()}
    )
    report = {
        "stress": {
            "run1": first,
            "run2": second,
            "unanimous": vote.unanimous,
            "outliers": dict(vote.outliers),
            "majority": vote.majority,
        },
        "quantizers": quantizer_digests(),
    }
    print(json.dumps(report, indent=1, sort_keys=True))
    print(
        f"stress: {len(first)} GPU(s), unanimous over both runs: {vote.unanimous}; quantizers CPU = CUDA: "
        f"{report['quantizers']['agree']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
