"""Host contention, read from /proc while a step runs: what else the host's CPUs did meanwhile.

Torch-free and cheap: one reading is /proc/loadavg, /proc/stat's first lines, /proc/pressure/{cpu,memory,io}
(Linux pressure stall information, where the kernel has it), /proc/meminfo and every /proc/PID/stat
(utime + stime, the parent, the command name). A reading's processes are split into the harness's own
(this process and its descendants, and any process the runner names as a probe's: a container's init
as the docker runner sees it on the host, and its descendants) and the others; of the others only the
CPU ticks each used since the previous reading are kept. A field that cannot be read is
`{"unavailable": reason}` with the cause the kernel gave.

`Sampler` takes a reading when a step starts and when it ends (in the caller's thread, so the window is
exactly the step's), and one every INTERVAL_S in between on a thread of its own (so a process that
comes and goes during the step is seen), spacing its readings out further when one costs more than
MAX_COST_SHARE of a core allows (measured on the 2-core VM with 100 processes, 2026-12-02: 2.7-4.4 ms of CPU a
reading, 0.1-0.2% of a core at one reading every 2 s, and the two readings at each step's ends). The figures are not computed here: harness.analysis.contention
recomputes them from the raw readings, as `dossier verify` does.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from harness.analysis import contention as rules
from harness.bundle import layout
from harness.probes.contract import unavailable, utc_now

PROC = "/proc"
INTERVAL_S = 2.0  # the least time between two readings on the sampler's thread
MAX_COST_SHARE = 0.0025  # at most a quarter of a percent of one core: a reading's CPU time x 400 is the next wait
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
PRESSURE = ("cpu", "memory", "io")
MEMINFO = {"MemAvailable": "available_kib", "MemFree": "free_kib"}

Key = tuple[int, int]  # (pid, start time in clock ticks after boot): a pid the kernel reused is another process
Roots = Callable[[], Iterable[int]]


def _why(path: str, exc: OSError) -> str:
    return f"{path}: {exc.strerror or type(exc).__name__}"


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read()


def loadavg() -> Any:
    """The 1, 5 and 15 minute load averages."""
    try:
        return [float(x) for x in _read(f"{PROC}/loadavg").split()[:3]]
    except OSError as exc:
        return unavailable(_why(f"{PROC}/loadavg", exc))


def cpu_jiffies() -> tuple[Any, int | None]:
    """/proc/stat's all-CPU line (clock ticks since boot by kind) and how many CPUs it counts."""
    try:
        lines = _read(f"{PROC}/stat").splitlines()
    except OSError as exc:
        return unavailable(_why(f"{PROC}/stat", exc)), None
    total = next((line.split()[1:] for line in lines if line.startswith("cpu ")), None)
    if total is None or len(total) < len(CPU_FIELDS):
        return unavailable(f"{PROC}/stat has no all-CPU line of {len(CPU_FIELDS)} fields"), None
    count = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return dict(zip(CPU_FIELDS, map(int, total), strict=False)), count or None


def pressure(resource: str) -> Any:
    """/proc/pressure/RESOURCE's stall totals in microseconds since boot (`some`; `full` where written)."""
    path = f"{PROC}/pressure/{resource}"
    try:
        text = _read(path)
    except OSError as exc:
        return unavailable(_why(path, exc) + " (the kernel has no pressure stall information: CONFIG_PSI off or psi=0)")
    found = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        fields = dict(part.split("=", 1) for part in rest.split() if "=" in part)
        if kind in ("some", "full") and "total" in fields:
            found[f"{kind}_us"] = int(fields["total"])
    return found or unavailable(f"{path} has no `some ... total=` line")


def memory() -> Any:
    """MemAvailable and MemFree, in KiB."""
    try:
        lines = _read(f"{PROC}/meminfo").splitlines()
    except OSError as exc:
        return unavailable(_why(f"{PROC}/meminfo", exc))
    found = {}
    for line in lines:
        name, _, rest = line.partition(":")
        if name in MEMINFO and rest.split():
            found[MEMINFO[name]] = int(rest.split()[0])
    return found if len(found) == len(MEMINFO) else unavailable(f"{PROC}/meminfo lacks {', '.join(MEMINFO)}")


def processes() -> dict[Key, tuple[int, str, int]]:
    """Every process the kernel lists: (pid, start ticks) -> (parent pid, command name, utime + stime
    ticks). A process that ends while it is read is left out; raises OSError when /proc cannot be listed."""
    found = {}
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue  # it ended between the listing and the read
        head, _, tail = data.rpartition(b")")
        fields = tail.split()
        if len(fields) < 20:
            continue
        comm = head.partition(b"(")[2].decode("utf-8", "replace")
        found[(int(name), int(fields[19]))] = (int(fields[1]), comm, int(fields[11]) + int(fields[12]))
    return found


def descendants(table: dict[Key, tuple[int, str, int]], roots: set[int]) -> set[Key]:
    """The processes of TABLE whose pid is in ROOTS, and every process below them."""
    children: dict[int, list[Key]] = {}
    for key, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(key)
    own = {key for key in table if key[0] in roots}
    stack = [key[0] for key in own]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in own:
                own.add(child)
                stack.append(child[0])
    return own


class Reader:
    """Consecutive readings of one window: each one's processes relative to the reading before."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self.own: set[Key] = set()  # once the harness's, always (an orphaned probe worker stays its own)
        self.before: dict[Key, tuple[int, str, int]] | None = None
        self.started: float | None = None

    def reading(self) -> dict[str, Any]:
        now = time.monotonic()
        self.started = now if self.started is None else self.started
        jiffies, _ = cpu_jiffies()
        sample: dict[str, Any] = {
            "t_s": round(now - self.started, 6),
            "loadavg": loadavg(),
            "cpu_jiffies": jiffies,
            "pressure": {resource: pressure(resource) for resource in PRESSURE},
            "memory": memory(),
        }
        try:
            table = processes()
        except OSError as exc:
            sample["own_ticks"] = sample["others"] = unavailable(_why(PROC, exc))
            return sample
        self.own |= descendants(table, {os.getpid(), *self.roots()})
        sample["own_ticks"], sample["others"] = self._since_before(table)
        self.before = table
        return sample

    def _since_before(self, table: dict[Key, tuple[int, str, int]]) -> tuple[int, list[dict[str, Any]]]:
        """The harness's ticks and each other process's since the reading before (none at the first)."""
        if self.before is None:
            return 0, []
        own, others = 0, []
        for key, (_, comm, ticks) in sorted(table.items()):
            used = ticks - self.before[key][2] if key in self.before else ticks  # a new process: all of it
            if used <= 0:
                continue
            if key in self.own:
                own += used
            else:
                others.append({"pid": key[0], "comm": comm, "ticks": used})
        return own, others


class Sampler:
    """One step's window: a reading at start() and at stop() in the caller's thread, and one about every
    INTERVAL_S in between on a daemon thread."""

    def __init__(self, step: str, roots: Roots = tuple) -> None:
        self.step = step
        self.reader = Reader(roots)
        self.samples: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"host-load-{step}", daemon=True)
        self.cost_s = 0.0
        self.started_at = ""

    def _take(self) -> float:
        """One reading (appended under the lock); its CPU time."""
        began = time.thread_time()
        with self.lock:
            self.samples.append(self.reader.reading())
        spent = time.thread_time() - began
        self.cost_s += spent
        return spent

    def _loop(self) -> None:
        wait = INTERVAL_S
        while not self.done.wait(wait):
            wait = max(INTERVAL_S, self._take() / MAX_COST_SHARE)

    def start(self) -> Sampler:
        self.started_at = utc_now()
        self._take()
        self.thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        """The window's entry of host-contention.json: its readings and their summary."""
        self.done.set()
        self.thread.join()
        self._take()
        entry = {
            "step": self.step,
            "started_at": self.started_at,
            "sampler_cpu_s": round(self.cost_s, 6),
            "samples": self.samples,
        }
        return entry


def sampler_facts() -> dict[str, Any]:
    """What every window's figures are computed with: the clock tick, the CPUs /proc/stat counts, the
    sampling rule, and how the harness's own processes are told apart."""
    _, count = cpu_jiffies()
    try:
        tick: Any = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError) as exc:
        tick = unavailable(f"sysconf(SC_CLK_TCK): {exc}")
    return {
        "clock_ticks_per_s": tick,
        "cpu_count": count if count is not None else unavailable(f"{PROC}/stat lists no cpuN line"),
        "interval_s": INTERVAL_S,
        "max_cost_share": MAX_COST_SHARE,
        "own": rules.OWN_RULE,
        "busy_rule": rules.BUSY_RULE,
    }


class Window:
    """What one step's window gave: its entry of host-contention.json once the step has ended."""

    def __init__(self) -> None:
        self.entry: dict[str, Any] | None = None


class HostLoad:
    """The windows of one `dossier run`; ROOTS gives the pids of the runner's probes that are not the
    dossier process's descendants (a container's init on the host: the docker runner's probe_pids)."""

    def __init__(self, roots: Roots = tuple) -> None:
        self.roots = roots
        self.facts = sampler_facts()
        self.windows: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def window(self, step: str) -> Iterator[Window]:
        """The host read while the body runs STEP; its entry in the yielded Window afterwards."""
        window, sampler = Window(), Sampler(step, self.roots).start()
        try:
            yield window
        finally:
            window.entry = sampler.stop()

    def keep(self, window: Window) -> None:
        if window.entry is not None:
            self.windows.append(window.entry)

    def document(self) -> dict[str, Any]:
        return document(self.windows, self.facts)


NOT_SAMPLED = "this run record holds no host readings (re-made from recorded documents, not sampled by dossier run)"


def document(windows: list[dict[str, Any]], facts: dict[str, Any]) -> dict[str, Any]:
    """host-contention.json: the sampler's facts and every window, each with its summary (recomputed by
    harness.analysis.contention from the readings, as verify does)."""
    return {
        "format": rules.FORMAT,
        "format_version": layout.FORMAT_VERSION,
        "sampler": facts,
        "steps": [{**w, "summary": rules.summary(w, facts)} for w in windows],
    }


def not_sampled(why: str = NOT_SAMPLED) -> dict[str, Any]:
    """host-contention.json of a run whose host was not sampled, saying why."""
    return {**rules.not_sampled(why), "format_version": layout.FORMAT_VERSION}
