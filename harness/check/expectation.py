"""What a node should have, as `dossier check` is told: the GPU count and SKU (from its options or an
acceptance profile), a minimum driver, how far back the kernel log counts, whether a process on a
GPU is allowed. Refused (exit 2, one line) before anything is read when it cannot be right."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness import catalogue, registry
from harness.errors import UsageError
from harness.judge.acceptance.profile import resolve


@dataclass(frozen=True)
class Expectation:
    gpus: int | None = None  # None: every NVIDIA GPU the PCI bus lists
    sku: str | None = None  # a catalogue SKU id
    sku_from: str | None = None  # where the SKU came from (--sku, a profile)
    min_driver: str | None = None
    pcie_min_width: int | None = None  # a profile's threshold (lanes)
    pcie_min_generation: int | None = None  # a profile's threshold (generation)
    since_s: float | None = None  # kernel log: only lines this recent count (None: since boot)
    no_gpu_processes: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Expectation:
        return cls(**data)


def version_tuple(text: str) -> tuple[int, ...]:
    """'580.159.04' -> (580, 159, 4); refused unless it is dot-separated numbers."""
    parts = text.strip().split(".")
    if not all(p.isdigit() for p in parts):
        raise ValueError(text)
    return tuple(int(p) for p in parts)


def _known_sku(sku: str, flag: str) -> str:
    if catalogue.by_id(sku) is None:
        known = ", ".join(s["id"] for s in catalogue.skus())
        raise UsageError(f"{flag} {sku!r} is not a catalogue SKU", hint=f"one of: {known}")
    return sku


def _from_profile(profile: str | None, profile_file: Path | None) -> dict[str, Any]:
    """The SKU and PCIe thresholds an acceptance profile gives (what a quick check can judge of it)."""
    if profile is None:
        if profile_file is not None:
            raise UsageError("--profile-file needs --profile SKU (the SKU the file is for), as in `dossier accept`")
        return {}
    chosen = resolve(profile, profile_file, registry.known_good_kinds())
    if catalogue.by_id(chosen.sku_id) is None:
        raise UsageError(
            f"the profile is for {chosen.sku_id!r}, which the catalogue cannot identify a GPU as",
            hint="give the GPU count with --expect-gpus and leave the SKU out, or add the SKU to the catalogue",
        )
    where = f"--profile {profile}" + (f" --profile-file {profile_file}" if profile_file else "")
    return {
        "sku": chosen.sku_id,
        "sku_from": where,
        "pcie_min_width": chosen.threshold("pcie_min_width"),
        "pcie_min_generation": chosen.threshold("pcie_min_generation"),
    }


def build(
    expect_gpus: int | None,
    sku: str | None,
    profile: str | None,
    profile_file: Path | None,
    min_driver: str | None,
    since_s: float | None,
    no_gpu_processes: bool,
) -> Expectation:
    """The expectation from `dossier check`'s options; UsageError for what cannot be right."""
    if expect_gpus is None and sku is None and profile is None and profile_file is None:
        raise UsageError(
            "say what this node should have: --expect-gpus N (0 for a node without GPUs), --sku NAME or --profile SKU",
            hint="a check with nothing expected could only pass what it cannot see",
        )
    if expect_gpus is not None and expect_gpus < 0:
        raise UsageError(f"--expect-gpus must be 0 or more, got {expect_gpus}")
    if since_s is not None and since_s <= 0:
        raise UsageError(f"--since must be a positive number of seconds, got {since_s:g}")
    if min_driver is not None:
        try:
            version_tuple(min_driver)
        except ValueError:
            raise UsageError(f"--min-driver {min_driver!r} is not a driver version like 550.54.15") from None
    found = _from_profile(profile, profile_file)
    if sku is not None:
        _known_sku(sku, "--sku")
        if found and found["sku"] != sku:
            raise UsageError(f"--sku {sku} and the {found['sku_from']} ({found['sku']}) disagree")
        found = {**found, "sku": sku, "sku_from": found.get("sku_from", "--sku")}
    if found and expect_gpus == 0:
        raise UsageError(f"--expect-gpus 0 with a GPU SKU ({found['sku']}): a SKU is expected only where GPUs are")
    return Expectation(
        gpus=expect_gpus, min_driver=min_driver, since_s=since_s, no_gpu_processes=no_gpu_processes, **found
    )
