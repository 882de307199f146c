"""From a `--checkpoint`/`--tensor` request to a verified file and the probe's arguments."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkpoints import manifest as manifests
from harness.checkpoints.cache import BlobCache, sha256_file
from harness.checkpoints.fetch import Fetched, fetch
from harness.checkpoints.sources import SourceUnavailable, Wanted, hub_offline, local_files
from harness.checkpoints.tensors import TensorRecord, index_tensors
from harness.errors import UsageError
from harness.probes._safetensors import parse_role_specs

HUB_REF = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)@(?P<revision>[^:/]+)(?::(?P<file>[^/\\]+))?$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
DEFAULT_FILE = "model.safetensors"


@dataclass(frozen=True)
class Plan:
    """A verified checkpoint file, where it came from, and the tensors to measure."""

    path: Path
    provenance: dict[str, Any]
    tensors: tuple[TensorRecord, ...]

    def probe_args(self, device: str = "auto", path_for_probe: Callable[[Path], str] | None = None) -> list[str]:
        """The probe's argv; `path_for_probe` maps the host path to the probe's (a container mount)."""
        args = ["--file", path_for_probe(self.path) if path_for_probe else str(self.path)]
        for record in self.tensors:
            args += ["--tensor", f"{record.role}={record.name}"]
        index = {r.name: r.as_index_entry() for r in self.tensors}
        probe_provenance = {k: v for k, v in self.provenance.items() if k != "path"}
        args += ["--tensor-index", json.dumps(index, sort_keys=True, separators=(",", ":")),
                 "--provenance", json.dumps(probe_provenance, sort_keys=True, separators=(",", ":")),
                 "--device", device]
        return args


def plan(checkpoint: str | None, tensor_specs: list[str], file_sha256: str | None = None,
         offline: bool | None = None, cache_dir: str | Path | None = None) -> Plan:
    """Find, verify and cache the checkpoint file, then index the tensors to measure.

    checkpoint: None (the default manifest), REPO@REVISION[:FILE] (a 40-hex commit sha; a
    packaged manifest or --file-sha256 gives the pin), or a local file or folder.
    """
    try:
        roles = parse_role_specs(tensor_specs)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if file_sha256 is not None and not SHA256.match(file_sha256):
        raise UsageError(f"--file-sha256 {file_sha256!r} is not 64 lowercase hex digits")
    cache, offline = BlobCache(cache_dir), hub_offline(offline)
    match = HUB_REF.match(checkpoint) if checkpoint else None
    if checkpoint is None:
        manifest = manifests.default()
        fetched, pinned_by = _fetch_manifest(manifest, file_sha256, cache, offline), _pinned(manifest)
    elif match and not Path(checkpoint).exists():
        manifest, fetched, pinned_by = _fetch_hub_ref(match, file_sha256, cache, offline)
    else:
        manifest, fetched, pinned_by = _fetch_local(Path(checkpoint), file_sha256, cache, offline)
    if not roles:
        if manifest is None:
            raise UsageError(f"no packaged manifest names the tensors of {checkpoint}",
                             hint="name them: --tensor embedding=NAME --tensor attention_projection=NAME "
                                  "--tensor mlp_projection=NAME")
        roles = list(manifest.tensors.items())
    provenance = {
        "label": manifest.label if manifest else str(checkpoint),
        "repo": manifest.repo_id if manifest else (match["repo"] if match else None),
        "revision": manifest.revision if manifest else (match["revision"] if match else None),
        "file": manifest.file if manifest else fetched_name(checkpoint, match),
        "file_sha256": fetched.sha256,
        "source": fetched.source,
        "pinned_by": pinned_by,
        "path": str(fetched.path),
    }
    return Plan(fetched.path, provenance, tuple(index_tensors(fetched.path, roles)))


def fetched_name(checkpoint: str | None, match: re.Match | None) -> str:
    if match:
        return match["file"] or DEFAULT_FILE
    path = Path(checkpoint or DEFAULT_FILE)
    return path.name if path.is_file() else DEFAULT_FILE


def _pinned(manifest: manifests.Manifest) -> str:
    return f"manifest {manifest.name} (harness/data/checkpoints/{manifest.name}.json)"


def _wanted(manifest: manifests.Manifest) -> Wanted:
    return Wanted(manifest.file, manifest.sha256, manifest.repo_id, manifest.revision, manifest.size_bytes,
                  manifest.packages)


def _fetch_manifest(manifest: manifests.Manifest, file_sha256: str | None, cache: BlobCache,
                    offline: bool) -> Fetched:
    if file_sha256 and file_sha256 != manifest.sha256:
        raise UsageError(f"--file-sha256 {file_sha256} contradicts manifest {manifest.name}'s pin {manifest.sha256}")
    return fetch(_wanted(manifest), cache, offline=offline)


def _fetch_hub_ref(match: re.Match, file_sha256: str | None, cache: BlobCache, offline: bool):
    repo, revision, file = match["repo"], match["revision"], match["file"] or DEFAULT_FILE
    if not COMMIT.match(revision):
        raise UsageError(f"revision {revision!r} is not a commit sha",
                         hint="pin the 40-hex commit (the Hub shows it on the repository's 'Files' history); "
                              "a branch or tag can move")
    manifest = manifests.find(repo, revision, file)
    if manifest is not None:
        return manifest, _fetch_manifest(manifest, file_sha256, cache, offline), _pinned(manifest)
    if file_sha256 is None:
        raise UsageError(f"no packaged manifest pins {repo}@{revision} {file}, so its sha256 is unknown",
                         hint="pass --file-sha256 HEX (the Hub's file page shows it as the LFS 'SHA256')")
    wanted = Wanted(file, file_sha256, repo, revision)
    return None, fetch(wanted, cache, offline=offline), "--file-sha256"


def _fetch_local(path: Path, file_sha256: str | None, cache: BlobCache, offline: bool):
    if not path.exists():
        raise UsageError(f"--checkpoint {path}: no such file or folder",
                         hint="give a local .safetensors file or folder, or REPO@REVISION for the Hub")
    if file_sha256 is not None:
        manifest = manifests.by_sha256(file_sha256)
        wanted = _wanted(manifest) if manifest else Wanted(_local_file(path).name, file_sha256)
        return manifest, fetch(wanted, cache, local=path, offline=offline), "--file-sha256"
    file = _local_file(path)
    digest = sha256_file(file)  # nothing to check against: the file pins itself
    manifest = manifests.by_sha256(digest)
    if manifest is not None:
        return manifest, fetch(_wanted(manifest), cache, local=file, offline=offline), \
            f"{_pinned(manifest)}, matched by the local file's sha256"
    fetched = fetch(Wanted(file.name, digest), cache, local=file, offline=offline)
    return None, fetched, "none: sha256 computed from the local file (no pin given)"


def _local_file(path: Path) -> Path:
    """The one safetensors file `path` names: itself, FOLDER/model.safetensors, or the only one below."""
    try:
        return local_files(path, DEFAULT_FILE)[0]
    except SourceUnavailable:
        found = sorted(path.rglob("*.safetensors"))
        if len(found) == 1:
            return found[0]
        raise UsageError(f"{path} holds {len(found)} .safetensors files and no {DEFAULT_FILE}",
                         hint="name the file itself with --checkpoint") from None


def probe_args_for(checkpoint: str | None, tensor_specs: list[str], file_sha256: str | None = None,
                   offline: bool | None = None, cache_dir: str | Path | None = None, device: str = "auto",
                   path_for_probe: Callable[[Path], str] | None = None) -> tuple[list[str], dict[str, Any]]:
    """For the dossier orchestrator: (the precision probe's argv, provenance).

    Provenance: label, repo, revision, file, file_sha256, source (which source gave the file),
    pinned_by (what the sha256 was checked against) and path (the verified file on the host).
    With checkpoint None the default manifest (all-MiniLM-L6-v2) and its three tensors are used.
    """
    result = plan(checkpoint, tensor_specs, file_sha256, offline, cache_dir)
    return result.probe_args(device, path_for_probe), dict(result.provenance)
