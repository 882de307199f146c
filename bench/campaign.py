#!/usr/bin/env python3
"""Issue 34's false-alarm campaign: the noise of every figure over clean dossiers of one SKU, and the verdict
rule's measured false-alarm rate (every clean pair judged) and sensitivity (every loaded run judged).

The campaign is a manifest (JSON) of signed bundles, each with its machine start and its load:

    {"id": "issue-34-h200", "sku_id": "h200-sxm-141gb", "command": "...", "machine": "...",
     "bundles": [{"path": "../final/h200-a1.tar.gz", "key": "../final/h200-final.pub", "start": "s1",
                  "date": "2026-12-01", "load": "clean"}, ...]}

(paths relative to the manifest; `load` is "clean" or what ran beside it: "light", "heavy", "cpu").
Every bundle must verify with its key (an older format only with --allow-format N). Then:
1. per figure (its noise id, harness.analysis.figure), over the clean bundles measured under the conditions
   of the newest one: the pooled sd of ln(value) between runs on one GPU (by UUID) and its degrees of
   freedom, the sd over every run and its own; this is the SKU's `noise_campaign` block
   (harness.analysis.noise), written with --block;
2. every pair of clean bundles judged with `dossier reproduce`'s engine and that block (in sample), and again
   with a block made without the pair's own machine starts (out of sample: the honest false-alarm count);
3. every loaded bundle judged against every clean one: whether it is called not reproduced, and by which
   deciding figures.
Prints the matrix as Markdown for bench/RESULTS.md; --json writes everything.

    python bench/campaign.py tests/fixtures/h200/campaign/campaign.json --allow-format 5 \\
        --block block.json --json campaign-result.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import catalogue, registry
from harness.analysis.figure import DECIDES, RATE_KINDS, Row, is_number
from harness.analysis.noise import NoiseModel
from harness.analysis.repeatability import declaration
from harness.bundle.view import BundleView
from harness.judge.facts import BundleFacts
from harness.judge.reproduction.engine import Judgement, compare, rows
from harness.judge.reproduction.results import canonical
from harness.signing.keys import load_public
from harness.verify import verify_and_view


@dataclass(frozen=True)
class Run:
    """One bundle of the campaign."""

    name: str
    start: str
    date: str
    load: str
    view: BundleView
    units: tuple[str, ...]
    rows: dict[str, Row]


def read_manifest(path: Path, allow: tuple[int, ...]) -> tuple[dict[str, Any], list[Run]]:
    manifest = json.loads(path.read_text())
    runs = []
    for entry in manifest["bundles"]:
        bundle, key = path.parent / entry["path"], path.parent / entry["key"]
        result, view = verify_and_view(bundle, load_public(key), allow_formats=allow)
        if view is None:
            failed = [f"{c.subject}: {c.detail}" for c in result.checks if not c.ok][:3]
            raise SystemExit(f"{bundle}: does not verify with {key}: {failed}")
        facts = BundleFacts(view)
        health = facts.document("health") or {}
        units = tuple(sorted(str(d.get("uuid")) for d in health.get("devices") or [] if isinstance(d, dict)))
        found = rows(facts, registry.figures(), [], bundle.name)
        runs.append(
            Run(bundle.name.removesuffix(".tar.gz"), entry["start"], entry["date"], entry["load"], view, units, found)
        )
    return manifest, runs


def _observations(runs: list[Run]) -> dict[str, list[tuple[Run, float, str]]]:
    """noise id -> (run, value, conditions) for every numeric rate row of the clean runs."""
    found: dict[str, list[tuple[Run, float, str]]] = {}
    for run in runs:
        for row in run.rows.values():
            if row.kind in RATE_KINDS and is_number(row.value) and row.value > 0:
                found.setdefault(row.noise, []).append((run, float(row.value), canonical(row.conditions)))
    return found


def random_effects(groups: list[list[float]]) -> tuple[float | None, int, float | None, float]:
    """One-way random effects over GROUPS of ln(value) (one group per machine start): (the pooled sd within a
    start, its degrees of freedom, the sd of one run of another start, Satterthwaite's degrees of freedom for
    it). The between-start variance is (MS_between - MS_within) / n0, floored at 0 (Searle, Casella and
    McCulloch, Variance Components, 3.5); one run of another start varies by within + between, whose mean-
    square combination has Satterthwaite's degrees of freedom (Satterthwaite 1946): about starts - 1 when the
    starts differ, so a campaign of few starts states a wide tolerance across them."""
    runs = sum(len(g) for g in groups)
    squares = sum(sum((v - statistics.fmean(g)) ** 2 for v in g) for g in groups)
    df_within = runs - len(groups)
    ms_within = squares / df_within if df_within else None
    if len(groups) < 2:
        return (math.sqrt(ms_within) if ms_within is not None else None), df_within, None, 0.0
    grand = statistics.fmean(v for g in groups for v in g)
    df_between = len(groups) - 1
    ms_between = sum(len(g) * (statistics.fmean(g) - grand) ** 2 for g in groups) / df_between
    n0 = (runs - sum(len(g) ** 2 for g in groups) / runs) / df_between
    if ms_within is None:  # one run a start: the between mean square is all there is
        return None, 0, math.sqrt(ms_between), float(df_between)
    if ms_between <= ms_within:  # no start-to-start spread shows: every run is one sample
        return math.sqrt(ms_within), df_within, math.sqrt(ms_within), float(runs - 1)
    a, b = (1 - 1 / n0) * ms_within, ms_between / n0
    df_other = (a + b) ** 2 / (a**2 / df_within + b**2 / df_between)
    return math.sqrt(ms_within), df_within, math.sqrt(a + b), df_other


def figure_noise(noise: str, observed: list[tuple[Run, float, str]]) -> dict[str, Any] | None:
    """One figure's entry: the runs measured under the newest run's conditions, grouped by machine start."""
    newest = observed[-1][2]
    same = [(run, math.log(value)) for run, value, conditions in observed if conditions == newest]
    if len(same) < 2:
        return None
    by_start: dict[str, list[float]] = {}
    for run, value in same:
        by_start.setdefault(run.start, []).append(value)
    sd_within, df_within, sd_other, df_other = random_effects(list(by_start.values()))
    values = [v for _, v in same]
    return {
        "noise": noise,
        "runs": len(same),
        "gpus": len({run.units for run, _ in same}),
        "starts": len(by_start),
        "sd_within": round(sd_within, 6) if sd_within is not None else None,
        "df_within": df_within,
        "sd_other": round(sd_other, 6) if sd_other is not None else None,
        "df_other": round(df_other, 2),
        "range": [round(math.exp(min(values)), 6), round(math.exp(max(values)), 6)],
    }


def campaign_block(manifest: dict[str, Any], clean: list[Run]) -> dict[str, Any]:
    """The SKU's noise_campaign block from CLEAN runs (without its false_alarms, added by the caller)."""
    figures = [
        entry
        for noise, observed in sorted(_observations(clean).items())
        for entry in [figure_noise(noise, observed)]
        if entry is not None
    ]
    dates = sorted({run.date for run in clean})
    return {
        "source": {
            "id": manifest["id"],
            "command": manifest["command"],
            "machine": manifest["machine"],
            "runs": len(clean),
            "machine_starts": len({run.start for run in clean}),
            "gpus": len({run.units for run in clean}),
            "dates": f"{dates[0]}..{dates[-1]}" if dates else "",
            "where": manifest["where"],
        },
        "figures": figures,
    }


def model_of(sku_id: str, block: dict[str, Any]) -> NoiseModel:
    return NoiseModel(sku_id, declaration(sku_id), catalogue.repeatability_bounds(), block)


def judge(theirs: Run, mine: Run, model: NoiseModel) -> Judgement:
    return compare(theirs.view, mine.view, registry.figures(), registry.diff_fields(), model=model)


def pair_entry(theirs: Run, mine: Run, judgement: Judgement) -> dict[str, Any]:
    deciding = [f for f in judgement.figures if f.decides and f.verdict.value == "fail"]
    return {
        "theirs": theirs.name,
        "mine": mine.name,
        "same_gpu": judgement.rule.case,
        "verdict": judgement.word,
        "family": judgement.rule.family,
        "flagged": [
            {"figure": f.figure, "ratio": f.ratio, "tolerance": f.tolerance, "theirs": f.theirs, "mine": f.mine}
            for f in deciding
        ],
        "moved_informing": len(judgement.moved()),
    }


def matrix(manifest: dict[str, Any], runs: list[Run], block: dict[str, Any]) -> dict[str, Any]:
    clean = [r for r in runs if r.load == "clean"]
    loaded = [r for r in runs if r.load != "clean"]
    sku = manifest["sku_id"]
    model = model_of(sku, block)
    in_sample, out_of_sample, loads = [], [], []
    for a, b in itertools.combinations(clean, 2):
        in_sample.append(pair_entry(a, b, judge(a, b, model)))
        rest = [r for r in clean if r.start not in (a.start, b.start)]
        held = model_of(sku, campaign_block(manifest, rest)) if len(rest) >= 2 else None
        if held is not None:
            out_of_sample.append({**pair_entry(a, b, judge(a, b, held)), "model_runs": len(rest)})
    for load in loaded:
        for ref in clean:
            loads.append({**pair_entry(ref, load, judge(ref, load, model)), "load": load.load})
    return {"in_sample": in_sample, "out_of_sample": out_of_sample, "loaded": loads}


HOST_ONLY = ("cpu",)  # loads that never touch the GPU


def false_alarms(result: dict[str, Any]) -> dict[str, Any]:
    """What the campaign measured of the rule: clean pairs called not reproduced, in and out of sample, with
    the one-sided 95% upper bound on the rate that 0 (or k) of n gives (Clopper-Pearson for k = 0: 1 - 0.05^(1/n))."""
    ins, outs = result["in_sample"], result["out_of_sample"]
    bad_in = sum(p["verdict"] != "reproduced" for p in ins)
    bad_out = sum(p["verdict"] != "reproduced" for p in outs)
    pairs = len(ins)
    # a co-tenant on the GPU must be caught (sensitivity); one only on the host's CPUs ("cpu") should not
    # move the GPU figures that decide, and is counted apart (issue 35)
    gpu = [p for p in result["loaded"] if p["load"] not in HOST_ONLY]
    host = [p for p in result["loaded"] if p["load"] in HOST_ONLY]
    return {
        "pairs": pairs,
        "not_reproduced": bad_in,
        "out_of_sample_pairs": len(outs),
        "out_of_sample_not_reproduced": bad_out,
        "upper_95_if_none": round(1 - 0.05 ** (1 / pairs), 4) if pairs else None,
        "loaded_pairs": len(gpu),
        "loaded_not_reproduced": sum(p["verdict"] == "not_reproduced" for p in gpu),
        "host_loaded_pairs": len(host),
        "host_loaded_not_reproduced": sum(p["verdict"] == "not_reproduced" for p in host),
    }


def markdown(runs: list[Run], block: dict[str, Any], result: dict[str, Any]) -> str:
    lines = ["| bundle | start | GPU | load |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.name} | {r.start} | {r.units[0][-8:] if r.units else '?'} | {r.load} |" for r in runs]
    deciding = sorted(
        {row.noise for r in runs for row in r.rows.values() if row.role == DECIDES and row.kind in RATE_KINDS}
    )
    lines += [
        "",
        "| deciding rate | runs | GPUs | starts | sd within a start | sd of another start | range |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for entry in block["figures"]:
        if entry["noise"] in deciding:
            within = f"{entry['sd_within']:.3%} (df {entry['df_within']})" if entry["sd_within"] is not None else "-"
            other = f"{entry['sd_other']:.3%} (df {entry['df_other']:.1f})" if entry["sd_other"] is not None else "-"
            lines.append(
                f"| {entry['noise']} | {entry['runs']} | {entry['gpus']} | {entry['starts']} | {within} | "
                f"{other} | {entry['range'][0]:.5g}-{entry['range'][1]:.5g} |"
            )
    for title, key in (
        ("Clean pairs, in sample", "in_sample"),
        ("Clean pairs, out of sample", "out_of_sample"),
        ("Loaded runs against each clean run", "loaded"),
    ):
        lines += [
            "",
            f"{title}:",
            "",
            "| theirs | mine | case | K | verdict | deciding figures flagged |",
            "| --- | --- | --- | ---: | --- | --- |",
        ]
        for p in result[key]:
            flagged = "; ".join(
                f"{f['figure']} {f['ratio']:.4f} (+-{f['tolerance']:.2%})" if f["ratio"] else f["figure"]
                for f in p["flagged"]
            )
            lines.append(
                f"| {p['theirs']} | {p['mine']} | {p['same_gpu']} | {p['family']} | {p['verdict']} | {flagged or '-'} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--allow-format", type=int, action="append", default=[], metavar="N")
    parser.add_argument("--block", type=Path, help="write the SKU's noise_campaign block (with false_alarms) here")
    parser.add_argument("--json", type=Path, help="write the block, the matrix and the counts here")
    args = parser.parse_args()
    manifest, runs = read_manifest(args.manifest, tuple(args.allow_format))
    block = campaign_block(manifest, [r for r in runs if r.load == "clean"])
    result = matrix(manifest, runs, block)
    block["false_alarms"] = false_alarms(result)
    print(markdown(runs, block, result))
    print("\n" + json.dumps(block["false_alarms"]))
    if args.block:
        args.block.write_text(json.dumps(block, indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"block": block, **result}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
