"""A bundle's files seen as data: commands.json, environment.json and each step's document.

Built the same way from freshly assembled files and from a bundle read back, so the report,
`verify`, `diff` and `report` all see one thing. The view is given the lookup that turns an
analysis name a bundle records into this build's module (the registry's `analysis_module`): the
bundle layer stores and reads, and never decides itself which code a recorded name means.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from harness.analysis.verdict import StepStatus
from harness.bundle import layout

try:  # the fast parser (a dependency); without it every document takes the standard one (same answers)
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]  # the name stays bound: None says the fast parser is absent

# An analysis name -> its module (headlines, discrepancies); raises LookupError for a name it does not know.
Analyses = Callable[[str], ModuleType]

MODULE_NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_JSON_DEPTH = 64  # the writer's documents nest at most 8 deep
_CONTAINERS = frozenset({dict, list})
_FLOAT = frozenset({float})


class BundleFormatError(Exception):
    """A member the bundle format requires is missing or is not what it should be."""

    def __init__(self, message: str, member: str | None = None, missing: bool = False) -> None:
        super().__init__(message)
        self.member = member  # the member at fault, where there is one
        self.missing = missing


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (the writer never emits it)")


OUT_OF_RANGE = "a number is out of range (the writer never emits one)"
WIDE = "a float as large as a 64-bit integer, or orjson refused: ask the standard parser"


def _float_problem(values: list[Any], below: float) -> str | None:
    """OUT_OF_RANGE if a float among VALUES is not finite, WIDE if one is BELOW or more in magnitude."""
    kinds = set(map(type, values))
    if float not in kinds:
        return None
    floats = values if kinds == _FLOAT else [v for v in values if type(v) is float]  # the bulk: at C speed
    if not all(map(math.isfinite, floats)):
        return OUT_OF_RANGE
    return WIDE if below != math.inf and max(map(abs, floats)) >= below else None


def _checked_structure(value: Any, limit: int, below: float = math.inf) -> str | None:
    """Why VALUE is not what the writer emits (nested deeper than LIMIT, a number out of a float's
    range), or None; WIDE for a float of magnitude BELOW or more. Iterative: no recursion; each
    container is scanned once, at C speed where it holds only plain values."""
    if type(value) is float:
        return OUT_OF_RANGE if not math.isfinite(value) else WIDE if abs(value) >= below else None
    if not isinstance(value, (dict, list)):
        return None
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return f"nested more than {MAX_JSON_DEPTH} deep"
        children = list(item.values()) if isinstance(item, dict) else item
        problem = _float_problem(children, below)
        if problem:
            return problem
        if not _CONTAINERS.isdisjoint(map(type, children)):
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


def _standard(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)


REFUSED = object()


def _fast(data: bytes) -> Any:
    """DATA parsed by orjson (about three times faster on a bundle's documents, which `dossier fleet
    collect` reads a thousand of), or REFUSED where it refuses: orjson is strict RFC 8259 (no NaN,
    Infinity, BOM, lone surrogate or invalid UTF-8), and then the standard parser says why."""
    if orjson is None:
        return REFUSED
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return REFUSED


def parse_json(data: bytes) -> Any:
    """DATA as strict JSON: UTF-8, no NaN or Infinity, finite numbers, nested at most MAX_JSON_DEPTH.

    Raises ValueError naming why; the bundle writer emits nothing else (json.dumps(allow_nan=False)).
    A literal beyond a float's range (1e999) parses to infinity and is refused after the parse. The
    value is the standard parser's: orjson's is taken only where it is the same (it reads an integer
    literal past 64 bits as a float, so a float that large sends the document to the standard parser).
    """
    try:
        value = _fast(data)
        why = _checked_structure(value, MAX_JSON_DEPTH, float(2**63)) if value is not REFUSED else WIDE
        if why == WIDE:
            value = _standard(data)
            why = _checked_structure(value, MAX_JSON_DEPTH)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} deep") from None
    if why:
        raise ValueError(why)
    return value


def load_json(files: Mapping[str, bytes], name: str) -> Any:
    if name not in files:
        raise BundleFormatError(f"{name} is missing", name, missing=True)
    try:
        return parse_json(files[name])
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise BundleFormatError(f"{name} is not JSON ({str(exc)[:200]})", name) from exc


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
    analyses: Analyses  # what a recorded analysis name means in this build (harness.registry.analysis_module)
    # step -> its recomputed figures: the report, acceptance and the fleet each ask several times
    _figures: dict[str, Figures] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_files(cls, files: Mapping[str, bytes], analyses: Analyses) -> BundleView:
        commands = load_json(files, layout.COMMANDS)
        environment = load_json(files, layout.ENVIRONMENT)
        if not isinstance(commands, dict) or not isinstance(commands.get("steps"), list):
            raise BundleFormatError(f"{layout.COMMANDS} has no steps list", layout.COMMANDS)
        if not isinstance(environment, dict):
            raise BundleFormatError(f"{layout.ENVIRONMENT} is not a JSON object", layout.ENVIRONMENT)
        documents: dict[str, Any] = {}
        seen: set[str] = set()
        for entry in commands["steps"]:
            step = _step_id(entry, seen)
            output = entry.get("output")
            if output is None:
                continue
            if not isinstance(output, str) or not output:
                raise BundleFormatError(
                    f"{layout.COMMANDS}: step {step}'s output is not a member name", layout.COMMANDS
                )
            documents[step] = load_json(files, output)
        return cls(files, commands, environment, documents, analyses)

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.commands["steps"]

    @functools.cached_property
    def contention(self) -> Any:
        """host-contention.json parsed (bundle format 6 on), None when the bundle holds none; raises
        BundleFormatError when it is not JSON."""
        return load_json(self.files, layout.CONTENTION) if layout.CONTENTION in self.files else None

    def step(self, step_id: str) -> dict[str, Any] | None:
        return next((s for s in self.steps if s.get("step") == step_id), None)

    def status(self, step_id: str) -> str:
        entry = self.step(step_id)
        return entry["status"] if entry else StepStatus.NOT_RUN

    def figures(self, step_id: str) -> Figures:
        """harness.analysis.NAME.headlines(document) for a completed step with an analysis module."""
        entry = self.step(step_id)
        if entry is None or step_id not in self.documents:
            return Figures(None, "the step did not complete")
        name = entry.get("analysis")
        if not name:
            return Figures(None, "the step has no analysis module")
        if step_id not in self._figures:
            self._figures[step_id] = self.compute_figures(name, self.documents[step_id])
        return self._figures[step_id]

    def analysis(self, name: Any) -> ModuleType:
        """The module of an analysis the bundle names, only if this build's lookup knows the name."""
        if not isinstance(name, str) or not MODULE_NAME.fullmatch(name):
            raise BundleFormatError(f"analysis module name {str(name)[:60]!r} is not a plain module name")
        try:
            return self.analyses(name)
        except LookupError as exc:
            raise BundleFormatError(f"{exc}: a bundle of another build, or a changed one") from exc

    def compute_figures(self, name: Any, document: Any) -> Figures:
        try:
            return Figures(self.analysis(name).headlines(document), None)
        except BundleFormatError as exc:
            return Figures(None, str(exc))
        except Exception as exc:  # noqa: BLE001 - shown in the report and failed by verify
            return Figures(None, f"harness.analysis.{name}.headlines raised {type(exc).__name__}: {exc}")

    def plots(self, step_id: str) -> list[str]:
        return self._members(step_id, "plots")

    def tables(self, step_id: str) -> list[str]:
        """The step's table members (format 4 on; none in older bundles)."""
        return self._members(step_id, "tables")

    def _members(self, step_id: str, key: str) -> list[str]:
        listed = (self.step(step_id) or {}).get(key)
        return [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []


def _step_id(entry: Any, seen: set[str]) -> str:
    """A step entry's id (added to SEEN), refused unless the entry is an object with a string id and
    status, and the id is new."""
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("step"), str)
        or not isinstance(entry.get("status"), str)
    ):
        raise BundleFormatError(
            f"{layout.COMMANDS}: a step is not an object with a string step and status", layout.COMMANDS
        )
    if entry["step"] in seen:
        raise BundleFormatError(f"{layout.COMMANDS}: step {entry['step'][:60]!r} appears twice", layout.COMMANDS)
    seen.add(entry["step"])
    return entry["step"]
