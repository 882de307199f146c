"""The lab's steps as data: what `dossier run` runs, in order, and how each gets its arguments.

A probe step runs `python -m harness.probes.PROBE ARGS` through the runner; a host step computes
a document on the host from earlier documents. A step whose arguments need an earlier result
that is missing raises NotReady and is recorded as not run, with why.
"""

from __future__ import annotations

import functools
import importlib
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.errors import DossierError
from harness.registry.spec import StepArgs


class NotReady(Exception):
    """The step cannot run: something it needs does not exist yet (the message says what)."""


class StepSetupFailed(Exception):
    """Preparing the step failed for a real reason (e.g. the checkpoint could not be fetched)."""


def analysis_module(name: str):
    """harness.analysis.NAME, or NotReady when it is not in this build."""
    try:
        return importlib.import_module(f"harness.analysis.{name}")
    except ModuleNotFoundError as exc:
        if exc.name in (f"harness.analysis.{name}",):
            raise NotReady(f"harness/analysis/{name}.py is not in this build") from exc
        raise


class RunState:
    """The documents completed so far, by step, and their recomputed headline figures."""

    def __init__(self) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        self.analysis_names: dict[str, str] = {}

    def add(self, step: str, document: dict[str, Any], analysis: str | None) -> None:
        self.documents[step] = document
        if analysis:
            self.analysis_names[step] = analysis

    def document(self, step: str, why_needed: str) -> dict[str, Any]:
        if step not in self.documents:
            raise NotReady(f"needs {why_needed} from the {step} step, which did not complete")
        return self.documents[step]

    def headlines(self, step: str, why_needed: str) -> dict[str, Any]:
        document = self.document(step, why_needed)
        return analysis_module(self.analysis_names.get(step, step)).headlines(document)


@dataclass(frozen=True)
class ProbeStep:
    step: str  # the step's id: raw/STEP.json, logs/STEP.*, plots/STEP/
    probe: str  # module name under the runner's probe package
    title: str
    lab_step: str
    schema: str
    analysis: str | None
    plots: str | None
    timeout_s: float
    arguments: Callable[[RunState], StepArgs] = lambda state: StepArgs()
    # True when `arguments` needs no earlier step: it is then prepared in the background from
    # the run's start (e.g. fetching and hashing a checkpoint while other probes run).
    independent: bool = False

    kind = "probe"


@dataclass(frozen=True)
class HostStep:
    step: str
    title: str
    lab_step: str
    schema: str
    needs: tuple[str, ...]
    function: str  # "module:function", called with the needed documents in order
    analysis: str | None = None
    plots: str | None = None

    kind = "host"

    def compute(self, state: RunState) -> dict[str, Any]:
        documents = [state.document(need, f"the {need} document") for need in self.needs]
        module_name, function_name = self.function.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                raise NotReady(f"{module_name.replace('.', '/')}.py is not in this build") from exc
            raise
        return getattr(module, function_name)(*documents)


Step = ProbeStep | HostStep


def sustained_bandwidth_gbps(state: RunState) -> float:
    """The sustained median the roofline is fed: the median of the three repeat medians."""
    figures = state.headlines("bandwidth", "the sustained bandwidth median")
    if isinstance(figures.get("repeat_median_gbps"), (int, float)):
        return float(figures["repeat_median_gbps"])
    medians = figures.get("repeat_medians_gbps") or []
    if not medians:
        raise NotReady("the bandwidth step recorded no repeat medians")
    return float(statistics.median(medians))


def measured_device(state: RunState) -> str:
    return str(state.headlines("bandwidth", "the device the bandwidth ran on").get("device", "cpu"))


def roofline_arguments(state: RunState) -> StepArgs:
    bandwidth = sustained_bandwidth_gbps(state)
    device = measured_device(state)
    dtype = "bf16" if device == "cuda" else "fp32"
    return StepArgs(("--bandwidth-gbps", f"{bandwidth:.6g}", "--dtype", dtype),
                    inputs={"bandwidth_gbps": bandwidth,
                            "bandwidth_from": "median of the bandwidth step's three repeat medians",
                            "dtype_from": f"bandwidth ran on {device}: "
                                          + ("bf16 tensor cores" if dtype == "bf16" else "fp32 on the CPU")})


@dataclass(frozen=True)
class CheckpointRequest:
    """Which checkpoint the precision step measures: the default manifest unless given
    (`dossier run --checkpoint ... --tensor ROLE=NAME --file-sha256 HEX`, as `dossier precision`)."""

    checkpoint: str | None = None
    tensors: tuple[str, ...] = ()
    file_sha256: str | None = None
    # The request already resolved (a harness.checkpoints.Plan: file hashed, header parsed, tensors
    # indexed) by `dossier run` before any probe, so that input that cannot work is refused first.
    resolved: Any = field(default=None, compare=False)

    @property
    def given(self) -> bool:
        """Whether the user asked for anything but the default checkpoint."""
        return bool(self.checkpoint or self.tensors or self.file_sha256)

    def describe(self) -> str:
        return f"--checkpoint {self.checkpoint}" if self.checkpoint else "the default checkpoint"


# The shapes the established tool (mamf-finder) reported its best GEMMs at on the H200
# (bench/RESULTS.md): enough to judge each dtype against its known-good, in a few seconds each.
DTYPE_CHECK_SHAPES = ("4096x4096x8192", "4096x8192x8192", "8192x8192x8192")
DTYPE_CHECKS = ("fp8", "fp16", "tf32", "fp32")


def dtype_check_arguments(state: RunState, dtype: str) -> StepArgs:
    """A short roofline in one more dtype (GPU only), so acceptance can judge every dtype's GEMM."""
    device = measured_device(state)
    if device != "cuda":
        raise NotReady(f"a GPU check: bandwidth ran on {device}, and the roofline step already "
                       f"measured this device's own dtype")
    bandwidth = sustained_bandwidth_gbps(state)
    return StepArgs(("--bandwidth-gbps", f"{bandwidth:.6g}", "--dtype", dtype, "--no-fusion",
                     "--no-default-shapes", "--shapes", *DTYPE_CHECK_SHAPES),
                    inputs={"bandwidth_gbps": bandwidth,
                            "shapes_from": "the shapes of mamf-finder's best results on the H200"})


def precision_arguments(state: RunState, request: CheckpointRequest = CheckpointRequest()) -> StepArgs:
    if request.resolved is not None:
        return _precision_step_args(request.resolved.probe_args(), request.resolved.provenance, request)
    from harness import checkpoints  # the checkpoint fetch and index (no torch)

    try:
        probe_args, provenance = checkpoints.probe_args_for(request.checkpoint, list(request.tensors),
                                                            file_sha256=request.file_sha256)
    except DossierError as exc:
        raise StepSetupFailed(f"could not resolve {request.describe()}: {exc.diagnostics()}") from exc
    return _precision_step_args(probe_args, provenance, request)


def _precision_step_args(probe_args, provenance, request: CheckpointRequest) -> StepArgs:
    probe_args = [str(a) for a in probe_args]
    files = tuple(probe_args[i + 1] for i, a in enumerate(probe_args[:-1]) if a == "--file")
    return StepArgs(tuple(probe_args), inputs={"checkpoint_from": request.describe()},
                    checkpoint=dict(provenance), mounts=files)


def gpu_count(state: RunState) -> tuple[int, str]:
    """How many GPUs the probes saw, and from which document."""
    if "health" in state.documents:
        count = state.headlines("health", "the device count").get("device_count")
        if isinstance(count, int):
            return count, f"health found {count} device(s)"
    if "bandwidth" in state.documents:
        device = measured_device(state)
        return (1 if device == "cuda" else 0), f"bandwidth ran on {device}"
    return 0, "neither health nor bandwidth completed, so no GPU is assumed"


def allreduce_arguments(state: RunState) -> StepArgs:
    count, evidence = gpu_count(state)
    if count >= 1:
        return StepArgs(("--backend", "nccl"), inputs={"backend_from": evidence})
    return StepArgs(("--backend", "gloo", "--world-size", "2"),
                    inputs={"backend_from": f"{evidence}: two gloo processes on the CPU"})


def lab_plan(checkpoint: CheckpointRequest = CheckpointRequest()) -> tuple[Step, ...]:
    """The lab's steps in order; `checkpoint` picks what the precision step measures."""
    return (
        ProbeStep("health", "health", "Health and toolchain at idle", "1 (M1T5 at idle)",
                  schema="health", analysis="health", plots="health", timeout_s=300),
        ProbeStep("bandwidth", "bandwidth", "HBM bandwidth sweep and three repeats", "2-3 (M1T1)",
                  schema="bandwidth", analysis="bandwidth", plots="bandwidth", timeout_s=900,
                  arguments=lambda state: StepArgs(("--repeats", "3"))),
        ProbeStep("roofline", "roofline", "Roofline fed the sustained median", "4 (M1T2)",
                  schema="roofline", analysis="roofline", plots="roofline", timeout_s=900,
                  arguments=roofline_arguments),
        *(ProbeStep(f"roofline-{dtype}", "roofline", f"GEMM rate in {dtype} (for acceptance)", "4 (M1T2)",
                    schema="roofline", analysis="roofline", plots=None, timeout_s=300,
                    arguments=functools.partial(dtype_check_arguments, dtype=dtype))
          for dtype in DTYPE_CHECKS),
        ProbeStep("precision", "precision", "Precision of three real checkpoint tensors", "5 (M1T3)",
                  schema="precision", analysis="precision", plots="precision", timeout_s=900,
                  arguments=functools.partial(precision_arguments, request=checkpoint),
                  independent=True),
        ProbeStep("allreduce", "allreduce", "All-reduce curves (or the one-GPU limitation)", "6 (M1T4)",
                  schema="allreduce", analysis="allreduce", plots="allreduce", timeout_s=900,
                  arguments=allreduce_arguments),
        ProbeStep("health-load", "health", "Health under load", "7 (M1T5 under load)",
                  schema="health", analysis="health", plots="health", timeout_s=300,
                  arguments=lambda state: StepArgs(("--under-load", "8"))),
        HostStep("health-diff", "Idle versus load diff", "7 (diff)", schema="health-diff",
                 needs=("health", "health-load"), function="harness.analysis.health_diff:diff"),
    )


LAB_PLAN: tuple[Step, ...] = lab_plan()


def step_ids(plan: tuple[Step, ...] = LAB_PLAN) -> list[str]:
    return [s.step for s in plan]
