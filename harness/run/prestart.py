"""`dossier run`'s prestart: the next probes' processes started while the current step measures.

Each probe process pays Python's start, its imports and torch's (about 3 s a process on the H200) before it
measures anything. Where the runner can start a process ahead (`prestart`: the local runner) and the run
measures a GPU (NVML sees one at the start; the health step, once done, counts one visible to CUDA), each
probe step that starts has the next AHEAD probe steps of the plan started behind it: each imports its
package and `warm_imports` (harness.probes.prestart) and waits, touching no GPU, and is released with its
arguments only when its own step starts, the step before it having ended. A prestarted process whose step
does not run (skipped, not ready, another environment) is ended. On a CPU run nothing is prestarted: an
import there would share the CPUs the CPU measurements time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.analysis.health import figures as health_figures
from harness.registry.steps import ProbeStep, RunState, Step
from harness.runners.interface import Runner

AHEAD = 2  # the next step may turn out not ready (all-reduce on one GPU): the one after is started too


def nvml_sees_a_gpu() -> bool:
    """Whether NVML counts a GPU on this host (a driver query: no CUDA context, no process on a GPU)."""
    from harness.runners.select import host_has_nvidia_gpu

    return host_has_nvidia_gpu()[0]


class Prestarts:
    """The plan's probe steps that may be started ahead, and the processes waiting for them."""

    def __init__(
        self,
        plan: Sequence[Step],
        runner: Runner,
        runnable: Callable[[ProbeStep], bool],
        enabled: bool | None = None,
    ) -> None:
        self.runner = runner
        self.order = [
            s for s in plan if isinstance(s, ProbeStep) and s.during is None and s.beside is None and runnable(s)
        ]
        self.start: Callable[..., Any] | None = getattr(runner, "prestart", None)
        self.enabled = callable(self.start) and (nvml_sees_a_gpu() if enabled is None else enabled)
        self.waiting: dict[str, Any] = {}

    def begin(self, step: str, state: RunState) -> None:
        """STEP starts now: the next AHEAD probe steps after it get their processes (on a GPU run)."""
        if self.enabled and "health" in state.documents:
            visible = health_figures.visible_gpus(state.documents["health"])
            if visible is not None and visible[0] < 1:
                self.enabled = False
                self.close()
        if not self.enabled or self.start is None:
            return
        names = [s.step for s in self.order]
        after = self.order[names.index(step) + 1 :] if step in names else []
        for later in after[:AHEAD]:
            if later.step not in self.waiting:
                self.waiting[later.step] = self.start(later.probe, later.warm_imports)

    def take(self, step: str) -> Any:
        """The process waiting for STEP, or None (the step then starts its own)."""
        return self.waiting.pop(step, None)

    def drop(self, step: str) -> None:
        """STEP will not run: its waiting process, if any, is ended."""
        warm = self.waiting.pop(step, None)
        if warm is not None:
            warm.discard()

    def close(self) -> None:
        for name in list(self.waiting):
            self.drop(name)
