"""Host contention during a step, recomputed from the raw /proc readings `dossier run` recorded while
the step ran (host-contention.json, harness.run.host_load): what the other processes' CPU time, the
hypervisor's steal, the load average, pressure stalls and free memory were over the step's window, and
whether the host was busy enough that a rate it measured says more about its neighbours than about the
hardware. Standard library only: `dossier verify` recomputes every summary with it, the lab verdict,
acceptance, `dossier diff`/`reproduce` and the fleet read it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from harness.analysis.memo import per_document

FORMAT = "rig-dossier/host-contention"

# The harness's own convention (issue 35), for a host where a probe uses the CPUs it finds: a tenth of
# the host's CPUs busy with other work over a step is enough to move a CPU rate by more than the lab's 5%
# repeat bound (on the 2-core VM, two busy processes took 17-42% off the copy rate's repeats), and steal
# of 5% is a hypervisor taking as much from every core. Below both, other work is background.
BUSY_OTHERS_SHARE = 0.10
BUSY_STEAL_SHARE = 0.05
TOP = 5  # the other processes named per step, by CPU time
BUSY_RULE = (
    f"busy when other processes used at least {BUSY_OTHERS_SHARE:.0%} of the host's CPUs over the step's "
    f"window, or the hypervisor stole at least {BUSY_STEAL_SHARE:.0%} of its CPU time (issue 35's convention)"
)
OWN_RULE = (
    "the harness's own processes: the dossier process and its descendants (the local runner's probes, the "
    "plot worker), and a container's init as the docker runner sees it on the host with its descendants; "
    "every other process the kernel lists is another's"
)
BUSY, IDLE, UNKNOWN = "busy", "idle", "unknown"


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _gone(why: str) -> dict[str, str]:
    return {"unavailable": why}


def _why(value: Any) -> str | None:
    return str(value["unavailable"]) if isinstance(value, dict) and "unavailable" in value else None


def _first_unreadable(samples: Sequence[Mapping[str, Any]], key: str) -> str | None:
    return next((_why(s.get(key)) for s in samples if _why(s.get(key))), None)


def _window(samples: Sequence[Mapping[str, Any]]) -> float:
    return float(samples[-1]["t_s"] - samples[0]["t_s"]) if len(samples) >= 2 else 0.0


def processes(samples: Sequence[Mapping[str, Any]], tick: Any, window: float, cpus: Any) -> dict[str, Any]:
    """Other processes' and the harness's CPU over the window, and the busiest others by CPU time."""
    why = _first_unreadable(samples, "others") or _first_unreadable(samples, "own_ticks")
    if why is None and not _number(tick):
        why = _why(tick) or "no clock tick recorded"
    if why is None and window <= 0:
        why = "a window of 0 s: the step ended as it began"
    if why is not None:
        return {key: _gone(why) for key in ("others_cores", "others_share", "own_cores", "top")}
    used: dict[tuple[int, str], int] = {}
    for sample in samples:
        for proc in sample["others"]:
            used[(proc["pid"], proc["comm"])] = used.get((proc["pid"], proc["comm"]), 0) + proc["ticks"]
    others = sum(used.values()) / tick / window
    busiest = sorted(used.items(), key=lambda item: (-item[1], item[0]))[:TOP]
    return {
        "others_cores": others,
        "others_share": others / cpus if _number(cpus) else _gone(_why(cpus) or "no CPU count"),
        "own_cores": sum(s["own_ticks"] for s in samples) / tick / window,
        "top": [
            {
                "pid": pid,
                "comm": comm,
                "cpu_s": ticks / tick,
                "cores": ticks / tick / window,
                **({"share": ticks / tick / window / cpus} if _number(cpus) else {}),
            }
            for (pid, comm), ticks in busiest
        ],
    }


def jiffies(samples: Sequence[Mapping[str, Any]], cpus: Any) -> dict[str, Any]:
    """The host's busy CPUs and the steal share over the window, from /proc/stat's first and last reading."""
    first, last = samples[0].get("cpu_jiffies"), samples[-1].get("cpu_jiffies")
    why = _why(first) or _why(last)
    if why is None and not (isinstance(first, dict) and isinstance(last, dict)):
        why = "no /proc/stat reading recorded"
    if why is None and len(samples) < 2:
        why = "one reading: no window"
    delta = {k: last[k] - first[k] for k in last} if why is None and isinstance(first, dict) and last else {}
    total = sum(delta.values())
    if why is None and total <= 0:
        why = "/proc/stat counted no clock tick over the window"
    if why is not None:
        return {"host_busy_cores": _gone(why), "steal_share": _gone(why)}
    busy = (total - delta["idle"] - delta["iowait"]) / total
    return {
        "host_busy_cores": busy * cpus if _number(cpus) else _gone(_why(cpus) or "no CPU count"),
        "steal_share": delta["steal"] / total,
    }


def pressure(samples: Sequence[Mapping[str, Any]], window: float) -> dict[str, Any]:
    """Each resource's stall share of the window (`some`: at least one task waited; `full`: all did)."""
    shares: dict[str, Any] = {}
    for resource in ("cpu", "memory", "io"):
        first, last = (s.get("pressure", {}).get(resource) for s in (samples[0], samples[-1]))
        why = _why(first) or _why(last) or (None if window > 0 else "a window of 0 s")
        shares[resource] = (
            _gone(why)
            if why
            else {
                f"{kind}_share": (last[f"{kind}_us"] - first[f"{kind}_us"]) / 1e6 / window
                for kind in ("some", "full")
                if f"{kind}_us" in first and f"{kind}_us" in last
            }
        )
    return shares


def load_and_memory(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The highest 1-minute load average and the least memory available and free over the readings."""
    loads = [s["loadavg"][0] for s in samples if isinstance(s.get("loadavg"), list)]
    memory = [s["memory"] for s in samples if isinstance(s.get("memory"), dict) and not _why(s["memory"])]
    no_load = _first_unreadable(samples, "loadavg") or "no reading"
    no_memory = _first_unreadable(samples, "memory") or "no reading"
    return {
        "load1_max": max(loads) if loads else _gone(no_load),
        "mem_available_min_mib": min(m["available_kib"] for m in memory) / 1024 if memory else _gone(no_memory),
        "mem_free_min_mib": min(m["free_kib"] for m in memory) / 1024 if memory else _gone(no_memory),
    }


def state(figures: Mapping[str, Any]) -> tuple[str, str]:
    """busy, idle or unknown by BUSY_RULE, and why in plain words."""
    others, steal = figures.get("others_share"), figures.get("steal_share")
    found = []
    if _number(others) and others >= BUSY_OTHERS_SHARE:
        found.append(f"other processes used {others:.0%} of the CPUs (at least {BUSY_OTHERS_SHARE:.0%} is busy)")
    if _number(steal) and steal >= BUSY_STEAL_SHARE:
        found.append(f"the hypervisor stole {steal:.1%} of the CPU time (at least {BUSY_STEAL_SHARE:.0%} is busy)")
    if found:
        return BUSY, "; ".join(found)
    if not _number(others):
        return UNKNOWN, f"other processes' CPU time unreadable: {_why(others)}"
    steal_text = f"steal {steal:.1%}" if _number(steal) else f"steal unreadable ({_why(steal)})"
    return IDLE, f"other processes used {others:.0%} of the CPUs, {steal_text}: under the busy rule"


def summary(entry: Mapping[str, Any], sampler: Mapping[str, Any]) -> dict[str, Any]:
    """One window's figures, from its readings and the sampler's facts (its clock tick and CPU count)."""
    samples = entry["samples"]
    window, cpus = _window(samples), sampler.get("cpu_count")
    figures: dict[str, Any] = {"samples": len(samples), "window_s": window, "cpu_count": cpus}
    figures.update(processes(samples, sampler.get("clock_ticks_per_s"), window, cpus))
    figures.update(jiffies(samples, cpus))
    figures["pressure"] = pressure(samples, window)
    figures.update(load_and_memory(samples))
    figures["state"], figures["why"] = state(figures)
    return figures


def not_sampled_reason(document: Any) -> str | None:
    """Why a bundle's host-contention.json holds no window (its sampler unavailable), else None."""
    return _why(document.get("sampler")) if isinstance(document, dict) else "no host-contention.json"


@per_document
def summaries(document: Any) -> dict[str, dict[str, Any]]:
    """step -> its window's figures, recomputed from the readings (empty when nothing was sampled)."""
    if not isinstance(document, dict) or not isinstance(document.get("sampler"), dict) or _why(document["sampler"]):
        return {}
    return {entry["step"]: summary(entry, document["sampler"]) for entry in document.get("steps") or []}


def _cores(value: Any) -> str:
    return f"{value:.2f}" if _number(value) else "?"


def describe(figures: Mapping[str, Any]) -> str:
    """The window in one line for people: other processes (the busiest named), steal, load, CPU pressure."""
    share, cpus = figures.get("others_share"), figures.get("cpu_count")
    if _number(figures.get("others_cores")):
        of = f" of {cpus}" if _number(cpus) else ""
        parts = [f"other processes used {_cores(figures['others_cores'])}{of} CPUs"]
        parts[0] += f" ({share:.0%})" if _number(share) else ""
        named = [
            f"{p['comm']} pid {p['pid']} {_cores(p['cores'])}" for p in figures.get("top") or [] if p["cores"] >= 0.005
        ]
        if named and figures.get("state") == BUSY:
            parts[0] += ": " + ", ".join(named)
    else:
        parts = [f"other processes unreadable ({_why(figures.get('others_cores'))})"]
    if _number(figures.get("steal_share")):
        parts.append(f"steal {figures['steal_share']:.1%}")
    if _number(figures.get("load1_max")):
        parts.append(f"load up to {figures['load1_max']:.2f}")
    cpu_pressure = (figures.get("pressure") or {}).get("cpu") or {}
    if _number(cpu_pressure.get("some_share")):
        parts.append(f"CPU pressure {cpu_pressure['some_share']:.0%}")
    return "; ".join(parts)


def not_sampled(why: str) -> dict[str, Any]:
    """A document that says why no window was sampled."""
    return {"format": FORMAT, "sampler": _gone(why), "steps": []}


def discrepancies(document: Mapping[str, Any]) -> list[str]:
    """Where host-contention.json's stated summaries and rules differ from this build's recomputation."""
    sampler = document.get("sampler")
    if _why(sampler) or not isinstance(sampler, dict):
        return [f"steps: {len(document['steps'])} window(s) although nothing was sampled"] if document["steps"] else []
    found = [
        f"sampler.{key}: not this build's rule"
        for key, rule in (("busy_rule", BUSY_RULE), ("own", OWN_RULE))
        if sampler.get(key) != rule
    ]
    steps = [entry["step"] for entry in document["steps"]]
    if len(steps) != len(set(steps)):
        found.append("steps: a step has two windows")
    for entry in document["steps"]:
        again = summary(entry, sampler)
        if entry.get("summary") != again:
            differ = sorted(k for k in again if (entry.get("summary") or {}).get(k) != again[k])
            found.append(f"step {str(entry['step'])[:60]}: summary {', '.join(differ)} not what its samples give")
        times = [s["t_s"] for s in entry["samples"]]
        if times != sorted(times) or (times and times[0] != 0):
            found.append(f"step {str(entry['step'])[:60]}: samples not in time order from 0 s")
    return found
