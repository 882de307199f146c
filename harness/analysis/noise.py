"""How far a figure may move between two clean runs, and the false-alarm rate of a verdict built on it.

Standard library (and the catalogue) only. `dossier reproduce`, `dossier diff` and `dossier baseline` all
judge rates with this one model (harness/data/gpus.json holds its measurements and rule, each with its
source):

- measured: a SKU's `noise_campaign` holds, for every figure (by its noise id), what a campaign of clean
  dossiers over several machine starts and GPUs showed (bench/campaign.py makes the block from the
  committed bundles), as a one-way random-effects model with the machine start as the group: the pooled
  standard deviation of ln(value) between runs of one machine start, with its degrees of freedom, and the
  standard deviation of one run of another start (the start-to-start and unit-to-unit spread included),
  with Satterthwaite's degrees of freedom, which the number of starts, not of runs, sets;
- the rule (the catalogue's `repeatability.verdict`): two runs of a figure agree when
  |mine / theirs - 1| <= max(floor, t(df, alpha / K) x sqrt(2) x sd), where sd and df are the campaign's
  for the case judged (the same machine start, by its instance and the GPUs' UUIDs, or another start or
  unit of the SKU: the campaign has not run one GPU on two starts, so a GPU seen again on another start is
  judged as another unit), t(df, p) the two-sided Student t
  quantile (the estimate's own uncertainty at df degrees of freedom), and alpha / K the share of the
  verdict's false-alarm rate each of the K deciding figures of the comparison gets (Bonferroni: the chance
  that a clean re-run is called not reproduced as a whole is then at most alpha, whatever the figures'
  correlation). An informing figure is judged alone (K = 1): it is said to have moved, never decides;
- not measured: a figure no campaign has measured gets a stated default (`repeatability.defaults`) or its
  kind's bound, said so; such a figure is outside the stated false-alarm rate, and the verdict says how
  many were judged so.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness import catalogue
from harness.analysis import student_t
from harness.analysis.figure import EQUAL_KINDS, RATE_KINDS
from harness.analysis.repeatability import declaration, lookup

SAME_START, OTHER_START = "the same machine start and GPUs", "another machine start or GPU of the SKU"


@dataclass(frozen=True)
class Noise:
    """How far a figure may move between two clean runs (a share: |ln(mine / theirs)| at most this), where
    that comes from, whether it was measured (a campaign) or is a stated default, and whether the
    catalogue declares the figure noisy (its run-to-run spread over its kind's bound)."""

    share: float
    source: str
    measured: bool
    noisy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"share": self.share, "source": self.source, "measured": self.measured, "noisy": self.noisy}


def _stated(entries: Any, figure_id: str) -> Mapping[str, Any] | None:
    return next((e for e in entries or [] if fnmatch.fnmatchcase(figure_id, e["figure"])), None)


@dataclass(frozen=True)
class NoiseModel:
    """One SKU's noise: its campaign (measured), the catalogue's rule and defaults, and the run-to-run
    block a bundle records (`declaration`: which figures are declared noisy)."""

    sku_id: str | None
    record: Mapping[str, Any]
    rules: Mapping[str, Any]
    campaign: Mapping[str, Any]

    @property
    def verdict_rule(self) -> Mapping[str, Any]:
        return self.rules["verdict"]

    @property
    def false_alarm(self) -> float:
        """The verdict's designed false-alarm rate (alpha): at most this share of clean re-runs not reproduced."""
        return float(self.verdict_rule["false_alarm"])

    def bound(self, kind: str) -> float:
        try:
            return float(self.rules["bounds"][kind]["max_spread"])
        except KeyError:
            raise ValueError(
                f"no repeatability bound for the figure kind {kind!r} (one of {', '.join(RATE_KINDS)})"
            ) from None

    def default(self, figure_id: str) -> Noise | None:
        """The first stated default whose figure pattern matches FIGURE_ID, or None."""
        entry = _stated(self.rules.get("defaults"), figure_id)
        if entry is None:
            return None
        return Noise(
            float(entry["share"]),
            f"stated default for {entry['figure']}, not a measured run-to-run spread ({entry['evidence']})",
            False,
        )

    def measured(self, figure_id: str) -> Mapping[str, Any] | None:
        """The campaign's entry for FIGURE_ID (an exact noise id), or None."""
        return next((e for e in self.campaign.get("figures") or [] if e["noise"] == figure_id), None)

    def _noisy(self, figure_id: str) -> bool:
        return bool((lookup(self.record, figure_id) or {}).get("noisy"))

    def floor(self, figure_id: str) -> tuple[float, str]:
        """The least tolerance FIGURE_ID is held to, and why: a stated floor for it, else the rule's."""
        rule = self.verdict_rule
        entry = _stated(rule.get("floors"), figure_id)
        if entry is not None:
            return float(entry["share"]), f"the stated floor for {entry['figure']} ({entry['evidence']})"
        return float(rule["floor"]), f"the rule's floor ({rule['floor_why']})"

    def noise(self, figure_id: str, kind: str, same_start: bool = False, family: int = 1) -> Noise:
        """The tolerance of FIGURE_ID (of KIND) between two clean runs (of one machine start, or of two starts
        or units of the SKU) when it is one of FAMILY figures that decide together (the module docstring's
        rule)."""
        if kind in EQUAL_KINDS:
            return Noise(0.0, f"equal only: {self.rules['comparison']['equal'][kind]}", True)
        entry = self.measured(figure_id)
        if entry is None:
            return self._unmeasured(figure_id, kind)
        sd, df = (entry["sd_within"], entry["df_within"]) if same_start else (entry["sd_other"], entry["df_other"])
        case = SAME_START if same_start else OTHER_START
        if sd is None or not df or df < 1:  # no start ran twice, or only one start: nothing measured for the case
            return self._unmeasured(figure_id, kind)
        alpha = self.false_alarm / max(family, 1)
        t = student_t.two_sided_quantile(alpha, int(df))
        limit = t * math.sqrt(2.0) * float(sd)
        floor, floor_why = self.floor(figure_id)
        share = max(floor, limit)
        source = self.campaign.get("source") or {}
        return Noise(
            share,
            f"{figure_id}, {case}: sd {float(sd):.3%} of ln(value) over {entry['runs']} runs on {entry['gpus']} "
            f"GPU(s), {entry['starts']} machine starts (campaign {source.get('id', '?')}); t({int(df)} df, "
            f"{alpha:.3g} two-sided) {t:.2f} x sqrt(2) x sd = {limit:.2%}"
            + (f"; {floor_why}: {floor:.2%}" if floor >= limit else ""),
            True,
            self._noisy(figure_id),
        )

    def _unmeasured(self, figure_id: str, kind: str) -> Noise:
        """A figure no campaign measured for the case: its stated default, else its kind's bound, never
        under the rule's floors (a stated floor is a measurement: the campaign's out-of-sample pairs judged a
        pinned copy at its 2% default where the floor's 4% was measured, and called clean pairs not reproduced)."""
        stated = self.default(figure_id)
        if stated is None:
            bound = self.bound(kind)
            stated = Noise(
                bound,
                f"stated default: the {kind} bound {bound:.0%} (the catalogue's repeatability bound for "
                f"{self.rules['bounds'][kind]['what']}); no campaign measured {figure_id} for "
                f"{self.sku_id or 'this SKU'}",
                False,
                self._noisy(figure_id),
            )
        floor, floor_why = self.floor(figure_id)
        if floor <= stated.share:
            return stated
        return Noise(floor, f"{stated.source}; {floor_why}: {floor:.2%}", False, stated.noisy)

    def to_json(self) -> dict[str, Any]:
        """What a reproduction statement records of the model it judged with."""
        rule = self.verdict_rule
        return {
            "sku_id": self.sku_id,
            "catalogue_version": catalogue.load().get("catalogue_version"),
            "catalogue_sha256": hashlib.sha256(catalogue.CATALOGUE_PATH.read_bytes()).hexdigest(),
            "rule": rule["rule"],
            "false_alarm": rule["false_alarm"],
            "source": rule["source"],
            "bounds": self.rules["bounds"],
            "campaign": (
                {"source": self.campaign.get("source"), "false_alarms": self.campaign.get("false_alarms")}
                if self.campaign
                else {"unavailable": f"no noise campaign for {self.sku_id or 'an unidentified SKU'} in the catalogue"}
            ),
        }


def noise_model(sku_id: str | None) -> NoiseModel:
    """The noise model for SKU_ID from this build's catalogue (its campaign, or stated defaults only)."""
    return NoiseModel(sku_id, declaration(sku_id), catalogue.repeatability_bounds(), catalogue.noise_campaign(sku_id))
