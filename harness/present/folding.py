"""Keeping report.md readable: long values folded, long lines wrapped (Markdown renders wrapped
lines the same), commands shown short. Pure functions of their input, so `dossier verify`
re-renders the same bytes.

Limits: a value in a list of figures is folded past FOLD_AT characters (saying how many items or
characters were left out and where the whole value is); a line outside tables and code is
wrapped at WRAP_AT; nothing the report writes outside a table is longer than LINE_LIMIT.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Mapping, Sequence

FOLD_AT = 200
WRAP_AT = 100
LINE_LIMIT = 200
ARG_FOLD_AT = 60  # a command argument longer than this is folded
LIST_ITEM = re.compile(r"^(\s*)([-*+] |\d+\. |> )")


def fold(text: str, where: str, limit: int = FOLD_AT) -> str:
    """TEXT if it is at most LIMIT characters long; else cut at the last item separator ("; " or
    ", ") that leaves room to say how many items were left out and WHERE the whole value is (or at
    a space, saying how many characters)."""
    if len(text) <= limit:
        return text
    room = limit - 40
    for separator in ("; ", ", "):
        cut = text.rfind(separator, 0, room)
        if cut > 0:
            left = text[cut + len(separator) :].count(separator) + 1
            return f"{text[:cut]}; … {left} more in {where}"
    cut = text.rfind(" ", 0, room)
    cut = cut if cut > 0 else room
    return f"{text[:cut]} … ({len(text) - cut} more characters in {where})"


def _wrap_line(line: str, width: int) -> list[str]:
    match = LIST_ITEM.match(line)
    if match:
        lead, marker = match.group(1), match.group(2)
        follow = lead + (marker if marker == "> " else " " * len(marker))
        first = lead + marker
        body = line[len(first) :]
    else:
        first = follow = line[: len(line) - len(line.lstrip())]  # the leading whitespace
        body = line[len(first) :]
    return textwrap.wrap(
        body,
        width=width,
        initial_indent=first,
        subsequent_indent=follow,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [line]


def wrap_markdown(text: str, width: int = WRAP_AT) -> str:
    """Every line longer than WIDTH wrapped at spaces (list items and quotes keep their marker and
    indentation), except table rows, headings, and code (indented by four spaces outside a list,
    or fenced)."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("```"):
            fenced = not fenced
        code = fenced or (line.startswith("    ") and not LIST_ITEM.match(line))
        if len(line) <= width or code or stripped.startswith(("|", "#", "```")):
            out.append(line)
        else:
            out.extend(_wrap_line(line, width))
    return "\n".join(out)


def _fold_argument(arg: str) -> str:
    """JSON and absolute paths past ARG_FOLD_AT characters folded (to their length, to the file
    name); any other argument only past twice that."""
    if len(arg) <= ARG_FOLD_AT:
        return arg
    if arg.startswith(("{", "[")):
        return f"{arg[0]}…{len(arg)} characters…{'}' if arg[0] == '{' else ']'}"
    if arg.startswith("/"):
        name = arg.rsplit("/", 1)[1]
        return "…/" + (name if len(name) <= 24 else name[:12] + "…")
    return arg if len(arg) <= 2 * ARG_FOLD_AT else arg[:ARG_FOLD_AT] + "…"


def short_command(argv: Sequence[str]) -> str:
    """ARGV as a person reads it: the interpreter's path as `python` (it is in commands.json),
    arguments over ARG_FOLD_AT characters folded (JSON to its length, paths to their file name)."""
    words = list(argv)
    if words and re.fullmatch(r"python[0-9.]*", words[0].rsplit("/", 1)[-1]):
        words[0] = "python"
    return shlex.join([words[0], *map(_fold_argument, words[1:])] if words else [])


def environment_text(env: Mapping[str, str], limit: int = 100) -> list[str]:
    """KEY=VALUE for each variable, sorted, each value folded past LIMIT characters."""
    return [
        f"{key}={value if len(value) <= limit else value[:limit] + f'… ({len(value)} characters)'}"
        for key, value in sorted(env.items())
    ]
