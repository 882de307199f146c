"""Rendering a step's plots on the host from its raw document (harness/present/plots/NAME.py).

`render_step_plots` is the one rendering function. `BackgroundPlots` runs it in one spawned
worker process at the lowest CPU priority (nice 19) while later probes run, so plotting costs a
dossier almost no wall time and takes almost no CPU from a measurement; the bytes are the same
as rendering inline. The worker ignores Ctrl-C: the parent handles it and stops the worker.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from harness import registry
from harness.bundle import layout
from harness.present.plots import NothingToPlot
from harness.probes.lifetime import die_with_parent
from harness.probes.scratch import scratch

Rendered = tuple[dict[str, bytes], str | None]  # member name -> bytes, and a note when none


def plot_module_name(plots: str) -> tuple[str | None, str | None]:
    """The importable name of the registry's plot module PLOTS, or why there is none (a plan that
    names plots no registry entry gives: a bug, recorded as the step's plot note, never a crash
    that would lose the run)."""
    try:
        return registry.plot_module_name(plots), None
    except registry.NotInRegistry as exc:
        return None, f"{exc} (a bug in this build: please report it)"


def render_step_plots(
    module_name: str, plots: str, step: str, document: Mapping[str, Any], sku_id: str | None = None
) -> Rendered:
    """Call MODULE.render(document, path) in a fresh folder; members plots/STEP/<relative name>. A
    module that draws its SKU's known-good (the stress plot) has `render_for_sku(document, path,
    sku_id)`: it is called instead, with SKU_ID, the catalogue SKU the run's GPUs were identified as."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # e.g. matplotlib absent on this host: no plots, measurements kept
        return {}, f"cannot import harness/present/plots/{plots}.py: {type(exc).__name__}: {exc}"
    with scratch("dossier-plots-") as tmp:  # (a SIGKILL's leftovers removed by the next render)
        out_dir = Path(tmp).resolve()
        # render() gets a path inside a fresh folder: used as a file stem (STEM.png, STEM.svg)
        # or as a folder, what it writes lands under out_dir and keeps its relative name.
        try:
            for_sku = getattr(module, "render_for_sku", None)
            written = (
                for_sku(dict(document), out_dir / plots, sku_id)
                if for_sku is not None
                else module.render(dict(document), out_dir / plots)
            )
            paths = [Path(p).resolve() for p in written]
        except NothingToPlot as exc:  # no plot files at all; the note is the plot's own sentence
            return {}, str(exc)
        except Exception as exc:  # noqa: BLE001 - a plot bug must not lose the measurements
            return {}, f"harness/present/plots/{plots}.py raised {type(exc).__name__}: {exc}"
        outside = [str(p) for p in paths if not p.is_relative_to(out_dir)]
        if outside:
            return {}, f"harness/present/plots/{plots}.py wrote outside its folder: {', '.join(outside)}"
        return {layout.plot_name(step, p.relative_to(out_dir).as_posix()): p.read_bytes() for p in sorted(paths)}, None


def render_inline(
    plots: str | None, step: str, document: Mapping[str, Any] | None, sku_id: str | None = None
) -> Rendered:
    if not plots or document is None:
        return {}, None
    module_name, why = plot_module_name(plots)
    if module_name is None:
        return {}, why
    return render_step_plots(module_name, plots, step, document, sku_id)


def _worker_setup(parent: int) -> None:
    """In the plot worker: it ends with PARENT, the run (a SIGKILL of the run leaves no worker, so no
    resource tracker or semaphore of it either), Ctrl-C is the parent's to handle (it stops this worker),
    and only CPU the probes leave idle is used."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.nice(19)
    except OSError:
        pass


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread while the worker is spawned: the worker inherits the blocked
    mask, so a Ctrl-C that reaches the whole process group while it starts up (before
    `_worker_setup` runs) is never a KeyboardInterrupt traceback there; here, a Ctrl-C that
    arrived meanwhile is delivered as soon as the mask is restored."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class BackgroundPlots:
    """Plots rendered by one nice-19 worker process while the run goes on; a context manager.

    Only an optimisation: when the worker cannot start or dies, `result` answers None and the
    bundle's assembly renders those plots inline instead.
    """

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._pending: dict[str, Future] = {}
        self._done: dict[str, Rendered] = {}

    def __enter__(self) -> BackgroundPlots:
        return self

    def __exit__(self, exc_type, *rest: object) -> None:
        if self._pool is None:
            return
        if exc_type is None:
            self._pool.shutdown(wait=True)
            return
        # Ctrl-C or a crash: cancel what waits and stop the worker now, not after its plot.
        workers = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.terminate()

    def submit(self, plots: str | None, step: str, document: Mapping[str, Any], sku_id: str | None = None) -> None:
        if not plots:
            return
        module_name, why = plot_module_name(plots)
        if module_name is None:
            self._done[step] = ({}, why)
            return
        try:
            if self._pool is None:  # (this starts multiprocessing's resource tracker, which unblocks
                # SIGINT in this thread when it has started: so the block below comes after)
                self._pool = ProcessPoolExecutor(
                    1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_setup,
                    initargs=(os.getpid(),),
                )
            with _sigint_blocked():  # the first submit spawns the worker
                self._pending[step] = self._pool.submit(
                    render_step_plots, module_name, plots, step, dict(document), sku_id
                )
        except (OSError, RuntimeError, BrokenProcessPool):
            return  # rendered inline at assembly

    def result(self, step: str) -> Rendered | None:
        """The step's rendered plots (waiting for them), or None: render them inline."""
        if step in self._pending:
            try:
                self._done[step] = self._pending.pop(step).result()
            except Exception:  # noqa: BLE001 - the worker died or could not start: render inline
                return None
        return self._done.get(step)
