"""Headline figures as text, each number with the unit its key names."""

from __future__ import annotations

from typing import Any, TypeGuard

# Key suffix -> unit, longest first (the project's rule: the unit is in the field name).
UNITS: tuple[tuple[str, str], ...] = (
    ("_flop_per_byte", "FLOP/byte"),
    ("_mib_per_s", "MiB/s"),
    ("_per_s", "per second"),
    ("_gbps", "GB/s"),
    ("_tflops", "TFLOPS"),
    ("_mib", "MiB"),
    ("_gib", "GiB"),
    ("_bytes", "bytes"),
    ("_us", "µs"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_w", "W"),
    ("_mhz", "MHz"),
    ("_c", "°C"),
)
FRACTION_KEYS = ("spread", "tolerance")


def unit_for(key: str) -> str:
    for suffix, unit in UNITS:
        if key.endswith(suffix):
            return unit
    return ""


def number(value: float | int) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if abs(value) >= 1e5:
        return f"{value:.0f}"  # bytes and the like: whole numbers, never 2.0009e+05
    return f"{value:.5g}"


def value_text(key: str, value: Any) -> str:
    """VALUE as text with the unit KEY names; lists and dicts recursively."""
    if value is None:
        return "none"
    if isinstance(value, dict):
        if not value:
            return "none"
        if set(value) == {"unavailable"}:
            return f"unavailable ({value['unavailable']})"
        return "; ".join(f"{k}: {value_text(k if unit_for(k) else key, v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            unit = unit_for(key)
            return ", ".join(number(v) for v in value) + (f" {unit}" if unit else "")
        return ", ".join(value_text(key, v) for v in value) if value else "none"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if key.endswith(FRACTION_KEYS):
            return f"{number(value)} ({value * 100:.2f} %)"
        unit = unit_for(key)
        return number(value) + (f" {unit}" if unit else "")
    return str(value) if not isinstance(value, bool) else str(value).lower()


def figure(key: str, value: Any) -> str:
    return f"{key}: {value_text(key, value)}"


def without_empty(value: Any) -> Any:
    """VALUE with every empty part left out (None, {}, []), recursively: a report says what a figure
    is, never `none` (what is missing is said once, with why, where it matters)."""
    if isinstance(value, dict):
        if set(value) == {"unavailable"}:
            return value
        kept = {k: without_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        parts = [without_empty(v) for v in value]
        return [v for v in parts if v not in (None, {}, [])]
    return value


def is_number(value: Any) -> TypeGuard[int | float]:
    """A JSON number (int or float, never a bool): the one test every analysis applies to a stated figure."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_or_none(value: Any) -> int | float | None:
    """VALUE when it is a JSON number (is_number), else None: the one "number or None" every reader uses."""
    return value if is_number(value) else None


def unavailable_reason(value: Any) -> str | None:
    """The reason of a field recorded as {"unavailable": reason}; None for any other value."""
    if isinstance(value, dict) and set(value) == {"unavailable"}:
        return str(value["unavailable"])
    return None


def show(value: Any) -> str:
    """VALUE as text, or "unavailable (reason)"."""
    reason = unavailable_reason(value)
    return f"unavailable ({reason})" if reason else str(value)
