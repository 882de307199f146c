#!/usr/bin/env python3
"""How far every timed headline figure moved across N dossiers of one machine (issue 30, item 2).

Verifies each bundle with the signer's public key (an unverified one is refused), reads every timed
figure the way the catalogue names them (harness.judge.reproduction.engine.rates_of, every rate the probes declare: bandwidth,
stress, transfer per-GPU figures, each roofline dtype's burst best and shapes), and prints:
  1. a Markdown table for bench/RESULTS.md: per figure its kind, its kind's bound, n, min, median, max
     and range over median ((max - min) / median), and whether it met the bound;
  2. the figures over their bound (each needs a measured "why" before the block is pasted);
  3. with --json OUT: the catalogue's `run_to_run` block computed from them (sources + figures), ready to
     paste into harness/data/gpus.json under the SKU; a figure's "why" is kept from the current catalogue
     where the same figure is still over its bound there.

    python bench/repeatability.py B1.tar.gz ... B5.tar.gz --key dossier.pub --machine-starts 2 \\
        [--machine "lent nvidia-h200 ..."] [--command "dossier run (local runner)"] [--where bench/RESULTS.md] \\
        [--source-id windows-COMMIT] [--json block.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import catalogue, registry
from harness.analysis import repeatability
from harness.judge.reproduction.engine import rates_of
from harness.signing.keys import load_public
from harness.verify import verify_and_view


def _commit(tool: dict[str, Any]) -> str:
    """The harness commit a bundle names, else its source hash (a harness outside git)."""
    for key, label in (("git_commit", ""), ("source_sha256", "source ")):
        if isinstance(tool.get(key), str):
            return label + tool[key][:12]
    return "unknown"


def check_block(data: dict[str, Any]) -> None:
    """The block against the catalogue schema's run_to_run, so it pastes as valid."""
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "catalogue.schema.json").read_text())
    jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/run_to_run"}).validate(data)


def read(paths: list[Path], key_paths: list[Path], allow_formats: tuple[int, ...] = ()) -> list[Any]:
    """Each bundle's verified view (every check passed with one of the keys; an older format only when
    ALLOW_FORMATS names it, as `dossier verify --allow-format`); exit 1 naming one that fails."""
    keys, views = [load_public(k) for k in key_paths], []
    for path in paths:
        for key in keys:
            result, view = verify_and_view(path, key, allow_formats=allow_formats)
            if view is not None:
                views.append(view)
                break
        else:
            failed = [f"{c.subject}: {c.detail}" for c in result.checks if not c.ok][:3]
            raise SystemExit(f"{path}: does not verify with {', '.join(map(str, key_paths))}: {failed}")
    return views


def table(per_bundle: list[dict[str, tuple[float | None, str]]], bounds: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per figure measured in at least two bundles: kind, bound, n, min, median, max, spread."""
    rows = []
    for figure in sorted({f for figures in per_bundle for f in figures}):
        values = [figures[figure][0] for figures in per_bundle if figures.get(figure, (None,))[0] is not None]
        kinds = [figures[figure][1] for figures in per_bundle if figure in figures]
        if len(values) < 2:
            continue
        kind = max(set(kinds), key=kinds.count)
        median = statistics.median(values)
        spread = (max(values) - min(values)) / median if median else None
        bound = bounds.get(kind, {}).get("max_spread")
        rows.append(
            {
                "figure": figure,
                "kind": kind,
                "bound": bound,
                "n": len(values),
                "min": min(values),
                "median": median,
                "max": max(values),
                "spread": spread,
                "met": spread is not None and bound is not None and spread <= bound,
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]], title: str) -> str:
    lines = [
        f"{title}",
        "",
        "| figure | kind | bound | n | min | median | max | range / median | met |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['figure']} | {r['kind']} | {r['bound']:.0%} | {r['n']} | {r['min']:.5g} | {r['median']:.5g} "
            f"| {r['max']:.5g} | {r['spread']:.2%} | {'yes' if r['met'] else '**no**'} |"
        )
    met = sum(r["met"] for r in rows)
    return "\n".join(lines + ["", f"{met} of {len(rows)} figures within their kind's bound."])


def block(rows: list[dict[str, Any]], source_id: str, source: dict[str, Any], sku_id: str | None) -> dict[str, Any]:
    """The catalogue's run_to_run block for these runs; a why kept from the current catalogue's entry."""
    current = repeatability.declaration(sku_id) if sku_id else {}
    figures = []
    for r in rows:
        entry = {
            "figure": r["figure"],
            "kind": r["kind"],
            "spread": round(r["spread"], 4),
            "source": source_id,
            "note": f"{r['min']:.5g}-{r['max']:.5g} over {r['n']} dossiers (median {r['median']:.5g})",
        }
        old = repeatability.lookup(current, r["figure"])
        if not r["met"] and old is not None and old.get("noisy") and old.get("why"):
            entry["why"] = old["why"]
        figures.append(entry)
    return {"sources": {source_id: source}, "figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundles", nargs="+", type=Path)
    parser.add_argument(
        "--key",
        type=Path,
        nargs="+",
        required=True,
        help="the signer's public key (several: each bundle must verify with one of them)",
    )
    parser.add_argument("--machine-starts", type=int, required=True, help="how many machine starts the runs spanned")
    parser.add_argument("--machine", help="the machine in words (default: host and GPU from the first bundle)")
    parser.add_argument("--command", default="dossier run (local runner, the 60 s stress)")
    parser.add_argument("--where", default='bench/RESULTS.md, "Figures that repeat"')
    parser.add_argument("--source-id", help="the campaign's id in the catalogue (default windows-COMMIT)")
    parser.add_argument("--json", type=Path, help="write the catalogue's run_to_run block here")
    parser.add_argument(
        "--allow-format",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="read a bundle of format N, older than this build fully checks, as `dossier verify "
        "--allow-format N` verifies it; repeatable",
    )
    args = parser.parse_args()
    if len(args.bundles) < 2:
        parser.error("give at least two bundles")
    views = read(args.bundles, args.key, tuple(args.allow_format))
    per_bundle = [rates_of(v, registry.figures()) for v in views]
    commits = sorted({_commit(v.commands.get("tool") or {}) for v in views})
    dates = sorted(str(v.commands.get("started_at"))[:10] for v in views)
    skus = {repeatability.bundle_sku(v.documents) for v in views}
    sku_id = skus.pop() if len(skus) == 1 else None
    if sku_id is None:
        print(f"warning: the bundles are not of one identified SKU ({sorted(map(str, skus))})", file=sys.stderr)
    rows = table(per_bundle, catalogue.repeatability_bounds().get("bounds", {}))
    commit = commits[0] if len(commits) == 1 else "+".join(commits)
    print(
        markdown(
            rows,
            f"Range over median of every timed figure, {len(views)} dossiers ({dates[0]}..{dates[-1]}, "
            f"{args.machine_starts} machine starts, {sku_id}, commit {commit})",
        )
    )
    over = [r for r in rows if not r["met"]]
    if over:
        print(
            "\nOver their bound (the catalogue block needs a measured why for each, kept from the current "
            "catalogue where it had one):\n"
            + "\n".join(f"- {r['figure']}: {r['spread']:.2%} > {r['bound']:.0%}" for r in over)
        )
    if args.json:
        host = views[0].environment.get("host") or {}
        source = {
            "machine": args.machine or f"{host.get('hostname')}: {sku_id}",
            "date": dates[0],
            "commit": commit,
            "command": args.command,
            "runs": len(views),
            "machine_starts": args.machine_starts,
            "method": "the probes as at this commit: the roofline timed in windows with idle gaps, its burst "
            "best over the fixed shapes",
            "where": args.where,
        }
        data = block(rows, args.source_id or f"windows-{commit[:7]}", source, sku_id)
        check_block(data)
        args.json.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(
            f"\nwrote {args.json}: paste it as {sku_id}'s run_to_run in harness/data/gpus.json "
            "(tests/ground/test_catalogue.py checks it against schemas/catalogue.schema.json)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
