"""What a headline figure is, declared once, beside its probe's analysis (harness/analysis/NAME/declared.py).

Standard library only. Every layer reads the same declaration: `dossier diff` and `dossier reproduce` judge
each Figure run against run (harness.judge.reproduction), `dossier fleet collect` compares a figure's
node-level view across nodes (`fleet`), acceptance and `dossier baseline` hold it to a known-good unit
(`accept`), and the repeatability block and the campaign read it by its noise id. The registry gathers the
tables (harness.registry.figures()); nothing else re-declares a figure.

A figure says, besides how to read it:
- its KIND, how two runs of it are judged: `steady`, `burst` and `launch_bound` are rates, reproduced when
  mine is within the figure's run-to-run tolerance of theirs; `count` (fault counts) and `exact` (identity,
  contract verdicts, digests, the precision step's figures) only when equal;
- its ROLE: `decides` (a figure a buyer or an auditor asks about: the HBM bandwidth plateau, each dtype's
  GEMM burst, the sustained GEMM rate, pinned host copies and peer links, the all-reduce bus bandwidth,
  precision outputs, fault counts, identity and configuration) takes part in the verdict; `informs` is
  shown, and said when it moved, but never decides (each says why);
- its NOISE CLASS (NOISE_CLASSES): what sets how far it moves between clean runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RATE_KINDS = ("steady", "burst", "launch_bound")  # judged against the noise model
EQUAL_KINDS = ("count", "exact")  # judged by equality
KINDS = (*RATE_KINDS, *EQUAL_KINDS)

DECIDES, INFORMS = "decides", "informs"
ROLES = (DECIDES, INFORMS)

NOISE_CLASSES = {
    "device": "the GPU's own rate (HBM, GEMM at full clock or at the power cap): moves with the unit and its clocks",
    "link": "a link's rate (pinned host copies over PCIe, peer copies, the all-reduce's bus bandwidth)",
    "host": "set by the host's CPUs, memory and scheduler: launch-bound eager rates, pageable copies, the "
    "halves of a both-directions copy, a CPU run's figures",
    "exact": "bits, verdicts and counts: equal or not, no noise",
}

AGGREGATES = ("one", "min", "max", "sum")
FLEET_KINDS = ("rate", "count", "state", "digest")


@dataclass(frozen=True)
class KnownGood:
    """A kind of known-good figure: a profile file's known_good.FIELD, taken from the catalogue's
    known_good entries of METRIC (the primary one per value of KEY), in UNIT. TITLE says one of them
    in words ("{} GEMM": the KEY value goes in the braces); KEY_TYPE reads a file's key (world sizes
    are numbers)."""

    field: str
    metric: str
    key: str
    unit: str
    title: str
    key_type: Callable[[Any], Any] = str


@dataclass(frozen=True)
class Fleet:
    """The node-level view `dossier fleet collect` compares across the nodes of one SKU (docs/fleet.md).

    NAME (the unit in it) and DESCRIPTION are what fleet.json says; the node's value is AGGREGATE over the
    figure's rows ("one": the only row; "min"/"max": of the rows that measured it; "sum": of every row, none
    when one did not measure), or READ of the same data where a node-level value is more than that (a
    result digest with what it holds for). KIND says how nodes are compared (harness/analysis/fleet.py):
    "rate" (median and MAD, outliers; a distribution plot unless headline=False), "count" (zero expected),
    "state" (what most nodes report) or "digest" (within one software stack)."""

    name: str
    description: str
    aggregate: str = "one"
    kind: str = "rate"
    headline: bool = True
    read: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.aggregate not in AGGREGATES or self.kind not in FLEET_KINDS:
            raise ValueError(f"fleet view {self.name}: aggregate {self.aggregate!r}, kind {self.kind!r}")


@dataclass(frozen=True)
class Accept:
    """Where acceptance and `dossier baseline` hold this figure to a known-good unit: the KNOWN_GOOD kind, the
    known-good key of each row (KEY: the kernel, the dtype, the direction, the world size), the criterion
    (CRITERION, braces take the key) and the share threshold that makes its fail line (SHARE; per key when
    SHARE_PER_KEY). A baseline's figure is the lowest row of a key (the slowest GPU), or READ of the same
    data where only some rows count (peer reads over NVLink)."""

    known_good: KnownGood
    criterion: str | Callable[[Any], str]
    share: str
    key: Callable[[Any], Any]
    share_per_key: bool = False
    read: Callable[[Any], Mapping[Any, Any]] | None = None
    noise: str = ""  # the noise id of a READ view's figure (a row's own otherwise)

    def criterion_of(self, key: Any) -> str:
        return self.criterion(key) if callable(self.criterion) else self.criterion.format(key)


@dataclass(frozen=True)
class Row:
    """One bundle's side of one figure."""

    probe: str  # the registry entry that declares it
    figure: str  # the figure id, PROBE.FIGURE
    name: str  # as people read it
    unit: str
    kind: str
    noise: str  # the id the noise model knows it by
    value: Any
    spread: float | None  # the within-run spread the probe measured (fraction), None where none
    conditions: Any  # what must be equal on both sides for the values to be comparable
    per_device: bool
    step: str  # the step it was read from
    role: str = INFORMS
    noise_class: str = "device"
    why: str = ""  # why an informing figure does not decide
    item: Any = None  # what READ was given (the fleet and acceptance views aggregate over it)


@dataclass(frozen=True)
class Figure:
    """A measured figure, declared once.

    One declaration per figure, or per family of rows: NAME in UNIT (people's words), FIGURE its id
    (PROBE.FIGURE; default PROBE.NAME with spaces as underscores), KIND how it is judged (a kind, or a
    function of the item: a roofline shape is steady, burst or launch-bound by its call time), ROLE and
    NOISE_CLASS (the module docstring; WHY says why an informing figure does not decide), NOISE the id the
    noise model knows it by (default: the figure id; a function of the item where several rows share one:
    every GPU's pinned copy is transfer.h2d_pinned_gbps). READ gives its value from the recomputed headlines
    of STEP (default: the entry's own step; source="document": the raw document), SPREAD the fraction the
    probe measured as its own within-run spread, CONDITIONS what must be equal for the values to be
    comparable at all (the kernel, a timing method, a library build, a tensor's sha256). With EACH, one row
    per (label, item) it lists: the braces of NAME, FIGURE and NOISE take the label, READ, SPREAD, CONDITIONS,
    KIND and ROLE get the item. EVERY_STEP reads every completed step analysed by the entry's analysis (the
    roofline's per-dtype steps of bundles before format 5); a figure two steps give is taken from the first.
    PER_DEVICE False marks a figure that does not depend on the GPU it ran on (the precision step's
    quantizer outputs): comparable across SKUs. FLEET and ACCEPT are its views in the fleet and in
    acceptance."""

    name: str
    unit: str
    read: Callable[[Any], Any]
    role: str | Callable[[Any], str] = INFORMS
    noise_class: str | Callable[[Any], str] = "device"
    why: str | Callable[[Any], str] = ""
    spread: Callable[[Any], Any] | None = None
    step: str | None = None
    each: Callable[[Any], Iterable[tuple[str, Any]]] | None = None
    figure: str = ""
    kind: str | Callable[[Any], str] = "steady"
    noise: str | Callable[[Any], str] = ""
    conditions: Callable[[Any], Any] | None = None
    source: str = "headlines"
    per_device: bool = True
    every_step: bool = False
    fleet: Fleet | tuple[Fleet, ...] | None = None
    accept: Accept | None = None

    @property
    def fleets(self) -> tuple[Fleet, ...]:
        """Its node-level views (a figure of several rows may have more than one: the slowest GPU's
        host-to-device and device-to-host copies)."""
        if self.fleet is None:
            return ()
        return self.fleet if isinstance(self.fleet, tuple) else (self.fleet,)

    def __post_init__(self) -> None:
        if self.source not in ("headlines", "document") or (isinstance(self.kind, str) and self.kind not in KINDS):
            raise ValueError(f"figure {self.name}: source {self.source!r}, kind {self.kind!r}")
        if (isinstance(self.role, str) and self.role not in ROLES) or (
            isinstance(self.noise_class, str) and self.noise_class not in NOISE_CLASSES
        ):
            raise ValueError(f"figure {self.name}: role {self.role!r}, noise class {self.noise_class!r}")
        if self.role == INFORMS and not self.why:
            raise ValueError(f"figure {self.name}: an informing figure says why it does not decide")

    def figure_id(self, probe: str) -> str:
        return self.figure or f"{probe}.{self.name.replace(' ', '_')}"

    def rows(self, probe: str, step: str, data: Any) -> list[Row]:
        """Each row this declaration gives for one step's headlines (or document) DATA."""
        items = self.each(data) if self.each else [("", data)]
        found = []
        for label, item in items:
            figure = self.figure_id(probe).format(label)
            kind = self.kind(item) if callable(self.kind) else self.kind
            role = self.role(item) if callable(self.role) else self.role
            noise_class = self.noise_class(item) if callable(self.noise_class) else self.noise_class
            why = self.why(item) if callable(self.why) else self.why
            if kind not in KINDS or role not in ROLES or noise_class not in NOISE_CLASSES:
                raise ValueError(f"figure {figure}: kind {kind!r}, role {role!r}, noise class {noise_class!r}")
            spread = self.spread(item) if self.spread else None
            noise = self.noise(item) if callable(self.noise) else (self.noise or self.figure_id(probe)).format(label)
            found.append(
                Row(
                    probe,
                    figure,
                    self.name.format(label),
                    self.unit,
                    kind,
                    noise,
                    self.read(item),
                    spread if isinstance(spread, (int, float)) and not isinstance(spread, bool) else None,
                    self.conditions(item) if self.conditions else None,
                    self.per_device,
                    step,
                    role,
                    "exact" if kind in EQUAL_KINDS else noise_class,
                    why if role == INFORMS else "",
                    item,
                )
            )
        return found

    def fleet_value(self, view: Fleet, probe: str, step: str, data: Any) -> Any:
        """The node-level value of one of its fleet views (None: nothing measured)."""
        if view.read is not None:
            return view.read(data)
        return aggregate(view.aggregate, [r.value for r in self.rows(probe, step, data)])

    def accepted(self, probe: str, step: str, data: Any) -> dict[Any, float]:
        """Known-good key -> the lowest row of that key (or the view's own READ): what a baseline holds."""
        assert self.accept is not None
        if self.accept.read is not None:
            return {k: v for k, v in self.accept.read(data).items() if is_number(v)}
        found: dict[Any, float] = {}
        missing = set()
        for row in self.rows(probe, step, data):
            key = self.accept.key(row.item)
            if key is None:
                continue
            if is_number(row.value):
                found[key] = min(found.get(key, row.value), row.value)
            else:
                missing.add(key)  # a GPU that did not measure it: no slowest GPU to hold
        return {k: v for k, v in found.items() if k not in missing}


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def aggregate(how: str, values: list[Any]) -> Any:
    """One value from a figure's rows: the only one, the lowest, the highest, or the sum (none when a row
    did not measure it). Non-numbers pass through "one"."""
    if how == "one":
        return values[0] if len(values) == 1 else None
    numbers = [v for v in values if is_number(v)]
    if how == "sum":
        return sum(numbers) if values and len(numbers) == len(values) else None
    if not numbers:
        return None
    return min(numbers) if how == "min" else max(numbers)


def by_noise(rows: Iterable[Row], kinds: Iterable[str] = RATE_KINDS) -> dict[str, tuple[Any, str]]:
    """noise id -> (the lowest value of its rows, their kind), for the rows of KINDS (the rates): a bundle's
    figures as the catalogue's run-to-run block and the campaign name them (several GPUs' rows share one id:
    the slowest GPU's)."""
    kinds = tuple(kinds)
    found: dict[str, tuple[Any, str]] = {}
    for row in rows:
        if row.kind not in kinds:
            continue
        if row.noise in found and is_number(found[row.noise][0]) and is_number(row.value):
            found[row.noise] = (min(found[row.noise][0], row.value), row.kind)
        else:
            found.setdefault(row.noise, (row.value, row.kind))
    return found
