"""What makes a gzip header or a tar header block differ from the canonical one, in words.

The canonical bytes come from harness/bundle/write.py (the writer); these functions only name the
fields that differ, so a refusal says "mode 4755 (canonical 644), uid 1000 (canonical 0)" rather
than "bytes differ".
"""

from __future__ import annotations

from harness.bundle.write import GZIP_HEADER

GZIP_FLAGS = (
    (0x01, "FTEXT"),
    (0x02, "FHCRC (a header checksum)"),
    (0x04, "FEXTRA (extra fields)"),
    (0x08, "FNAME (a stored file name)"),
    (0x10, "FCOMMENT (a comment)"),
    (0xE0, "reserved bits"),
)

# ustar header fields: (name, offset, width, how a number is shown: "o" octal, "d" decimal, "" text)
TAR_FIELDS = (
    ("name", 0, 100, ""),
    ("mode", 100, 8, "o"),
    ("uid", 108, 8, "d"),
    ("gid", 116, 8, "d"),
    ("size", 124, 12, "d"),
    ("mtime", 136, 12, "d"),
    ("checksum", 148, 8, "o"),
    ("type", 156, 1, ""),
    ("linkname", 157, 100, ""),
    ("magic", 257, 6, ""),
    ("version", 263, 2, ""),
    ("uname", 265, 32, ""),
    ("gname", 297, 32, ""),
    ("devmajor", 329, 8, ""),
    ("devminor", 337, 8, ""),
    ("prefix", 345, 155, ""),
    ("padding", 500, 12, ""),
)


def gzip_header_difference(header: bytes) -> str | None:
    """Why the first bytes of a bundle are not the canonical gzip header, or None when they are."""
    if header == GZIP_HEADER:
        return None
    if len(header) < len(GZIP_HEADER):
        return f"the file is {len(header)} bytes, shorter than a gzip header"
    if header[:2] != GZIP_HEADER[:2]:
        return f"not a gzip stream (it starts with {header[:2].hex()}, not 1f8b)"
    found = []
    if header[2] != 8:
        found.append(f"compression method {header[2]} (canonical 8, deflate)")
    flags = [name for bit, name in GZIP_FLAGS if header[3] & bit]
    if flags:
        found.append(f"flags {', '.join(flags)} (canonical none)")
    mtime = int.from_bytes(header[4:8], "little")
    if mtime:
        found.append(f"mtime {mtime} (canonical 0)")
    if header[8] != GZIP_HEADER[8]:
        found.append(f"XFL {header[8]} (canonical {GZIP_HEADER[8]}, as Python's gzip writes at level 9)")
    if header[9] != GZIP_HEADER[9]:
        found.append(f"OS byte {header[9]} (canonical {GZIP_HEADER[9]}, as Python's gzip writes)")
    return "a non-canonical gzip header: " + "; ".join(found)


def _field_text(raw: bytes, shown_as: str) -> str:
    """A header field as text: a number (stored in octal) in the base SHOWN_AS names, else quoted."""
    text = raw.rstrip(b"\0").rstrip(b" ").rstrip(b"\0")
    if shown_as:
        try:
            return format(int(text.decode("ascii"), 8), shown_as) if text else "empty"
        except ValueError:
            pass
    shown = repr(text)[2:-1]
    return repr(shown if len(shown) <= 40 else shown[:40] + "...")


def tar_header_difference(block: bytes, canonical: bytes) -> str:
    """The fields in which a header BLOCK differs from the CANONICAL block (mode in octal)."""
    found = []
    for name, offset, width, shown_as in TAR_FIELDS:
        mine, theirs = block[offset : offset + width], canonical[offset : offset + width]
        if mine != theirs and name != "checksum":
            found.append(f"{name} {_field_text(mine, shown_as)} (canonical {_field_text(theirs, shown_as)})")
    if not found:
        found.append(f"checksum {_field_text(block[148:156], 'o')} (canonical {_field_text(canonical[148:156], 'o')})")
    return "; ".join(found[:4]) + (f"; and {len(found) - 4} more field(s)" if len(found) > 4 else "")
