"""The probe registry: every probe declared once, in its own entry (harness/registry/NAME.py).

PROBES is the one list: the CLI builds `dossier NAME` from it. The order is the order of the
probes in `dossier --help`.
"""

from __future__ import annotations

from harness.registry import allreduce, bandwidth, health, precision, roofline
from harness.registry.spec import ProbeSpec

PROBES: tuple[ProbeSpec, ...] = (health.SPEC, bandwidth.SPEC, roofline.SPEC, precision.SPEC, allreduce.SPEC)


def spec(name: str) -> ProbeSpec:
    """The registered probe NAME; a name the registry does not know is a KeyError (a bug)."""
    for entry in PROBES:
        if entry.name == name:
            return entry
    raise KeyError(f"no probe {name!r} in the registry ({', '.join(p.name for p in PROBES)})")
