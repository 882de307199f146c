"""A stand-in for torch's CUDA calls, so the transfer probe's GPU code path runs on a CPU in CI.

It measures nothing about a GPU: "device" tensors are CPU tensors, a stream runs its copies
synchronously, and an event is the host's perf_counter when it was recorded. It exists to run
every line of the multi-GPU orchestration (buffers, per-copy events, threads released by one
barrier, groups, peer copies, the document) here, before the one GPU call the project gets.
Tests that use it check the document's shape and its recomputation, never a figure.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from types import SimpleNamespace
from typing import Any

import torch as real_torch

_handles = itertools.count(0x5000)


class Event:
    def __init__(self, enable_timing: bool = False) -> None:
        self.at: float | None = None

    def record(self, stream: Any = None) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, other: Event) -> float:
        return (other.at - self.at) * 1e3  # milliseconds, as torch.cuda.Event answers


class Stream:
    def __init__(self, device: int = 0) -> None:
        self.device, self.cuda_stream = device, next(_handles)

    def synchronize(self) -> None:
        pass


class Cuda:
    """torch.cuda as far as the transfer probe uses it, for `count` stand-in GPUs."""

    Event, Stream = Event, Stream

    def __init__(self, count: int, peer_access: bool = True) -> None:
        self.count, self.peer = count, peer_access

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return self.count

    def get_device_properties(self, index: int) -> Any:
        return SimpleNamespace(name=f"stand-in GPU {index} (CPU tensors)", uuid=None)

    def mem_get_info(self, index: int) -> tuple[int, int]:
        return 8 * 2**30, 16 * 2**30

    def can_device_access_peer(self, a: int, b: int) -> bool:
        return self.peer

    def synchronize(self, device: Any = None) -> None:
        pass

    def device(self, index: int) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def stream(self, stream: Any) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()


def standin_torch(count: int, peer_access: bool = True) -> Any:
    """A module-like object: real CPU tensors, stand-in CUDA."""

    def empty(n: int, dtype: Any = None, device: Any = None, pin_memory: bool = False) -> Any:
        return real_torch.empty(n, dtype=dtype)

    return SimpleNamespace(
        __version__=f"{real_torch.__version__} (CUDA stand-in)",
        uint8=real_torch.uint8,
        empty=empty,
        get_num_threads=real_torch.get_num_threads,
        cuda=Cuda(count, peer_access),
    )
