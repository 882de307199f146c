"""The same fault is the same exit code in every command that meets it (README, "Exit codes").

One table per kind of fault, over every command that takes that kind of input: a bundle that is
missing, a folder, not a bundle, truncated or damaged; an output on a file system the kernel makes
up (/proc, /sys); a number that is NaN or infinite (found by walking every command's parser, so a
new option is covered without an edit here); and one limit per option wherever it is accepted.
Each refusal is one `error:` line (or argparse's usage line), before any probe starts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from harness import cli
from harness.probes.contract import number, real
from harness.runners.local import LocalRunner
from tests.bundle_support import make_key, rewrite

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "tests/fixtures/h200/dossier-h200.tar.gz"
PUBLIC = ROOT / "tests/fixtures/h200/dossier-h200.pub"
FULL = ROOT / "tests/fixtures/h200/dossier-h200-full.tar.gz"  # another bundle of the same SKU: MINE for reproduce
FULL_PUBLIC = ROOT / "tests/fixtures/h200/dossier-h200-full.pub"


@pytest.fixture
def world(tmp_path, monkeypatch):
    """Bundles with each fault, a key pair, a signed attestation's stand-in; probes that must never start."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(LocalRunner, "run", lambda *a, **k: pytest.fail("a probe started"))
    key, public = make_key(tmp_path / "keys")
    data = BUNDLE.read_bytes()
    (tmp_path / "truncated.tar.gz").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.tar.gz").write_text("not a bundle\n")
    (tmp_path / "folder.tar.gz").mkdir()

    def damage(files):
        files["raw/health.json"] = files["raw/health.json"][:-40]  # cut: no longer JSON

    rewrite(BUNDLE, tmp_path / "damaged.tar.gz", damage)
    (tmp_path / "attestation.json").write_text("{}")
    return {
        "T": str(tmp_path),
        "GOOD": str(BUNDLE),
        "PUB": str(PUBLIC),
        "KEY": str(key.path),
        "MYPUB": str(public),
        "FULL": str(FULL),
        "FULLPUB": str(FULL_PUBLIC),
    }


# Every command that reads a bundle, with {B} where the faulty bundle goes.
BUNDLE_COMMANDS = [
    "verify {B} --key {PUB}",
    "report {B}",
    "diff {B} {GOOD}",
    "diff {GOOD} {B}",
    "diff {B} {GOOD} --key {PUB}",
    "accept {B} --profile h200-sxm-141gb --key {PUB}",
    "baseline {B} --key {PUB} --out {T}/profile.json --signing-key {KEY}",
    "reproduce {B} --key {PUB} --against {FULL} --key-mine {FULLPUB} --output-dir {T}/out",
    "reproduce {FULL} --key {FULLPUB} --against {B} --key-mine {PUB} --output-dir {T}/out",
]
BUNDLE_FAULTS = [  # (the faulty bundle, its exit code): unreadable input 2, a damaged bundle 1
    ("{T}/missing.tar.gz", 2),
    ("{T}/folder.tar.gz", 2),
    ("{T}/text.tar.gz", 2),
    ("{T}/truncated.tar.gz", 1),
    ("{T}/damaged.tar.gz", 1),
]


def _run(world, command: str, capsys) -> tuple[int, str]:
    code = cli.main([part.format(**world) for part in command.split()])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("fault, code", BUNDLE_FAULTS, ids=[f.split("/")[-1] for f, _ in BUNDLE_FAULTS])
def test_a_faulty_bundle_is_the_same_exit_code_in_every_command(world, fault, code, capsys):
    results = {}
    for command in BUNDLE_COMMANDS:
        got, err = _run(world, command.replace("{B}", fault), capsys)
        assert "Traceback" not in err and "internal error" not in err, (command, err)
        results[command] = got
    assert results == dict.fromkeys(BUNDLE_COMMANDS, code)


# Every output a command writes, on /proc and on /sys: refused before any work (exit 2).
OUTPUTS = [
    "run --output-dir {P}/bundles --signing-key {KEY}",
    "report {GOOD} -o {P}/report.md",
    "accept {GOOD} --profile h200-sxm-141gb --key {PUB} --junit {P}/a.xml",
    "accept {GOOD} --profile h200-sxm-141gb --key {PUB} --summary {P}/a.md",
    "accept {GOOD} --profile h200-sxm-141gb --key {PUB} --html {P}/a.html",
    "accept {GOOD} --profile h200-sxm-141gb --key {PUB} --attestation {P}/a.json --signing-key {KEY}",
    "keygen --out {P}/keys",
    "baseline {GOOD} --key {PUB} --out {P}/profile.json --signing-key {KEY}",
    "health -o {P}/health.json",
    "bandwidth -o {P}/bandwidth.json",
    "bandwidth --plot {P}/sweep",
    "roofline -o {P}/roofline.json",
    "precision --markdown {P}/precision.md",
    "allreduce -o {P}/allreduce.json",
    "transfer -o {P}/transfer.json",
    "stress -o {P}/stress.json",
    "health-diff {T}/attestation.json {T}/attestation.json -o {P}/diff.json",
    "fleet submit --nodes 1 --output-dir {P}/fleet",
    "fleet collect 7 --output-dir {PDIR} --key {PUB}",  # the job's folder: it must exist
    "fleet merge 7 --output-dir {PDIR} --key {PUB}",
    "fleet collect 7 --output-dir {T} --key {PUB} --baseline-out {P}/profile.json",
    "fleet collect 7 --output-dir {T} --key {PUB} --prometheus {P}/fleet.prom",
    "run --output-dir {T}/out --signing-key {KEY} --prometheus {P}/run.prom",
    "accept {GOOD} --profile h200-sxm-141gb --key {PUB} --prometheus {P}/accept.prom",
    "check --expect-gpus 0 --save-reading {P}/reading.json",
    "check --expect-gpus 0 --prometheus {P}/check.prom",
    "reproduce {GOOD} --key {PUB} --against {FULL} --key-mine {FULLPUB} --output-dir {P}/out",
    "reproduce {GOOD} --key {PUB} --against {FULL} --key-mine {FULLPUB} --output-dir {T}/out --statement {P}/s.json",
    "reproduce {GOOD} --key {PUB} --against {FULL} --key-mine {FULLPUB} --output-dir {T}/out --summary {P}/s.md",
    "reproduce {GOOD} --key {PUB} --output-dir {P}/out --signing-key {KEY}",
]


@pytest.mark.parametrize("pseudo, folder", [("/proc/rig-dossier", "/proc/self"), ("/sys/rig-dossier", "/sys/kernel")])
@pytest.mark.parametrize(
    "command", OUTPUTS, ids=[" ".join(c.split()[:2]) + " " + c.split("{P")[1].split()[0] for c in OUTPUTS]
)
def test_an_output_on_a_kernel_file_system_is_refused_up_front(world, command, pseudo, folder, capsys):
    code, err = _run(world, command.replace("{P}", pseudo).replace("{PDIR}", folder), capsys)
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "(the kernel's own files)" in errors[0], err
    assert not (Path(world["T"]) / "config").exists()  # no key was made on the way


def _numeric_options(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """(command words, flag) for every option of every command whose value is a number (real/number)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _numeric_options(sub, (*prefix, name))
        elif action.option_strings and action.type in (real, number):
            yield prefix, action.option_strings[-1]
        elif action.option_strings and action.type is float:
            pytest.fail(
                f"dossier {' '.join(prefix)} {action.option_strings[-1]}: type=float takes nan and inf; "
                "use harness.probes.contract.real"
            )


NUMERIC = sorted(set(_numeric_options(cli.build_parser())))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_nan_and_infinity_are_refused_as_such_by_every_numeric_option(value, capsys):
    assert len(NUMERIC) >= 20  # the walk found the options (stress, bandwidth, roofline, run, verify, fleet ...)
    for words, flag in NUMERIC:
        with pytest.raises(SystemExit) as exit_:
            cli.main([*words, f"{flag}={value}"])  # "-inf" alone would read as an option
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"argument {flag}: '{value}' is not a finite number" in err, (words, flag, err)


@pytest.mark.parametrize("command", ["stress --seconds {S}", "run --stress-seconds {S} --output-dir {T}/out"])
def test_one_limit_for_the_stress_length_wherever_it_is_given(world, command, capsys):
    code, err = _run(world, command.replace("{S}", "1e9"), capsys)
    assert code == 2 and "1e+09: at most 3000 seconds (50 minutes)" in err, err
    code, err = _run(world, command.replace("{S}", "-5"), capsys)
    assert code == 2 and "-5: must be positive" in err, err
