"""Acceptance profiles: one SKU's thresholds and known-good figures.

A profile starts from the catalogue's rules and the SKU's `acceptance` block and primary
known-good results (harness/data/gpus.json); a user's profile file
(schemas/acceptance-profile.schema.json) replaces whatever it names, as DCGM's diagnostic overlays
replace the packaged per-SKU values they name. A SKU the catalogue lacks needs a file that is the
whole profile. Which kinds of known-good figure there are (KnownGood) is declared beside the
criteria that use them, and brought by the registry's entries: resolving a profile is handed them
(harness.registry.known_good_kinds()). A profile `dossier baseline` made (format_version 2:
thresholds with their statistics, the input bundles, the GPU identity, expected result digests)
is read only from its signed envelope (harness.judge.acceptance.signed_profile), checked with the
key given.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import catalogue, paths
from harness.analysis.figure import KnownGood
from harness.errors import UsageError
from harness.judge.acceptance import signed_profile
from harness.schemas import violations

FORMAT = "rig-dossier/acceptance-profile"
SIGNED_FORMAT_VERSION = 2  # what `dossier baseline` writes: read only from its signed envelope
# Thresholds a file merges key by key into the catalogue's (the others it replaces whole).
MERGED_THRESHOLDS = ("gemm_min_share", "config", "warn_band")
SCHEMA = "acceptance-profile"
CATALOGUE_NAME = "harness/data/gpus.json"
# What must be measured when a file-only profile names no `required` list (the catalogue's default).
DEFAULT_REQUIRED = (
    "sku_matches_profile",
    "bandwidth_plateau",
    "repeat_spread",
    "ecc_uncorrectable_zero",
    "row_remaps_clean",
    "pcie_link_at_max_under_load",
    "clocks_rise_under_load",
    "no_unexpected_process",
)


class NoProfile(UsageError):
    """No acceptance profile exists for the SKU asked for; the hint says how to write one."""


@dataclass(frozen=True)
class Reference:
    """A known-good figure and where it comes from."""

    value: float
    unit: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "source": self.source}


@dataclass(frozen=True)
class Profile:
    """Everything `dossier accept` judges against, with where each part came from."""

    sku_id: str
    name: str
    form_factor: str
    thresholds: Mapping[str, Any]  # the keys of the schema's `thresholds`, absent = none stated
    known_good: Mapping[str, Mapping[Any, Reference]]  # KnownGood.field -> its key (kernel, dtype, ...) -> figure
    required: tuple[str, ...]
    sources: tuple[str, ...] = field(default=())
    why: str | None = None
    # A baseline profile's: how its GPUs are recognised (PCI device ids, memory) for a SKU the catalogue
    # lacks, the result digests it expects, its per-figure statistics and the bundles it was made from.
    identity: Mapping[str, Any] | None = None
    digests: Mapping[str, Any] = field(default_factory=dict)
    baseline: Mapping[str, Any] | None = None

    def threshold(self, key: str) -> Any:
        return self.thresholds.get(key)

    def share(self, key: str, part: str) -> Any:
        """A share that is one number for every PART (a transfer direction) or one per part."""
        value = self.thresholds.get(key)
        return value.get(part) if isinstance(value, Mapping) else value

    def known(self, kind: KnownGood) -> Mapping[Any, Reference]:
        """The known-good figures of KIND, by its key (none: an empty mapping)."""
        return self.known_good.get(kind.field, {})

    def to_json(self) -> dict[str, Any]:
        """The effective profile as data (what the signed predicate's configuration digests)."""
        return {
            "sku_id": self.sku_id,
            "name": self.name,
            "form_factor": self.form_factor,
            "thresholds": dict(sorted(self.thresholds.items())),
            "known_good": {
                name: {str(k): r.to_json() for k, r in sorted(figures.items())}
                for name, figures in sorted(self.known_good.items())
            },
            "required": list(self.required),
            "sources": list(self.sources),
            "why": self.why,
            **({"identity": dict(self.identity)} if self.identity else {}),
            **({"digests": dict(self.digests)} if self.digests else {}),
            **({"baseline": dict(self.baseline)} if self.baseline else {}),
        }

    def canonical_bytes(self) -> bytes:
        return json.dumps(self.to_json(), allow_nan=False, sort_keys=True, separators=(",", ":")).encode()


def _catalogue_reference(entry: Mapping[str, Any]) -> Reference:
    return Reference(
        float(entry["value"]),
        entry["unit"],
        f"{entry['tool']}; {entry['setting']}; {entry['source']} ({entry['date']})",
    )


def _primary(sku: Mapping[str, Any], metric: str, key: str) -> dict[Any, Reference]:
    found: dict[Any, Reference] = {}
    for entry in sku.get("known_good", []):
        if entry["metric"] == metric and entry.get("primary") and entry.get(key) is not None:
            found.setdefault(entry[key], _catalogue_reference(entry))
    return found


def from_catalogue(sku: Mapping[str, Any], kinds: Sequence[KnownGood]) -> Profile:
    block = sku["acceptance"]
    thresholds = {
        **catalogue.acceptance_defaults(),
        **{k: v for k, v in block.items() if k not in ("why", "required") and not k.endswith("_source")},
    }
    return Profile(
        sku_id=sku["id"],
        name=sku["name"],
        form_factor=sku["form_factor"],
        thresholds=thresholds,
        known_good={kind.field: _primary(sku, kind.metric, kind.key) for kind in kinds},
        required=tuple(block.get("required", DEFAULT_REQUIRED)),
        sources=(f"catalogue {CATALOGUE_NAME} ({sku['id']})",),
        why=block.get("why")
        + "".join(
            f"; {k.removesuffix('_source').replace('_', ' ')}: {v}"
            for k, v in sorted(block.items())
            if k.endswith("_source")
        ),
    )


def _file_reference(value: Any, unit: str, where: str) -> Reference:
    if isinstance(value, dict):
        return Reference(float(value["value"]), unit, f"{value['source']} (from {where})")
    return Reference(float(value), unit, f"stated in {where}")


def read_profile_file(
    path: Path, trusted: Any = None, key_path: Path | None = None, signed_only: bool = False
) -> tuple[dict[str, Any], str]:
    """The file's JSON, schema-checked, and its sha256 (and for a signed profile, where it came from
    in the document's `signed_by`). A signed profile is opened with TRUSTED (the public key at
    KEY_PATH); a baseline profile (format_version 2) that is not signed is refused; SIGNED_ONLY (a key
    was named for it: `--profile-key`) refuses anything but a profile signed by it in the current
    signed format."""
    data = paths.read_regular(path, "--profile-file")
    if signed_only and not signed_profile.is_envelope(_json_or_none(data)):
        raise UsageError(
            f"the profile file {path} is not signed, and --profile-key {key_path} says it must be",
            hint="a profile given with --profile-key is used only when that key signed it (`dossier baseline` "
            "writes one); drop --profile-key for a profile file of your own",
        )
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"the profile file {path} is not JSON ({exc})", hint=how_to_write(None)) from exc
    signed_by = None
    if signed_profile.is_envelope(document):
        if trusted is None:
            raise UsageError(
                f"the profile file {path} is signed: give the public key of whoever signed it",
                hint="pass --profile-key SIGNER.pub (default: --key)",
            )
        try:
            opened = signed_profile.open_profile(data, trusted)
        except signed_profile.ENVELOPE_ERRORS as exc:
            raise UsageError(
                f"the profile file {path} does not verify with {key_path}: {exc}",
                hint="a profile edited after it was signed, or signed by another key, is never "
                "used: get an untouched copy and its signer's public key",
            ) from exc
        document, signed_by = opened.document, {"keyid": opened.signer_keyid, "key": str(key_path)}
    found = violations(SCHEMA, document)
    if found:
        raise UsageError(
            f"the profile file {path} does not match schemas/{SCHEMA}.schema.json: "
            + "; ".join(str(v) for v in found[:5]),
            hint=how_to_write(None),
        )
    if signed_only and document.get("format_version") != SIGNED_FORMAT_VERSION:
        raise UsageError(
            f"the profile file {path} is signed in profile format {document.get('format_version')!r}, not the "
            f"current signed format {SIGNED_FORMAT_VERSION}",
            hint="make it again with `dossier baseline`",
        )
    if document.get("format_version") == SIGNED_FORMAT_VERSION and signed_by is None:
        raise UsageError(
            f"the profile file {path} is a baseline profile (format_version 2) that is not signed: "
            "its thresholds could have been edited by anyone",
            hint="use the signed file `dossier baseline --out` wrote",
        )
    if signed_by is not None:
        document = {**document, "signed_by": signed_by}
    return document, hashlib.sha256(data).hexdigest()


def _json_or_none(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def apply_file(base: Profile | None, document: Mapping[str, Any], where: str, kinds: Sequence[KnownGood]) -> Profile:
    """BASE with everything DOCUMENT names replaced (BASE None: the file is the whole profile)."""
    known = document.get("known_good", {})
    known_good = {
        kind.field: {
            **(base.known(kind) if base else {}),
            **{kind.key_type(k): _file_reference(v, kind.unit, where) for k, v in known.get(kind.field, {}).items()},
        }
        for kind in kinds
    }
    thresholds = dict(base.thresholds) if base else {}
    overlay = document.get("format_version") != SIGNED_FORMAT_VERSION  # a baseline states each threshold whole
    for key, value in document.get("thresholds", {}).items():
        merged = (
            overlay and key in MERGED_THRESHOLDS and isinstance(value, dict) and isinstance(thresholds.get(key), dict)
        )
        thresholds[key] = {**thresholds[key], **value} if merged else value
    if base is None:
        missing = [k for k in ("name", "form_factor") if k not in document]
        if missing:
            raise UsageError(
                f"{where} is for {document['sku_id']}, which the catalogue lacks, so it must "
                f"state {' and '.join(missing)}",
                hint=how_to_write(document["sku_id"]),
            )
    return Profile(
        sku_id=document["sku_id"],
        name=document.get("name", base.name if base else ""),
        form_factor=document.get("form_factor", base.form_factor if base else ""),
        thresholds=thresholds,
        known_good=known_good,
        required=tuple(document.get("required", base.required if base else DEFAULT_REQUIRED)),
        sources=(base.sources if base else ()) + (where,),
        why="; ".join(w for w in (base.why if base else None, document.get("why")) if w) or None,
        identity=document.get("identity", base.identity if base else None),
        digests=document.get("digests", base.digests if base else {}),
        baseline=_statistics(document["baseline"]) if "baseline" in document else (base.baseline if base else None),
    )


def _statistics(baseline: Mapping[str, Any]) -> dict[str, Any]:
    """A baseline profile's provenance as the judged profile keeps it: the inputs, rules and each
    figure's statistics, without the per-bundle values (those stay in the signed profile file, which
    the inputs' sha256 and the profile's own name)."""
    figures = {
        name: {k: v for k, v in stats.items() if k != "values"}
        for name, stats in (baseline.get("figures") or {}).items()
    }
    return {**baseline, "figures": figures}


def resolve(
    sku_id: str | None,
    profile_file: Path | None,
    kinds: Sequence[KnownGood],
    trusted: Any = None,
    key_path: Path | None = None,
    signed_only: bool = False,
) -> Profile:
    """The profile for SKU_ID: the catalogue's, overridden by PROFILE_FILE when given (SKU_ID None:
    the file's own SKU); KINDS the known-good figures there are (harness.registry.known_good_kinds()).
    A signed profile file is opened with TRUSTED (the key at KEY_PATH); SIGNED_ONLY: it must be one."""
    if profile_file is None:
        sku = catalogue.by_id(sku_id) if sku_id else None
        if sku is None:
            raise NoProfile(
                f"there is no acceptance profile for SKU {sku_id!r}: the catalogue "
                f"({CATALOGUE_NAME}) has {', '.join(s['id'] for s in catalogue.skus())}",
                hint=how_to_write(sku_id),
            )
        return from_catalogue(sku, kinds)
    document, digest = read_profile_file(profile_file, trusted, key_path, signed_only)
    if sku_id is not None and document["sku_id"] != sku_id:
        raise UsageError(
            f"--profile {sku_id} but {profile_file} is for {document['sku_id']!r}",
            hint="pass the same SKU to --profile as the file's sku_id",
        )
    sku = catalogue.by_id(document["sku_id"])
    base = from_catalogue(sku, kinds) if sku else None
    signed = document.get("signed_by")
    where = (
        f"{'signed ' if signed else ''}profile file {profile_file.name} (sha256 {digest[:16]}..."
        + (f", signed by keyid {signed['keyid'][:16]}..." if signed else "")
        + ")"
    )
    return apply_file(base, document, where, kinds)


def example(sku_id: str) -> dict[str, Any]:
    """A complete profile file for SKU_ID (the figures shown are the lent H200 SXM's, as a model)."""
    return {
        "format": FORMAT,
        "format_version": 1,
        "sku_id": sku_id,
        "name": "Vendor Model 141GB",
        "form_factor": "SXM",
        "why": "purchase order 1234, clause 5: within 15% of the vendor's reference run",
        "thresholds": {
            "bandwidth_plateau_min_share": 0.85,
            "repeat_spread_max": 0.05,
            "gemm_min_share": {"bf16": 0.85},
            "pcie_min_generation": 5,
            "pcie_min_width": 16,
        },
        "known_good": {
            "hbm_bandwidth_gbps": {
                "copy": {
                    "value": 4234,
                    "source": "torch c.copy_(a), 2 GiB fp32, median of 5 x 20 iterations, on a known-good unit",
                }
            },
            "gemm_tflops": {
                "bf16": {"value": 765.1, "source": "mamf-finder.py best median, m,n,k in {4096, 8192, 16384}"}
            },
        },
        "required": list(DEFAULT_REQUIRED),
    }


def how_to_write(sku_id: str | None) -> str:
    """The hint for a missing or malformed profile: the format, an example file and the command."""
    sku = sku_id or "my-gpu-sku"
    text = json.dumps(example(sku), indent=2, sort_keys=True)
    return (
        f"write a profile file (JSON, schema schemas/{SCHEMA}.schema.json; docs/accept.md explains each "
        f"field), for example {sku}.json:\n{text}\n"
        f"then run: dossier accept BUNDLE --profile {sku} --profile-file {sku}.json --key SIGNER.pub\n"
        f"(for a SKU in the catalogue the file only needs the fields it changes)"
    )
