"""How the stress probe records its raw figures, for the checks that read them back: times kept to
0.1 ms, counts and times that are JSON numbers (never a boolean)."""

from __future__ import annotations

from typing import TypeGuard, TypeVar

ROUNDING_S = 2e-4  # times are kept to 0.1 ms: two of them differ by up to this from the unrounded

T = TypeVar("T")


def is_a(value: object, kind: type[T] | tuple[type[T], ...]) -> TypeGuard[T]:
    """Whether VALUE is a KIND and not a bool (JSON's true is no count); a number when KIND is (int, float)."""
    return isinstance(value, kind) and not isinstance(value, bool)
