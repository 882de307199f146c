"""The bandwidth probe's repeats of the largest size: --repeats runs with NVML samples during the middle
one, and, when they disagree by the lab's 5% or more, the same runs measured again with repeats
AGAIN_FACTOR times longer within AGAIN_BUDGET_S (the lab: "if variance exceeds 5%, diagnose before
continuing"). The round measured last is the one judged; the first is kept beside it (first_round), with
why it was measured again (again), so a reader sees both. A short disturbance (a neighbour's burst, a
scheduler hiccup) moves a short repeat's median, seldom a long one's: repeats that agree once longer
say the rate is steady; repeats that still disagree are judged with what the host did meanwhile
(harness.analysis.contention, recorded by `dossier run`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from harness.analysis.bandwidth import figures as analysis
from harness.analysis.verdict import Verdict
from harness.probes.bandwidth.device import BUFFERS, own_pids
from harness.probes.bandwidth.points import Timer, point_record, timed
from harness.probes.contract import progress, unavailable
from harness.probes.nvml import Sampler, sample

SAMPLE_INTERVAL_S, MIN_SAMPLES = 0.05, 10
# Seconds each repeat is timed for. cuda: at least 10 NVML samples at 50 ms in the middle one. cpu: 1 s,
# about 100 iterations of the 128 MiB copy (10 ms each on the 2-core VM): its median then outlasts a
# scheduler's time slices; at 0.1 s (10 iterations) the three repeats were 7.7-13.1% apart on the busy
# VM (2026-12-02, load 6), 8.7-20.1% at 1 s: the load, not the length, at that point.
REPEAT_BUDGET_S = {"cuda": 1.0, "cpu": 1.0}
AGAIN_FACTOR, AGAIN_RULE = analysis.AGAIN_FACTOR, analysis.AGAIN_RULE  # the rule verify checks it by
AGAIN_BUDGET_S = {"cuda": 15.0, "cpu": 15.0}  # the most the repeats measured again may take, all of them

Run = Callable[[], Any]


def again_budget(budget: float, count: int, device: str) -> float | None:
    """Seconds each repeat of the round measured again is timed for, or None when AGAIN_BUDGET_S leaves no
    round at least twice as long as the first."""
    longer = min(AGAIN_FACTOR * budget, AGAIN_BUDGET_S[device] / max(count, 1))
    return longer if longer >= 2 * budget else None


class Repeats:
    """The repeats of one probe run: MEASUREMENT (harness.probes.bandwidth.Measurement) holds the
    device, the NVML session and handle, the kernel and the arguments."""

    def __init__(self, measurement: Any, fn: Run, size: float, n: int, timer: Timer) -> None:
        self.m, self.fn, self.size, self.n, self.timer = measurement, fn, size, n, timer

    def measure(
        self, budget: float, cache_bytes: float | None, empty_s: float, done: int, total: int, why_no_nvml: str | None
    ) -> dict[str, Any]:
        """The repeats; measured again, longer, when they disagree (AGAIN_RULE)."""
        count = self.m.args.repeats
        first = self.round(budget, cache_bytes, empty_s, done, total, why_no_nvml)
        if first["verdict"] == Verdict.PASS:
            return {**first, "repeat_budget_s": budget}
        longer = again_budget(budget, count, self.m.device)
        why = f"the first {count} repeats varied by {first['spread']:.1%}, not under {first['spread_max']:.0%}"
        again: dict[str, Any] = {
            "rule": AGAIN_RULE,
            "factor": AGAIN_FACTOR,
            "budget_s": AGAIN_BUDGET_S[self.m.device],
            "why": why,
        }
        if longer is None:
            return {**first, "repeat_budget_s": budget, "again": {**again, "why": why + "; no budget left"}}
        final = self.round(longer, cache_bytes, empty_s, done + count, total + count, why_no_nvml)
        kept = {key: first[key] for key in ("runs", "medians_gbps", "spread", "verdict")}
        return {**final, "repeat_budget_s": longer, "first_round": {**kept, "repeat_budget_s": budget}, "again": again}

    def round(
        self,
        budget: float,
        cache_bytes: float | None,
        empty_s: float,
        done: int,
        total: int,
        telemetry_reason: str | None,
    ) -> dict[str, Any]:
        """The largest size --repeats times, each for about BUDGET seconds; NVML samples during the middle one."""
        m, count = self.m, self.m.args.repeats
        middle = count // 2
        runs, samples, owners = [], None, ([os.getpid()], "no telemetry")
        for r in range(count):
            progress(done + r, total, f"repeat {r + 1}/{count} at {self.size:g} MiB ({budget:g} s)")
            if r == middle and m.handle is not None:
                owners = own_pids(sample(m.nvml.pynvml, m.handle), BUFFERS * self.size)
                with Sampler(m.nvml.pynvml, m.handle, SAMPLE_INTERVAL_S) as sampler:
                    times = timed(self.fn, self.timer, budget, enough=lambda: len(sampler.samples) >= MIN_SAMPLES - 1)
                samples = sampler.samples
            else:
                times = timed(self.fn, self.timer, budget)
            runs.append(point_record(self.size, self.n, m.kernel, times, cache_bytes, empty_s))
        medians = [run["median_gbps"] for run in runs]
        spread = analysis.spread(medians)
        verdict = analysis.repeat_verdict(spread)
        telemetry = {
            "repeat_index": middle,
            "interval_s": SAMPLE_INTERVAL_S,
            "samples": samples if samples is not None else unavailable(telemetry_reason or "no NVML handle"),
            "own_pids": owners[0],
            "own_pids_how": owners[1],
        }
        diagnosis = None
        if verdict == Verdict.FAIL:
            diagnosis = (
                analysis.diagnose(samples, owners[0], m.power_limit())
                if samples is not None
                else {"causes": [], "summary": f"no telemetry to diagnose from ({telemetry['samples']['unavailable']})"}
            )
        return {
            "size_mib": self.size,
            "count": count,
            "runs": runs,
            "medians_gbps": medians,
            "spread": spread,
            "spread_max": analysis.REPEAT_SPREAD_MAX,
            "verdict": verdict,
            "trusted": verdict == Verdict.PASS,
            "telemetry": telemetry,
            "diagnosis": diagnosis,
        }
