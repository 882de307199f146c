"""Quantizers and metrics against small hand-computed tensors (harness/probes/precision/quantize.py)."""

import math

import pytest
import torch

from harness.probes.precision import quantize as q
from harness.probes.precision.quantize import FORMATS_BY_NAME as F


def values(x, name):
    return q.quantize(torch.tensor(x, dtype=torch.float32), F[name])


def test_int8_per_tensor_rounds_half_to_even_on_the_absmax_grid():
    # absmax 127 -> scale 1: 2.5 -> 2 and 3.5 -> 4 (half to even), -0.5 -> -0 (underflow)
    out = values([127.0, 2.5, 3.5, -0.5, 0.4, -127.0], "int8_per_tensor")
    assert out.values.tolist() == [127.0, 2.0, 4.0, -0.0, 0.0, -127.0]
    assert out.underflowed == 2 and out.saturated == 0 and out.scales == 1


def test_int4_per_channel_uses_one_scale_per_row():
    # row 0: absmax 7 -> scale 1; row 1: absmax 0.7 -> scale 0.1
    out = values([[7.0, 1.2, -3.6], [0.7, 0.12, -0.36]], "int4_per_channel")
    assert out.scales == 2
    assert out.values[0].tolist() == [7.0, 1.0, -4.0]
    scale = torch.tensor(0.7, dtype=torch.float32).item() / 7  # the float32 absmax over qmax
    assert out.values[1].tolist() == [7 * scale, 1 * scale, -4 * scale]


def test_int4_per_group_of_128_pads_a_short_last_group_without_changing_its_scale():
    row = torch.zeros(1, 130, dtype=torch.float32)
    row[0, 0], row[0, 128], row[0, 129] = 7.0, 0.7, 0.35  # group 2 holds 2 values, absmax 0.7
    out = q.quantize(row, F["int4_per_group128"])
    assert out.scales == 2
    assert out.values[0, 0].item() == 7.0
    assert out.values[0, 128].item() == pytest.approx(0.7)
    assert out.values[0, 129].item() == pytest.approx(0.4)  # 3.5 -> 4 (half to even) * 0.1
    assert out.values.shape == row.shape


def test_per_channel_needs_two_dims():
    with pytest.raises(ValueError, match="2 or more dims"):
        q.quantize(torch.ones(4), F["int8_per_channel"])


def test_fp8_e4m3fn_unscaled_saturates_rounds_and_underflows():
    # 1000 > 448: clamped (saturated); 1.0625 is halfway between 1 and 1.125 -> 1 (even);
    # 2**-7 is subnormal in e4m3fn (smallest normal 2**-6); 2**-12 flushes to zero.
    out = values([1000.0, -1000.0, 1.0625, 2.0**-7, 2.0**-12, 0.0], "fp8_e4m3fn")
    assert out.values.tolist() == [448.0, -448.0, 1.0, 2.0**-7, 0.0, 0.0]
    assert out.saturated == 2
    assert out.underflowed == 2  # the subnormal and the flushed value; the zero is not counted


def test_fp8_scaled_maps_absmax_to_the_format_maximum():
    out = values([0.5, 0.25, -0.125], "fp8_e4m3fn_scaled")
    # scale 448 / 0.5 = 896: every value is a power of two times 448, exact in e4m3fn
    assert out.values.tolist() == [0.5, 0.25, -0.125]
    assert out.saturated == 0 and out.underflowed == 0 and out.scales == 1


def test_fp16_and_bf16_round_to_nearest_even():
    # 1 + 2**-11 is halfway between 1 and the next fp16 (1 + 2**-10): ties to even -> 1
    assert values([1.0 + 2.0**-11], "fp16").values.tolist() == [1.0]
    assert values([1.0 + 3 * 2.0**-11], "fp16").values.tolist() == [1.0 + 2 * 2.0**-10]
    assert values([1.0 + 2.0**-8], "bf16").values.tolist() == [1.0]
    assert values([70000.0], "fp16").values.tolist() == [65504.0]  # saturated, not inf


def test_negative_zero_and_zero_are_exact_and_never_underflow():
    for fmt in q.FORMATS:
        x = torch.tensor([[-0.0, 0.0, 1.0, -1.0]], dtype=torch.float32)
        out = q.quantize(x, fmt)
        assert out.values[0, :2].tolist() == [0.0, 0.0], fmt.name
        assert out.underflowed == 0, fmt.name


def test_all_zero_tensor_has_no_sqnr_and_no_nan():
    x = torch.zeros(2, 4)
    for row in q.measure_formats(x):
        assert row["mse"] == 0.0 and row["sqnr_db"] is None and row["relative_rmse"] is None


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_are_refused(bad):
    x = torch.tensor([[1.0, bad]])
    with pytest.raises(q.NotFinite, match="NaN or infinite"):
        q.quantize(x, F["int8_per_tensor"])
    with pytest.raises(q.NotFinite):
        q.measure_formats(x)
    with pytest.raises(q.NotFinite):
        q.tensor_stats(x)


def test_metrics_by_hand():
    x = torch.tensor([[127.0, 2.5, 3.5, -0.5]])
    row = next(r for r in q.measure_formats(x) if r["format"] == "int8_per_tensor")
    err_sq = 0.5**2 + 0.5**2 + 0.5**2  # 2.5->2, 3.5->4, -0.5->0
    sig_sq = 127.0**2 + 2.5**2 + 3.5**2 + 0.5**2
    assert row["mse"] == err_sq / 4
    assert row["sqnr_db"] == pytest.approx(10 * math.log10(sig_sq / err_sq), rel=1e-12)
    assert row["relative_rmse"] == pytest.approx(math.sqrt(err_sq / sig_sq), rel=1e-12)
    assert row["max_abs_error"] == 0.5
    assert row["underflow_share"] == 0.25 and row["saturated_share"] == 0.0
    assert row["bits_per_element_with_scales"] == 8 + 32 / 4


def test_stats_by_hand():
    x = torch.tensor([1.0, -1.0, 1.0, -1.0, 3.0, -3.0])
    s = q.tensor_stats(x)
    m2, m4 = (4 + 18) / 6, (4 + 162) / 6
    assert s["mean"] == 0.0 and s["std"] == pytest.approx(math.sqrt(m2))
    assert s["excess_kurtosis"] == pytest.approx(m4 / m2**2 - 3)
    assert s["absmax_over_std"] == pytest.approx(3 / math.sqrt(m2))
    assert s["beyond_6sigma_count"] == 0 and s["min"] == -3.0 and s["max"] == 3.0


def test_ordered_sum_is_exactly_reproducible_and_accurate():
    torch.manual_seed(0)
    x = torch.randn(100_003, dtype=torch.float64) * 1e3
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = q.ordered_sum(x)
        torch.set_num_threads(max(2, threads))
        many = q.ordered_sum(x)
    finally:
        torch.set_num_threads(threads)
    assert one == many  # bit-identical, whatever the thread count
    assert one == pytest.approx(math.fsum(x.tolist()), rel=1e-12)
    assert q.ordered_sum(torch.tensor([])) == 0.0 and q.ordered_sum(torch.tensor([2.5])) == 2.5


def test_divide_is_true_division():
    x = torch.tensor([1.0, 3.0], dtype=torch.float64)
    assert q.divide(x, 3.0).tolist() == [1.0 / 3.0, 1.0]
