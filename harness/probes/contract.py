"""The probe contract, probe side: standard library only (the host imports it too).

`probe_main` wraps a probe's measurement: it parses arguments, keeps the real stdout for
the one JSON document and points file descriptor 1 at stderr while measuring (so a library
printing on stdout, NCCL's debug output for instance, cannot corrupt the document), stamps
the common fields and writes the document with `allow_nan=False, sort_keys=True`.

`Option` declares a probe's command-line option once: the probe's parser and `dossier NAME`
add it the same way (`add_options`), refuse a bad value with the same words (`check_options`),
and the host hands the user's values back to the probe (`options_argv`). `unavailable`,
`attempt`, `utc_now`, `progress` and `log` are the helpers every probe's facts go through.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime as _dt
import json
import math
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from harness.probes.policy import Replay

# 6: the bandwidth probe measures its repeats once more, each 4 x longer, when they vary by 5% or more
# (repeats.first_round, repeats.again; harness.analysis.bandwidth AGAIN_RULE), its CPU repeats last 1 s
# (issue 35); 5: a memory-bound roofline shape that gives fewer SMs a tile than WAVE_EFFICIENCY of them, in one
# wave, is explained as under-filled (harness.analysis.roofline.causes: under_filled);
# 4: a launch-bound roofline shape replayed from a CUDA graph is headlined by its kernel-only rate
# (rate_basis, headline_s; its eager rate beside it, eager_tflops: the host's launch rate), and the
# empty kernel is replayed from a CUDA graph too (device_facts.kernel_floor_s); 3: the roofline times
# every shape in windows with idle gaps (windows, warm-up, spread, NVML around each window,
# CUDA-graph replays of launch-bound shapes), its burst best is over fixed shapes, and it can time
# other dtypes in the same process (dtype_checks); 2: all-reduce points keep every rank's per-call
# times (rank_times_us); 1 stated only their medians.
CONTRACT_VERSION = 6

# What a probe process may import: the standard library, these two packages, and the probe side
# of this package. PROBE_SIDE is also exactly what images/stage-probe.sh copies into a probe image
# (paths from the project root); tests/probes/test_probe_contract.py holds every probe-side module to it.
PROBE_PACKAGES = ("torch", "pynvml")  # torch and nvidia-ml-py
PROBE_SIDE = ("harness/__init__.py", "harness/catalogue.py", "harness/data", "harness/analysis", "harness/probes")
EXIT_USAGE = 2
EXIT_CRASH = 1
EXIT_INTERRUPTED = 130  # stopped by SIGINT or SIGTERM (the host's runner stops a probe with SIGTERM)


_pending: list[int] | None = None  # inside interrupts_deferred: the signals that came meanwhile


def _stop_as_interrupt(signum: int, frame: Any) -> None:
    if _pending is not None:
        _pending.append(signum)
        return
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """SIGTERM and Ctrl-C taken as KeyboardInterrupt once the block has ended, not inside it: for importing a
    native extension (torch), whose initialisation aborts the whole process when an exception is raised inside
    it (pybind11: `terminate called after throwing an instance of 'pybind11::error_already_set'`, seen when a
    health probe was stopped during torch's import) instead of unwinding. Only where the signal would raise
    anyway (probe_main's SIGTERM, Python's own SIGINT); elsewhere, off the main thread or nested, nothing
    changes."""
    global _pending
    if _pending is not None or threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {
        sig: signal.signal(sig, _stop_as_interrupt)
        for sig in (signal.SIGTERM, signal.SIGINT)
        if signal.getsignal(sig) in (_stop_as_interrupt, signal.default_int_handler)
    }
    _pending = []
    try:
        yield
    finally:
        came, _pending = _pending, None
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if came:
            raise KeyboardInterrupt(f"signal {came[0]}")


class ProbeUsageError(Exception):
    """Bad arguments or input for a probe: reported on stderr with exit code 2."""


class NoDocument(Exception):
    """This process measured but does not report: e.g. a non-zero rank of a collective probe
    launched by torchrun or srun, where only rank 0 prints the document. Nothing is printed
    on stdout; the process exits with `exit_code`."""

    def __init__(self, exit_code: int = 0, message: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code


Check = Callable[[Any], "str | None"]  # why a parsed value is refused (after the flag), or None


@dataclass(frozen=True)
class Option:
    """One option of a probe, declared once in the probe module (its OPTIONS).

    `flags` and `kwargs` are exactly argparse.add_argument's; `check` refuses a parsed value
    (its words follow the flag in the error); `host`: offered by `dossier NAME` as well (False:
    set only by whoever launches the probe, e.g. the host's resolved checkpoint or srun's
    rendezvous); `goes_with`: the dest of another option, with which this one is always handed
    to the probe (its value then recorded even when it is the default); `replay`: whether and how
    `dossier reproduce` takes it from another party's recorded argv (Replay; every option of every
    registry entry declares one: tests/run/test_replay_policy.py)."""

    flags: tuple[str, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    check: Check | None = None
    host: bool = True
    goes_with: str | None = None
    replay: Replay | None = None  # how `dossier reproduce` takes it from their plan (None: never, fails a test)

    @property
    def dest(self) -> str:
        long = next((f for f in self.flags if f.startswith("--")), self.flags[0])
        return self.kwargs.get("dest") or long.lstrip("-").replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser | Any) -> None:
        parser.add_argument(*self.flags, **self.kwargs)

    def given(self, args: argparse.Namespace) -> bool:
        """Whether ARGS sets this option to something other than its default."""
        value = getattr(args, self.dest, None)
        return value is not None and value is not False and value != self.kwargs.get("default")

    def occurrences(self, args: argparse.Namespace) -> list[tuple[str, ...]]:
        """This option's value in ARGS as command-line words, one tuple per flag (an appended option
        once per value); none when not given."""
        if not (self.given(args) or (self.goes_with and getattr(args, self.goes_with, None) not in (None, False))):
            return []
        value = getattr(args, self.dest)
        flag = next((f for f in self.flags if f.startswith("--")), self.flags[0])
        if self.kwargs.get("action") in ("store_true", "store_false"):
            return [(flag,)]
        if self.kwargs.get("action") == "append":
            return [(flag, str(item)) for item in value]
        if isinstance(value, (list, tuple)):
            return [(flag, *map(str, value))]
        return [(flag, str(value))]

    def to_argv(self, args: argparse.Namespace) -> list[str]:
        """The probe's command-line words for this option's value in ARGS (none when not given)."""
        return [word for occurrence in self.occurrences(args) for word in occurrence]


def add_options(parser: argparse.ArgumentParser | Any, options: Sequence[Option]) -> None:
    for option in options:
        option.add_to(parser)


def options_parser(name: str, description: str, options: Sequence[Option]) -> argparse.ArgumentParser:
    """A probe's command line: `python -m harness.probes.NAME` with its OPTIONS, its usage text as written."""
    parser = argparse.ArgumentParser(
        prog=f"python -m harness.probes.{name}",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(parser, options)
    return parser


def options_argv(args: argparse.Namespace, options: Sequence[Option]) -> list[str]:
    """Every option of OPTIONS that ARGS sets, as the probe's command line, in declaration order."""
    return [word for option in options for word in option.to_argv(args)]


def check_options(args: argparse.Namespace, options: Sequence[Option]) -> None:
    """Refuse the first option whose value its check refuses: ProbeUsageError("--flag VALUE: why")."""
    for option in options:
        value = getattr(args, option.dest, None)
        why = option.check(value) if option.check and value is not None else None
        if why:
            raise ProbeUsageError(f"{option.flags[0]} {why}")


def real(text: str) -> float:
    """An option's float, finite: "nan", "inf" and "1e999" are refused as what they are (argparse
    says `argument --seconds: 'nan' is not a finite number`), never passed on to a range check that
    would give the wrong reason (every comparison with NaN is false)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def number(text: str) -> int | float:
    """A number as written: an int for "300", a float for "0.1" (so it is handed on as written); finite."""
    value = real(text)
    return int(text) if text.strip().lstrip("+-").isdigit() else value


def positive(value: Any) -> str | None:
    """A check: every number in VALUE (one, or a list) above zero."""
    bad = next((v for v in (value if isinstance(value, (list, tuple)) else [value]) if not v > 0), None)
    return None if bad is None else f"{bad:g}: must be positive"


def within_contract(module: str) -> bool:
    """Whether a probe may import MODULE (a dotted name): see PROBE_PACKAGES and PROBE_SIDE."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in PROBE_PACKAGES or top == "__future__":
        return True
    for path in PROBE_SIDE:
        name = path.removesuffix("/__init__.py").removesuffix(".py").replace("/", ".")
        if path.endswith(".py") and module == name:
            return True
        if not path.endswith(".py") and (module == name or module.startswith(name + ".")):
            return True
    return False


def unavailable(reason: str) -> dict[str, str]:
    """A field that could not be read, with the real cause. Never a made-up default."""
    reason = str(reason).strip()
    if not reason:
        raise ValueError("an unavailable field needs a reason")
    return {"unavailable": reason}


def is_unavailable(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"unavailable"}


def describe_exception(exc: BaseException) -> str:
    """`NVMLError_NotSupported: Not Supported`-style text: the exception's class and message."""
    message = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


def attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call `fn`; its value, or an unavailable field naming the exception it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded reason
        return unavailable(describe_exception(exc))


def utc_now() -> str:
    """An RFC 3339 UTC timestamp with microseconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def progress(done: int, total: int, what: str) -> None:
    """A progress line on stderr that the host's display understands."""
    sys.stderr.write("##progress " + json.dumps({"done": done, "total": total, "what": what}) + "\n")
    sys.stderr.flush()


LOADING_PREFIX = "##load "


def loading(pids: list[int], what: str, remaining_s: float) -> None:
    """A line on stderr saying this probe's load runs now, in processes PIDS, for at least REMAINING_S
    more seconds: the host may take another reading under it (`dossier run` takes health under load
    during the stress step this way; harness.run.orchestrate)."""
    sys.stderr.write(
        LOADING_PREFIX + json.dumps({"pids": pids, "what": what, "remaining_s": remaining_s}, sort_keys=True) + "\n"
    )
    sys.stderr.flush()


def prefixed_json(line: str, prefix: str) -> dict[str, Any] | None:
    """The JSON object after PREFIX on a probe's stderr LINE (`##progress `, `##load `), or None for
    any other line or one that does not parse as an object."""
    if not line.startswith(prefix):
        return None
    try:
        value = json.loads(line[len(prefix) :])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_loading(line: str) -> dict[str, Any] | None:
    """The {pids, what, remaining_s} of a `loading` line, or None for any other line."""
    value = prefixed_json(line, LOADING_PREFIX)
    if value is None:
        return None
    pids, remaining = value.get("pids"), value.get("remaining_s")
    if not (
        isinstance(pids, list)
        and pids
        and all(isinstance(p, int) and not isinstance(p, bool) for p in pids)
        and isinstance(value.get("what"), str)
        and isinstance(remaining, (int, float))
    ):
        return None
    return value


def log(message: str) -> None:
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, allow_nan=False, sort_keys=True, indent=1)


def probe_main(
    name: str,
    build_parser: Callable[[], argparse.ArgumentParser],
    measure: Callable[[argparse.Namespace], dict[str, Any]],
    argv: list[str] | None = None,
) -> int:
    """Run one probe: parse, measure, stamp and emit. Returns the process exit code.

    SIGTERM (how a runner stops a probe on Ctrl-C or a timeout) is taken like Ctrl-C: the
    measurement unwinds, so its `finally` blocks and context managers end its workers and remove
    its temporary folders; nothing is printed on stdout and the exit code is 130."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its message
        return int(exc.code or 0)

    sys.stdout.flush()
    document_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed while measuring lands on stderr
    previous = signal.signal(signal.SIGTERM, _stop_as_interrupt)
    try:
        started = utc_now()
        try:
            body = measure(args)
        except KeyboardInterrupt as exc:
            log(
                f"{name}: interrupted ({exc or 'Ctrl-C'}): stopped, its workers ended and its temporary files "
                "removed; no document"
            )
            return EXIT_INTERRUPTED
        except ProbeUsageError as exc:
            log(f"{name}: error: {exc}")
            return EXIT_USAGE
        except NoDocument as exc:
            if str(exc):
                log(f"{name}: {exc}")
            return exc.exit_code
        except Exception:  # noqa: BLE001 - a crash is reported, with its traceback, on stderr
            log(f"{name}: crashed:\n{traceback.format_exc()}")
            return EXIT_CRASH
        document = {
            "probe": name,
            "contract_version": CONTRACT_VERSION,
            "started_at": started,
            "finished_at": utc_now(),
            "argv": list(sys.argv[1:] if argv is None else argv),
            **body,
        }
        text = dumps(document) + "\n"
        sys.stdout.flush()
        with os.fdopen(os.dup(document_fd), "wb") as out:
            out.write(text.encode())
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        sys.stdout.flush()
        os.dup2(document_fd, 1)
        os.close(document_fd)


def exit_now(code: int) -> NoReturn:
    """End a probe's process with CODE once its document is out (what each probe's __main__ calls with
    probe_main's code): stdout and stderr flushed and the exit handlers run (temporary folders' finalizers
    among them), then os._exit, which skips the interpreter's teardown of every module torch loaded and the
    native libraries' destructors: 1.5-3 s of a CPU torch process here, the "post" of every GPU step in
    the H200 bundles (0.5-0.9 s from its document's end to its exit). The driver releases the process's
    GPU context and memory as the process ends, as after any exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()
    os._exit(code)
