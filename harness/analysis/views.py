"""What every typed view of a document shares: the refusal, the unavailable field, the checked reads.

A view (harness/analysis/NAME/view.py) is a frozen dataclass built once where a document, or the
headline figures recomputed from it, is read: each field it holds is checked there, so a judge reads
attributes, never a chain of `.get`. A field the probe may record as {"unavailable": reason} stays
so (Unavailable), never a default; a figure that is absent reads None (as `.get` read it), and one
that is there but not what the schema or the analysis says refuses the whole view (DocumentError,
naming the field). Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.analysis.units import is_number


class DocumentError(ValueError):
    """A document (or its recomputed figures) a view is built from is not what it should be."""


@dataclass(frozen=True)
class Unavailable:
    """A field the probe recorded as {"unavailable": reason}: its reason, never a value made up."""

    reason: str

    @classmethod
    def of(cls, value: Any) -> Unavailable | None:
        """The field's reason when it is {"unavailable": reason} (a mapping naming one), else None."""
        if isinstance(value, Mapping) and "unavailable" in value:
            return cls(str(value["unavailable"]))
        return None


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    """VALUE, refused unless it is a JSON object (WHERE names it in the refusal)."""
    if not isinstance(value, Mapping):
        raise DocumentError(f"{where} is not an object: {type(value).__name__}")
    return value


def document(value: Any, name: str) -> dict[str, Any]:
    """VALUE, a raw document as json.loads gives it, refused unless it is a JSON object."""
    if not isinstance(value, dict):
        raise DocumentError(f"{name} is not an object: {type(value).__name__}")
    return value


def field(values: Mapping[str, Any], key: str, where: str) -> Any:
    """VALUES[KEY], refused when the key is missing."""
    if key not in values:
        raise DocumentError(f"{where} has no {key!r}")
    return values[key]


def number(values: Mapping[str, Any], key: str, where: str) -> int | float | None:
    """VALUES[KEY]: a JSON number, or None for null or an absent key; any other value is refused."""
    value = values.get(key)
    if value is None or is_number(value):
        return value
    raise DocumentError(f"{where}.{key} is not a number or null: {value!r}")


def required_number(values: Mapping[str, Any], key: str, where: str) -> int | float:
    """VALUES[KEY], refused unless it is there and a JSON number."""
    value = number(values, key, where)
    if value is None:
        raise DocumentError(f"{where} has no number {key!r}")
    return value


def text(values: Mapping[str, Any], key: str, where: str) -> str | None:
    """VALUES[KEY]: a string or null (None), and None when the key is absent."""
    value = values.get(key)
    if value is None or isinstance(value, str):
        return value
    raise DocumentError(f"{where}.{key} is not a string or null: {value!r}")


def listed(values: Mapping[str, Any], key: str, where: str) -> tuple[Any, ...]:
    """VALUES[KEY] as a tuple: a list, or () for null or an absent key; any other value is refused."""
    value = values.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise DocumentError(f"{where}.{key} is not a list: {type(value).__name__}")
    return tuple(value)


def numbers(values: Mapping[str, Any], key: str, where: str) -> tuple[int | float, ...]:
    """VALUES[KEY] as a tuple of JSON numbers (() for null or an absent key); any other value is refused."""
    found = listed(values, key, where)
    if not all(is_number(v) for v in found):
        raise DocumentError(f"{where}.{key} is not a list of numbers: {list(found)!r}")
    return found
