"""Every command's answer is its first line on a terminal and its last (issue 38): `verdict: WORD: what,
with the counts (exit N)`, N the command's exit code. Each command runs as a user runs it, a real
process (`python -m harness`), once on a pseudo-terminal (the pty module: what a person at a terminal
sees, rich's terminal display included) and once piped (standard output and error into one pipe, as
`dossier ... 2>&1 | less` reads them). A command that measures first (`dossier run`, the probe
commands, a reproduction) shows its progress before it knows its answer: the answer then opens the
closing block and ends it.

Inputs are real: the committed H200 dossiers (tests/fixtures/h200/final/, format 5: read with
--allow-format 5), the idle and under-load H200 health readings, a synthetic fleet of this build's
bundles (bench/fleet_synth.py), and this machine for health, check and a short run."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet_support import JOB, synthetic_fleet

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
FINAL = FIXTURES / "h200" / "final"
PUB = str(FINAL / "h200-final.pub")
OLDER = ("--allow-format", "5")
ANSWER = re.compile(r"^verdict: [A-Z][A-Z ,]*(: .*)? \(exit (\d+)\)$")
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-B]")
TIMEOUT_S = 600


def bundle(name: str) -> str:
    return str(FINAL / f"h200-{name}.tar.gz")


def _screen_lines(raw: str) -> list[str]:
    """What is left on the screen: escape codes out, each line as its last carriage return left it."""
    text = ESCAPE.sub("", raw.replace("\r\n", "\n"))
    return [line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n") if line.rsplit("\r", 1)[-1].strip()]


def on_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """ARGV run with a pseudo-terminal as its standard input, output and error."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *argv], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: every holder of the terminal's other side has closed it
            break
        if not data:
            break
        chunks.append(data)
    code = proc.wait(timeout=TIMEOUT_S)
    os.close(master)
    return code, _screen_lines(b"".join(chunks).decode("utf-8", "replace"))


def piped(argv: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """ARGV run with standard output and error into one pipe."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
        timeout=TIMEOUT_S,
        check=False,
    )
    return done.returncode, _screen_lines(done.stdout.decode("utf-8", "replace"))


def assert_answered(code: int, lines: list[str], measures: bool) -> None:
    """The last line is the answer with this exit code; it is the first line too, or (a command that
    measures first) the first line of its closing block, said once before."""
    assert lines, "no output"
    last = ANSWER.match(lines[-1])
    assert last is not None, lines[-5:]
    assert int(last.group(2)) == code, (code, lines[-1])
    if measures:
        assert lines.count(lines[-1]) >= 2, lines
    else:
        assert lines[0] == lines[-1], (lines[0], lines[-1])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A home of its own (a key made on first use goes there), the inputs the commands need, made once."""
    tmp = tmp_path_factory.mktemp("answers")
    env = {
        **os.environ,
        "HOME": str(tmp / "home"),
        "XDG_CACHE_HOME": str(tmp / "home" / ".cache"),
        "XDG_CONFIG_HOME": str(tmp / "home" / ".config"),
        "DOSSIER_RUNNER": "local",
        "COLUMNS": "400",
    }
    for name in ("DOSSIER_CACHE_DIR", "DOSSIER_KEY"):
        env.pop(name, None)
    fleet, _ = synthetic_fleet(tmp / "fleet", count=6)
    sbatch = tmp / "bin" / "sbatch"
    sbatch.parent.mkdir()
    sbatch.write_text("#!/bin/sh\necho 4242\n")  # a Slurm that accepts every job as job 4242
    sbatch.chmod(0o755)
    return {"tmp": tmp, "env": env, "fleet": fleet}


def _reproduced(tmp: Path, env: dict[str, str]) -> list[str]:
    statement = tmp / "repro.intoto.json"
    if not statement.exists():
        argv = ["reproduce", bundle("a1"), "--key", PUB, "--against", bundle("b1"), "--key-mine", PUB]
        argv += ["--statement", str(statement), "--summary", str(tmp / "repro.md"), *OLDER]
        assert piped(argv, env)[0] == 0
    return ["verify-reproduction", str(statement), bundle("a1"), bundle("b1"), "--key", str(tmp / "own.pub")]


def _attested(tmp: Path, env: dict[str, str]) -> list[str]:
    attestation = tmp / "accept.intoto.json"
    if not attestation.exists():
        argv = ["accept", bundle("b1"), "--profile", "h200-sxm-141gb", "--key", PUB, *OLDER]
        assert piped([*argv, "--attestation", str(attestation)], env)[0] == 0
    return ["verify-acceptance", str(attestation), bundle("b1"), "--key", str(tmp / "own.pub")]


def _own_key(tmp: Path, env: dict[str, str]) -> None:
    """The key the home's commands sign with (made by keygen), its public half at tmp/own.pub."""
    config = Path(env["XDG_CONFIG_HOME"]) / "rig-dossier"
    if not (tmp / "own.pub").exists():
        assert piped(["keygen"], env)[0] == 0
        shutil.copy(config / "dossier.pub", tmp / "own.pub")


def command_argv(name: str, work: dict, mode: str) -> list[str]:
    """The command line of NAME, its outputs under a folder of MODE's (each mode writes its own)."""
    tmp, env, out = work["tmp"], work["env"], work["tmp"] / mode
    out.mkdir(exist_ok=True)
    _own_key(tmp, env)
    health = FIXTURES / "h200"
    fleet_bundle, fleet_key = work["fleet"] / f"fleet-{JOB}.tar.gz", str(work["fleet"] / "keys" / "dossier.pub")
    fleet_bundle.unlink(missing_ok=True)  # collect and merge each write it: the other mode's is moved aside
    lines = {
        "verify": ["verify", bundle("contended"), "--key", PUB, *OLDER],
        "accept": ["accept", bundle("contended"), "--profile", "h200-sxm-141gb", "--key", PUB, *OLDER],
        "report": ["report", bundle("contended"), *OLDER, "-o", str(out / "report.md")],
        "diff": ["diff", bundle("a1"), bundle("b1"), "--key", PUB, *OLDER],
        "baseline": ["baseline", bundle("a1"), bundle("b1"), "--key", PUB, "--out", str(out / "p.json"), *OLDER],
        "keygen": ["keygen", "--out", str(out / "keys")],
        "check": ["check", "--expect-gpus", "0", "--node", "n1"],
        "health-diff": ["health-diff", str(health / "health.idle.json"), str(health / "health.load.json")],
        "health": ["health", "-o", str(out / "health.json")],
        "fleet collect": ["fleet", "collect", JOB, "--output-dir", str(work["fleet"]), "--key", fleet_key],
        "fleet merge": ["fleet", "merge", JOB, "--output-dir", str(work["fleet"]), "--key", fleet_key],
        "fleet submit": ["fleet", "submit", "--nodes", "2", "--output-dir", str(out / "submitted")],
    }
    if name == "fleet merge":
        shard = [*lines["fleet collect"], "--shard", "0/1"]
        shutil.rmtree(work["fleet"] / f"fleet-{JOB}.shards", ignore_errors=True)
        assert piped(shard, env)[0] == 0
    if name == "verify-reproduction":
        return _reproduced(tmp, env)
    if name == "verify-acceptance":
        return _attested(tmp, env)
    if name == "reproduce":
        argv = ["reproduce", bundle("a1"), "--key", PUB, "--against", bundle("b1"), "--key-mine", PUB, *OLDER]
        return [*argv, "--statement", str(out / "r.intoto.json"), "--summary", str(out / "r.md")]
    if name == "run":  # every step but health's, so it is quick: the answer is the run's all the same
        skip = [f"--skip={step}" for step in ("bandwidth", "roofline", "precision", "allreduce", "transfer", "stress")]
        return ["run", "--output-dir", str(out / "bundles"), "--name", "answers", *skip]
    return lines[name]


JUDGING = [
    "verify",
    "accept",
    "report",
    "diff",
    "keygen",
    "check",
    "health-diff",
    "verify-acceptance",
    "verify-reproduction",
    "fleet submit",
]
# Work shown as it goes before the answer is known: a probe's progress, each bundle verified, each node checked.
MEASURING = ["health", "run", "reproduce", "baseline", "fleet collect", "fleet merge"]
EXPECTED = {"accept": 1, "fleet collect": 1, "fleet merge": 1}  # the rest exit 0 here (the run: PASS and SKIPs)


@pytest.mark.parametrize("mode", ["terminal", "piped"])
@pytest.mark.parametrize("name", JUDGING + MEASURING)
def test_the_answer_is_the_first_line_and_the_last(name, mode, work, monkeypatch):
    env = dict(work["env"])
    if name == "fleet submit":
        env["PATH"] = f"{work['tmp'] / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    argv = command_argv(name, work, mode)
    code, lines = (on_terminal if mode == "terminal" else piped)(argv, env)
    assert code == EXPECTED.get(name, 0), lines[-10:]
    assert_answered(code, lines, measures=name in MEASURING)
    assert not any("Traceback" in line for line in lines)
