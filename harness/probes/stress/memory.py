"""The stress probe's memory test: patterns written over a region, read back, mismatches counted.

Standard library and torch only. The region is one allocation of 64-bit words (a stated share of
the device memory free after the GEMM phase; on a CPU a small host buffer), walked in chunks.
For each pattern every chunk is written first, then every chunk is read back and compared with
the pattern generated again into a scratch chunk (`torch.ne`, mismatched words summed into one
device slot per chunk, copied back once per pattern), so a word is read long after it was
written and never from a cache the size of one chunk. A chunk with mismatches is searched once
more for its first failing word, whose byte offset, expected and found bits are recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from harness.analysis.stress.figures import MEMORY_PATTERNS as PATTERNS
from harness.analysis.stress.figures import WORD_BYTES
from harness.probes.stress.count import MaskCounter
from harness.probes.timing import Clock

INJECT_PATTERN, INJECT_BIT = "walking_ones", 5  # --inject-fault memory flips this bit of one word...
MiB = 2**20


def inject_word(region_words: int) -> int:
    """...of this word: past the middle of the region, off any chunk boundary."""
    return region_words // 2 + 1


@dataclass(frozen=True)
class MemoryPlan:
    device: str
    region_bytes: int
    chunk_bytes: int
    seed: int
    inject: bool = False


class MemoryTest:
    """`MemoryTest(plan).run(on_pattern)`: every pattern over the region, one record per pattern."""

    def __init__(self, plan: MemoryPlan) -> None:
        self.plan = plan
        self.clock = Clock.of(torch, plan.device)
        self.chunk_words = plan.chunk_bytes // WORD_BYTES
        self.region = torch.empty(plan.region_bytes // WORD_BYTES, dtype=torch.int64, device=plan.device)
        self.scratch = torch.empty(self.chunk_words, dtype=torch.int64, device=plan.device)
        self.one = torch.ones((), dtype=torch.int64, device=plan.device)
        words = self.region.numel()
        self.chunks = [(start, min(self.chunk_words, words - start)) for start in range(0, words, self.chunk_words)]
        self.counters = {length: MaskCounter(length, plan.device) for length in {n for _, n in self.chunks}}
        self.injected: dict[str, Any] | None = None

    def fill(self, pattern: str, chunk: int, out: torch.Tensor) -> None:
        """Write the pattern's words for chunk `chunk` into `out` (that chunk's length)."""
        start = self.chunks[chunk][0]
        if pattern == "random":
            generator = torch.Generator(device=self.plan.device).manual_seed(self.plan.seed + chunk)
            torch.randint(-(2**63), 2**63 - 1, out.shape, generator=generator, dtype=torch.int64, out=out)
            return
        torch.arange(start, start + out.numel(), dtype=torch.int64, out=out)
        if pattern == "address":
            out.mul_(WORD_BYTES)
            return
        out.remainder_(64)
        torch.bitwise_left_shift(self.one, out, out=out)
        if pattern == "walking_zeros":
            out.bitwise_not_()

    def _ms(self, start: Any, end: Any) -> float:
        self.clock.wait(end)
        return self.clock.milliseconds(start, end)

    def _inject(self, pattern: str) -> None:
        if not self.plan.inject or pattern != INJECT_PATTERN:
            return
        word = inject_word(self.region.numel())
        self.region[word : word + 1].bitwise_xor_(1 << INJECT_BIT)
        self.injected = {
            "kind": "memory",
            "pattern": pattern,
            "byte_offset": word * WORD_BYTES,
            "bit": INJECT_BIT,
            "when": "after the pattern was written, before it was read back",
        }

    def run_pattern(self, pattern: str) -> dict[str, Any]:
        start = self.clock.mark()
        for chunk, (first, length) in enumerate(self.chunks):
            self.fill(pattern, chunk, self.region[first : first + length])
        self._inject(pattern)
        written = self.clock.mark()
        counts = torch.zeros(len(self.chunks), dtype=torch.int64, device=self.plan.device)
        for chunk, (first, length) in enumerate(self.chunks):
            expected, counter = self.scratch[:length], self.counters[length]
            self.fill(pattern, chunk, expected)
            torch.ne(self.region[first : first + length], expected, out=counter.mask((length,)))
            counter.count_into(counts[chunk])
        checked = self.clock.mark()
        per_chunk = counts.tolist()
        return {
            "pattern": pattern,
            "bytes_written": self.plan.region_bytes,
            "bytes_checked": self.plan.region_bytes,
            "write_ms": round(self._ms(start, written), 4),
            "check_ms": round(self._ms(written, checked), 4),
            "mismatched_words_per_chunk": per_chunk,
            "first_failure": self.first_failure(pattern, per_chunk),
        }

    def first_failure(self, pattern: str, per_chunk: list[int]) -> dict[str, Any] | None:
        """The lowest failing word: its byte offset in the region and in its chunk, expected and found bits."""
        failing = [chunk for chunk, count in enumerate(per_chunk) if count]
        if not failing:
            return None
        chunk = failing[0]
        first, length = self.chunks[chunk]
        expected = self.scratch[:length]
        self.fill(pattern, chunk, expected)
        found = self.region[first : first + length]
        word = int(torch.nonzero(found != expected)[0, 0])
        return {
            "chunk": chunk,
            "byte_offset": (first + word) * WORD_BYTES,
            "chunk_byte_offset": word * WORD_BYTES,
            "expected_hex": _hex(int(expected[word])),
            "found_hex": _hex(int(found[word])),
        }

    def run(self, on_pattern: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        records = []
        for pattern in PATTERNS:
            record = self.run_pattern(pattern)
            records.append(record)
            on_pattern(record)
        return {"patterns": records, "fault_injected": self.injected}


def _hex(value: int) -> str:
    """A 64-bit word's bits as 16 hex digits (two's complement for torch's signed int64)."""
    return f"{value & (2**64 - 1):016x}"
