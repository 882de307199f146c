"""Nothing machine-local in a signed page: paths written as the reader has them.

A bundle's documents record what the machine that measured them saw (the interpreter at
/opt/torch/.venv/bin/python3, torch's version.py in a clone's .venv, a checkpoint blob under
/root/.cache/rig-dossier); the raw JSON keeps them, as evidence. A page a person reads (report.md)
says them relative to what any reader has: a package's file by its place in the package
(`torch/version.py`), the checkpoint cache as `$CACHE` (harness.paths.cache_root: $DOSSIER_CACHE_DIR,
else ~/.cache/rig-dossier), a virtual environment's file from `.venv/`, a home folder as `~`, and any
other machine's folder by the file's name alone (`…/minilm3.safetensors`); the kernel's and the
system's own paths (/sys, /proc, /dev, /usr, /etc) are the same everywhere and stay. A pure
function of the text, so `dossier verify` re-renders the same bytes.
"""

from __future__ import annotations

import re

# An absolute path: "/" then name characters and more "/"-separated names, not inside a word, a
# number, a unit (GB/s), a relative path (raw/health.json) or a URL (https://).
PATH = re.compile(r"(?<![\w.:/~$@+…-])/[\w.@+~-]+(?:/[\w.@+~-]+)*/?")
SYSTEM = ("/usr/", "/sys/", "/proc/", "/dev/", "/etc/", "/lib", "/bin/", "/sbin/", "/run/", "/var/lib/", "/var/log/")
PACKAGES = ("/site-packages/", "/dist-packages/")
CACHE_MARKS = ("/blobs/sha256/", "/rig-dossier/")
HOME = re.compile(r"^/(?:root|home/[^/]+|Users/[^/]+)(?=/|$)")


def path(text: str) -> str:
    """One absolute path as the reader has it (see the module's rules)."""
    for mark in PACKAGES:
        if mark in text:
            return text.rsplit(mark, 1)[1]
    if "/blobs/sha256/" in text:
        return "$CACHE/blobs/sha256/" + text.rsplit("/blobs/sha256/", 1)[1]
    if "/rig-dossier/" in text and "/.cache/" in text:
        return "$CACHE/" + text.rsplit("/rig-dossier/", 1)[1]
    if "/.venv/" in text:
        return ".venv/" + text.rsplit("/.venv/", 1)[1]
    if text.startswith(SYSTEM) or text in ("/", "/usr", "/sys", "/proc", "/dev", "/etc", "/tmp"):
        return text
    home = HOME.match(text)
    if home:
        return "~" + text[home.end() :]
    name = text.rstrip("/").rsplit("/", 1)[-1]
    return f"…/{name}" if name else text


def portable(text: str) -> str:
    """TEXT with every machine-local absolute path written as the reader has it."""
    return PATH.sub(lambda m: path(m.group(0)), text)


def local_path(text: str) -> bool:
    """Whether TEXT holds an absolute path that `portable` rewrites (a test's and a reader's check)."""
    return any(path(m.group(0)) != m.group(0) for m in PATH.finditer(text))
