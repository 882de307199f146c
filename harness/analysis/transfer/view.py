"""The transfer step's headline figures as a judge reads them: one frozen view, checked once.

Built from harness.analysis.transfer.figures.headlines (each GPU's figures, the peer matrix and every
host-link and peer-pair check, recomputed from the raw per-copy times and NVML facts). The whole
headlines stay at hand (`values`). Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.analysis.views import DocumentError, field, listed, mapping, text
from harness.analysis.views import document as document_of

WHERE = "the transfer figures"


@dataclass(frozen=True)
class LinkCheck:
    """One judged link: a GPU's host link (`gpu`) or a pair of GPUs (`pair`, its topology `cell`)."""

    status: str
    reasons: tuple[str, ...]
    gpu: Any = None
    pair: str | None = None
    cell: str | None = None

    @classmethod
    def from_check(cls, check: Any, where: str) -> LinkCheck:
        check = mapping(check, where)
        status = field(check, "status", where)
        if not isinstance(status, str):
            raise DocumentError(f"{where}.status is not a string: {status!r}")
        pair = check.get("pair")
        return cls(
            status=status,
            reasons=tuple(str(r) for r in listed(check, "reasons", where)),
            gpu=check.get("gpu"),
            pair=None if pair is None else str(pair),
            cell=text(check, "cell", where),
        )

    @property
    def name(self) -> str:
        """How the judge names it: the pair, or the GPU of a host link."""
        return self.pair if self.pair is not None else f"GPU {self.gpu}"


@dataclass(frozen=True)
class TransferFigures:
    """Each GPU's figures, the host-link and peer-pair checks, and whether a peer matrix was measured."""

    device: str | None
    per_gpu: Mapping[str, Mapping[str, Any]]  # a GPU's index (or "host") -> its copy figures
    link_checks: tuple[LinkCheck, ...]
    p2p_checks: tuple[LinkCheck, ...]
    peer_measured: bool
    peer_why: str
    values: dict[str, Any]

    @classmethod
    def from_headlines(cls, values: Any) -> TransferFigures:
        """The view of recomputed headlines; refused (DocumentError) where one is not what they hold."""
        values = document_of(values, WHERE)
        peer = mapping(field(values, "peer", WHERE), f"{WHERE}.peer")
        per_gpu = mapping(field(values, "per_gpu", WHERE), f"{WHERE}.per_gpu")
        return cls(
            device=text(values, "device", WHERE),
            per_gpu={gpu: mapping(figures, f"{WHERE}.per_gpu[{gpu}]") for gpu, figures in per_gpu.items()},
            link_checks=_checks(values, "link_checks"),
            p2p_checks=_checks(values, "p2p_checks"),
            peer_measured=bool(field(peer, "measured", f"{WHERE}.peer")),
            peer_why=str(peer.get("why", "")),
            values=values,
        )


def _checks(values: dict[str, Any], key: str) -> tuple[LinkCheck, ...]:
    field(values, key, WHERE)
    return tuple(LinkCheck.from_check(c, f"{WHERE}.{key}[{i}]") for i, c in enumerate(listed(values, key, WHERE)))
