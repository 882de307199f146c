"""report.md's Limitations: every limitation once.

What a bundle records as limited comes from many places (each document's `limitations`, every step
that did not complete, why a step has no plots), and one cause often limits several of them: on a
host without NVML, health, the bandwidth's telemetry, the stress run's counters and health under
load each record the same NVML-not-found sentence. The report names each limitation once: the
steps that record the same text share one line (named by what they measured), and a long passage
already said in an earlier line (a shared cause) is not said again but pointed to. Pure functions
of their input, so `dossier verify` re-renders the same bytes.
"""

from __future__ import annotations

from difflib import SequenceMatcher

SHARED = 48  # characters: a passage at least this long said again in a later line is pointed to
SAID_ABOVE = "(the cause said above)"


def grouped(found: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """(names, text) pairs, the names that share a text together, in first-seen order."""
    names: dict[str, list[str]] = {}
    for name, text in found:
        if name not in names.setdefault(text, []):
            names[text].append(name)
    return [(who, text) for text, who in names.items()]


def _words(text: str, start: int, end: int) -> tuple[int, int]:
    """START..END shrunk to whole words (a passage never cuts a word in two)."""
    while start < end and start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start += 1
    while end > start and end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end -= 1
    return start, end


def _shared(earlier: str, text: str) -> tuple[int, int] | None:
    """Where in TEXT the longest passage of at least SHARED characters also in EARLIER lies."""
    match = SequenceMatcher(None, earlier, text, autojunk=False).find_longest_match(0, len(earlier), 0, len(text))
    start, end = _words(text, match.b, match.b + match.size)
    return (start, end) if end - start >= SHARED else None


def _pointed(before: str, after: str) -> str:
    """BEFORE, the pointer to what was said above, AFTER (no space before closing punctuation)."""
    after = after.lstrip()
    joint = "" if not after or after.startswith((")", ",", ";", ".", ":")) else " "
    return f"{before.rstrip()} {SAID_ABOVE}{joint}{after}".strip()


def once(texts: list[str]) -> list[str]:
    """TEXTS with every long passage already said in an earlier text replaced by a pointer to it."""
    out: list[str] = []
    for text in texts:
        for earlier in texts[: len(out)]:
            span = _shared(earlier, text)
            while span is not None:
                text = _pointed(text[: span[0]], text[span[1] :])
                span = _shared(earlier, text)
        out.append(text)
    return out


def lines(found: list[tuple[str, str]]) -> list[str]:
    """Each limitation once: 'Health at idle, Health under load: what: why', a shared cause said once."""
    groups = grouped(found)
    texts = once([text for _, text in groups])
    return [f"{', '.join(names)}: {text}" for (names, _), text in zip(groups, texts, strict=True)]
