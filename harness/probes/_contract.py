"""The probe side of the contract: standard library only.

`probe_main` wraps a probe's measurement: it parses arguments, keeps the real stdout for
the one JSON document and points file descriptor 1 at stderr while measuring (so a library
printing on stdout, NCCL's debug output for instance, cannot corrupt the document), stamps
the common fields and writes the document with `allow_nan=False, sort_keys=True`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

# 2: all-reduce points keep every rank's per-call times (rank_times_us); 1 stated only their medians.
CONTRACT_VERSION = 2
EXIT_USAGE = 2
EXIT_CRASH = 1


class ProbeUsageError(Exception):
    """Bad arguments or input for a probe: reported on stderr with exit code 2."""


class NoDocument(Exception):
    """This process measured but does not report: e.g. a non-zero rank of a collective probe
    launched by torchrun or srun, where only rank 0 prints the document. Nothing is printed
    on stdout; the process exits with `exit_code`."""

    def __init__(self, exit_code: int = 0, message: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code


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
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def progress(done: int, total: int, what: str) -> None:
    """A progress line on stderr that the host's display understands."""
    sys.stderr.write("##progress " + json.dumps({"done": done, "total": total, "what": what}) + "\n")
    sys.stderr.flush()


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
    """Run one probe: parse, measure, stamp and emit. Returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its message
        return int(exc.code or 0)

    sys.stdout.flush()
    document_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed while measuring lands on stderr
    try:
        started = utc_now()
        try:
            body = measure(args)
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
        sys.stdout.flush()
        os.dup2(document_fd, 1)
        os.close(document_fd)
