"""NVML samples of every GPU for a while, for the benches: a cool-down between two loads, or what a
peer tool (gpu-burn) drew while it ran. Uses the stress probe's own sampler.

    python bench/nvml_watch.py SECONDS OUT.json [--interval-s 0.1] [--label TEXT]

SIGTERM ends the wait early; what was sampled until then is written as usual.

Writes {label, interval_s, gpus: [{nvml_index, name, power_limit_w, samples}]} and prints one line
per GPU: temperature first -> last, median and maximum power (one-second average where NVML gives
it), median SM clock, clock-event reasons by samples.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.analysis.stress import telemetry as tel
from harness.probes.nvml import NvmlSession
from harness.probes.stress.nvml import Telemetry, power_limit_w


def summary_line(label: str, gpu: dict) -> str:
    samples = gpu["samples"]
    temps = tel.values(samples, "gpu_temperature_c")
    key = tel.power_source(samples)[0]
    power, clocks = tel.values(samples, key), tel.values(samples, "sm_clock_mhz")
    parts = [f"{label} GPU{gpu['nvml_index']}: {len(samples)} samples"]
    if temps:
        parts.append(f"temperature {temps[0]:g} -> {temps[-1]:g} C (max {max(temps):g})")
    if power:
        parts.append(
            f"power ({key}) median {statistics.median(power):.1f} W, max {max(power):.1f} W of {gpu['power_limit_w']} W"
        )
    if clocks:
        parts.append(f"SM clock median {statistics.median(clocks):g} MHz")
    parts.append(f"reasons {tel.reason_histogram(samples)}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seconds", type=float)
    parser.add_argument("out", type=Path)
    parser.add_argument("--interval-s", type=float, default=0.1)
    parser.add_argument("--label", default="watch")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with NvmlSession() as nvml:
        if not nvml.ok:
            print(f"{args.label}: NVML unavailable: {nvml.reason}")
            return 4
        zero = time.monotonic()
        watchers = [(i, h, Telemetry(nvml.pynvml, h, args.interval_s, zero)) for i, h in enumerate(nvml.handles())]
        for _, _, telemetry in watchers:
            telemetry.start()
        stop.wait(args.seconds)
        gpus = []
        for index, handle, telemetry in watchers:
            telemetry.stop()
            name = nvml.pynvml.nvmlDeviceGetName(handle)
            gpus.append(
                {
                    "nvml_index": index,
                    "name": name.decode() if isinstance(name, bytes) else name,
                    "power_limit_w": power_limit_w(nvml.pynvml, handle),
                    "samples": telemetry.drain(),
                }
            )
    args.out.write_text(
        json.dumps({"label": args.label, "interval_s": args.interval_s, "gpus": gpus}, sort_keys=True, allow_nan=False)
    )
    for gpu in gpus:
        print(summary_line(args.label, gpu))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
