"""From verified bundles of one SKU to a baseline profile document (docs/accept.md, "Baselines").

Per figure (harness.judge.acceptance.baseline.figures), over the inputs that measured it:

1. outliers rejected, iterated (harness.analysis.robust.reject_outliers: beyond 3.5 scaled MADs
   and beyond the figure's run-to-run noise, recomputed until a pass drops nothing);
2. the median and MAD of what is left (MAD scaled by 1.4826 to read as a sigma), and n;
3. the tolerance: the larger of the run-to-run noise (harness.judge.acceptance.baseline.noise, the
   only part when fewer than 3 inputs measured it) and 3.5 scaled MADs as a share of the median,
   so that a candidate the rejection would have dropped from the fleet fails;
4. the fail line median x (1 - tolerance), written as the known-good figure (the median) and the
   share (1 - tolerance); the WARN band half the tolerance, above the fail line;
5. the share of all inputs (outliers included) at or above the fail line.

Then the configuration and digests the inputs agree on (harness.judge.acceptance.baseline.
observed), the GPUs' identity, and the draft judged against every input: each criterion's share of
inputs that pass it is recorded, the criteria every input measured become required (a candidate
that does not measure them is INCOMPLETE), and a criterion no input passes stops the baseline
(a profile its own golden unit fails is no baseline). Inputs of more than one SKU are refused.

Each input is met twice, never held longer than it is looked at: `read` (in harness.judge.acceptance.
baseline.inputs) takes from it the little the draft is made of (a Reading: figures, GPUs,
configuration, digests), and `verdicts` judges it against the draft. `build` does both for bundles in
memory (`dossier baseline`); `make` takes the readings and a judge of every input, so that `dossier
fleet collect --baseline-out` can read a fleet's thousand node bundles from disk one at a time, in
its worker processes (harness/fleet/baseline.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness import catalogue
from harness.analysis.robust import MAD_SCALE, MIN_SAMPLES, REJECT_K, reject_outliers
from harness.analysis.verdict import Verdict
from harness.errors import CheckFailed, UsageError
from harness.judge.acceptance.baseline import noise
from harness.judge.acceptance.baseline.figures import BaselineFigure
from harness.judge.acceptance.baseline.inputs import Input, Reading, read, resolve_sku
from harness.judge.acceptance.baseline.observed import config_expectations, expected_digests
from harness.judge.acceptance.criteria import evaluate
from harness.judge.acceptance.profile import (
    FORMAT,
    SIGNED_FORMAT_VERSION,
    KnownGood,
    Profile,
    apply_file,
    from_catalogue,
)
from harness.judge.acceptance.transfer import HOST_RATES
from harness.judge.engine import Criterion
from harness.judge.facts import BundleFacts

WARN_BAND_OF_TOLERANCE = 0.5  # the WARN band is the lower half of the gap between the median and the fail line
PRECISION = 6  # significant digits kept in the profile's figures (the raw values stay in the bundles)
RULES = {
    "outliers": f"iterated: a value beyond {REJECT_K:g} scaled MADs of the median and beyond the figure's run-to-run "
    f"noise is dropped, the median and MAD recomputed, until a pass drops nothing; none with fewer "
    f"than {MIN_SAMPLES} values (harness.analysis.robust)",
    "mad_scale": f"{MAD_SCALE:.4f} (1/0.6745: a scaled MAD estimates sigma for normal data)",
    "tolerance": f"max(run-to-run noise of the figure (harness.analysis.repeatability's noise model, as dossier "
    f"reproduce judges with), {REJECT_K:g} scaled MADs / median); the noise alone "
    f"with fewer than {MIN_SAMPLES} values",
    "fail_line": "median x (1 - tolerance): the known-good figure is the median, the share 1 - tolerance",
    "warn_band": f"{WARN_BAND_OF_TOLERANCE:g} x tolerance above the fail line (the lower half of the gap to the "
    "median; Azure's health checks warn within 5% above their fail line)",
    "required": "every criterion every input measured; a criterion no input passes stops the baseline",
}


def _r(value: float) -> float:
    return float(f"{value:.{PRECISION}g}")


def figure_stats(
    figure: BaselineFigure, values: list[tuple[Reading, float]], sku_id: str, family: int = 1
) -> dict[str, Any]:
    """One figure's statistics and the threshold they make (the module docstring's steps 1 to 5); FAMILY is
    how many rate figures the profile holds a unit to (they share the false-alarm rate)."""
    numbers = [v for _, v in values]
    floor = noise.run_to_run(sku_id, figure.figure, figure.kind, family)
    rejection = reject_outliers(numbers, floor.share)
    spread = rejection.spread
    by_mad = REJECT_K * spread.scaled_mad / spread.median if spread.median and spread.n >= MIN_SAMPLES else 0.0
    tolerance = max(floor.share, by_mad)
    fail_line = spread.median * (1 - tolerance)
    band = WARN_BAND_OF_TOLERANCE * tolerance
    passing = sum(v >= fail_line for v in numbers)
    why = (
        f"{REJECT_K:g} scaled MADs ({by_mad:.2%} of the median) exceed the run-to-run noise"
        if by_mad > floor.share
        else f"the run-to-run noise of {figure.figure}"
        + ("" if spread.n >= MIN_SAMPLES else f" (fewer than {MIN_SAMPLES} values: the MAD is not used)")
    )
    return {
        "criterion": figure.criterion,
        "figure": figure.figure,
        "kind": figure.kind,
        "unit": figure.unit,
        "known_good": list(figure.known_good),
        "share": list(figure.share),
        "median": _r(spread.median),
        "mad": _r(spread.mad),
        "mad_scaled": _r(spread.scaled_mad),
        "mad_scale": round(MAD_SCALE, 4),
        "n": len(numbers),
        "n_used": spread.n,
        "rejected": [
            {"bundle": values[i][0].name, "sha256": values[i][0].sha256, "value": _r(values[i][1]), "pass": p}
            for i, p in rejection.rejected
        ],
        "noise": floor.to_json(),
        "tolerance": _r(tolerance),
        "tolerance_from": why,
        "fail_below": _r(fail_line),
        "warn_band": _r(band),
        "warn_below": _r(fail_line * (1 + band)),
        "pass_share": _r(passing / len(numbers)),
        "values": [{"bundle": item.name, "sha256": item.sha256, "value": _r(v)} for item, v in values],
    }


def _known_good_and_shares(stats: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The profile's known_good and thresholds from each figure's statistics; where several figures share
    one threshold (two kernels, two stress dtypes), the lowest share is kept and a note says so."""
    known_good: dict[str, Any] = {}
    thresholds: dict[str, Any] = {"warn_band": {}}
    notes = []
    for _key, s in sorted(stats.items()):
        field, slot = s["known_good"]
        known_good.setdefault(field, {})[slot] = {
            "value": s["median"],
            "source": f"dossier baseline: median of {s['n_used']} of {s['n']} input bundle(s) "
            f"(MAD {s['mad']:g} {s['unit']}, tolerance {s['tolerance']:.2%})",
        }
        share, part = s["share"]
        value = _r(1 - s["tolerance"])
        if part is None:
            if share in thresholds and thresholds[share] != value:
                notes.append(f"{share}: several figures share it; the lowest share kept")
            thresholds[share] = min(value, thresholds.get(share, value))
        else:
            thresholds.setdefault(share, {})[part] = value
        thresholds["warn_band"][s["criterion"]] = s["warn_band"]
    return known_good, thresholds, notes


PER_PART_SHARES = {
    "gemm_min_share": (),
    "transfer_min_share": tuple(d for _, d, _, _ in HOST_RATES.values()) + ("peer_read",),
}


def _inherit_shares(thresholds: dict[str, Any], catalogue_block: dict[str, Any]) -> list[str]:
    """A per-part share (per dtype, per direction) the inputs did not measure keeps the catalogue's
    (its known-good figure stays the catalogue's too): a baseline states what it measured, and
    leaves a part it did not (fp64 GEMM, peer reads on a one-GPU unit) as the catalogue has it."""
    notes = []
    for key, parts in PER_PART_SHARES.items():
        inherited = catalogue_block.get(key)
        if isinstance(inherited, (int, float)) and not isinstance(inherited, bool):
            inherited = dict.fromkeys(parts, inherited)
        if not isinstance(inherited, dict) or not inherited:
            continue
        mine = thresholds.get(key) or {}
        kept = sorted(set(inherited) - set(mine))
        thresholds[key] = {**inherited, **mine}
        if kept:
            notes.append(f"{key}: {', '.join(kept)} not measured by the inputs, the catalogue's share kept")
    return notes


def draft(inputs: Sequence[Reading], sku_id: str, identity: dict[str, Any], why: str | None) -> dict[str, Any]:
    """The profile document before its criteria are judged (required and pass shares not yet known)."""
    values: dict[BaselineFigure, list[tuple[Reading, float]]] = {}
    for item in inputs:
        for figure, value in item.figures.items():
            values.setdefault(figure, []).append((item, value))
    stats = {
        figure.criterion + "/" + "/".join(figure.known_good): figure_stats(figure, found, sku_id, len(values))
        for figure, found in sorted(values.items())
    }
    known_good, thresholds, notes = _known_good_and_shares(stats)
    sku = catalogue.by_id(sku_id)
    notes += _inherit_shares(thresholds, ((sku or {}).get("acceptance") or {}))
    config, config_notes = config_expectations([i.observed for i in inputs])
    if config:
        thresholds["config"] = config
    node = noise.gpu_vs_node(sku_id)
    node_share = ((sku or {}).get("acceptance") or {}).get("gpu_vs_node_tolerance", node.share)
    thresholds["gpu_vs_node_tolerance"] = node_share
    digests, digest_notes = expected_digests([i.observed for i in inputs], [i.name for i in inputs])
    document = {
        "format": FORMAT,
        "format_version": SIGNED_FORMAT_VERSION,
        "sku_id": sku_id,
        "why": why or f"dossier baseline from {len(inputs)} bundle(s) of {sku_id}",
        "thresholds": thresholds,
        "known_good": known_good,
        "identity": identity,
        "baseline": {
            "inputs": [{"name": i.name, "sha256": i.sha256, "signer_keyid": i.signer_keyid} for i in inputs],
            "rules": RULES,
            "figures": stats,
            "notes": notes + config_notes + digest_notes,
            "gpu_vs_node_tolerance_source": (sku or {}).get("acceptance", {}).get("gpu_vs_node_source") or node.source,
        },
    }
    if digests:
        document["digests"] = digests
    if sku is None:
        document["name"] = identity["name"] or sku_id
        document["form_factor"] = f"not in the catalogue (PCI device id {', '.join(identity['pci_device_ids'])})"
    return document


Verdicts = list[tuple[str, Verdict, str | None]]  # one input judged: each criterion's name, verdict and why
Judge = Callable[[Profile], Iterable[tuple[str, Verdicts]]]  # the draft -> (input name, its verdicts), in input order


def draft_profile(document: dict[str, Any], kinds: Sequence[KnownGood]) -> Profile:
    """The draft as the profile every input is judged against (nothing required yet)."""
    sku = catalogue.by_id(document["sku_id"])
    return apply_file(
        from_catalogue(sku, kinds) if sku else None, {**document, "required": []}, "draft baseline", kinds
    )


def verdicts(facts: BundleFacts, profile: Profile, criteria: Sequence[Criterion]) -> Verdicts:
    """One input judged against the draft (pass 2)."""
    return [(result.name, result.status, result.why) for result in evaluate(facts, profile, criteria)]


def tabulate(judged: Iterable[tuple[str, Verdicts]]) -> dict[str, dict[str, Any]]:
    """Each criterion over every input: judged, passed (PASS or WARN), failed (input: why)."""
    table: dict[str, dict[str, Any]] = {}
    for name, results in judged:
        for criterion, status, why in results:
            row = table.setdefault(criterion, {"judged": 0, "passed": 0, "failed": []})
            if status in (Verdict.SKIP, Verdict.INCOMPLETE):
                continue
            row["judged"] += 1
            if status in (Verdict.PASS, Verdict.WARN):
                row["passed"] += 1
            else:
                row["failed"].append(f"{name}: {why}"[:300])
    return table


def build(
    inputs: Sequence[Input],
    criteria: Sequence[Criterion],
    kinds: Sequence[KnownGood],
    sku_asked: str | None = None,
    why: str | None = None,
) -> dict[str, Any]:
    """The baseline profile document (unsigned) for INPUTS, or an error naming what stops it; CRITERIA
    and KINDS are the registry's acceptance criteria and known-good kinds, as `dossier accept` judges."""
    return make(
        [read(item) for item in inputs],
        lambda profile: ((item.name, verdicts(item.facts, profile, criteria)) for item in inputs),
        kinds,
        sku_asked,
        why,
    )


def make(
    inputs: Sequence[Reading],
    judge: Judge,
    kinds: Sequence[KnownGood],
    sku_asked: str | None = None,
    why: str | None = None,
) -> dict[str, Any]:
    """The baseline profile document from every input's Reading; JUDGE gives every input's verdicts against
    the draft (`verdicts`, wherever the input is read)."""
    names = [i.sha256 for i in inputs]
    twice = sorted({i.name for i in inputs if names.count(i.sha256) > 1})
    if twice:
        raise UsageError(f"the same bundle is given more than once ({', '.join(twice)})")
    sku_id, identity = resolve_sku(inputs, sku_asked)
    document = draft(inputs, sku_id, identity, why)
    table = tabulate(judge(draft_profile(document, kinds)))
    nobody = {name: row for name, row in table.items() if row["judged"] and not row["passed"]}
    if nobody:
        raise CheckFailed(
            "no input bundle passes "
            + "; ".join(f"{name} ({row['failed'][0]})" for name, row in sorted(nobody.items())),
            hint="a profile its own inputs fail is no baseline: leave out the bundles that are not known good",
        )
    document["required"] = sorted(name for name, row in table.items() if row["judged"] == len(inputs))
    document["baseline"]["criteria"] = {
        name: {
            "judged": row["judged"],
            "passed": row["passed"],
            "pass_share": _r(row["passed"] / row["judged"]),
            "failed": row["failed"],
        }
        for name, row in sorted(table.items())
        if row["judged"]
    }
    return document
