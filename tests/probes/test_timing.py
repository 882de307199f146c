"""The one timer every probe uses (harness/probes/timing.py): per call and per window, on a CPU and,
through a stand-in for torch.cuda whose events carry a known GPU time, the CUDA path."""

import ast
from pathlib import Path

import pytest

from harness.probes.timing import Clock

PROBES = Path(__file__).resolve().parents[2] / "harness" / "probes"


class FakeCuda:
    """torch.cuda as the Clock uses it: events stamped with a GPU clock that each call advances."""

    def __init__(self, call_ms: float) -> None:
        self.now_ms, self.call_ms, self.syncs, self.events, self.streams = 0.0, call_ms, 0, 0, []
        cuda = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing
                cuda.events += 1

            def record(self, stream=None) -> None:
                self.at_ms = cuda.now_ms
                cuda.streams.append(stream)

            def elapsed_time(self, end) -> float:
                return end.at_ms - self.at_ms

            def synchronize(self) -> None:
                cuda.syncs += 1

        self.Event = Event

    def synchronize(self, device=None) -> None:
        self.syncs += 1

    def work(self, _index: int) -> None:
        self.now_ms += self.call_ms


def fake(call_ms: float = 2.0):
    cuda = FakeCuda(call_ms)
    return cuda, Clock(type("Torch", (), {"cuda": cuda})(), cuda=True)


def test_cuda_each_is_one_event_pair_per_call_and_one_wait():
    cuda, clock = fake()
    assert clock.each(cuda.work, 5) == [0.002] * 5
    assert cuda.events == 10 and cuda.syncs == 1  # one wait, for the device, at the end


def test_cuda_window_is_one_event_pair_around_every_call():
    cuda, clock = fake(0.5)
    assert clock.window(cuda.work, 8) == pytest.approx(0.004)
    assert cuda.events == 2


def test_markers_go_on_the_stream_given():
    cuda = FakeCuda(1.0)
    stream = object()
    clock = Clock(type("Torch", (), {"cuda": cuda})(), cuda=True, stream=stream)
    start = clock.mark()
    cuda.work(0)
    assert clock.milliseconds(start, clock.mark()) == 1.0 and set(cuda.streams) == {stream}


def test_cpu_each_and_window_time_real_calls_with_their_index():
    seen = []
    clock = Clock.of(None, "cpu")
    times = clock.each(seen.append, 4, first=10)
    assert seen == [10, 11, 12, 13] and len(times) == 4 and all(t >= 0 for t in times)
    assert clock.window(lambda i: sum(range(1000)), 3) >= 0


def test_no_probe_times_with_cuda_events_or_perf_counter_pairs_of_its_own():
    """CUDA events for timing are made only by harness/probes/timing.py."""
    makers = []
    for path in sorted(PROBES.rglob("*.py")):
        if path.name == "timing.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "enable_timing":
                makers.append(f"{path.relative_to(PROBES)}:{node.lineno}")
    assert not makers, makers
