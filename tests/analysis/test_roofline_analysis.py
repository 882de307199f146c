"""Roofline arithmetic and explanations, checked against hand-computed values and H200 facts."""

import json
from pathlib import Path

import pytest

from harness.analysis.roofline import gemm_shapes
from harness.analysis.roofline import model as rl
from harness.analysis.roofline.explanation import explain

H200 = json.loads((Path(__file__).parents[1] / "fixtures" / "roofline" / "h200.json").read_text())
BF16 = rl.DTYPE_WIDTHS["bf16"]


def h200_context(**overrides):
    context = {
        "peak_tflops": H200["peak_bf16_tflops"],
        "bandwidth_gbps": H200["bandwidth_gbps"],
        "in_bytes": 2,
        "out_bytes": 2,
        "path": "torch.mm (cuBLAS) in bf16",
        "launch_floor_s": 6e-6,
        "sm_count": H200["sm_count"],
        "tile_m": 128,
        "tile_n": 256,
        "max_sm_clock_mhz": H200["max_sm_clock_mhz"],
        "cache_mib": H200["l2_mib"],
    }
    return {**context, **overrides}


def predicted(m, n, k, widths=BF16, peak=H200["peak_bf16_tflops"]):
    return {"m": m, "n": n, "k": k, **rl.classify(m, n, k, *widths, peak, H200["bandwidth_gbps"])}


def at_tflops(prediction, tflops, **extra):
    return {"median_s": prediction["flops"] / (tflops * 1e12), **extra}


def test_4096_cubed_bf16_by_hand():
    p = rl.classify(4096, 4096, 4096, 2, 2, 989.4, 4254)
    assert p["flops"] == 137_438_953_472  # 2 * 4096^3
    assert p["min_bytes"] == 100_663_296  # 3 * 4096^2 * 2 B
    assert round(p["ai_flop_per_byte"], 1) == 1365.3  # 4096 / 3
    assert p["bound"] == "compute" and p["attainable_tflops"] == 989.4


def test_fp8_bytes_use_one_byte_inputs_and_the_bf16_output():
    p = rl.classify(4096, 4096, 4096, *rl.DTYPE_WIDTHS["fp8"], 1978.9, 4254)
    assert p["min_bytes"] == 2 * 4096**2 * 1 + 4096**2 * 2
    assert round(p["ai_flop_per_byte"], 1) == 2048.0


def test_ridge_from_given_roofs():
    assert round(rl.ridge_flop_per_byte(989.4, 4254), 2) == 232.58
    assert rl.ridge_flop_per_byte(100, 1000) == 100.0
    # memory side of the roof: attainable = AI x bandwidth
    assert rl.attainable_tflops(10, 989.4, 4254) == pytest.approx(42.54)


def test_decode_is_memory_bound_and_prefill_compute_bound_on_h200_roofs():
    shapes = gemm_shapes.default_shapes(16384)
    decode = [s for s in shapes if s.kind == "decode"]
    prefill = [s for s in shapes if s.kind == "prefill"]
    assert len(decode) == len(prefill) == 8  # 4 projections x 2 token counts
    for s in decode:
        assert predicted(s.m, s.n, s.k)["bound"] == "memory", s.label
    for s in prefill:
        assert predicted(s.m, s.n, s.k)["bound"] == "compute", s.label


def test_llama3_8b_projection_shapes():
    found = {name: (n, k) for name, n, k, _ in gemm_shapes.projections()}
    assert found == {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}
    labels = {s.label for s in gemm_shapes.default_shapes(16384)}
    assert {"qkv-prefill-2048", "down-decode-64", "awkward-4097", "awkward-1000", "square-16384"} <= labels


def test_tiling_numbers_for_the_awkward_shape():
    t = rl.tiling(4097, 4097, 128, 256, 132)
    assert t["output_tiles"] == 33 * 17 == 561
    assert t["waves"] == 5 and round(t["waves_exact"], 2) == 4.25
    assert t["last_wave_utilisation"] == 33 / 132
    assert round(t["padding_share"], 3) == 0.087  # 4097^2 of 4224 x 4352


def test_awkward_shape_explanation_names_wave_quantization_with_its_numbers():
    p = predicted(4097, 4097, 4097)
    explanation = explain(p, at_tflops(p, 560), h200_context())
    causes = {c["cause"] for c in explanation["causes"]}
    assert {"wave_quantization", "tile_padding", "alignment"} <= causes
    text = explanation["text"]
    for fact in (
        "561 output tiles",
        "128x256",
        "132 SMs",
        "4.25 waves",
        "run as 5",
        "last wave 25% full",
        "8.7%",
        "K=4097 (8194 B rows",
    ):
        assert fact in text, fact
    assert explanation["explained"] and explanation["verdict"] == "below_compute_roof"


def test_aligned_square_has_no_wave_excuse_but_the_measured_power_cap_is_named():
    p = predicted(4096, 4096, 4096)
    clocks = {
        "samples": 3,
        "sm_clock_mhz_median": H200["gemm_load_sm_clock_mhz"],
        "clock_event_reasons": H200["gemm_load_clock_event_reasons"],
    }
    explanation = explain(p, at_tflops(p, H200["mamf_best_bf16"]["tflops"], clocks=clocks), h200_context())
    assert [c["cause"] for c in explanation["causes"]] == ["clocks"]
    assert "1305 MHz of 1980 MHz" in explanation["text"] and "sw_power_cap" in explanation["text"]
    assert "77% of the 989.4 TFLOPS peak" in explanation["text"]


def test_nothing_found_is_said_to_be_unexplained():
    p = predicted(4096, 4096, 4096)
    explanation = explain(p, at_tflops(p, 500), h200_context())
    assert not explanation["explained"] and "unexplained" in explanation["text"]
    assert "3.88 waves" in explanation["text"]


def test_small_shape_names_the_measured_launch_floor():
    p = predicted(256, 256, 256)
    explanation = explain(p, {"median_s": 9e-6}, h200_context(launch_floor_s=6e-6))
    assert explanation["causes"][0]["cause"] == "launch_overhead"
    assert "9.0 us" in explanation["text"] and "6.0 us" in explanation["text"]


def test_memory_bound_decode_near_the_bandwidth_roof():
    p = predicted(1, 28672, 4096)
    seconds = p["min_bytes"] / (0.9 * H200["bandwidth_gbps"] * 1e9)
    explanation = explain(p, {"median_s": seconds}, h200_context())
    assert explanation["verdict"] == "near_memory_roof" and explanation["explained"]
    assert "3829 GB/s, 90% of the 4254 GB/s roof" in explanation["text"]


def test_fusion_accounting_counts_every_pass():
    a = rl.fusion_accounting(2**28, 4, 4, 4)
    assert a["unfused_bytes"] == 8 * 2**28 * 4 and a["fused_bytes"] == 2 * 2**28 * 4
    assert a["unfused_ai_flop_per_byte"] == 0.125 and a["fused_ai_flop_per_byte"] == 0.5


def test_fusion_comparison_from_the_baseline_times():
    fusion = {
        **rl.fusion_accounting(2**28, 4, 4, 4),
        "unfused": {"median_s": 2.03e-3, "achieved_gbps": 4232},
        "fused": {"median_s": 0.51e-3, "achieved_gbps": 4211},
    }
    c = rl.fusion_comparison(fusion, 989.4, 4254)
    assert c["traffic_ratio"] == 4 and round(c["speedup"], 2) == 3.98
    assert "4.0x fewer bytes" in c["text"] and "3.98x faster" in c["text"]


@pytest.mark.parametrize(
    "text, expected",
    [("4096x4096x8192", (4096, 4096, 8192, "user-4096x4096x8192")), ("1 X 2 x 3:tiny", (1, 2, 3, "tiny"))],
)
def test_parse_shape(text, expected):
    s = gemm_shapes.parse_shape(text)
    assert (s.m, s.n, s.k, s.label) == expected and s.kind == "user"


@pytest.mark.parametrize("text", ["4096x4096", "0x1x1", "axbxc", ""])
def test_parse_shape_refuses_bad_text(text):
    with pytest.raises(ValueError):
        gemm_shapes.parse_shape(text)


def test_shapes_file(tmp_path):
    path = tmp_path / "shapes.txt"
    path.write_text("# mine\n128x256x512:a\n\n64x64x64  # trailing comment\n")
    shapes = gemm_shapes.read_shapes_file(path)
    assert [s.label for s in shapes] == ["a", "user-64x64x64"]
    assert shapes[0].source == "shapes.txt line 2"
    path.write_text("12x\n")
    with pytest.raises(ValueError, match=r"shapes.txt:1: "):
        gemm_shapes.read_shapes_file(path)


def test_token_ranges_and_duplicate_labels_are_refused():
    with pytest.raises(ValueError, match="prefill"):
        gemm_shapes.check_tokens((512,), gemm_shapes.PREFILL_TOKENS_RANGE, "prefill")
    gemm_shapes.check_tokens((1, 64), gemm_shapes.DECODE_TOKENS_RANGE, "decode")
    with pytest.raises(ValueError, match="twice"):
        gemm_shapes.unique_labels([gemm_shapes.parse_shape("1x1x1:x"), gemm_shapes.parse_shape("2x2x2:x")])


def test_full_clocks_and_clean_tiling_leave_the_kernel_itself_as_the_named_cause():
    """The real H200 case (2026-11-29): 4096^3 bf16 at 790 TFLOPS, 1980 MHz, no cap reason."""
    p = predicted(4096, 4096, 4096)
    clocks = {"samples": 4, "sm_clock_mhz_median": 1980, "clock_event_reasons": []}
    explanation = explain(p, at_tflops(p, 790, clocks=clocks), h200_context(launch_floor_s=20.9e-6))
    assert [c["cause"] for c in explanation["causes"]] == ["kernel_efficiency"]
    assert explanation["explained"]
    for fact in ("1980 of 1980 MHz", "3.88 waves", "97% wave efficiency", "0.0% padding"):
        assert fact in explanation["text"], fact


def test_without_a_clock_reading_nothing_is_concluded_by_elimination():
    p = predicted(4096, 4096, 4096)
    explanation = explain(p, at_tflops(p, 790), h200_context(launch_floor_s=20.9e-6))
    assert not explanation["explained"] and "unexplained" in explanation["text"]
