"""How far each headline figure moves between separate dossiers, and which figures are noisy.

Standard library (and the catalogue) only. Three spreads appear in a bundle, each over a different
distance (the report names which one every figure carries):
- within one run: a roofline shape's spread across its timed windows (tens of milliseconds apart),
  the bandwidth probe's spread across its three repeats (seconds apart, one process);
- run to run: one figure across separate dossiers (separate processes, machine starts), measured
  per SKU and kept in the catalogue (harness/data/gpus.json `run_to_run`, with its source). This is
  the one that says what the next run will read, and the floor of any tolerance that compares two
  bundles (`dossier reproduce`, baselines).

At run time `dossier run` records the SKU's run-to-run block in the bundle (commands.json
`repeatability`, made by `declaration`): every measured figure with its kind, its kind's bound, its
spread, its source, and `noisy` (true when the spread exceeds the bound) with why. The report
renders it from the bundle alone, and a later catalogue does not change what a bundle declared.

Figure ids (the catalogue's `repeatability.figure_ids`): PROBE.FIGURE, e.g. bandwidth.plateau_gbps,
stress.steady_tflops, transfer.h2d_pinned_gbps, roofline.bf16.burst_best_tflops,
roofline.bf16.square-256.tflops (a shape's headline: kernel-only for a launch-bound shape from probe
contract 4 on), roofline.bf16.square-256.eager_tflops (beside a kernel-only headline: the host's launch
rate); an entry's figure may hold * (fnmatch), and an exact id wins.

The noise model (`noise_model(sku_id).noise(figure_id, kind)`) is the one answer to "how far may this
figure move between two clean runs": `dossier reproduce` and `dossier diff` judge each figure with it,
and `dossier baseline` floors every tolerance with it (harness.judge.acceptance.baseline.noise). Its
rule and constants are the catalogue's (`repeatability.comparison`, with their source): a figure the
SKU's run_to_run measures gets max(its kind's bound, z x sqrt(2) x spread / d2(runs)) (Shewhart's
range estimate of sigma, the difference of two runs, z sigmas); one it does not gets its stated
default (`repeatability.defaults`, each with its evidence) or its kind's bound, marked not measured.
Counts and exact figures (identity, contracts, digests, precision) are compared by equality.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness import catalogue
from harness.analysis import bandwidth, stress, timing, transfer
from harness.analysis.roofline import figures as roofline_figures

KINDS = ("steady", "burst", "launch_bound")  # rates: judged against the noise model
EQUAL_KINDS = ("count", "exact")  # judged by equality: fault counts; identity, contracts, digests, precision
UNIDENTIFIED = "no GPU SKU was identified in this run, so no run-to-run measurement applies"
STEADY_CALL_S = 1e-3  # a GEMM of 1 ms or more a call is a steady-state figure (issue 30's kinds)


def roofline_kind(per_call_s: float, launch_bound: bool) -> str:
    """A roofline rate's figure kind: launch-bound (an eager rate whose call is launch-bound: the host's
    launch rate), steady (1 ms or more a call), else a burst."""
    if launch_bound:
        return "launch_bound"
    return "steady" if per_call_s >= STEADY_CALL_S else "burst"


def declaration(sku_id: str | None) -> dict[str, Any]:
    """What a bundle records at run time: the SKU's run-to-run spreads from the catalogue, each against its
    kind's bound, noisy or not; or why there is nothing to record."""
    if not sku_id:
        return {"unavailable": UNIDENTIFIED}
    measured = catalogue.run_to_run(sku_id)
    if not measured:
        return {"unavailable": f"the catalogue has no run-to-run measurement for {sku_id} yet"}
    rules = catalogue.repeatability_bounds()
    bounds = rules.get("bounds", {})
    figures = []
    for entry in measured["figures"]:
        bound = bounds.get(entry["kind"], {}).get("max_spread")
        noisy = bound is not None and entry["spread"] > bound
        row = {**entry, "bound": bound, "noisy": noisy}
        if noisy and "why" not in row:
            row["why"] = "no cause recorded in the catalogue"
        figures.append(row)
    return {
        "sku_id": sku_id,
        "catalogue_version": catalogue.load().get("catalogue_version"),
        "spread": rules.get("spread"),
        "bounds": bounds,
        "bounds_source": rules.get("source"),
        "figure_ids": rules.get("figure_ids"),
        "sources": measured["sources"],
        "figures": figures,
    }


def _unavailable_discrepancies(why: Any, sku_id: str | None) -> list[str]:
    """An unavailable block says why in `declaration`'s words for the SKU the documents identify."""
    expected = UNIDENTIFIED if sku_id is None else f"the catalogue has no run-to-run measurement for {sku_id} yet"
    return (
        []
        if why == expected
        else [
            f"repeatability: unavailable ({str(why)[:80]!r}), but for the SKU the documents "
            f"identify ({sku_id}) `dossier run` records {expected!r}"
        ]
    )


def _figure_discrepancies(record: Mapping[str, Any]) -> list[str]:
    """Each declared figure against the block's bounds and sources: its kind's bound, noisy exactly when
    its spread exceeds the bound (with why), a campaign the block names, each figure once."""
    bounds, sources = record.get("bounds") or {}, record.get("sources") or {}
    figures = [f for f in record.get("figures") or [] if isinstance(f, Mapping)]
    found = (
        [] if len({f.get("figure") for f in figures}) == len(figures) else ["repeatability: a figure is declared twice"]
    )
    for entry in figures:
        kind_bound = (bounds.get(entry.get("kind")) or {}).get("max_spread") if isinstance(bounds, Mapping) else None
        spread, bound, noisy = entry.get("spread"), entry.get("bound"), entry.get("noisy")
        over = isinstance(bound, (int, float)) and isinstance(spread, (int, float)) and spread > bound
        if (
            bound != kind_bound
            or noisy is not over
            or (noisy and not entry.get("why"))
            or entry.get("source") not in sources
        ):
            found.append(
                f"repeatability: figure {str(entry.get('figure'))[:60]}: bound {bound}, noisy {noisy} at spread "
                f"{spread}, source {str(entry.get('source'))[:40]!r}; its kind {entry.get('kind')}'s bound is "
                f"{kind_bound}, noisy means over it (with why), and the source must be one the block names"
            )
    return found


def declaration_discrepancies(record: Any, documents: Mapping[str, Any]) -> list[str]:
    """commands.json's `repeatability` (RECORD; None: not recorded, which the bundle's format rules judge)
    against the bundle's DOCUMENTS: the SKU they identify (`bundle_sku`); recorded with this build's
    catalogue version, exactly what `declaration` gives for it; with another (an older catalogue, whose
    spreads are that catalogue's), each figure against the block's own bounds and sources. A catalogue
    newer than this build's cannot be checked here: update rig-dossier."""
    if record is None:
        return []
    sku_id = bundle_sku(documents)
    if not isinstance(record, Mapping):
        return ["repeatability is not an object"]
    if "unavailable" in record:
        return _unavailable_discrepancies(record["unavailable"], sku_id)
    if record.get("sku_id") != sku_id:
        return [f"repeatability: sku_id {str(record.get('sku_id'))[:40]!r}, but the documents identify {sku_id}"]
    version, mine = record.get("catalogue_version"), catalogue.load().get("catalogue_version")
    if version == mine:
        again = declaration(sku_id)
        return (
            []
            if dict(record) == again
            else [
                f"repeatability differs from what catalogue version {mine} declares for "
                f"{sku_id} (harness.analysis.repeatability.declaration)"
            ]
        )
    if isinstance(version, int) and isinstance(mine, int) and version > mine:
        return [f"repeatability: catalogue version {version}, newer than this build's ({mine}): update rig-dossier"]
    return _figure_discrepancies(record)


def lookup(record: Any, figure_id: str) -> Mapping[str, Any] | None:
    """The declared entry for FIGURE_ID: an exact id first, else the first pattern that matches."""
    if not isinstance(record, Mapping) or not isinstance(record.get("figures"), list):
        return None
    entries = [e for e in record["figures"] if isinstance(e, Mapping) and isinstance(e.get("figure"), str)]
    exact = next((e for e in entries if e["figure"] == figure_id), None)
    return exact or next((e for e in entries if fnmatch.fnmatchcase(figure_id, e["figure"])), None)


def noisy(record: Any) -> list[Mapping[str, Any]]:
    """The declared figures whose run-to-run spread exceeds their kind's bound."""
    return (
        [e for e in (record.get("figures") or []) if isinstance(e, Mapping) and e.get("noisy") is True]
        if isinstance(record, Mapping)
        else []
    )


def noisy_note(record: Any, figure_id: str) -> str:
    """ "" for a figure not declared noisy; else what a verdict on it must say: its run-to-run spread, its
    bound and why (acceptance appends it to the criterion's why)."""
    entry = lookup(record, figure_id)
    if entry is None or entry.get("noisy") is not True:
        return ""
    return (
        f"; declared noisy in this bundle: {entry['spread']:.2%} run to run over its {entry['bound']:.0%} "
        f"{entry['kind']} bound ({entry.get('why')}), so a result this close to the threshold may not repeat"
    )


@dataclass(frozen=True)
class Noise:
    """How far a figure may move between two clean runs (a share of the first), where that comes from,
    whether it was measured (the SKU's run_to_run) or is a stated default, and whether the catalogue
    declares the figure noisy (its spread over its kind's bound)."""

    share: float
    source: str
    measured: bool
    noisy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"share": self.share, "source": self.source, "measured": self.measured, "noisy": self.noisy}


@dataclass(frozen=True)
class NoiseModel:
    """The catalogue's run-to-run measurements of one SKU (a `declaration`) and its comparison rule."""

    sku_id: str | None
    record: Mapping[str, Any]
    rules: Mapping[str, Any]

    def bound(self, kind: str) -> float:
        try:
            return float(self.rules["bounds"][kind]["max_spread"])
        except KeyError:
            raise ValueError(
                f"no repeatability bound for the figure kind {kind!r} (one of {', '.join(KINDS)})"
            ) from None

    def pair_limit(self, spread: float, runs: int) -> float:
        """z x sqrt(2) x spread / d2(runs): how far two runs of a figure may differ, from its range over RUNS."""
        comparison = self.rules["comparison"]
        table = {int(n): float(v) for n, v in comparison["d2"].items()}
        d2 = table[min(max(runs, min(table)), max(table))]
        return float(comparison["z"]) * math.sqrt(2.0) * spread / d2

    def default(self, figure_id: str) -> Noise | None:
        """The first stated default whose figure pattern matches FIGURE_ID, or None."""
        for entry in self.rules.get("defaults") or []:
            if fnmatch.fnmatchcase(figure_id, entry["figure"]):
                return Noise(
                    float(entry["share"]),
                    f"stated default for {entry['figure']}, not a measured run-to-run spread ({entry['evidence']})",
                    False,
                )
        return None

    def noise(self, figure_id: str, kind: str) -> Noise:
        """The tolerance of FIGURE_ID (of KIND) between two clean runs, and where it comes from."""
        if kind in EQUAL_KINDS:
            return Noise(0.0, f"equal only: {self.rules['comparison']['equal'][kind]}", True)
        bound = self.bound(kind)
        entry = lookup(self.record, figure_id)
        if entry is None:
            stated = self.default(figure_id)
            return stated or Noise(
                bound,
                f"stated default: the {kind} bound {bound:.0%} (the catalogue's "
                f"repeatability bound for {self.rules['bounds'][kind]['what']}); no "
                f"run-to-run measurement of "
                f"{figure_id} for {self.sku_id or 'this SKU'}",
                False,
            )
        source = (self.record.get("sources") or {}).get(entry.get("source")) or {}
        runs = int(source.get("runs") or 2)
        limit = self.pair_limit(float(entry["spread"]), runs)
        floor = "its kind's bound, the floor" if bound >= limit else "the pair limit, over its kind's bound"
        share = max(bound, limit)
        return Noise(
            share,
            f"{entry['figure']}: {entry['spread']:.2%} run to run over {runs} runs of "
            f"{source.get('command', '?')} ({source.get('machine', '?')}, {source.get('date', '?')}, "
            f"commit {source.get('commit', '?')}): pair limit {limit:.2%}, {kind} bound {bound:.0%}; "
            f"{share:.2%} ({floor})",
            True,
            bool(entry.get("noisy")),
        )

    def to_json(self) -> dict[str, Any]:
        """What a reproduction statement records of the model it judged with."""
        return {
            "sku_id": self.sku_id,
            "catalogue_version": catalogue.load().get("catalogue_version"),
            "catalogue_sha256": hashlib.sha256(catalogue.CATALOGUE_PATH.read_bytes()).hexdigest(),
            "rule": self.rules["comparison"]["rule"],
            "z": self.rules["comparison"]["z"],
            "source": self.rules["comparison"]["source"],
            "bounds": self.rules["bounds"],
            "run_to_run": (
                dict(self.record.get("sources") or {})
                if "figures" in self.record
                else {"unavailable": self.record.get("unavailable")}
            ),
        }


def noise_model(sku_id: str | None) -> NoiseModel:
    """The noise model for SKU_ID from this build's catalogue (its run_to_run, or stated defaults only)."""
    return NoiseModel(sku_id, declaration(sku_id), catalogue.repeatability_bounds())


def bundle_sku(documents: Mapping[str, Any]) -> str | None:
    """The one SKU a run's GPUs were identified as: health's devices, else the bandwidth or roofline step's
    identification; None when unidentified or when the GPUs differ."""
    health = documents.get("health")
    if isinstance(health, Mapping):
        from harness.analysis import health as health_analysis

        try:
            ids = {d.get("sku_id") for d in health_analysis.headlines(dict(health)).get("devices") or []}
        except Exception:  # noqa: BLE001 - an unreadable health document identifies nothing
            ids = set()
        if len(ids) == 1 and None not in ids:
            return ids.pop()
        if len(ids) > 1:
            return None
    for step, path in (("bandwidth", ("reference", "sku_id")), ("roofline", ("device_facts", "sku_id"))):
        value: Any = documents.get(step)
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, str):
            return value
    return None


def bundle_identity(documents: Mapping[str, Any], cpu_model: Any) -> tuple[tuple[Any, ...], str, str | None]:
    """What a run's figures were measured on, as (a key two runs compare by, the same in words, its SKU id):
    the GPUs health lists (their SKUs, or names where the catalogue has none), else the GPU the bandwidth
    step identified, else the CPU (CPU_MODEL, the host's) where the run found no GPU."""
    sku_id = bundle_sku(documents)
    health = documents.get("health")
    devices: list[Any] = []
    if isinstance(health, Mapping):
        from harness.analysis import health as health_analysis

        try:
            devices = [
                d for d in health_analysis.headlines(dict(health)).get("devices") or [] if isinstance(d, Mapping)
            ]
        except Exception:  # noqa: BLE001 - an unreadable health document identifies nothing
            devices = []
    if devices:
        names = sorted({f"{d.get('name')} ({d.get('sku_id') or 'not in the catalogue'})" for d in devices})
        return (
            ("gpu", tuple(sorted({str(d.get("sku_id") or d.get("name")) for d in devices}))),
            f"{len(devices)} x {', '.join(names)}",
            sku_id,
        )
    bandwidth = documents.get("bandwidth")
    device = bandwidth.get("device") if isinstance(bandwidth, Mapping) else None
    if device == "cuda":
        return ("gpu", (sku_id,)), f"GPU {sku_id or 'of unknown SKU'} (the bandwidth step's)", sku_id
    if device == "cpu" or isinstance(health, Mapping):
        return ("cpu", cpu_model), f"the CPU, no GPU ({cpu_model or 'model not recorded'})", None
    return ("unknown",), "not recorded (neither health nor bandwidth completed)", None


def bundle_figures(documents: Mapping[str, Any]) -> dict[str, tuple[float | None, str]]:
    """Every timed headline figure of a bundle's documents (by step), as figure id -> (value, kind): the
    ids the catalogue's run_to_run and a bundle's declaration use (bench/repeatability.py compares them
    across dossiers; reproduction and baselines look their tolerance up by them)."""
    found: dict[str, tuple[float | None, str]] = {}
    if isinstance(documents.get("bandwidth"), Mapping):
        heads = bandwidth.headlines(dict(documents["bandwidth"]))
        found.update(
            {
                "bandwidth.plateau_gbps": (heads["plateau_gbps"], "steady"),
                "bandwidth.repeat_median_gbps": (heads["repeat_median_gbps"], "steady"),
            }
        )
    if isinstance(documents.get("stress"), Mapping):
        heads = stress.headlines(dict(documents["stress"]))
        bursts = [d["burst_tflops"] for d in heads["devices"] if d.get("burst_tflops") is not None]
        found.update(
            {
                "stress.steady_tflops": (heads["min_steady_tflops"], "steady"),
                "stress.burst_tflops": (min(bursts) if bursts else None, "burst"),
            }
        )
    if isinstance(documents.get("transfer"), Mapping):
        found.update(_transfer_figures(transfer.headlines(dict(documents["transfer"]))))
    for step, document in documents.items():
        if step == "roofline" or (step.startswith("roofline-") and isinstance(document, Mapping)):
            found.update(_roofline_figures(dict(document)))
    return found


def _transfer_figures(heads: Mapping[str, Any]) -> dict[str, tuple[float | None, str]]:
    """Each per-GPU transfer figure (GB/s), the lowest GPU's."""
    values: dict[str, list[float]] = {}
    for gpu, figures in heads.get("per_gpu", {}).items():
        for key, value in figures.items():
            if gpu != "host" and key.endswith("_gbps") and key != "pcie_ceiling_gbps":
                values.setdefault(key, []).append(value)
    return {
        f"transfer.{key}": (min(v for v in got if v is not None) if any(v is not None for v in got) else None, "steady")
        for key, got in values.items()
    }


def _roofline_figures(document: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
    """Each dtype's burst best and every measured shape's headline rate (`.tflops`), and where its calls
    were replayed from a CUDA graph its other rate: beside a kernel-only headline (probe contract 4 on) the
    eager rate, the host's launch rate (`.eager_tflops`, launch-bound), beside an eager one (documents
    before) the kernel-only rate (`.kernel_tflops`)."""
    return {f"roofline.{label}": (item["value"], item["kind"]) for label, item in roofline_rates(document)}


def roofline_rates(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(DTYPE.FIGURE, item) for every GEMM rate of one roofline document, its own dtype's and each dtype
    check's: the burst best and each measured shape's rates (as `_roofline_figures` names them), each item
    its value, kind, within-run spread (across the shape's timed windows) and the conditions a rate is
    comparable under (what the burst best is taken over; what a shape's rate is timed from) and the id the
    noise model knows it by."""
    found = []
    for dtype, view in roofline_figures.dtype_documents(document).items():
        heads = roofline_figures.headlines(view)
        # The run-to-run measurements are of the windowed probe (contract 3 on): a rate timed call by call
        # before it is looked up under an id of its own, which nothing measures (its kind's stated default).
        noise = "roofline" if roofline_figures.windowed(view) else "roofline.per-call"
        found.append(
            (
                f"{dtype}.burst_best_tflops",
                {
                    "value": heads["burst_best_tflops"],
                    "kind": "burst",
                    "spread": None,
                    "conditions": {"over": heads.get("burst_best_over")},
                    "noise": f"{noise}.{dtype}.burst_best_tflops",
                },
            )
        )
        for row in roofline_figures.burst_windows(view):
            figure = f"{dtype}.{row['label']}"
            kernel_only = row.get("rate_basis") == timing.KERNEL_ONLY
            seconds = _headline_s(roofline_figures, view, row["label"])
            kind = roofline_kind(seconds, bool(row.get("launch_bound")) and not kernel_only) if seconds else "burst"
            basis = {"basis": row.get("rate_basis") or "per-call timing (before timed windows)"}
            found.append(
                (
                    f"{figure}.tflops",
                    {
                        "value": row["burst_tflops"],
                        "kind": kind,
                        "spread": row.get("window_spread"),
                        "conditions": basis,
                        "noise": f"{noise}.{figure}.tflops",
                    },
                )
            )
            if kernel_only and row.get("eager_tflops") is not None:
                found.append(
                    (
                        f"{figure}.eager_tflops",
                        {
                            "value": row["eager_tflops"],
                            "kind": "launch_bound",
                            "spread": row.get("eager_spread"),
                            "conditions": basis,
                            "noise": f"{noise}.{figure}.eager_tflops",
                        },
                    )
                )
            elif row.get("kernel_tflops") is not None:
                found.append(
                    (
                        f"{figure}.kernel_tflops",
                        {
                            "value": row["kernel_tflops"],
                            "kind": "burst",
                            "spread": None,
                            "conditions": basis,
                            "noise": f"{noise}.{figure}.kernel_tflops",
                        },
                    )
                )
    return found


def _headline_s(figures: Any, document: dict[str, Any], label: str) -> float | None:
    shape = next((s for s in document.get("measurements", {}).get("shapes", []) if s.get("label") == label), None)
    return figures.headline_of(document, shape)[0] if shape else None
