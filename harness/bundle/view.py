"""A bundle's files seen as data: commands.json, environment.json and each step's document.

Built the same way from freshly assembled files and from a bundle read back, so the report,
`verify`, `diff` and `report` all see one thing.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.bundle import layout

MODULE_NAME = re.compile(r"[a-z][a-z0-9_]*")


class BundleFormatError(Exception):
    """A member the bundle format requires is missing or is not what it should be."""


def load_json(files: Mapping[str, bytes], name: str) -> Any:
    if name not in files:
        raise BundleFormatError(f"{name} is missing")
    try:
        return json.loads(files[name])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleFormatError(f"{name} is not JSON ({exc})") from exc


@dataclass(frozen=True)
class Figures:
    """A step's headline figures recomputed from its raw document, or why they could not be."""

    values: dict[str, Any] | None
    error: str | None


@dataclass(frozen=True)
class BundleView:
    files: Mapping[str, bytes]
    commands: dict[str, Any]
    environment: dict[str, Any]
    documents: dict[str, Any]  # step -> parsed output document (completed steps)

    @classmethod
    def from_files(cls, files: Mapping[str, bytes]) -> BundleView:
        commands = load_json(files, layout.COMMANDS)
        environment = load_json(files, layout.ENVIRONMENT)
        if not isinstance(commands, dict) or not isinstance(commands.get("steps"), list):
            raise BundleFormatError(f"{layout.COMMANDS} has no steps list")
        documents = {}
        for entry in commands["steps"]:
            if isinstance(entry, dict) and entry.get("output"):
                documents[entry["step"]] = load_json(files, entry["output"])
        return cls(files, commands, environment, documents)

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.commands["steps"]

    def step(self, step_id: str) -> dict[str, Any] | None:
        return next((s for s in self.steps if s.get("step") == step_id), None)

    def status(self, step_id: str) -> str:
        entry = self.step(step_id)
        return entry["status"] if entry else "not_run"

    def figures(self, step_id: str) -> Figures:
        """harness.analysis.NAME.headlines(document) for a completed step with an analysis module."""
        entry = self.step(step_id)
        if entry is None or step_id not in self.documents:
            return Figures(None, "the step did not complete")
        name = entry.get("analysis")
        if not name:
            return Figures(None, "the step has no analysis module")
        return compute_figures(name, self.documents[step_id])

    def plots(self, step_id: str) -> list[str]:
        entry = self.step(step_id)
        return list(entry.get("plots") or []) if entry else []


def analysis(name: str):
    if not MODULE_NAME.fullmatch(name):
        raise BundleFormatError(f"analysis module name {name!r} is not a plain module name")
    return importlib.import_module(f"harness.analysis.{name}")


def compute_figures(name: str, document: Any) -> Figures:
    try:
        return Figures(analysis(name).headlines(document), None)
    except ModuleNotFoundError:
        return Figures(None, f"harness/analysis/{name}.py is not in this build of the harness")
    except Exception as exc:  # noqa: BLE001 - shown in the report and failed by verify
        return Figures(None, f"harness.analysis.{name}.headlines raised {type(exc).__name__}: {exc}")
