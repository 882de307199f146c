"""The comparison table for bench/stress_vs_gpu_burn.sh (standard library and the project's analysis).

Reads OUT/gpu_burn.log (wilicc/gpu-burn `-tc` output), OUT/stress-tf32.json, OUT/stress-bf16.json,
OUT/stress-bf16-nocheck.json and, when present, OUT/stress-tf32-square.json; prints markdown.

gpu-burn counts 1100048498688 FLOP per 8192^3 SGEMM (its OPS_PER_MUL, 8192^2 x (2 x 8192 + 8));
we count 2 M N K. Its Gflop/s are rescaled to 2 M N K before any ratio. Its rate per report is
GEMMs plus its compare kernel over host wall time, so it is set beside our throughput (GEMMs,
checks and gaps over the bucket's span) as well as beside our GEMM-only rate.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.analysis.stress.figures import headlines

GPU_BURN_OPS_PER_MUL = 1100048498688
OURS_PER_MUL = 2 * 8192**3
TF32_WITHIN = 0.03  # issue 16: our sustained TF32 within 3% of gpu-burn's on the same GPU
CHECK_COST_MAX = 0.05  # issue 16: result checking costs under 5% of the GEMM rate
REPORT = re.compile(r"([\d.]+)%\s+proc'd:\s*(.*?)\s+errors:\s*(.*?)\s+temps:")
ENTRY = re.compile(r"(-?\d+) \(([\d.]+) Gflop/s\)")


def gpu_burn(path: Path) -> dict:
    """Per GPU: steady TFLOPS (2MNK; median of the reports in the run's second half), reports, verdict."""
    text = path.read_text(errors="replace") if path.exists() else ""
    seen: dict[int, list[tuple[float, int, float]]] = {}
    for line in re.split(r"[\r\n]+", text):
        match = REPORT.search(line)
        if not match:
            continue
        for gpu, (count, gflops) in enumerate(ENTRY.findall(match.group(2))):
            reports = seen.setdefault(gpu, [])
            if not reports or reports[-1][1] != int(count):
                reports.append((float(match.group(1)), int(count), float(gflops)))
    verdicts = dict(re.findall(r"GPU (\d+): (OK|FAULTY)", text))
    result = {}
    for gpu, reports in seen.items():
        second = [g for pct, _, g in reports if pct >= 50.0] or [g for _, _, g in reports]
        result[gpu] = {
            "steady_tflops": statistics.median(second) * 1e9 * OURS_PER_MUL / GPU_BURN_OPS_PER_MUL / 1e12,
            "reports": len(reports),
            "verdict": verdicts.get(str(gpu), "no verdict printed"),
        }
    return result


def ours(path: Path) -> dict | None:
    try:
        return headlines(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError) as exc:
        print(f"- {path.name}: not readable ({type(exc).__name__}: {exc})")
        return None


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3f}" if a and b else "n/a"


def tf32_table(burn: dict, tf32: dict | None, square: dict | None) -> None:
    print(
        "| GPU | gpu-burn -tc steady TFLOPS (2MNK) | ours tf32 steady GEMM | ours tf32 steady throughput | "
        "throughput / gpu-burn | GEMM / gpu-burn | ours 8192^3 throughput / gpu-burn |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for gpu, theirs in sorted(burn.items()):
        mine = tf32["devices"][gpu] if tf32 and gpu < len(tf32["devices"]) else {}
        sq = square["devices"][gpu] if square and gpu < len(square["devices"]) else {}
        print(
            f"| {gpu} | {theirs['steady_tflops']:.4g} ({theirs['reports']} reports, {theirs['verdict']}) | "
            f"{mine.get('steady_tflops') or 0:.4g} | {mine.get('steady_throughput_tflops') or 0:.4g} | "
            f"{ratio(mine.get('steady_throughput_tflops'), theirs['steady_tflops'])} | "
            f"{ratio(mine.get('steady_tflops'), theirs['steady_tflops'])} | "
            f"{ratio(sq.get('steady_throughput_tflops'), theirs['steady_tflops'])} |"
        )
    for gpu, theirs in sorted(burn.items()):
        mine = tf32["devices"][gpu] if tf32 and gpu < len(tf32["devices"]) else {}
        value = mine.get("steady_throughput_tflops")
        if value:
            gap = value / theirs["steady_tflops"] - 1
            print(
                f"- GPU{gpu} TF32 criterion (within {TF32_WITHIN:.0%} of gpu-burn, throughput to throughput): "
                f"{gap:+.2%} -> {'met' if abs(gap) <= TF32_WITHIN or gap > 0 else 'NOT met'}"
            )


def check_cost(checked: dict | None, unchecked: dict | None) -> None:
    if not checked or not unchecked:
        print("- check cost: a run is missing")
        return
    for a, b in zip(checked["devices"], unchecked["devices"], strict=False):
        cost = (
            1 - a["steady_throughput_tflops"] / b["steady_throughput_tflops"] if b["steady_throughput_tflops"] else None
        )
        print(
            f"- GPU{a['index']} check cost: bf16 steady throughput {a['steady_throughput_tflops']:.4g} checked vs "
            f"{b['steady_throughput_tflops']:.4g} unchecked -> {cost:.2%} (criterion < {CHECK_COST_MAX:.0%}: "
            f"{'met' if cost is not None and cost < CHECK_COST_MAX else 'NOT met'}); time outside GEMMs in the "
            f"checked run {a['steady_outside_gemm_share']:.2%}, unchecked {b['steady_outside_gemm_share']:.2%}"
        )


def fixture_lines(run: dict | None, name: str) -> None:
    if not run:
        return
    for d in run["devices"]:
        p, cap = d["power"], d["power_cap"]
        memory = d["memory_test"] or {}
        print(
            f"- {name} GPU{d['index']}: burst {d['burst_tflops']:.4g}, steady {d['steady_tflops']:.4g} TFLOPS "
            f"(burst/steady {d['burst_over_steady']:.3f}); sw_power_cap after {cap['engaged_after_s']} s "
            f"({cap['why_never'] or 'engaged'}); power median {p['median_w']} / max {p['max_w']} of {p['limit_w']} W "
            f"(target reached: {p['target_reached']}; {p['source']}); reasons {d['clock_event_reasons']}; "
            f"max {d['max_gpu_temperature_c']} C GPU, {d['max_memory_temperature_c']} C HBM; memory test "
            f"{memory.get('bytes_tested')} bytes in {memory.get('seconds')} s, {memory.get('mismatched_words')} "
            f"errors; events {d['nvml_events']}; checks "
            f"{ {c['name']: c['status'] for c in d['checks']} }"
        )
    print(f"- {name} verdict: {run['verdict']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    out = parser.parse_args(argv).out
    burn = gpu_burn(out / "gpu_burn.log")
    tf32, bf16 = ours(out / "stress-tf32.json"), ours(out / "stress-bf16.json")
    nocheck = ours(out / "stress-bf16-nocheck.json")
    square = ours(out / "stress-tf32-square.json") if (out / "stress-tf32-square.json").exists() else None
    print("## Stress probe vs gpu-burn (same GPU, one call)\n")
    tf32_table(burn, tf32, square)
    print()
    check_cost(bf16, nocheck)
    fixture_lines(tf32, "tf32 60 s")
    fixture_lines(bf16, "bf16 60 s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
