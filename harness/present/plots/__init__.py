"""Plots rendered on the host from a probe's raw document (never by probes), deterministically.

A registry entry names its plot module (ProbeSpec.plots): `render(document, stem) -> [paths]`
writes STEM.png and STEM.svg (and may write more files named after STEM, e.g. STEM-peer.png),
every plotted figure recomputed by the probe's analysis module, and returns what it wrote. It may
also have `note(document) -> str | None`: what the picture leaves out, said beside it by `dossier NAME`.
"""


class NothingToPlot(ValueError):
    """The document holds nothing a plot could show (one GPU: no all-reduce curve). Its message
    is one sentence saying why; the step then has no plot files and the report says why."""
