"""Ranking and explaining the precision table (standard library only).

Used by the precision probe (to state its ranks and explanations) and by `dossier verify`
(to recompute them from the measured per-format errors). Every explanation is built from
the measured values of one document; when a measured effect is absent, no sentence is
written for it.

Kinds of explanation:
  range     a format's range, not its resolution, decides its error: unscaled fp8 pushes
            small weights into zero or subnormals (smallest normal vs the tensor's std),
            or values beyond a format's largest number saturate;
  outlier   one per-tensor integer scale is set by the outlier absmax, so the step in units
            of std is absmax/std / qmax: int8 per-tensor SQNR follows
            10*log10(12*127^2) - 20*log10(absmax/std), and per-channel scales recover it;
  reversal  a ranking that storage width does not predict: a format with as many or fewer
            bits per element beats another by more than REVERSAL_MARGIN_DB.
"""

from __future__ import annotations

import math
from typing import Any

from harness.analysis.memo import per_document
from harness.analysis.precision import checks as precision_checks
from harness.analysis.precision.declared import FIGURES  # noqa: F401 - the package's figure table

MODEL_QUALITY_CAVEAT = (
    "These are weight-representation errors of the tensors above, each taken on its own (MSE, SQNR, "
    "max abs error against the stored weights); they are not a model-quality claim. How a "
    "format changes a model's outputs depends on activations, on how errors accumulate through "
    "layers and on the task; measure that with an evaluation, not with this table."
)

SCALE_BITS = 32  # scales are counted as fp32 when reporting bits per element with scales
REVERSAL_MARGIN_DB = 1.0  # smaller SQNR differences are not called a ranking reversal
RANGE_UNDERFLOW_SHARE = 0.01  # an unscaled format underflowing at least this share is explained
OUTLIER_GAIN_DB = 1.0  # per-channel must beat per-tensor int8 by this much to be explained
MANTISSA_BITS = {"fp16": 10, "bf16": 7, "fp8_e4m3fn": 3, "fp8_e5m2": 2}
KINDS = ("range", "outlier", "reversal")
SCALE_GROUP = {
    "per_tensor": "tensor",
    "per_channel": "output channel",
    "per_group": "group of 128 weights",
    "none": "nothing",
}


def _usable(row: dict[str, Any]) -> bool:
    return "not_applicable" not in row and "mse" in row


def _sqnr_key(row: dict[str, Any]) -> float:
    """SQNR for ranking: a lossless round trip (no SQNR, zero MSE) ranks above everything."""
    value = row.get("sqnr_db")
    if value is None:
        return math.inf if row.get("mse") == 0 else -math.inf
    return float(value)


def rank(formats: list[dict[str, Any]]) -> list[str]:
    """Format names, best SQNR first (ties by name, so the order is deterministic)."""
    usable = [row for row in formats if _usable(row)]
    return [row["format"] for row in sorted(usable, key=lambda r: (-_sqnr_key(r), r["format"]))]


def _fmt_db(value: float) -> str:
    return "lossless" if math.isinf(value) else f"{value:.2f} dB"


def _by_name(tensor: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["format"]: row for row in tensor.get("formats", []) if _usable(row)}


def _label(tensor: dict[str, Any]) -> str:
    return f"{tensor['role']} ({tensor['name']})"


def range_effects(tensor: dict[str, Any]) -> list[dict[str, Any]]:
    """Unscaled formats whose smallest normal number swallows weights; saturated formats."""
    rows, stats, found = _by_name(tensor), tensor["stats"], []
    for name, row in rows.items():
        scaled = rows.get(f"{name}_scaled")
        if row["scaling"] != "none" or row["underflow_share"] < RANGE_UNDERFLOW_SHARE or scaled is None:
            continue
        if scaled["underflow_share"] >= row["underflow_share"]:
            continue
        before, after = _sqnr_key(row), _sqnr_key(scaled)
        factor = scaled["range_max"] / stats["absmax"]
        text = (
            f"{_label(tensor)}: unscaled {name} leaves {row['underflow_share']:.1%} of the weights "
            f"zero or subnormal, because its smallest normal number is {row['smallest_normal']:.4g} "
            f"while the tensor's std is {stats['std']:.4g}; per-tensor absmax scaling (x{factor:.4g}) "
            f"cuts that to {scaled['underflow_share']:.2%} and moves SQNR from {_fmt_db(before)} to "
            f"{_fmt_db(after)}."
        )
        if abs(after - before) < 1.0:
            text += (
                " SQNR barely moves because those small weights carry little of the tensor's "
                "energy: the range loss shows in the underflow share before it shows in MSE."
            )
        found.append({"kind": "range", "role": tensor["role"], "text": text, "formats": [name, scaled["format"]]})
    for name, row in rows.items():
        if row["saturated_share"] > 0:
            text = (
                f"{_label(tensor)}: {name} saturates {row['saturated_share']:.2%} of the weights "
                f"(absmax {stats['absmax']:.4g} is beyond its largest number {row['range_max']:.4g}); "
                f"max abs error {row['max_abs_error']:.4g}."
            )
            found.append({"kind": "range", "role": tensor["role"], "text": text, "formats": [name]})
    return found


def predicted_int_sqnr_db(qmax: int, absmax_over_std: float) -> float:
    """SQNR of uniform rounding noise (step^2/12) with step = absmax/qmax, signal power std^2."""
    return 10.0 * math.log10(12.0 * qmax * qmax) - 20.0 * math.log10(absmax_over_std)


def outlier_effects(tensor: dict[str, Any]) -> list[dict[str, Any]]:
    """int8 per-tensor error set by absmax/std, and what per-channel scales recover."""
    rows, stats = _by_name(tensor), tensor["stats"]
    per_tensor, per_channel = rows.get("int8_per_tensor"), rows.get("int8_per_channel")
    ratio = stats.get("absmax_over_std")
    if per_tensor is None or per_channel is None or not ratio:
        return []
    measured, recovered = _sqnr_key(per_tensor), _sqnr_key(per_channel)
    if recovered - measured < OUTLIER_GAIN_DB:
        return []
    step = stats["absmax"] / per_tensor["range_max"]
    text = (
        f"{_label(tensor)}: absmax/std is {ratio:.1f} (max |w| {stats['absmax']:.4g}, std "
        f"{stats['std']:.4g}, excess kurtosis {_num(stats.get('excess_kurtosis'))}), so one int8 scale "
        f"for the whole tensor has a step of {step:.4g} = {step / stats['std']:.3f} std and rounds "
        f"{per_tensor['underflow_share']:.1%} of the weights to zero; measured SQNR "
        f"{_fmt_db(measured)} against {predicted_int_sqnr_db(127, ratio):.2f} dB predicted from "
        f"absmax/std alone (10*log10(12*127^2) - 20*log10(absmax/std)). Per-output-channel scales "
        f"lift it to {_fmt_db(recovered)} (+{recovered - measured:.1f} dB)."
    )
    return [
        {"kind": "outlier", "role": tensor["role"], "text": text, "formats": ["int8_per_tensor", "int8_per_channel"]}
    ]


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def cross_tensor_outliers(tensors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Across tensors: does int8 per-tensor SQNR fall exactly as absmax/std rises?"""
    points = []
    for tensor in tensors:
        row = _by_name(tensor).get("int8_per_tensor")
        ratio = tensor["stats"].get("absmax_over_std")
        if row is not None and ratio:
            points.append((ratio, _sqnr_key(row), tensor["role"]))
    if len(points) < 2:
        return []
    points.sort()
    sqnrs = [p[1] for p in points]
    if any(later >= earlier for earlier, later in zip(sqnrs, sqnrs[1:], strict=False)):
        return []
    listed = "; ".join(f"{role} {ratio:.1f} -> {_fmt_db(sqnr)}" for ratio, sqnr, role in points)
    text = (
        f"Across the tensors, int8 per-tensor SQNR falls as absmax/std rises ({listed}): the "
        f"outlier, not the bulk of the weights, sets the error of a single scale."
    )
    return [{"kind": "outlier", "role": "all", "text": text, "formats": ["int8_per_tensor"]}]


def reversals(tensor: dict[str, Any]) -> list[dict[str, Any]]:
    """Rankings storage width does not predict; for each tensor the widest gap of each kind:

    a narrower format beating a wider one; two unscaled float formats of one width (mantissa
    vs exponent bits); a float format beating an int format of the same width; and an int
    format beating a float format of the same width. Two scalings of one format are the range
    and outlier effects, not a width reversal, and are left out here.
    """
    rows = list(_by_name(tensor).values())
    groups: dict[str, list[tuple]] = {"narrower": [], "mantissa": [], "float_over_int": [], "int_over_float": []}
    for a in rows:
        for b in rows:
            gap = _sqnr_key(a) - _sqnr_key(b)
            if a is b or math.isinf(gap) or math.isnan(gap) or gap <= REVERSAL_MARGIN_DB:
                continue
            key = (b["bits"] - a["bits"], gap, a["format"], b["format"])
            if a["bits"] < b["bits"]:
                groups["narrower"].append((key, a, b))
            elif a["bits"] == b["bits"] and _mantissa_pair(a, b):
                groups["mantissa"].append((key, a, b))
            elif a["bits"] == b["bits"] and a["family"] != b["family"]:
                groups[f"{a['family']}_over_{b['family']}"].append((key, a, b))
    found = []
    for candidates in groups.values():
        if candidates:
            (_, gap, _, _), a, b = max(candidates, key=lambda c: c[0])
            found.append(
                {
                    "kind": "reversal",
                    "role": tensor["role"],
                    "formats": [a["format"], b["format"]],
                    "text": _reversal_text(tensor, a, b, gap),
                }
            )
    return found


def _mantissa_pair(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two unscaled float formats of one width, which trade mantissa for exponent bits."""
    return a["format"] in MANTISSA_BITS and b["format"] in MANTISSA_BITS


def _reversal_text(tensor: dict[str, Any], a: dict[str, Any], b: dict[str, Any], gap: float) -> str:
    stats = tensor["stats"]
    head = (
        f"{_label(tensor)}: {a['format']} ({a['bits']} bits) beats {b['format']} ({b['bits']} bits) "
        f"by {gap:.1f} dB SQNR ({_fmt_db(_sqnr_key(a))} vs {_fmt_db(_sqnr_key(b))}): storage width "
        f"does not rank these formats; "
    )
    if a["format"] in MANTISSA_BITS and b["format"] in MANTISSA_BITS:
        return head + (
            f"{a['format']} keeps {MANTISSA_BITS[a['format']]} mantissa bits to "
            f"{b['format']}'s {MANTISSA_BITS[b['format']]}, and these weights (absmax "
            f"{stats['absmax']:.4g}) need none of {b['format']}'s extra exponent range."
        )
    if b["family"] == "int" and b["scaling"] == "per_tensor":
        return head + (
            f"{b['format']} spends its levels on the range up to the outlier absmax "
            f"{stats['absmax']:.4g} ({stats['absmax_over_std']:.1f} std), leaving a step of "
            f"{stats['absmax'] / b['range_max'] / stats['std']:.3f} std for the bulk, while "
            f"{a['format']}'s exponent gives each weight a step proportional to its own "
            f"magnitude."
        )
    if a["family"] == "int":
        return head + (
            f"{a['format']} uses {a['scales']} scales (one per {SCALE_GROUP[a['scaling']]}), so "
            f"its uniform step fits each one's own range, while {b['format']}'s relative "
            f"precision is fixed by its mantissa (max abs error {a['max_abs_error']:.3g} vs "
            f"{b['max_abs_error']:.3g})."
        )
    return head + (
        f"max abs error {a['max_abs_error']:.3g} vs {b['max_abs_error']:.3g}, underflow "
        f"{a['underflow_share']:.2%} vs {b['underflow_share']:.2%}."
    )


def explain(tensors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every explanation the measured values support, in a fixed order."""
    found: list[dict[str, Any]] = []
    for tensor in tensors:
        found += range_effects(tensor)
        found += outlier_effects(tensor)
        found += reversals(tensor)
    found += cross_tensor_outliers(tensors)
    order = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(found, key=lambda e: order[e["kind"]])


def count_kinds(explanations: list[dict[str, Any]]) -> dict[str, int]:
    return {kind: sum(1 for e in explanations if e["kind"] == kind) for kind in KINDS}


@per_document
def headlines(document: dict[str, Any]) -> dict[str, Any]:
    """Headline figures recomputed from the per-format measurements in the document."""
    tensors = document.get("tensors", [])
    checkpoint = document.get("checkpoint", {})
    return {
        "checkpoint": checkpoint.get("label"),
        "file_sha256": checkpoint.get("file_sha256"),
        "device": document.get("device"),
        "tensors": {t["role"]: t["name"] for t in tensors},
        "ranks": {t["role"]: rank(t.get("formats", [])) for t in tensors},
        "explanations": count_kinds(explain(tensors)),
        "best_8bit": {
            t["role"]: next((n for n in rank(t.get("formats", [])) if _by_name(t)[n]["bits"] == 8), None)
            for t in tensors
        },
    }


def _close(a: float | None, b: float | None, rel: float = 1e-9, abs_: float = 1e-12) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def _format_discrepancies(tensor: dict[str, Any]) -> list[str]:
    out, stats = [], tensor["stats"]
    where = f"tensor {tensor['role']}"
    n, mean_square = stats["numel"], stats["mean_square"]
    for row in tensor.get("formats", []):
        if not _usable(row):
            continue
        name = f"{where} {row['format']}"
        mse = row["mse"]
        sqnr = None if mse == 0 or mean_square == 0 else 10.0 * math.log10(mean_square / mse)
        if not _close(row.get("sqnr_db"), sqnr, rel=1e-9, abs_=1e-9):
            out.append(f"{name}: sqnr_db {row.get('sqnr_db')} but 10*log10(mean_square/mse) = {sqnr}")
        rel = math.sqrt(mse / mean_square) if mean_square > 0 else None
        if not _close(row.get("relative_rmse"), rel):
            out.append(f"{name}: relative_rmse {row.get('relative_rmse')} but sqrt(mse/mean_square) = {rel}")
        for what in ("saturated", "underflow"):
            if not _close(row[f"{what}_share"], row[f"{what}_count"] / n):
                out.append(
                    f"{name}: {what}_share {row[f'{what}_share']} but {what}_count/numel = {row[f'{what}_count'] / n}"
                )
        with_scales = row["bits"] + SCALE_BITS * row["scales"] / n
        if not _close(row.get("bits_per_element_with_scales"), with_scales):
            out.append(
                f"{name}: bits_per_element_with_scales {row.get('bits_per_element_with_scales')} but "
                f"bits + {SCALE_BITS} x scales / numel = {with_scales}"
            )
    if not _close(stats["absmax"], max(abs(stats["min"]), abs(stats["max"]))):
        out.append(
            f"{where}: absmax {stats['absmax']} but max(|min|, |max|) = {max(abs(stats['min']), abs(stats['max']))}"
        )
    if not _close(stats.get("beyond_6sigma_share"), stats["beyond_6sigma_count"] / n):
        out.append(
            f"{where}: beyond_6sigma_share {stats.get('beyond_6sigma_share')} but beyond_6sigma_count/numel = "
            f"{stats['beyond_6sigma_count'] / n}"
        )
    if stats.get("absmax_over_std") is not None and not _close(
        stats["absmax_over_std"], stats["absmax"] / stats["std"]
    ):
        out.append(
            f"{where}: absmax_over_std {stats['absmax_over_std']} but absmax/std = {stats['absmax'] / stats['std']}"
        )
    return out


def discrepancies(document: dict[str, Any]) -> list[str]:
    """Where the document's stated ranks, explanations and derived figures differ from a recomputation."""
    tensors = document.get("tensors", [])
    out: list[str] = []
    for tensor in tensors:
        out += _format_discrepancies(tensor)
    out += _rank_discrepancies(document)
    out += _explanation_discrepancies(document.get("explanations", []), explain(tensors))
    if document.get("model_quality_caveat") != MODEL_QUALITY_CAVEAT:
        out.append("model_quality_caveat is missing or altered: MSE is not a model-quality claim")
    return out + precision_checks.discrepancies(document)


def _rank_discrepancies(document: dict[str, Any]) -> list[str]:
    """Each tensor's own ranking column and the document's ranks, against the ranking by SQNR."""
    out, stated_ranks = [], document.get("ranks", {})
    recomputed = {t["role"]: rank(t.get("formats", [])) for t in document.get("tensors", [])}
    for tensor in document.get("tensors", []):
        if tensor.get("ranking") != recomputed[tensor["role"]]:
            out.append(
                f"tensor {tensor['role']} ranking: stated {tensor.get('ranking')} but ranked by SQNR "
                f"{recomputed[tensor['role']]}"
            )
    for role in sorted(set(stated_ranks) | set(recomputed)):
        if stated_ranks.get(role) != recomputed.get(role):
            out.append(f"ranks[{role}]: stated {stated_ranks.get(role)} but recomputed {recomputed.get(role)}")
    return out


def _explanation_discrepancies(stated: list[Any], expected: list[dict[str, Any]]) -> list[str]:
    """Every explanation (kind, role, formats and text, in order) as the measured values give it."""
    out = []
    texts = [e.get("text") if isinstance(e, dict) else e for e in stated]
    for text in texts:
        if text not in [e["text"] for e in expected]:
            out.append(f"explanation not supported by the measured values: {text}")
    for entry in expected:
        if entry["text"] not in texts:
            out.append(f"explanation the measured values support is missing: {entry['text']}")
    if not out and stated != expected:
        out.append("explanations: the kind, role, formats or order of an explanation differ from the recomputation")
    return out
