"""Reading NCCL's own debug log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,TUNING). Stdlib only.

What is read, with the NCCL source line that writes it (NVIDIA/nccl v2.28.9):
- algorithm per call, src/enqueue.cc:741 (rank 0 only):
    `AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}`
  and the older (<= 2.18) form, TRACE/INFO in enqueue.cc: `262144 Bytes -> Algo 0 proto 1 time 54.7`
  and the symmetric-kernel form, src/scheduler/symmetric_sched.cc:229:
    `AllReduce [Symmetric]: 4096 Bytes -> Kernel <name> nchannels ...`
- transports, src/transport/p2p.cc:386-406 and shm.cc:128 (INIT|P2P, INIT|SHM):
    `Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read`, `Channel 00 : 0[0] -> 1[1] via SHM/direct/direct`
- NVLS (multicast), src/transport/nvls.cc:201: `NVLS multicast support is not available on dev 0 ...`
"""

from __future__ import annotations

import re
from typing import Any

# Numeric codes of the old log form: src/include/nccl_common.h (NCCL_ALGO_*, NCCL_PROTO_*).
ALGORITHMS = {0: "TREE", 1: "RING", 2: "COLLNET_DIRECT", 3: "COLLNET_CHAIN", 4: "NVLS", 5: "NVLS_TREE", 6: "PAT"}
PROTOCOLS = {0: "LL", 1: "LL128", 2: "SIMPLE"}

_NEW = re.compile(r"NCCL INFO AllReduce: +(\d+) Bytes -> Algo (\S+) proto (\S+)")
_OLD = re.compile(r"NCCL INFO +(\d+) Bytes -> Algo (\d+) proto (\d+)")
_SYMMETRIC = re.compile(r"NCCL INFO AllReduce \[(Symmetric|Copy Engine)\]: +(\d+) Bytes -> (?:Kernel (\S+)|(\S+))")
_TRANSPORT = re.compile(r"NCCL INFO Channel \d+(?:/\d+)? : \d+\[\d+\] -> \d+\[\d+\](?: \[\w+\])? via (\S+)")
_NVLS = re.compile(r"NCCL INFO (NVLS multicast support is (?:not )?available on dev \d+)")


def parse(text: str) -> dict[str, Any]:
    """Per-size algorithm/protocol counts, the transports seen, and the NVLS support lines."""
    algorithms: dict[int, dict[str, int]] = {}
    transports: set[str] = set()
    nvls: set[str] = set()
    for line in text.splitlines():
        choice = _algorithm(line)
        if choice is not None:
            nbytes, label = choice
            per_size = algorithms.setdefault(nbytes, {})
            per_size[label] = per_size.get(label, 0) + 1
            continue
        match = _TRANSPORT.search(line)
        if match:
            transports.add(match.group(1))
            continue
        match = _NVLS.search(line)
        if match:
            nvls.add(match.group(1))
    return {"algorithms_by_bytes": algorithms, "transports": sorted(transports), "nvls_support": sorted(nvls)}


def _algorithm(line: str) -> tuple[int, str] | None:
    match = _NEW.search(line)
    if match:
        return int(match.group(1)), f"{match.group(2).upper()}/{match.group(3).upper()}"
    match = _SYMMETRIC.search(line)
    if match:
        return int(match.group(2)), f"{match.group(1).upper()}/{match.group(3) or match.group(4)}"
    match = _OLD.search(line)
    if match:
        algo, proto = int(match.group(2)), int(match.group(3))
        return int(match.group(1)), f"{ALGORITHMS.get(algo, f'ALGO{algo}')}/{PROTOCOLS.get(proto, f'PROTO{proto}')}"
    return None
