"""One all-reduce rank: `python -m harness.probes.collective.worker CONFIG.json`.

Started by the all-reduce probe (collective/supervisor.py), never by hand. The rank, world size
and rendezvous come from the torchrun-style environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT) that the supervisor sets. Results travel as JSON lines appended
to `<events_dir>/rank<R>.jsonl` and flushed after every line, so the supervisor keeps every
completed point even when this process is killed.

Events: ready, size_started {bytes}, point {bytes, elements, iterations, warmup_iterations,
rank_times_us, rank_median_time_us} (rank 0 only), error {kind, message}, done.

Measurement of one size:
1. verify: fill the buffer with a rank-dependent pattern (rank+1) * (1 + i mod 5), all-reduce,
   and compare with the exact sum n(n+1)/2 * (1 + i mod 5) (small integers: exact in fp32);
2. warm up on a zeroed buffer (timed in place: repeated sums of zeros stay finite), and size
   the iteration count from the warm-up median and the time budget, agreed across ranks
   with an all-reduce MAX of a 3-element float64 tensor (24 bytes: never a sweep size, which
   are powers of two);
3. time each call (CUDA events around each call on the current stream for NCCL, recorded back
   to back and synchronised once; perf_counter around each blocking call for gloo), gather every
   rank's per-call times (all ranks time the same agreed count), and take each rank's median of
   them: the per-call times are kept so the medians can be recomputed from them;
4. verify again with the pattern, so a corruption during the timed calls is also caught.
"""

from __future__ import annotations

import datetime as _dt
import faulthandler
import json
import math
import os
import signal
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from harness.probes.lifetime import die_with_parent
from harness.probes.timing import Clock

CONTROL_ELEMENTS = 3  # 24-byte float64 control messages: never a sweep size (powers of two) in NCCL's log
PATTERN_PERIOD = 5


class WrongResult(RuntimeError):
    """The all-reduce returned something other than the exact sum."""


class Events:
    """Append-only JSON lines, flushed per line."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process

    def emit(self, event: str, **fields: Any) -> None:
        fields.update(event=event, at=time.time())
        self._fh.write(json.dumps(fields, sort_keys=True, allow_nan=False) + "\n")
        self._fh.flush()


def apply_fault(fault: dict[str, Any] | None, rank: int, nbytes: int) -> None:
    """Test hook (RIG_DOSSIER_ALLREDUCE_FAULT): a real death or a real hang at one size."""
    if not fault or fault["rank"] != rank or fault["bytes"] != nbytes:
        return
    if fault["kind"] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    while fault["kind"] == "hang":
        time.sleep(3600)


class Rank:
    """One process of the collective: device, process group and the per-size measurement."""

    def __init__(self, config: dict[str, Any], events: Events) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.config, self.events = torch, dist, config, events
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.nccl = config["backend"] == "nccl"
        if self.nccl:
            count = torch.cuda.device_count()
            index = int(os.environ.get("LOCAL_RANK", "0")) % max(count, 1)
            torch.cuda.set_device(index)
            self.device = torch.device("cuda", index)
        else:
            self.device = torch.device("cpu")

    def init(self) -> None:
        kwargs: dict[str, Any] = {
            "backend": self.config["backend"],
            "init_method": "env://",
            "rank": self.rank,
            "world_size": self.world,
            "timeout": _dt.timedelta(seconds=self.config["collective_timeout_s"]),
        }
        if self.nccl:
            kwargs["device_id"] = self.device  # eager NCCL communicator, bound to this GPU
        self.dist.init_process_group(**kwargs)
        self.control(0.0)  # the first collective sets up connections; keep it out of the sweep
        name = self.torch.cuda.get_device_name(self.device) if self.nccl else "cpu"
        self.events.emit("ready", device=str(self.device), device_name=name, torch_version=self.torch.__version__)

    def control(self, value: float, op: Any = None) -> float:
        """A 24-byte all-reduce (MAX by default) of one value; every rank gets the same answer."""
        tensor = self.torch.zeros(CONTROL_ELEMENTS, dtype=self.torch.float64, device=self.device)
        tensor[0] = value
        self.dist.all_reduce(tensor, op=op or self.dist.ReduceOp.MAX)
        return float(tensor[0].item())

    def sync(self) -> None:
        if self.nccl:
            self.torch.cuda.synchronize(self.device)

    def verify(self, buf: Any, pattern: Any, nbytes: int, when: str) -> None:
        buf.copy_(pattern).mul_(self.rank + 1)
        self.dist.all_reduce(buf)
        expected = pattern * (self.world * (self.world + 1) / 2)
        self.sync()
        if not self.torch.equal(buf, expected):
            index = int((buf != expected).nonzero()[0].item())
            raise WrongResult(
                f"rank {self.rank}: all-reduce of {nbytes} bytes ({when} timing) is wrong at element "
                f"{index}: got {buf[index].item()!r}, expected {expected[index].item()!r}"
            )

    def time_calls(self, buf: Any, calls: int) -> list[float]:
        """Seconds per all-reduce call, one value per call (CUDA events around each call with NCCL,
        perf_counter around each blocking call with gloo: harness.probes.timing)."""
        clock = Clock(self.torch, cuda=self.nccl, device=self.device if self.nccl else None)
        return clock.each(lambda _index: self.dist.all_reduce(buf), calls)

    def measure(self, nbytes: int) -> dict[str, Any]:
        torch, cfg = self.torch, self.config
        count = nbytes // 4
        buf = torch.empty(count, dtype=torch.float32, device=self.device)
        pattern = (torch.arange(count, dtype=torch.int32, device=self.device) % PATTERN_PERIOD + 1).to(torch.float32)
        self.verify(buf, pattern, nbytes, "before")
        buf.zero_()
        warm = self.time_calls(buf, cfg["warmup"])
        estimate = self.control(statistics.median(warm))
        iterations = min(cfg["max_iters"], max(cfg["min_iters"], math.ceil(cfg["time_budget_s"] / max(estimate, 1e-9))))
        times_us = self.gather_times([t * 1e6 for t in self.time_calls(buf, iterations)])
        self.verify(buf, pattern, nbytes, "after")
        del buf, pattern
        return {
            "bytes": nbytes,
            "elements": count,
            "iterations": iterations,
            "warmup_iterations": cfg["warmup"],
            "rank_times_us": times_us,
            "rank_median_time_us": [statistics.median(t) for t in times_us],
        }

    def gather_times(self, mine: list[float]) -> list[list[float]]:
        """Every rank's per-call times (us), in rank order; every rank timed the same agreed count."""
        torch = self.torch
        local = torch.tensor(mine, dtype=torch.float64, device=self.device)
        gathered = [torch.zeros_like(local) for _ in range(self.world)]
        self.dist.all_gather(gathered, local)
        return [g.cpu().tolist() for g in gathered]

    def sweep(self) -> None:
        for nbytes in self.config["sizes"]:
            self.events.emit("size_started", bytes=nbytes)
            apply_fault(self.config.get("fault"), self.rank, nbytes)
            point = self.measure(nbytes)
            if self.rank == 0:
                self.events.emit("point", **point)
        self.dist.destroy_process_group()


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text())
    die_with_parent()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the supervisor asks for stacks on a timeout
    rank = int(os.environ["RANK"])
    events = Events(Path(config["events_dir"]) / f"rank{rank}.jsonl")
    try:
        worker = Rank(config, events)
        worker.init()
        worker.sweep()
    except WrongResult as exc:
        events.emit("error", kind="wrong_result", message=str(exc))
        return 3
    except Exception as exc:  # noqa: BLE001 - reported to the supervisor, traceback on stderr
        traceback.print_exc()
        events.emit("error", kind="error", message=f"{type(exc).__name__}: {exc}"[:2000])
        return 1
    events.emit("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
