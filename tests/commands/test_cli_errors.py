"""The CLI's one error path: each error its documented exit code and one line, never a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli
from harness.commands import diff as diff_command
from harness.errors import EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, ProbeFailed

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests/fixtures/h200/dossier-h200.tar.gz"
H200X2 = ROOT / "tests/fixtures/h200x2/dossier-h200x2.tar.gz"
H200_FULL = ROOT / "tests/fixtures/h200/dossier-h200-full.tar.gz"  # format 4: verified with every check


@pytest.fixture
def diff_raises(monkeypatch):
    """`dossier diff` whose work raises the exception given."""

    def install(exc):
        def handle(args):
            raise exc

        monkeypatch.setattr(diff_command, "handle", handle)

    return install


def test_a_bug_is_one_line_with_its_own_exit_code(diff_raises, capsys):
    diff_raises(ZeroDivisionError("division by zero\nsecond line"))
    assert cli.main(["diff", "a", "b"]) == EXIT_INTERNAL == 70
    err = capsys.readouterr().err
    assert err == (
        "error: internal error: ZeroDivisionError: division by zero second line "
        "(run with -v for the traceback; please report it)\n"
    )


def test_with_verbose_a_bug_shows_its_traceback(diff_raises, capsys):
    diff_raises(KeyError("missing"))
    assert cli.main(["-v", "diff", "a", "b"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "internal error: KeyError: 'missing'" in err


def test_a_dossier_error_exits_with_its_code_and_hint(diff_raises, capsys):
    diff_raises(ProbeFailed("the probe crashed", hint="raw output kept in x"))
    assert cli.main(["diff", "a", "b"]) == 3
    assert capsys.readouterr().err == "error: the probe crashed\nhint: raw output kept in x\n"


def test_keyboard_interrupt_is_130(diff_raises, capsys):
    diff_raises(KeyboardInterrupt())
    assert cli.main(["diff", "a", "b"]) == EXIT_INTERRUPTED == 130
    assert "Traceback" not in capsys.readouterr().err


def test_broken_pipe_from_stdout_is_quiet(diff_raises, capsys):
    diff_raises(BrokenPipeError(32, "Broken pipe"))
    try:
        assert cli.main(["diff", "a", "b"]) == EXIT_BROKEN_PIPE == 141
    finally:
        if sys.stdout is not sys.__stdout__ and getattr(sys.stdout, "name", "") == os.devnull:
            sys.stdout.close()
    assert capsys.readouterr().err == ""


def _run_into_closed_pipe(*argv):
    """The dossier with stdout a pipe whose reader has already gone (what `| head -1` becomes)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "harness", *argv],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=300,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode()


def test_diff_into_a_closed_pipe_ends_quietly():
    code, err = _run_into_closed_pipe("diff", str(H200), str(H200X2))
    assert code == EXIT_BROKEN_PIPE and err == ""


def test_accept_json_into_a_closed_pipe_ends_quietly():
    code, err = _run_into_closed_pipe(
        "accept",
        str(H200_FULL),
        "--profile",
        "h200-sxm-141gb",
        "--key",
        str(H200_FULL.with_suffix("").with_suffix(".pub")),
        "--json",
        "--allow-format",
        "4",
    )  # the committed dossier's format
    # quiet: nothing but the checks its format leaves undone, which accept always says on stderr
    assert code == EXIT_BROKEN_PIPE and all(line.startswith("accept: verify NOT DONE ") for line in err.splitlines())


@pytest.mark.parametrize(
    "argv, usage",
    [
        (["verify", "x.tar.gz", "--key", "k.pub", "--bogus"], "error: dossier verify: "),
        (["fleet", "collect", "7", "--key", "k.pub", "--bogus"], "error: dossier fleet collect: "),
        (["report", "x.tar.gz", "extra"], "error: dossier report: "),
    ],
)
def test_an_unknown_argument_shows_that_subcommands_usage(argv, usage, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith(usage) and len(err.splitlines()) == 1, err
    assert "unrecognized arguments: " in err


def test_epilog_documents_every_exit_code():
    help_text = cli.build_parser().format_help()
    for code in (
        "0 ok",
        "1 a check failed",
        "2 bad usage",
        "3 a probe failed",
        "4 the environment",
        "70 an internal error",
        "130 interrupted",
        "141 the reader of standard output",
    ):
        assert code in " ".join(help_text.split()), code


def test_verbose_works_after_the_subcommand_too(diff_raises, capsys):
    diff_raises(KeyError("missing"))
    assert cli.main(["diff", "a", "b", "-v"]) == EXIT_INTERNAL
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    assert cli.main(["diff", "a", "b"]) == EXIT_INTERNAL
    assert "Traceback" not in capsys.readouterr().err
