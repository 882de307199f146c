"""A probe option's replay policy: whether and how `dossier reproduce` takes it from another party's
recorded argv (their plan is data, never a command line: harness.run.policy parses their argv with the
probe's own options, checks each value, and writes this build's own command line of what it takes).

Every option of every probe declares one (`Option(..., replay=...)`; tests/run/test_replay_policy.py
fails on one that does not): TAKE with the bound a replay keeps to (`at_most`, `matching`), REFUSE with
what of their machine it names (a path, a process, a host: the step then runs without it and its
figures are not comparable, said before any probe runs), or REMAKE with how the step makes it here (the
checkpoint by sha256, the memory roof from this run). Standard library only: the probe side."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], "str | None"]  # why a value is refused (after the flag), or None

TAKE = "take"  # their value, parsed by this option's parser, its check and the replay's bound
REFUSE = "refuse"  # never from their plan: it names something of their machine (a path, a process, a host)
REMAKE = "remake"  # never from their plan: the step makes it again here (the checkpoint by sha256, ...)


@dataclass(frozen=True)
class Replay:
    """An option's replay policy (docs/reproduce.md, "Their plan, here"). TAKE: their value is used once
    the probe's own parser and the option's check accept it and BOUND does too (the limits a replay keeps
    to: a number's range, a shape's form, a size); REFUSE and REMAKE: their value is never used, and WHY
    says what it names (REFUSE: the step runs without it and its figures are not comparable; REMAKE: the
    step's own arguments, or its replay hook, make it here)."""

    policy: str
    bound: Check | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if self.policy not in (TAKE, REFUSE, REMAKE) or (self.policy != TAKE and not self.why):
            raise ValueError(f"replay policy {self.policy!r} {self.why!r}: take, or refuse/remake with why")


def take(bound: Check | None = None) -> Replay:
    """A replay takes their value (the option's parser and check, and BOUND, must accept it)."""
    return Replay(TAKE, bound)


def refuse(why: str) -> Replay:
    """A replay never takes their value: WHY names what of their machine it is."""
    return Replay(REFUSE, None, why)


def remake(why: str) -> Replay:
    """A replay makes this value again here: WHY says how."""
    return Replay(REMAKE, None, why)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def at_most(limit: float, unit: str = "") -> Check:
    """A bound: every number in the value (one, or a list) at most LIMIT (and not negative)."""

    def check(value: Any) -> str | None:
        bad = next((v for v in _items(value) if not 0 <= v <= limit), None)
        return None if bad is None else f"{bad:g}: a replay takes 0 to {limit:g}{(' ' + unit) if unit else ''}"

    return check


def matching(pattern: str, what: str, longest: int = 200) -> Check:
    """A bound: every string in the value matches PATTERN (a full match) and is at most LONGEST characters."""
    compiled = re.compile(pattern)

    def check(value: Any) -> str | None:
        bad = next((v for v in _items(value) if len(str(v)) > longest or not compiled.fullmatch(str(v))), None)
        return None if bad is None else f"{str(bad)[:60]!r}: a replay takes {what}"

    return check


def sizes_at_most(parse: Callable[[str], int], limit: int) -> Check:
    """A bound: every size in the value, read by PARSE (bytes, or K/M/G), at most LIMIT bytes."""

    def check(value: Any) -> str | None:
        for text in _items(value):
            try:
                size = parse(str(text))
            except ValueError as exc:
                return f"{str(text)[:60]!r}: {exc}"
            if not 0 < size <= limit:
                return f"{str(text)[:60]!r}: a replay takes sizes up to {limit / 2**30:g} GiB"
        return None

    return check


# Forms a replay takes (each a full match): a GEMM shape and its label, an output tile, a tensor's
# role and name (as a safetensors header names it), a list of world sizes.
SHAPE = r"\d{1,7}[xX]\d{1,7}[xX]\d{1,7}(:[A-Za-z0-9_.+-]{1,64})?"
TILE = r"\d{1,5}[xX]\d{1,5}"
TENSOR = r"[A-Za-z0-9_.-]{1,64}=[A-Za-z0-9_./:-]{1,256}"
WORLD_SIZES = r"\d{1,4}(,\d{1,4}){0,15}"
