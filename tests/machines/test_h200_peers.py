"""Issue 40's peers in one call on the H200 (tests/fixtures/h200/peers-c5/, `OUT=$OUT bash bench/gpu_peers.sh` on
2026-12-02 14:21 UTC, GPU-6a6f2851, machine start c5): BabelStream 5.0's CSV, whose Init and Read phase rows
under their own header once stopped bench/compare_babelstream.py, read as its kernels' rates; our copy and read
kernels against Copy and Dot from the same call."""

from __future__ import annotations

import json
from pathlib import Path

from bench import compare_babelstream

HERE = Path(__file__).parents[1] / "fixtures" / "h200" / "peers-c5"


def test_babelstream_5_csv_gives_only_its_kernels_rates():
    rates = compare_babelstream.babelstream(HERE)
    assert set(rates) == {"Copy", "Mul", "Add", "Triad", "Dot"}
    assert round(rates["Copy"], 1) == 3545.1 and round(rates["Dot"], 1) == 4430.2


def test_our_copy_and_read_kernels_are_ahead_of_copy_and_dot_in_the_same_call():
    rates = compare_babelstream.babelstream(HERE)
    copy = json.loads((HERE / "bandwidth-copy.json").read_text())["plateau"]["gbps"]
    read = json.loads((HERE / "bandwidth-read.json").read_text())["plateau"]["gbps"]
    assert copy / rates["Copy"] > 1.2 and 1.02 < read / rates["Dot"] < 1.03
