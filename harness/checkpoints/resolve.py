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
from harness.checkpoints.errors import CheckpointFileError
from harness.checkpoints.fetch import Fetched, describe, fetch
from harness.checkpoints.sources import SourceUnavailable, Wanted, hub_offline, local_files
from harness.checkpoints.tensors import TensorRecord, index_tensors
from harness.errors import UsageError
from harness.probes.tensor_file import SafetensorsError, parse_role_specs, read_header

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
        args += [
            "--tensor-index",
            json.dumps(index, sort_keys=True, separators=(",", ":")),
            "--provenance",
            json.dumps(probe_provenance, sort_keys=True, separators=(",", ":")),
            "--device",
            device,
        ]
        return args


@dataclass(frozen=True)
class Selection:
    """What the request names, before anything is fetched or cached."""

    wanted: Wanted
    manifest: manifests.Manifest | None
    pinned_by: str
    local: Path | None = None  # the user's own file, already hashed and matched


def plan(
    checkpoint: str | None,
    tensor_specs: list[str],
    file_sha256: str | None = None,
    offline: bool | None = None,
    cache_dir: str | Path | None = None,
) -> Plan:
    """Find, verify and cache the checkpoint file, then index the tensors to measure.

    checkpoint: None (the default manifest), REPO@REVISION[:FILE] (a 40-hex commit sha; a
    packaged manifest or --file-sha256 gives the pin), or a local file or folder. Every check
    that can fail on the user's input (format, pin, tensor names) runs before the file enters
    the cache, and an error names the user's file, never a cache path.
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
        selection = _select_manifest(manifests.default(), file_sha256)
    elif match and not Path(checkpoint).exists():
        selection = _select_hub_ref(match, file_sha256)
    else:
        selection = _select_local(Path(checkpoint), file_sha256)
    roles = roles or _manifest_roles(selection.manifest, checkpoint)
    if selection.local is not None:
        records = index_tensors(selection.local, roles)  # the user's file, before it is cached
        fetched = fetch(selection.wanted, cache, local=selection.local, offline=offline)
    else:
        fetched, records = _fetch_and_index(selection.wanted, roles, cache, offline)
    manifest = selection.manifest
    provenance = {
        "label": manifest.label if manifest else str(checkpoint),
        "repo": manifest.repo_id if manifest else (match["repo"] if match else None),
        "revision": manifest.revision if manifest else (match["revision"] if match else None),
        "file": manifest.file if manifest else fetched_name(checkpoint, match, selection.local),
        "file_sha256": fetched.sha256,
        "source": fetched.source,
        "pinned_by": selection.pinned_by,
        "path": str(fetched.path),
    }
    return Plan(fetched.path, provenance, tuple(records))


def fetched_name(checkpoint: str | None, match: re.Match | None, local: Path | None = None) -> str:
    if match:
        return match["file"] or DEFAULT_FILE
    return local.name if local is not None else DEFAULT_FILE


def _manifest_roles(manifest: manifests.Manifest | None, checkpoint: str | None) -> list[tuple[str, str]]:
    if manifest is None:
        raise UsageError(
            f"no packaged manifest names the tensors of {checkpoint}",
            hint="name them: --tensor embedding=NAME --tensor attention_projection=NAME --tensor mlp_projection=NAME",
        )
    return list(manifest.tensors.items())


def _pinned(manifest: manifests.Manifest) -> str:
    return f"manifest {manifest.name} (harness/data/checkpoints/{manifest.name}.json)"


def _wanted(manifest: manifests.Manifest) -> Wanted:
    return Wanted(
        manifest.file, manifest.sha256, manifest.repo_id, manifest.revision, manifest.size_bytes, manifest.packages
    )


def _select_manifest(manifest: manifests.Manifest, file_sha256: str | None) -> Selection:
    if file_sha256 and file_sha256 != manifest.sha256:
        raise UsageError(f"--file-sha256 {file_sha256} contradicts manifest {manifest.name}'s pin {manifest.sha256}")
    return Selection(_wanted(manifest), manifest, _pinned(manifest))


def _select_hub_ref(match: re.Match, file_sha256: str | None) -> Selection:
    repo, revision, file = match["repo"], match["revision"], match["file"] or DEFAULT_FILE
    if not COMMIT.match(revision):
        raise UsageError(
            f"revision {revision!r} is not a commit sha",
            hint="pin the 40-hex commit (the Hub shows it on the repository's 'Files' history); "
            "a branch or tag can move",
        )
    manifest = manifests.find(repo, revision, file)
    if manifest is not None:
        return _select_manifest(manifest, file_sha256)
    if file_sha256 is None:
        raise UsageError(
            f"no packaged manifest pins {repo}@{revision} {file}, so its sha256 is unknown",
            hint="pass --file-sha256 HEX (the Hub's file page shows it as the LFS 'SHA256')",
        )
    return Selection(Wanted(file, file_sha256, repo, revision), None, "--file-sha256")


def _fetch_and_index(
    wanted: Wanted, roles: list[tuple[str, str]], cache: BlobCache, offline: bool
) -> tuple[Fetched, list[TensorRecord]]:
    """A pinned file from the cache or a download; one that is not safetensors is not kept."""
    blob = cache.path_for(wanted.sha256)
    cached_before = blob.is_file()
    fetched = fetch(wanted, cache, offline=offline)
    try:
        read_header(fetched.path)
    except SafetensorsError as exc:
        if not cached_before:
            blob.unlink(missing_ok=True)
        raise CheckpointFileError(
            f"{describe(wanted)} is not a safetensors file: {exc}",
            hint="the pinned file is not in the safetensors format; it was not cached",
        ) from exc
    return fetched, index_tensors(fetched.path, roles)


def _select_local(path: Path, file_sha256: str | None) -> Selection:
    """The user's file: checked to be safetensors, hashed and matched, all before any caching."""
    if not path.exists():
        raise UsageError(
            f"--checkpoint {path}: no such file or folder",
            hint="give a local .safetensors file or folder, or REPO@REVISION for the Hub",
        )
    if file_sha256 is None:
        file = _readable_safetensors(_local_file(path))
        digest = _hash_local(file)
        manifest = manifests.by_sha256(digest)
        pinned_by = (
            f"{_pinned(manifest)}, matched by the local file's sha256"
            if manifest
            else "none: sha256 computed from the local file (no pin given)"
        )
        return Selection(_wanted(manifest) if manifest else Wanted(file.name, digest), manifest, pinned_by, file)
    manifest = manifests.by_sha256(file_sha256)
    name = manifest.file if manifest else _local_file(path).name
    file = _matching_local_file(path, name, file_sha256)
    return Selection(
        _wanted(manifest) if manifest else Wanted(file.name, file_sha256),
        manifest,
        "--file-sha256",
        _readable_safetensors(file),
    )


def _hash_local(file: Path) -> str:
    try:
        return sha256_file(file)
    except OSError as exc:
        raise UsageError(f"--checkpoint {file}: cannot be read ({exc.strerror or exc})") from None


def _readable_safetensors(file: Path) -> Path:
    """FILE, if its header reads as safetensors (an error names the user's file)."""
    try:
        read_header(file)
    except SafetensorsError as exc:
        raise CheckpointFileError(f"--checkpoint {exc}", hint="give a .safetensors file") from None
    except OSError as exc:
        raise UsageError(f"--checkpoint {file}: cannot be read ({exc.strerror or exc})") from None
    return file


def _matching_local_file(path: Path, name: str, file_sha256: str) -> Path:
    """The local file called NAME (PATH itself, or below the folder PATH) whose sha256 is the pin."""
    try:
        candidates = local_files(path, name)
    except SourceUnavailable as exc:
        raise UsageError(f"--checkpoint {path}: {exc}") from None
    refusals = []
    for candidate in candidates:
        digest = _hash_local(candidate)
        if digest == file_sha256:
            return candidate
        refusals.append(f"refused local file {candidate}: sha256 {digest}, expected {file_sha256}")
    raise UsageError(
        "; ".join(refusals),
        hint="the file is not the one --file-sha256 pins and was not used: check the path and the sha256",
    )


def _local_file(path: Path) -> Path:
    """The one safetensors file `path` names: itself, FOLDER/model.safetensors, or the only one below."""
    try:
        return local_files(path, DEFAULT_FILE)[0]
    except SourceUnavailable:
        found = sorted(path.rglob("*.safetensors"))
        if len(found) == 1:
            return found[0]
        raise UsageError(
            f"{path} holds {len(found)} .safetensors files and no {DEFAULT_FILE}",
            hint="name the file itself with --checkpoint",
        ) from None


def probe_args_for(
    checkpoint: str | None,
    tensor_specs: list[str],
    file_sha256: str | None = None,
    offline: bool | None = None,
    cache_dir: str | Path | None = None,
    device: str = "auto",
    path_for_probe: Callable[[Path], str] | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """For the dossier orchestrator: (the precision probe's argv, provenance).

    Provenance: label, repo, revision, file, file_sha256, source (which source gave the file),
    pinned_by (what the sha256 was checked against) and path (the verified file on the host).
    With checkpoint None the default manifest (all-MiniLM-L6-v2) and its three tensors are used.
    """
    result = plan(checkpoint, tensor_specs, file_sha256, offline, cache_dir)
    return result.probe_args(device, path_for_probe), dict(result.provenance)
