"""A new user's first hour: every --help, and the mistakes people make, never show a traceback.

Each bad input is refused with its documented exit code and one `error:` line naming what the user
typed, before any probe runs (a probe starting here fails the test), a key is made or a bundle is read.
"""

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli
from harness.commands.diff import load_view
from harness.present.verdict import run_verdict
from harness.run.assemble import assemble
from harness.run.orchestrate import RunOptions, collect
from harness.runners.local import LocalRunner
from tests.accept_support import small_cpu_plan
from tests.bundle_support import make_key, quiet_display

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "tests/fixtures/h200/dossier-h200.tar.gz"
PUBLIC = ROOT / "tests/fixtures/h200/dossier-h200.pub"


def all_subcommands(parser=None, prefix=()):
    parser = parser or cli.build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,)
                yield from all_subcommands(sub, prefix + (name,))


@pytest.mark.parametrize("command", [(), *all_subcommands()], ids=lambda c: " ".join(c) or "dossier")
def test_every_help_works(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*command, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and out.startswith(f"usage: dossier {' '.join(command)}".rstrip())


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A home with a key pair, a text file, a folder, a garbage key; probes that must never start."""
    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(LocalRunner, "run", lambda *a, **k: pytest.fail("a probe started"))
    key, public = make_key(tmp_path / "keys")
    (tmp_path / "readme.txt").write_text("not a checkpoint, not a bundle\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "garbage.key").write_bytes(b"-----BEGIN PRIVATE KEY-----\nnot base64 at all\n")
    (tmp_path / "garbage.key").chmod(0o600)
    (tmp_path / "open.key").write_bytes(key.path.read_bytes())
    (tmp_path / "open.key").chmod(0o644)
    return {"T": str(tmp_path), "KEY": str(key.path), "PUB": str(public), "BUNDLE": str(BUNDLE), "BPUB": str(PUBLIC)}


BAD_INPUTS = [
    # (argv, exit code, a phrase the one error line must hold)
    ("verify {T}/missing.tar.gz --key {BPUB}", 2, "missing.tar.gz: no such file"),
    ("verify {T}/folder --key {BPUB}", 2, "is a folder"),
    ("verify {T}/readme.txt --key {BPUB}", 2, "not a dossier bundle"),
    ("verify {BUNDLE} --key {T}/missing.pub", 2, "missing.pub: no such file"),
    ("verify {BUNDLE} --key {T}/readme.txt", 2, "is not a PEM file"),
    ("verify {BUNDLE} --key {T}/garbage.key", 2, "is a private key: a key that verifies is the public half"),
    ("verify {BUNDLE} --key {KEY}", 2, "is a private key: a key that verifies is the public half"),
    ("diff {T}/missing.tar.gz {BUNDLE}", 2, "bundle A"),
    ("diff {BUNDLE} {T}/folder", 2, "bundle B"),
    ("report {T}/missing.tar.gz", 2, "no such file"),
    ("report {BUNDLE} -o {T}/folder", 2, "is a folder"),
    ("report {BUNDLE} -o {BUNDLE}", 2, "would be overwritten"),
    ("report {BUNDLE} -o {T}/readme.txt/report.md", 2, "is not a folder"),
    ("accept {T}/missing.tar.gz --profile h200-sxm-141gb --key {BPUB}", 2, "no such file"),
    ("accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --junit {T}/folder", 2, "--junit"),
    ("accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --summary {T}/readme.txt/s.md", 2, "--summary"),
    (
        "accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --html {T}/a.html --summary {T}/a.html",
        2,
        "the same file as --summary",
    ),
    (
        "accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --attestation {T}/a.json --signing-key {T}/open.key",
        2,
        "chmod 600",
    ),
    ("accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --profile-file {T}/missing.json", 2, "--profile-file"),
    ("accept {BUNDLE} --profile no-such-sku --key {BPUB}", 2, "no-such-sku"),
    ("verify-acceptance {T}/missing.json {BUNDLE} --key {BPUB}", 2, "ATTESTATION"),
    ("verify-acceptance {T}/readme.txt {T}/missing.tar.gz --key {BPUB}", 2, "BUNDLE"),
    ("health-diff {T}/missing.json {T}/readme.txt", 2, "IDLE"),
    ("health-diff {T}/readme.txt {T}/folder", 2, "not JSON"),
    ("health -o {T}/folder", 2, "--output"),
    ("bandwidth -o {T}/readme.txt/b.json", 2, "is not a folder"),
    ("bandwidth --plot {T}/readme.txt/sweep", 2, "--plot"),
    ("bandwidth --size-mib -1", 2, "must be positive"),
    ("roofline -o {T}/folder", 2, "--output"),
    ("allreduce -o {T}/folder", 2, "--output"),
    ("precision -o {T}/folder", 2, "--output"),
    ("precision --markdown {T}/folder", 2, "--markdown"),
    ("precision --checkpoint {T}/readme.txt --tensor embedding=x -o {T}/p.json", 2, "readme.txt"),
    ("precision --cache-dir {T}/readme.txt", 2, "--cache-dir"),
    ("keygen --out {T}/readme.txt", 2, "--out"),
    ("run --output-dir {T}/readme.txt --signing-key {KEY}", 2, "--output-dir"),
    ("run --output-dir {T}/out --name ../x --signing-key {KEY}", 2, "plain file name"),
    ("run --output-dir {T}/out --name .hidden --signing-key {KEY}", 2, "plain file name"),
    ("run --output-dir {T}/out --signing-key {T}/open.key", 2, "mode 0644"),
    ("run --output-dir {T}/out --signing-key {T}/garbage.key", 2, "does not parse as a key"),
    ("run --output-dir {T}/out --signing-key {KEY} --checkpoint {T}/readme.txt", 2, "readme.txt"),
    ("run --output-dir {T}/out --signing-key {KEY} --checkpoint {T}/nothing.safetensors", 2, "no such file"),
    ("run --output-dir {T}/out --signing-key {KEY} --checkpoint org/model@main", 2, "not a commit sha"),
    ("run --output-dir {T}/out --signing-key {KEY} --tensor embedding", 2, "ROLE=NAME"),
    ("run --output-dir {T}/out --checkpoint {T}/readme.txt", 2, "readme.txt"),  # and no default key made
    ("run --output-dir {T}/out --signing-key {KEY} --skip nope", 2, "no such step"),
    ("fleet collect 7 --output-dir {T}/missing --key {BPUB}", 2, "--output-dir"),
    ("fleet collect 7 --output-dir {T}/folder --key {T}/missing.pub", 2, "missing.pub"),
    ("fleet collect 7 --output-dir {T}/folder --key {BPUB} --profile no-such-gpu", 2, "no-such-gpu"),
    ("fleet submit --nodes 1 --output-dir {T}/readme.txt", 2, "--output-dir"),
]


@pytest.mark.parametrize("command, code, phrase", BAD_INPUTS, ids=[c for c, _, _ in BAD_INPUTS])
def test_a_bad_input_is_one_line_and_its_exit_code(world, command, code, phrase, capsys):
    argv = [part.format(**world) for part in command.split()]
    assert cli.main(argv) == code, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and phrase in errors[0], err
    assert not (Path(world["T"]) / "out").exists()  # nothing was written before refusing


def test_no_input_made_a_key_or_filled_the_cache(world, capsys):
    for command, _, _ in BAD_INPUTS:
        cli.main([part.format(**world) for part in command.split()])
    capsys.readouterr()
    assert not (Path(world["T"]) / "config").exists()  # no default key was made on the way
    cache = Path(world["T"]) / "cache"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]
    assert os.listdir(Path(world["T"]) / "folder") == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads through mode bits")
@pytest.mark.parametrize(
    "command",
    [
        "verify {T}/locked --key {BPUB}",
        "diff {T}/locked {BUNDLE}",
        "report {T}/locked",
        "health-diff {T}/locked {T}/locked",
        "verify {BUNDLE} --key {T}/locked",
    ],
)
def test_an_unreadable_input_is_exit_2(world, command, capsys):
    locked = Path(world["T"]) / "locked"
    locked.write_bytes(BUNDLE.read_bytes())
    locked.chmod(0)
    assert cli.main([part.format(**world) for part in command.split()]) == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and "Traceback" not in err


# --- the README's typical use, run as written --------------------------------------------------------


def colleague_dossier(path: Path, key) -> Path:
    """A colleague's dossier of a machine like this one: health and a short bandwidth sweep, the other steps
    left out with --skip (recorded so), made by `dossier run`'s orchestration and signed with KEY."""
    plan = small_cpu_plan()
    kept = ("health", "bandwidth")
    record = collect(
        RunOptions(output_dir=path.parent, skip=tuple(s.step for s in plan if s.step not in kept)),
        LocalRunner(),
        "tests: this machine's CPU",
        plan,
        display=quiet_display(len(plan)),
    )
    path.write_bytes(assemble(record, key))
    return path


def readme_blocks() -> list[list[str]]:
    """The code blocks of README.md's "Typical use", each a list of commands (continuations joined)."""
    section = (ROOT / "README.md").read_text().split("## Typical use", 1)[1].split("\n## ", 1)[0]
    blocks, current = [], []
    for line in section.splitlines():
        if line.startswith("    "):
            current.append(line[4:])
        elif current and not line.strip():
            continue
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return [[c.strip() for c in "\n".join(block).replace("\\\n", " ").splitlines() if c.strip()] for block in blocks]


def test_make_dossier_installs_only_what_a_dossier_needs_and_runs_dossier_run():
    dry = subprocess.run(["make", "-n", "-B", "dossier"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "[test]" not in dry.stdout  # the test tools are make test's, not a dossier's
    assert (
        "-e ." in dry.stdout
        and "--no-deps" in dry.stdout
        and ".venv/bin/dossier run --output-dir bundles" in dry.stdout
    )
    assert "the dossier command is .venv/bin/dossier" in dry.stdout
    unit = subprocess.run(["make", "-n", "-B", "unit"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "-e '.[test]'" in unit.stdout


SHIM = """#!/bin/sh
exec {python} -m harness "$@"
"""


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    """The blocks a user types on one machine, typed into one shell, in a checkout as `make dossier`'s venv
    leaves it (.venv/bin/dossier, here a script running this build), in a fresh home; the colleague's
    bundle is a small dossier of this machine signed with a test "colleague" key (health and a short
    bandwidth sweep: their plan runs here again in seconds), the vendor's files the committed H200 bundles
    (re-signed with a test "vendor" key where two bundles of one signer are needed). The fleet's block
    needs a Slurm cluster and is not typed. Each line's exit code is recorded."""
    tmp = tmp_path_factory.mktemp("readme")
    home, work = tmp / "home", tmp / "checkout"
    home.mkdir()
    (work / ".venv" / "bin").mkdir(parents=True)
    for name in ("Makefile", "pyproject.toml"):
        (work / name).symlink_to(ROOT / name)
    shim = work / ".venv" / "bin" / "dossier"
    shim.write_text(SHIM.format(python=sys.executable))
    shim.chmod(0o755)
    (work / ".venv" / "bin" / ".installed").touch()  # make dossier's venv, made: the recipe runs dossier
    vendor, vendor_public = make_key(tmp / "vendor")
    colleague, colleague_public = make_key(tmp / "colleague")
    colleague_dossier(work / "colleague.tar.gz", colleague)
    (work / "colleague.pub").write_bytes(colleague_public.read_bytes())
    (work / "vendor.pub").write_bytes(vendor_public.read_bytes())
    from harness.run.assemble import assemble
    from tests.h200_remade import remade

    run = remade(ROOT / "tests/fixtures/h200/dossier-h200-full.tar.gz")  # the committed full dossier's run, this format
    for name in ("vendor-sample.tar.gz", "golden-run1.tar.gz", "delivered-node7.tar.gz"):
        (work / name).write_bytes(assemble(run, vendor))
    # a second run of the golden unit: another start, the same measurements
    later = dataclasses.replace(run, started_at=run.started_at.replace("07:58:54", "07:58:55"))
    (work / "golden-run2.tar.gz").write_bytes(assemble(later, vendor))
    lines = [line for block in readme_blocks() if not block[0].startswith("dossier fleet") for line in block]
    script = "".join(f'{line}\necho "##rc $?"\n' for line in lines)
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "LANG": "C.UTF-8",
    }
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    codes = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("##rc ")]
    return {"lines": lines, "codes": codes, "out": done.stdout, "err": done.stderr, "work": work, "home": home}


def test_the_readme_typical_use_runs_as_written_on_this_machine(typed):
    lines, codes = typed["lines"], typed["codes"]
    assert len(codes) == len(lines), typed["err"][-3000:]
    by_line = {line.split("  #")[0].strip(): code for line, code in zip(lines, codes, strict=True)}
    bundles = sorted((typed["work"] / "bundles").glob("dossier-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    assert len(bundles) == 2  # make dossier's, with a key made on first use in the fresh home; reproduce's
    assert (typed["home"] / ".config" / "rig-dossier" / "dossier.key").exists()
    verdict = run_verdict(load_view(bundles[0]))
    # it fails unless the verdict its last lines say is PASS or WARN: make's own 2, with the verdict's code
    assert by_line["make dossier"] == (0 if verdict.exit_code == 0 else 2)
    assert verdict.exit_code == 0 or f"dossier] Error {verdict.exit_code}" in typed["err"]
    assert verdict.answer(bundles[0].name) in typed["err"]  # make dossier's answer: the run's, first and last
    assert "the dossier command is .venv/bin/dossier" in typed["out"]
    assert "a key pair is already there, kept" in typed["err"]  # keygen after make dossier: exit 0, nothing replaced
    assert (typed["work"] / "report.md").read_text().startswith("# Rig Dossier: ")
    assert (typed["work"] / "golden.profile.json").exists() and (typed["work"] / "accept.md").exists()
    # their plan run here gives this shared machine's figures: the line's documented exit, either way
    reproduce = "dossier reproduce colleague.tar.gz --key colleague.pub"
    assert by_line[reproduce] in (0, 1), typed["err"][-3000:]
    assert (
        "reproduce: their plan, " in typed["err"]
        and len(list((typed["work"] / "bundles").glob("reproduction-colleague-vs-*.intoto.json"))) == 1
    )
    failed = {line: code for line, code in by_line.items() if code != 0 and line not in ("make dossier", reproduce)}
    assert failed == {}, typed["err"][-3000:]
