"""Checkpoints on the host: pinned manifests, a hash-checked fetcher, and tensor indexes.

    manifest   packaged manifests (harness/data/checkpoints/*.json), validated by
               schemas/checkpoint-manifest.schema.json
    cache      the content-addressed blob cache (BLOBS/sha256/<hex>)
    sources    where a file can come from: cache, a local path, an installed package, the Hub
    fetch      tries the sources in that order, hashes what each gives, refuses a mismatch
    tensors    byte ranges and sha256 of the tensors the probe will read
    resolve    `plan` and `probe_args_for`: from a --checkpoint/--tensor request to the probe's argv

The probe itself (harness/probes/precision.py) needs none of this: it gets a verified path
and the tensor index, and re-checks each tensor's sha256 with plain file reads.
"""

from harness.checkpoints.resolve import Plan, plan, probe_args_for

__all__ = ["Plan", "plan", "probe_args_for"]
