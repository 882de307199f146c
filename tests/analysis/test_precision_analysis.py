"""Ranking and explanations from measured values (harness/analysis/precision/__init__.py), on small documents."""

import copy
import math

from harness.analysis import precision as analysis
from harness.analysis.precision import checks as precision_checks
from harness.analysis.precision.compare import compare_measurements


def row(name, family, bits, scaling, sqnr, underflow=0.0, saturated=0.0, mse=None, **extra):
    mean_square = 1e-2
    mse = mean_square / 10 ** (sqnr / 10) if mse is None else mse
    return {
        "format": name,
        "family": family,
        "bits": bits,
        "scaling": scaling,
        "range_max": extra.pop("range_max", 1.0),
        "mse": mse,
        "sqnr_db": sqnr,
        "relative_rmse": math.sqrt(mse / mean_square),
        "max_abs_error": 0.01,
        "saturated_count": round(saturated * 10000),
        "saturated_share": saturated,
        "underflow_count": round(underflow * 10000),
        "underflow_share": underflow,
        "scales": 1,
        "bits_per_element_with_scales": bits + analysis.SCALE_BITS * 1 / 10000,
        **extra,
    }


def tensor(role, ratio, formats, std=0.1):
    return {
        "role": role,
        "name": f"{role}.weight",
        "formats": formats,
        "ranking": analysis.rank(formats),
        "stats": {
            "numel": 10000,
            "min": -ratio * std,
            "max": ratio * std,
            "absmax": ratio * std,
            "std": std,
            "mean_square": 1e-2,
            "excess_kurtosis": 1.0,
            "absmax_over_std": ratio,
            "beyond_6sigma_count": 3,
            "beyond_6sigma_share": 3 / 10000,
        },
    }


def lab_formats(ratio, e4m3_underflow):
    int8_pt = analysis.predicted_int_sqnr_db(127, ratio)
    return [
        row("fp16", "float", 16, "none", 73.7, smallest_normal=6.1e-5),
        row("bf16", "float", 16, "none", 55.6, smallest_normal=1.2e-38),
        row("fp8_e4m3fn", "float", 8, "none", 31.4, underflow=e4m3_underflow, smallest_normal=2**-6, range_max=448.0),
        row(
            "fp8_e4m3fn_scaled",
            "float",
            8,
            "per_tensor",
            31.5,
            underflow=0.0005,
            smallest_normal=2**-6,
            range_max=448.0,
        ),
        row("int8_per_tensor", "int", 8, "per_tensor", int8_pt, underflow=0.06, range_max=127.0),
        row("int8_per_channel", "int", 8, "per_channel", 42.7, underflow=0.01, range_max=127.0),
    ]


def document(tensors):
    doc = {
        "checkpoint": {"label": "org/m@" + "a" * 40, "file_sha256": "f" * 64},
        "device": "cpu",
        "tensors": tensors,
        "model_quality_caveat": analysis.MODEL_QUALITY_CAVEAT,
    }
    doc["ranks"] = {t["role"]: analysis.rank(t["formats"]) for t in tensors}
    doc["explanations"] = analysis.explain(tensors)
    return doc


def test_rank_puts_lossless_first_and_drops_not_applicable():
    formats = [
        row("a", "int", 8, "none", 20.0),
        row("b", "float", 16, "none", None, mse=0.0),
        {
            "format": "c",
            "family": "int",
            "bits": 4,
            "scaling": "per_channel",
            "range_max": 7.0,
            "not_applicable": "1-D",
        },
        row("d", "int", 8, "none", 30.0),
    ]
    assert analysis.rank(formats) == ["b", "d", "a"]


def test_each_kind_is_built_from_the_numbers():
    doc = document(
        [
            tensor("mlp_projection", 23.1, lab_formats(23.1, 0.198)),
            tensor("attention_projection", 8.1, lab_formats(8.1, 0.131)),
        ]
    )
    counts = analysis.headlines(doc)["explanations"]
    assert counts["range"] == 2 and counts["outlier"] == 3 and counts["reversal"] >= 2
    texts = [e["text"] for e in doc["explanations"]]
    assert any("unscaled fp8_e4m3fn leaves 19.8% of the weights zero or subnormal" in t for t in texts)
    assert any("absmax/std is 23.1" in t and "+16.8 dB" not in t for t in texts)
    assert any("fp16 (16 bits) beats bf16 (16 bits) by 18.1 dB" in t for t in texts)
    assert any("fp8_e4m3fn_scaled (8 bits) beats int8_per_tensor (8 bits)" in t for t in texts)
    assert any(t.startswith("Across the tensors, int8 per-tensor SQNR falls as absmax/std rises") for t in texts)
    # a few formats and no tensor facts (precision_checks says so); the explanations, ranks and figures agree
    assert set(analysis.discrepancies(doc)) == set(precision_checks.discrepancies(doc))


def test_no_sentence_without_the_effect():
    formats = lab_formats(4.0, 0.002)  # little underflow; small absmax/std
    for r in formats:
        if r["format"] == "int8_per_channel":
            r.update(row("int8_per_channel", "int", 8, "per_channel", analysis.predicted_int_sqnr_db(127, 4.0) + 0.2))
    doc = document([tensor("embedding", 4.0, formats)])
    kinds = analysis.headlines(doc)["explanations"]
    assert kinds["range"] == 0 and kinds["outlier"] == 0


def test_changed_numbers_change_the_sentences_and_discrepancies_notice():
    doc = document([tensor("mlp_projection", 23.1, lab_formats(23.1, 0.198))])
    edited = copy.deepcopy(doc)
    edited["tensors"][0]["formats"][2]["underflow_share"] = 0.25
    edited["tensors"][0]["formats"][2]["underflow_count"] = 2500
    found = analysis.discrepancies(edited)
    assert any("not supported by the measured values" in f and "19.8%" in f for f in found)
    assert any("is missing" in f and "25.0%" in f for f in found)


def test_a_missing_caveat_is_a_discrepancy():
    doc = document([tensor("mlp_projection", 23.1, lab_formats(23.1, 0.198))])
    del doc["model_quality_caveat"]
    assert any("not a model-quality claim" in f for f in analysis.discrepancies(doc))


def test_headline_keys():
    doc = document([tensor("mlp_projection", 23.1, lab_formats(23.1, 0.198))])
    head = analysis.headlines(doc)
    assert {"checkpoint", "file_sha256", "tensors", "ranks", "explanations"} <= set(head)
    assert head["tensors"] == {"mlp_projection": "mlp_projection.weight"}
    assert set(head["explanations"]) == {"range", "outlier", "reversal"}
    assert head["best_8bit"] == {"mlp_projection": "int8_per_channel"}


def test_compare_measurements_is_exact_and_matches_tensors_by_sha256():
    t = tensor("mlp_projection", 23.1, lab_formats(23.1, 0.198))
    t["sha256"] = "a" * 64
    first, second = document([t]), document([copy.deepcopy(t)])
    assert compare_measurements(first, second) == []
    second["tensors"][0]["formats"][4]["mse"] *= 1 + 1e-15
    assert compare_measurements(first, second) == [
        f"mlp_projection int8_per_tensor.mse: {first['tensors'][0]['formats'][4]['mse']!r} vs "
        f"{second['tensors'][0]['formats'][4]['mse']!r}"
    ]
    second["tensors"][0]["sha256"] = "b" * 64
    assert "no tensor with sha256" in compare_measurements(first, second)[0]
