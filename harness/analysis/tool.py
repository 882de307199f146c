"""The tool that made a bundle, as a reader identifies it (commands.json's `tool`, provenance.tool_info)."""

from __future__ import annotations

from typing import Any


def tool_text(tool: Any, name: bool = True) -> str:
    """Name (unless NAME is False: where the name is the label), version, the hash of its source files
    as shipped, and the git commit only where the harness files were tracked at it; the whole hashes
    are in commands.json."""
    tool = tool if isinstance(tool, dict) else {}
    text = f"{tool.get('version', '(version not recorded)')}"
    if name:
        text = f"{tool.get('name', 'rig-dossier')} {text}"
    source = tool.get("source_sha256")
    if isinstance(source, str):
        text += f", source sha256 {source[:16]}…"
    commit = tool.get("git_commit")
    if isinstance(commit, str):
        dirty = ", with uncommitted changes" if tool.get("git_dirty") is True else ""
        text += f" (git commit {commit[:12]}{dirty})"
    return text
