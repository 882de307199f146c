"""What can go wrong with a checkpoint, each with a hint and the CLI's exit code."""

from __future__ import annotations

from harness.errors import CheckFailed, EnvironmentProblem, UsageError


class ChecksumMismatch(CheckFailed):
    """A file's sha256 differs from the pin: refused, never used (exit 1)."""


class CheckpointMissing(EnvironmentProblem):
    """No source could provide the pinned file here (exit 4); the hint says how to get it."""


class CheckpointFileError(UsageError):
    """Not a safetensors file, truncated, a missing tensor or an unsupported dtype (exit 2)."""


class ManifestInvalid(UsageError):
    """A manifest breaks schemas/checkpoint-manifest.schema.json or does not exist (exit 2)."""
