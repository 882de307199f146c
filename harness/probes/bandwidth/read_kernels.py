"""The read kernel's variants (`--kernel read --read-kernel NAME`): ways to read one buffer once.

Every variant reads each byte of the buffer once and writes a result far smaller than it (the byte
rule counts the read alone); they differ in how the reads are issued, which is what sets a read-only
stream's rate on an HBM GPU: the load width, the loads in flight per thread, the grid and its tail.
  torch-sum   torch's reduction kernel (the default): 16-byte loads, a grid of many short blocks, each
              ending in a block reduction, a global staging buffer and a semaphore (a memset first), the
              last block reducing the others' values;
  torch-mv    torch.mv of the buffer as rows of 4096 against ones (cuBLAS SGEMV on a GPU, BLAS on a CPU);
  nvrtc-...   a kernel compiled here by NVRTC (harness.probes.nvrtc): a persistent grid of BLOCKS blocks
              of THREADS threads per SM striding over the buffer, float4 (v4) or float2 (v2) loads, UNROLL
              independent loads in flight per thread, optionally the buffer read as two halves at once
              (s2: two address streams, as BabelStream's Dot reads two arrays) or with cache-streaming
              loads (cs); one partial sum per block written, nothing else.
DEFAULT is the one a document gets unless asked: switching it is this one line.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.probes.contract import ProbeUsageError

DEFAULT = "torch-sum"
ROW = 4096  # torch-mv: elements per row
CHECK_TOLERANCE = 1e-3  # a variant's sum against torch's float64 sum of the same buffer, relative


@dataclass(frozen=True)
class Compiled:
    """An NVRTC variant's shape (see the module's docstring)."""

    vec: int
    unroll: int
    threads: int
    blocks: int
    streams: int = 1
    load: str = "plain"

    @property
    def name(self) -> str:
        extra = ("-s2" if self.streams == 2 else "") + ("-cs" if self.load == "cs" else "")
        return f"nvrtc-v{self.vec}u{self.unroll}t{self.threads}b{self.blocks}{extra}"

    def describe(self) -> str:
        how = [
            f"float{self.vec} loads ({4 * self.vec} bytes)",
            f"{self.unroll} in flight per thread" + (" per half" if self.streams == 2 else ""),
            f"{self.blocks} blocks of {self.threads} threads per SM, grid-stride",
        ]
        if self.streams == 2:
            how.append("the buffer read as two halves at once")
        if self.load == "cs":
            how.append("cache-streaming loads (__ldcs)")
        return f"NVRTC kernel {self.name}: " + ", ".join(how) + "; one partial sum per block written"


COMPILED = (
    Compiled(4, 4, 512, 4),
    Compiled(4, 2, 512, 4),
    Compiled(4, 8, 256, 4),
    Compiled(4, 4, 256, 4),
    Compiled(4, 4, 1024, 2),
    Compiled(4, 4, 512, 8),  # twice the blocks that fit: two waves, as BabelStream's Dot grid has
    Compiled(4, 4, 512, 4, load="cs"),
    Compiled(4, 2, 512, 4, streams=2),
    Compiled(2, 1, 1024, 4, streams=2),  # BabelStream Dot's shape: 8-byte loads, 4 blocks of 1024 per SM
)
MAX_THREADS_PER_SM = 2048  # Hopper's (and Ampere's): the blocks a launch bound asks to fit at once
DESCRIPTIONS: dict[str, str] = {
    "torch-sum": "torch.sum(a, out=s)",
    "torch-mv": f"torch.mv(a.view(-1, {ROW}), ones({ROW}), out=y) (cuBLAS SGEMV on a GPU); y, 1/{ROW} of "
    "the bytes, written and not counted",
    **{c.name: c.describe() for c in COMPILED},
}
NAMES = tuple(DESCRIPTIONS)

SOURCE = r"""
#define VEC {vec}
#define UNROLL {unroll}
#define THREADS {threads}
#define STREAMS {streams}
#define RESIDENT {resident}
typedef {vector} vec_t;
__device__ __forceinline__ float total(vec_t v) {{ return {total}; }}
__device__ __forceinline__ vec_t get(const vec_t* p) {{ return {load}; }}

extern "C" __global__ void __launch_bounds__(THREADS, RESIDENT) read_sum(const float* __restrict__ x, double count,
                                                                  float* __restrict__ partial) {{
  const unsigned long long n = (unsigned long long)count;
  const unsigned long long vectors = n / VEC, part = vectors / STREAMS;
  const vec_t* __restrict__ xv = reinterpret_cast<const vec_t*>(x);
  const unsigned long long stride = (unsigned long long)gridDim.x * THREADS;
  unsigned long long i = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
  float sum = 0.0f;
  for (; i + (UNROLL - 1) * stride < part; i += UNROLL * stride) {{
    vec_t v[UNROLL * STREAMS];
#pragma unroll
    for (int s = 0; s < STREAMS; ++s)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) v[s * UNROLL + u] = get(xv + s * part + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL * STREAMS; ++u) sum += total(v[u]);  // every load issued before the first add
  }}
  for (; i < part; i += stride) {{
#pragma unroll
    for (int s = 0; s < STREAMS; ++s) sum += total(get(xv + s * part + i));
  }}
  if (blockIdx.x == 0 && threadIdx.x == 0)  // what the whole vectors of the halves leave: a few elements
    for (unsigned long long k = part * STREAMS * VEC; k < n; ++k) sum += x[k];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ float warps[THREADS / 32];
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {{
    sum = threadIdx.x < THREADS / 32 ? warps[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
  }}
}}
"""


def source(shape: Compiled) -> str:
    """The CUDA C++ of one compiled variant."""
    vector, total = ("float4", "v.x + v.y + v.z + v.w") if shape.vec == 4 else ("float2", "v.x + v.y")
    return SOURCE.format(
        vec=shape.vec,
        unroll=shape.unroll,
        threads=shape.threads,
        streams=shape.streams,
        resident=max(1, min(shape.blocks, MAX_THREADS_PER_SM // shape.threads)),
        vector=vector,
        total=total,
        load="__ldcs(p)" if shape.load == "cs" else "*p",
    )


class ReadKernel:
    """One variant over one buffer (a prefix view): calling it reads the buffer once; `total()` is what
    the last call summed (float64 on the host)."""

    def __init__(self, call: Callable[[], Any], total: Callable[[], float]) -> None:
        self.call, self.total = call, total

    def __call__(self) -> Any:
        return self.call()


class Variants:
    """The chosen variant for every buffer of one probe run: compiled once, its output buffers kept."""

    def __init__(self, torch: Any, name: str, device: str) -> None:
        if name not in DESCRIPTIONS:
            raise ProbeUsageError(f"--read-kernel {name}: no such variant; choose from {', '.join(NAMES)}")
        if name.startswith("nvrtc-") and device != "cuda":
            raise ProbeUsageError(f"--read-kernel {name}: an NVRTC kernel needs a CUDA device (here: {device})")
        self.torch, self.name, self.device = torch, name, device
        self.shape = next((c for c in COMPILED if c.name == name), None)
        self.kernel: Any = None
        self.facts: dict[str, Any] = {}
        self._outputs: dict[int, Any] = {}

    def describe(self) -> str:
        return DESCRIPTIONS[self.name]

    def _output(self, count: int) -> Any:
        if count not in self._outputs:
            self._outputs[count] = self.torch.empty(count, dtype=self.torch.float32, device=self.device)
        return self._outputs[count]

    def over(self, a: Any, out: Any) -> ReadKernel:
        """The variant reading A (contiguous float32); OUT is the 0-dim tensor torch-sum writes."""
        torch = self.torch
        if self.name == "torch-sum":
            return ReadKernel(lambda: torch.sum(a, dim=(0,), out=out), lambda: float(out.item()))
        if self.name == "torch-mv":
            if a.numel() % ROW:
                raise ProbeUsageError(f"--read-kernel torch-mv: {a.numel()} elements are not rows of {ROW}")
            rows, y = a.view(-1, ROW), self._output(a.numel() // ROW)
            ones = torch.ones(ROW, dtype=torch.float32, device=self.device)
            return ReadKernel(lambda: torch.mv(rows, ones, out=y), lambda: float(y.sum(dtype=torch.float64)))
        return self._compiled(a)

    def _compiled(self, a: Any) -> ReadKernel:
        from harness.probes import nvrtc

        torch, shape = self.torch, self.shape
        assert shape is not None
        if a.data_ptr() % (4 * shape.vec):
            raise ProbeUsageError(f"--read-kernel {self.name}: the buffer is not {4 * shape.vec}-byte aligned")
        if self.kernel is None:
            try:
                self.kernel, self.facts = nvrtc.build(torch, source(shape), "read_sum")
            except nvrtc.NvrtcError as exc:
                raise ProbeUsageError(f"--read-kernel {self.name}: {exc}") from exc
        grid = torch.cuda.get_device_properties(a.device).multi_processor_count * shape.blocks
        partial = self._output(grid)
        arguments = [ctypes.c_void_p(a.data_ptr()), ctypes.c_double(a.numel()), ctypes.c_void_p(partial.data_ptr())]
        launch = self.kernel.launcher(grid, shape.threads, arguments, torch.cuda.current_stream().cuda_stream)
        return ReadKernel(launch, lambda: float(partial.sum(dtype=torch.float64)))

    def check(self, kernel: ReadKernel, a: Any) -> None:
        """The variant's sum of A against torch's float64 sum: a kernel that reads wrong gives no figure."""
        if self.name == DEFAULT:
            return
        kernel()
        got, want = kernel.total(), float(self.torch.sum(a, dtype=self.torch.float64))
        if abs(got - want) > CHECK_TOLERANCE * max(abs(want), 1.0):
            raise RuntimeError(
                f"read kernel {self.name} summed {got!r} over {a.numel()} elements; torch's float64 sum is "
                f"{want!r} (relative difference over {CHECK_TOLERANCE:g}): its reads are wrong, no figure is taken"
            )
