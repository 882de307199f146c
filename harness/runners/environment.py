"""The environment variables a run records: an allowlist, never the whole environment.

A signed bundle must not leak secrets, so a variable is kept only when its name has an
allowed prefix and no secret-looking word (HF_TOKEN is dropped).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

ALLOWED_PREFIXES = ("CUDA_", "NCCL_", "TORCH_", "NVIDIA_", "HF_", "PYTORCH_", "OMP_", "SLURM_")
ALLOWED_NAMES = frozenset(
    {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "HUGGINGFACE_HUB_CACHE", "MKL_NUM_THREADS"}
)
SECRET_WORDS = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|(^|_)KEY($|_)", re.I)


def is_recorded(name: str) -> bool:
    if SECRET_WORDS.search(name):
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def recorded_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allowlisted variables of `environ` (default: this process), sorted by name."""
    source = os.environ if environ is None else environ
    return {name: source[name] for name in sorted(source) if is_recorded(name)}
