"""Acceptance: result digests against silent data corruption (harness.analysis.digests).

- stress_digests_agree: with two or more GPUs, every GPU's reference GEMM result (same inputs, same
  seed, same library build) has the same sha256; a GPU outside the quorum is named, and when its own
  results never changed during the run (0 mismatches) the why says it agrees with itself but not
  with its neighbours: the signature of a GPU that computes wrong bits consistently.
- stress_digest_expected: where the profile carries the digest expected for the SKU, for this
  dtype, shape, seed and library build, every GPU's reference digest equals it. Another build (a
  different torch or cuBLAS) is not comparable: not measured, naming both.
- precision_digests_expected: where the profile carries the precision step's output digests, every
  tensor (by its sha256) and format measured here gives the same digest (the quantizers are
  device-independent by construction, so this holds on any GPU or CPU).
"""

from __future__ import annotations

from typing import Any

from harness.analysis.digests import quorum, short, stress_conditions
from harness.judge.acceptance.criteria import Judging
from harness.judge.engine import Criterion, Result, Value
from harness.judge.facts import BundleFacts

STRESS, PRECISION = "stress", "precision"
STRESS_EVIDENCE = "raw/stress.json devices[].gemm.reference_digest"


def stress_digests(facts: BundleFacts) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """GPU label -> its reference_digest record, or None and why there are none."""
    document = facts.document(STRESS)
    if document is None:
        return None, facts.step_why(STRESS)
    found, missing = {}, []
    for device in document.get("devices") or []:
        who = f"GPU{device.get('index')}" if document.get("device") == "cuda" else "CPU"
        gemm = device.get("gemm")
        record = gemm.get("reference_digest") if isinstance(gemm, dict) else None
        if isinstance(record, dict) and isinstance(record.get("sha256"), str):
            found[who] = record
        else:
            missing.append(who)
    if missing and not found:
        return None, (
            f"{', '.join(missing)}: no reference digest recorded (a stress document made before "
            "digests were recorded, or a worker that ended before its reference)"
        )
    return found, (f"{', '.join(missing)} recorded no reference digest" if missing else "")


def _self_checks(facts: BundleFacts) -> dict[str, str]:
    """GPU label -> 'its own N checked results never changed' (or how many did), from the stress headlines."""
    figures = facts.figures(STRESS)
    out = {}
    for device in (figures.values or {}).get("devices") or []:
        check = device.get("result_check") or {}
        who = f"GPU{device.get('index')}" if (figures.values or {}).get("device") == "cuda" else "CPU"
        mismatched = check.get("mismatched_elements")
        out[who] = (
            f"its own {check.get('iterations_checked')} checked results all matched its reference"
            if mismatched == 0
            else f"{mismatched} mismatched elements against its own reference"
        )
    return out


def stress_digests_agree(facts: BundleFacts, profile: Any) -> list[Result]:
    name, title = "stress_digests_agree", "Every GPU computes the same reference GEMM result (no silent corruption)"
    judging = Judging(name, title, STRESS_EVIDENCE)
    threshold = Value("equal", "sha256", "one reference digest on every GPU (quorum: the largest group wins)")
    digests, why = stress_digests(facts)
    if digests is None:
        return [judging.incomplete(why, threshold=threshold)]
    if len(digests) < 2:
        return [
            judging.incomplete(
                f"{len(digests)} GPU with a digest: no neighbour to compare it with" + (f" ({why})" if why else ""),
                threshold=threshold,
            )
        ]
    vote = quorum({who: r["sha256"] for who, r in digests.items()})
    measured = Value(len(vote.agreeing), "GPUs", "; ".join(f"{who} {short(r['sha256'])}" for who, r in digests.items()))
    if vote.ambiguous or vote.majority is None:  # (no majority only when ambiguous)
        return [
            judging.failed(
                "the GPUs split evenly between digests, so no majority names the faulty one: " + measured.text,
                measured,
                threshold,
            )
        ]
    if vote.outliers:
        own = _self_checks(facts)
        return [
            judging.failed(
                "; ".join(
                    f"{who}'s reference result differs from the {len(vote.agreeing)} other GPUs' ({short(d)} against "
                    f"{short(vote.majority)}): possible silent data corruption; {own.get(who, 'its own checks unknown')}"
                    + (" (it agrees with itself, not with its neighbours)" if "all matched" in own.get(who, "") else "")
                    for who, d in vote.outliers.items()
                ),
                measured,
                threshold,
            )
        ]
    return [
        judging.passed(
            f"all {len(digests)} GPUs: {short(vote.majority)}" + (f"; {why}" if why else ""), measured, threshold
        )
    ]


def stress_digest_expected(facts: BundleFacts, profile: Any) -> list[Result]:
    name, title = "stress_digest_expected", "The reference GEMM result is the one expected for this SKU and software"
    judging = Judging(name, title, STRESS_EVIDENCE)
    expected = [e for e in (profile.digests or {}).get("stress") or [] if isinstance(e, dict)]
    if not expected:
        return [judging.incomplete(f"the profile for {profile.sku_id} carries no expected stress digest")]
    digests, why = stress_digests(facts)
    if digests is None:
        return [judging.incomplete(why)]
    conditions = {who: stress_conditions(r) for who, r in digests.items()}
    here = next(iter(conditions.values()))
    match = next((e for e in expected if stress_conditions(e) == here), None)
    if match is None:
        held = "; ".join(str(stress_conditions(e)) for e in expected)
        return [judging.incomplete(f"not comparable: the profile's digests hold for {held}; this run: {here}")]
    threshold = Value(match["sha256"], "sha256", f"{short(match['sha256'])} ({match.get('source', 'the profile')})")
    wrong = [who for who, r in digests.items() if r["sha256"] != match["sha256"] or conditions[who] != here]
    measured = Value(
        len(digests) - len(wrong), "GPUs", "; ".join(f"{who} {short(r['sha256'])}" for who, r in digests.items())
    )
    if wrong:
        return [
            judging.failed(
                f"{', '.join(wrong)}: the reference result differs from the one expected for {here}",
                measured,
                threshold,
            )
        ]
    return [
        judging.passed(f"every GPU's reference result is the expected {short(match['sha256'])}", measured, threshold)
    ]


def precision_digests(document: dict[str, Any]) -> dict[tuple[str, str], tuple[str, str]]:
    """(tensor sha256, format) -> (output sha256, 'ROLE FORMAT') for every format with a digest."""
    found = {}
    for tensor in document.get("tensors") or []:
        for row in tensor.get("formats") or []:
            if isinstance(row.get("output_sha256"), str):
                found[(tensor.get("sha256"), row.get("format"))] = (
                    row["output_sha256"],
                    f"{tensor.get('role')} {row.get('format')}",
                )
    return found


def precision_digests_expected(facts: BundleFacts, profile: Any) -> list[Result]:
    name, title = "precision_digests_expected", "The precision step's quantized outputs are the ones expected"
    evidence = f"{facts.output(PRECISION)} tensors[].formats[].output_sha256"
    judging = Judging(name, title, evidence)
    expected = ((profile.digests or {}).get("precision") or {}).get("outputs") or {}
    if not expected:
        return [judging.incomplete(f"the profile for {profile.sku_id} carries no expected precision digests")]
    document = facts.document(PRECISION)
    if document is None:
        return [judging.incomplete(facts.step_why(PRECISION))]
    found = precision_digests(document)
    compared = {key: value for key, value in found.items() if expected.get(key[0], {}).get(key[1])}
    threshold = Value(
        len(compared),
        "outputs",
        f"each tensor and format's digest as the profile expects "
        f"({((profile.digests or {}).get('precision') or {}).get('source', '')})",
    )
    if not compared:
        return [
            judging.incomplete(
                "no tensor and format measured here has an expected digest (another checkpoint, or a "
                "document made before digests were recorded)",
                threshold=threshold,
            )
        ]
    wrong = [what for key, (digest, what) in compared.items() if expected[key[0]][key[1]] != digest]
    measured = Value(
        len(compared) - len(wrong),
        "outputs",
        f"{len(compared) - len(wrong)} of {len(compared)} outputs equal the expected digests",
    )
    if wrong:
        return [judging.failed(f"different output bits: {', '.join(wrong)}", measured, threshold)]
    return [judging.passed(f"all {len(compared)} outputs equal the expected digests", measured, threshold)]


STRESS_AGREE = Criterion(
    "stress_digests_agree", "Every GPU computes the same reference GEMM result", (STRESS,), stress_digests_agree
)
STRESS_EXPECTED = Criterion(
    "stress_digest_expected", "The reference GEMM result is the one expected", (STRESS,), stress_digest_expected
)
PRECISION_EXPECTED = Criterion(
    "precision_digests_expected",
    "The quantized outputs are the ones expected",
    (PRECISION,),
    precision_digests_expected,
)
