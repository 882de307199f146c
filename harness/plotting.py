"""Rendering a step's plots on the host from its raw document (harness/plots/NAME.py).

`render_step_plots` is the one rendering function. `BackgroundPlots` runs it in one spawned
worker process at the lowest CPU priority (nice 19) while later probes run, so plotting costs a
dossier almost no wall time and takes almost no CPU from a measurement; the bytes are the same
as rendering inline.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.bundle import layout

Rendered = tuple[dict[str, bytes], str | None]  # member name -> bytes, and a note when none


def plot_module_name(plots: str) -> tuple[str | None, str | None]:
    """The importable name of harness.plots.PLOTS (tests may stand in a module), or why none."""
    try:
        module = importlib.import_module(f"harness.plots.{plots}")
    except ModuleNotFoundError as exc:
        if exc.name == f"harness.plots.{plots}":
            return None, f"harness/plots/{plots}.py is not in this build"
        raise
    return module.__name__, None


def render_step_plots(module_name: str, plots: str, step: str, document: Mapping[str, Any]) -> Rendered:
    """Call MODULE.render(document, path) in a fresh folder; members plots/STEP/<relative name>."""
    module = importlib.import_module(module_name)
    with tempfile.TemporaryDirectory(prefix="dossier-plots-") as tmp:
        out_dir = Path(tmp).resolve()
        # render() gets a path inside a fresh folder: used as a file stem (STEM.png, STEM.svg)
        # or as a folder, what it writes lands under out_dir and keeps its relative name.
        try:
            paths = [Path(p).resolve() for p in module.render(dict(document), out_dir / plots)]
        except Exception as exc:  # noqa: BLE001 - a plot bug must not lose the measurements
            return {}, f"harness/plots/{plots}.py raised {type(exc).__name__}: {exc}"
        outside = [str(p) for p in paths if not p.is_relative_to(out_dir)]
        if outside:
            return {}, f"harness/plots/{plots}.py wrote outside its folder: {', '.join(outside)}"
        return {layout.plot_name(step, p.relative_to(out_dir).as_posix()): p.read_bytes()
                for p in sorted(paths)}, None


def render_inline(plots: str | None, step: str, document: Mapping[str, Any] | None) -> Rendered:
    if not plots or document is None:
        return {}, None
    module_name, why = plot_module_name(plots)
    if module_name is None:
        return {}, why
    return render_step_plots(module_name, plots, step, document)


def _lowest_priority() -> None:
    try:
        os.nice(19)
    except OSError:
        pass


class BackgroundPlots:
    """Plots rendered by one nice-19 worker process while the run goes on; a context manager."""

    def __init__(self) -> None:
        self._pool = None
        self._pending: dict[str, Any] = {}
        self._done: dict[str, Rendered] = {}

    def __enter__(self) -> BackgroundPlots:
        return self

    def __exit__(self, exc_type, *rest: object) -> None:
        if self._pool is not None:
            if exc_type is None:
                self._pool.close()
            else:
                self._pool.terminate()  # Ctrl-C or a crash: nothing left running
            self._pool.join()

    def submit(self, plots: str | None, step: str, document: Mapping[str, Any]) -> None:
        if not plots:
            return
        module_name, why = plot_module_name(plots)
        if module_name is None:
            self._done[step] = ({}, why)
            return
        if self._pool is None:
            self._pool = multiprocessing.get_context("spawn").Pool(1, initializer=_lowest_priority)
        self._pending[step] = self._pool.apply_async(render_step_plots, (module_name, plots, step, dict(document)))

    def result(self, step: str) -> Rendered | None:
        """The step's rendered plots (waiting for them), or None when none were submitted."""
        if step in self._pending:
            self._done[step] = self._pending.pop(step).get()
        return self._done.get(step)
