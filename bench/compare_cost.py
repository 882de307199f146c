"""How much one result check costs beside one GEMM on this GPU: variants of 'count the output
elements whose bits differ from the reference', each timed with CUDA events (median of 40).

    PYTHONPATH=. python3 bench/compare_cost.py        # on the GPU machine; prints one table
"""

import functools
import statistics

import torch

from harness.probes.stress.count import MaskCounter


def timed(fn, reps=40):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def variants(out, ref, slot):
    bits = {2: torch.int16, 4: torch.int32}[out.element_size()]
    ob, rb = out.view(bits), ref.view(bits)
    o64, r64 = out.view(torch.int64), ref.view(torch.int64)
    mask = torch.empty(out.shape, dtype=torch.bool, device="cuda")
    mask64 = torch.empty(o64.shape, dtype=torch.bool, device="cuda")
    counter = MaskCounter(out.numel(), "cuda")
    cmask = counter.mask(tuple(out.shape))
    return {
        "ne(out=mask); MaskCounter.count_into(slot) [probe]": lambda: (
            torch.ne(ob, rb, out=cmask),
            counter.count_into(slot),
        ),
        "ne(out=mask); sum(mask, dim=0, out=slot) [probe before]": lambda: (
            torch.ne(ob, rb, out=mask),
            torch.sum(mask.view(-1), dim=0, out=slot),
        ),
        "ne(out=mask); slot.copy_(mask.sum())": lambda: (torch.ne(ob, rb, out=mask), slot.copy_(mask.sum())),
        "ne(out=mask); count_nonzero into slot": lambda: (
            torch.ne(ob, rb, out=mask),
            slot.copy_(torch.count_nonzero(mask)),
        ),
        "ne(out=mask); mask.view(uint8).sum(dtype=int32)": lambda: (
            torch.ne(ob, rb, out=mask),
            slot.copy_(mask.view(torch.uint8).sum(dtype=torch.int32)),
        ),
        "ne only (out=mask)": lambda: torch.ne(ob, rb, out=mask),
        "int64 words: ne(out=mask64); slot.copy_(mask64.sum())": lambda: (
            torch.ne(o64, r64, out=mask64),
            slot.copy_(mask64.sum()),
        ),
        "torch.equal (syncs)": lambda: torch.equal(ob, rb),
        "copy of the output (bandwidth floor of one read+write)": lambda: ref.copy_(out),
    }


def main():
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name())
    for dtype, shape in (
        (torch.bfloat16, (8192, 8192, 16384)),
        (torch.float32, (8192, 8192, 16384)),
        (torch.float32, (8192, 8192, 8192)),
    ):
        torch.backends.cuda.matmul.allow_tf32 = True
        m, n, k = shape
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(n, k, device="cuda", dtype=dtype).t()
        out = torch.empty(m, n, device="cuda", dtype=dtype)
        gemm_ms = timed(functools.partial(torch.mm, a, b, out=out), reps=20)
        ref = out.clone()
        slot = torch.zeros((), dtype=torch.int64, device="cuda")
        print(f"\n{dtype} {m}x{n}x{k}: GEMM {gemm_ms:.3f} ms ({2 * m * n * k / gemm_ms / 1e9:.1f} TFLOPS)")
        for name, fn in variants(out, ref.clone(), slot).items():
            ms = timed(fn)
            print(f"  {ms:8.4f} ms  {100 * ms / gemm_ms:6.2f} % of the GEMM  {name}")
        del a, b, out, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
