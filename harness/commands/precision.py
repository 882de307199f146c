"""`dossier precision`: the M1T3 probe on three pinned checkpoint tensors, and its table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import paths
from harness.checkpoints import plan, probe_args_for  # probe_args_for: for the orchestrator
from harness.checkpoints.cache import ENV_VAR
from harness.commands._probe import add_common_options, run_probe
from harness.render.precision import render

__all__ = ["add_parser", "handle", "probe_args_for"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "precision", help="FP-like vs symmetric INT8/INT4 error of real checkpoint tensors (precision.json)",
        description="Fetch a checkpoint file by sha256 (cache, a local path, an installed package, then the "
                    "Hub pinned to a commit), read only the named tensors and measure each one separately: "
                    "statistics, then fp16, bf16, fp8 e4m3fn/e5m2 (unscaled and per-tensor scaled), int8 "
                    "(per tensor, per output channel) and int4 (per tensor, per channel, per group of 128). "
                    "Writes precision.json and a Markdown table with explanations built from the numbers. "
                    "Default: sentence-transformers/all-MiniLM-L6-v2's embedding, attention query and MLP "
                    "intermediate weights.")
    parser.add_argument("--checkpoint", metavar="REPO@REVISION[:FILE] | PATH",
                        help="a Hub file pinned to a 40-hex commit (default file model.safetensors), or a local "
                             ".safetensors file or folder (default: the packaged all-MiniLM-L6-v2 manifest)")
    parser.add_argument("--tensor", action="append", default=[], metavar="ROLE=NAME",
                        help="a tensor to measure and its role, e.g. mlp_projection=encoder.layer.0.intermediate."
                             "dense.weight (repeat; default: the manifest's embedding, attention_projection, "
                             "mlp_projection)")
    parser.add_argument("--file-sha256", metavar="HEX",
                        help="the whole file's sha256; required for a REPO@REVISION no manifest pins")
    parser.add_argument("--offline", action="store_true", default=None,
                        help="never contact the Hub (also implied by HF_HUB_OFFLINE=1)")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help=f"blob cache root (default: ${ENV_VAR}, else ~/.cache/rig-dossier); files live "
                             "in DIR/blobs/sha256/<hex>")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where the probe computes (auto: CUDA when present); the numbers are the same")
    parser.add_argument("--markdown", type=Path, metavar="PATH",
                        help="where to write the Markdown table (default: the output path with .md)")
    add_common_options(parser, default_output="precision.json", timeout_s=600)
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    markdown = args.markdown or args.output.with_suffix(".md")
    paths.output_files([("--output", args.output), ("--markdown", markdown)])  # before fetching
    if args.cache_dir is not None:
        paths.output_dir(args.cache_dir, "--cache-dir")
    checked = plan(args.checkpoint, args.tensor, args.file_sha256, args.offline, args.cache_dir)
    print(f"checkpoint {checked.provenance['label']}: sha256 {checked.provenance['file_sha256']} "
          f"from {checked.provenance['source']}", file=sys.stderr)
    outcome = run_probe("precision", checked.probe_args(args.device), args, mounts=(str(checked.path),))
    paths.write_output(markdown, render(outcome.document), "--markdown")
    print(f"wrote {markdown}", file=sys.stderr)
    return 0
