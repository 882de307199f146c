"""Quantizers and error metrics for the precision probe (standard library and torch only).

Every number this module returns is the same on CPU and on CUDA, bit for bit:

* element-wise work is single IEEE operations (add, multiply, divide, round-half-even,
  clamp, a dtype cast), which both devices round identically;
* reductions use `ordered_sum`, a pairwise sum over a fixed tree built from element-wise
  adds, instead of torch.sum, whose order depends on the device, thread count and vector
  width;
* logarithms and square roots of the reduced scalars are taken in Python's `math`;
* a division by a number uses a 0-dim tensor on the tensor's own device (`divide`): CUDA
  turns a division by a Python or CPU scalar into a multiplication by its reciprocal,
  which rounds differently from the CPU's true division.

Formats are data (`FORMATS`): name, family, element width, scaling granularity. Floating
formats are saturating casts: a value beyond the format's largest finite number is clamped
to it (and counted as saturated) rather than becoming inf/NaN. Integer formats are
symmetric, zero-point free: scale = absmax / qmax over the scaling group, q = round(x/scale)
(half to even) clamped to [-qmax, qmax].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from harness.analysis.precision import SCALE_BITS  # scales counted as fp32; the verifier recounts with it
from harness.probes.result_digest import tensor_sha256  # of each format's output (harness.analysis.digests)

GROUP_SIZE = 128


@dataclass(frozen=True)
class Format:
    """One number format and how it is scaled."""

    name: str
    family: str  # "float" or "int"
    bits: int  # storage width of one element
    scaling: str  # "none", "per_tensor", "per_channel", "per_group"
    dtype: str | None = None  # torch dtype name for float formats
    qmax: int | None = None  # largest integer magnitude for int formats


FORMATS: tuple[Format, ...] = (
    Format("fp16", "float", 16, "none", dtype="float16"),
    Format("bf16", "float", 16, "none", dtype="bfloat16"),
    Format("fp8_e4m3fn", "float", 8, "none", dtype="float8_e4m3fn"),
    Format("fp8_e4m3fn_scaled", "float", 8, "per_tensor", dtype="float8_e4m3fn"),
    Format("fp8_e5m2", "float", 8, "none", dtype="float8_e5m2"),
    Format("fp8_e5m2_scaled", "float", 8, "per_tensor", dtype="float8_e5m2"),
    Format("int8_per_tensor", "int", 8, "per_tensor", qmax=127),
    Format("int8_per_channel", "int", 8, "per_channel", qmax=127),
    Format("int4_per_tensor", "int", 4, "per_tensor", qmax=7),
    Format("int4_per_channel", "int", 4, "per_channel", qmax=7),
    Format(f"int4_per_group{GROUP_SIZE}", "int", 4, "per_group", qmax=7),
)

FORMATS_BY_NAME = {f.name: f for f in FORMATS}


class NotFinite(ValueError):
    """The input holds NaN or infinity: no quantizer accepts it."""


@dataclass(frozen=True)
class Quantized:
    """A tensor after a round trip through a format, in float64, with what happened on the way."""

    values: torch.Tensor  # dequantized, float64, same shape as the input
    saturated: int  # elements beyond the format's range (clamped)
    underflowed: int  # nonzero inputs that became zero or (for floats) a subnormal
    scales: int  # how many scale factors the format stores (0 when unscaled)


def refuse_non_finite(x: torch.Tensor) -> None:
    if bool(torch.isfinite(x).all().item()):
        return
    bad = int((~torch.isfinite(x)).sum().item())
    raise NotFinite(f"{bad} of {x.numel()} values are NaN or infinite; refusing to quantize")


def ordered_sum(x: torch.Tensor, consume: bool = False) -> float:
    """Sum of all elements in float64, in the same order on every device.

    A fixed pairwise tree of in-place element-wise adds: with p the largest power of two
    <= n, element i first takes x[i] + x[p + i] (i < n - p), then the halves of the
    power-of-two run are folded onto each other until one element is left. With
    `consume`, a contiguous float64 `x` is used as the work space (and overwritten).
    """
    v = x.reshape(-1).to(torch.float64)
    n = v.numel()
    if n == 0:
        return 0.0
    p = 1 << (n.bit_length() - 1)
    if consume and v.data_ptr() == x.data_ptr():
        if n > p:
            v[: n - p].add_(v[p:])
        w = v[:p]
    else:
        w = v[:p].clone()
        if n > p:
            w[: n - p].add_(v[p:])
    while p > 1:
        p //= 2
        w[:p].add_(w[p : 2 * p])
    return float(w[0].item())


def divide(x: torch.Tensor, divisor: float | torch.Tensor) -> torch.Tensor:
    """x / divisor as a true IEEE division on every device (see the module docstring)."""
    if not isinstance(divisor, torch.Tensor):
        divisor = torch.tensor(divisor, dtype=x.dtype, device=x.device)
    return torch.div(x, divisor)


def count(mask: torch.Tensor) -> int:
    return int(torch.count_nonzero(mask).item())  # an integer: exact on every device


def count_outside(x: torch.Tensor, limit: float) -> int:
    """Elements with |x| > limit, without materializing |x|."""
    return count(x > limit) + count(x < -limit)


def count_tiny(x: torch.Tensor, x_ref: torch.Tensor, limit: float) -> int:
    """Elements with |x| < limit whose reference value is nonzero."""
    return count((x < limit) & (x > -limit) & (x_ref != 0))


def absmax_of(x: torch.Tensor) -> float:
    if x.numel() == 0:
        return 0.0
    low, high = torch.aminmax(x)
    return max(-float(low.item()), float(high.item()))


def quantize(x32: torch.Tensor, fmt: Format) -> Quantized:
    """Round-trip a float32 tensor through `fmt`; the result is float64. NaN/inf are refused."""
    refuse_non_finite(x32)
    return _round_trip(x32, x32.to(torch.float64), fmt)


def _round_trip(x32: torch.Tensor, x64: torch.Tensor, fmt: Format) -> Quantized:
    if fmt.family == "float":
        return _float_round_trip(x32, x64, fmt)
    return _int_round_trip(x64, fmt)


def _float_round_trip(x32: torch.Tensor, x64: torch.Tensor, fmt: Format) -> Quantized:
    assert fmt.dtype is not None  # every float format names its torch dtype (FORMATS)
    dtype = getattr(torch, fmt.dtype)
    info = torch.finfo(dtype)
    if fmt.scaling == "per_tensor":
        absmax = absmax_of(x64)
        scale = info.max / absmax if absmax > 0 else 1.0
        # The scaled value is rounded to float32 once, explicitly, before the fp8 cast.
        scaled = (x64 * scale).to(torch.float32)
        scales = 1
    else:
        scale, scaled, scales = 1.0, x32, 0
    saturated = count_outside(scaled, info.max)
    stored = scaled.clamp(-info.max, info.max).to(dtype).to(torch.float64)
    underflowed = count_tiny(stored, x32, info.tiny)  # zero or subnormal in the format
    values = divide(stored, scale) if scale != 1.0 else stored
    return Quantized(values, saturated, underflowed, scales)


def _int_round_trip(x64: torch.Tensor, fmt: Format) -> Quantized:
    assert fmt.qmax is not None  # every int format has its largest magnitude (FORMATS)
    grouped, restore = _groups(x64, fmt.scaling)
    absmax = (
        grouped.abs().amax(dim=1, keepdim=True)
        if fmt.scaling != "per_tensor"
        else torch.full((1, 1), absmax_of(x64), dtype=torch.float64, device=x64.device)
    )
    scale = torch.where(absmax > 0, divide(absmax, float(fmt.qmax)), torch.ones_like(absmax))
    q = divide(grouped, scale)
    q.round_()  # half to even
    saturated = count_outside(q, fmt.qmax)  # never true with absmax scales, measured anyway
    q.clamp_(-fmt.qmax, fmt.qmax)
    underflowed = count((q == 0) & (grouped != 0))
    q.mul_(scale)
    return Quantized(restore(q), saturated, underflowed, scale.numel())


def _groups(x64: torch.Tensor, scaling: str):
    """Rows that share one scale, and how to put the rows back into the input's shape.

    per_tensor: one row. per_channel: one row per output channel (dim 0). per_group:
    runs of GROUP_SIZE consecutive elements along the last dim of each row; a short last
    run is padded with zeros, which change no absmax, and the padding is dropped again.
    """
    shape = x64.shape
    if scaling == "per_tensor":
        return x64.reshape(1, -1), lambda v: v.reshape(shape)
    if x64.dim() < 2:
        raise ValueError(f"{scaling} scaling needs a tensor of 2 or more dims, got shape {list(shape)}")
    rows = x64.reshape(shape[0], -1)
    if scaling == "per_channel":
        return rows, lambda v: v.reshape(shape)
    if scaling != "per_group":
        raise ValueError(f"unknown scaling {scaling!r}")
    last = shape[-1]
    lines = x64.reshape(-1, last)
    pad = (-last) % GROUP_SIZE
    if pad:
        lines = torch.cat([lines, lines.new_zeros(lines.shape[0], pad)], dim=1)
    width = lines.shape[1]
    grouped = lines.reshape(-1, GROUP_SIZE)

    def restore(v: torch.Tensor) -> torch.Tensor:
        return v.reshape(-1, width)[:, :last].reshape(shape)

    return grouped, restore


def error_metrics(
    x64: torch.Tensor, quantized: Quantized, sig_sq: float | None = None
) -> dict[str, float | int | None]:
    """MSE, relative RMSE, SQNR, max abs error and the saturated/underflowed shares.

    Consumes `quantized.values` (its memory becomes the error's). `sig_sq` (the ordered
    sum of x squared) may be passed in when it is already known.
    """
    x64 = x64.to(torch.float64)
    n = x64.numel()
    err = quantized.values.sub_(x64)
    max_abs_error = absmax_of(err)
    err_sq = ordered_sum(err.mul_(err), consume=True)
    if sig_sq is None:
        sig_sq = ordered_sum(x64 * x64, consume=True)
    mse = err_sq / n
    lossless = err_sq == 0.0
    return {
        "mse": mse,
        "relative_rmse": math.sqrt(err_sq / sig_sq) if sig_sq > 0 else None,
        "sqnr_db": None if lossless or sig_sq == 0 else 10.0 * math.log10(sig_sq / err_sq),
        "max_abs_error": max_abs_error,
        "saturated_count": quantized.saturated,
        "saturated_share": quantized.saturated / n,
        "underflow_count": quantized.underflowed,
        "underflow_share": quantized.underflowed / n,
        "scales": quantized.scales,
        "bits_per_element_with_scales": None,  # filled by the caller, who knows the format
    }


def tensor_stats(x32: torch.Tensor) -> dict[str, float | int | None]:
    """Shape-free statistics of a tensor, in float64 with device-independent sums.

    std is the population standard deviation; excess_kurtosis is m4/m2^2 - 3 (0 for a
    Gaussian); beyond_6sigma_share counts |x - mean| > 6 std.
    """
    refuse_non_finite(x32)
    x = x32.to(torch.float64)
    n = x.numel()
    low, high = (float(v.item()) for v in torch.aminmax(x))
    mean = ordered_sum(x) / n
    mean_square = ordered_sum(x * x, consume=True) / n
    d = x - mean
    beyond = 0
    d2 = d * d
    m2 = ordered_sum(d2) / n
    std = math.sqrt(m2)
    if std > 0:
        beyond = count_outside(d, 6.0 * std)
    del d
    m4 = ordered_sum(d2.mul_(d2), consume=True) / n
    absmax = max(-low, high)
    return {
        "numel": n,
        "min": low,
        "max": high,
        "absmax": absmax,
        "mean": mean,
        "std": std,
        "mean_square": mean_square,
        "excess_kurtosis": m4 / (m2 * m2) - 3.0 if m2 > 0 else None,
        "beyond_6sigma_count": beyond,
        "beyond_6sigma_share": beyond / n,
        "absmax_over_std": absmax / std if std > 0 else None,
        "zero_share": count(x == 0) / n,
    }


def measure_formats(x32: torch.Tensor) -> list[dict]:
    """Every format in FORMATS applied to one tensor; a format that cannot apply says why."""
    refuse_non_finite(x32)
    rows = []
    n = x32.numel()
    x64 = x32.to(torch.float64)
    sig_sq = ordered_sum(x64 * x64, consume=True)
    for fmt in FORMATS:
        row = {"format": fmt.name, "family": fmt.family, "bits": fmt.bits, "scaling": fmt.scaling}
        if fmt.family == "float":
            assert fmt.dtype is not None  # every float format names its torch dtype (FORMATS)
            info = torch.finfo(getattr(torch, fmt.dtype))
            row["range_max"] = float(info.max)
            row["smallest_normal"] = float(info.tiny)
        else:
            assert fmt.qmax is not None  # every int format has its largest magnitude (FORMATS)
            row["range_max"] = float(fmt.qmax)
        try:
            quantized = _round_trip(x32, x64, fmt)
        except ValueError as exc:  # e.g. per-channel on a 1-D tensor
            row["not_applicable"] = str(exc)
            rows.append(row)
            continue
        row["output_sha256"] = tensor_sha256(quantized.values)  # before error_metrics consumes the values
        metrics = error_metrics(x64, quantized, sig_sq)
        metrics["bits_per_element_with_scales"] = fmt.bits + SCALE_BITS * quantized.scales / n
        row.update(metrics)
        rows.append(row)
    return rows
