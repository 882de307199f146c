"""Packaged checkpoint manifests: data in harness/data/checkpoints/, checked by a schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkpoints.errors import ManifestInvalid
from harness.schemas import violations

MANIFEST_DIR = Path(__file__).resolve().parents[1] / "data" / "checkpoints"
SCHEMA = "checkpoint-manifest"
DEFAULT = "all-minilm-l6-v2"
LAB_ROLES = ("embedding", "attention_projection", "mlp_projection")


@dataclass(frozen=True)
class Manifest:
    """One pinned checkpoint file and its tensors by role."""

    name: str
    description: str
    repo_id: str
    revision: str
    revision_evidence: str
    file: str
    sha256: str
    size_bytes: int
    tensors: dict[str, str]
    packages: tuple[str, ...] = ()
    license: str | None = None

    @property
    def label(self) -> str:
        return f"{self.repo_id}@{self.revision}"

    @classmethod
    def from_dict(cls, data: dict[str, Any], origin: str) -> Manifest:
        found = violations(SCHEMA, data)
        if found:
            raise ManifestInvalid(
                f"checkpoint manifest {origin} is invalid: {found[0]}"
                + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""),
                hint=f"see schemas/{SCHEMA}.schema.json",
            )
        fields = dict(data)
        fields["packages"] = tuple(fields.get("packages", ()))
        return cls(**fields)


def load(name: str) -> Manifest:
    """The packaged manifest called `name` (its file name without .json)."""
    path = MANIFEST_DIR / f"{name}.json"
    if not path.is_file():
        raise ManifestInvalid(
            f"no checkpoint manifest {name!r}", hint="packaged manifests: " + ", ".join(m.name for m in all_manifests())
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ManifestInvalid(f"checkpoint manifest {path} is not JSON: {exc}") from exc
    manifest = Manifest.from_dict(data, str(path))
    if manifest.name != name:
        raise ManifestInvalid(
            f"checkpoint manifest {path} says its name is {manifest.name!r}",
            hint="a manifest's name must equal its file name without .json",
        )
    return manifest


def all_manifests() -> list[Manifest]:
    return [load(p.stem) for p in sorted(MANIFEST_DIR.glob("*.json"))]


def default() -> Manifest:
    return load(DEFAULT)


def find(repo_id: str, revision: str, file: str) -> Manifest | None:
    """The manifest pinning exactly this repository, revision and file, if one is packaged."""
    return next((m for m in all_manifests() if (m.repo_id, m.revision, m.file) == (repo_id, revision, file)), None)


def by_sha256(sha256: str) -> Manifest | None:
    """The manifest whose file has this sha256, if one is packaged."""
    return next((m for m in all_manifests() if m.sha256 == sha256), None)
