"""A new user's first hour: every --help, and the mistakes people make, never show a traceback.

Each bad input is refused with its documented exit code and one `error:` line naming what the user
typed, before any probe runs (a probe starting here fails the test), a key is made or a bundle is read.
"""

import argparse
import os
from pathlib import Path

import pytest

from harness import cli
from harness.runners.local import LocalRunner
from tests.bundle_support import make_key

ROOT = Path(__file__).resolve().parents[1]
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
    return {"T": str(tmp_path), "KEY": str(key.path), "PUB": str(public), "BUNDLE": str(BUNDLE),
            "BPUB": str(PUBLIC)}


BAD_INPUTS = [
    # (argv, exit code, a phrase the one error line must hold)
    ("verify {T}/missing.tar.gz --key {BPUB}", 2, "missing.tar.gz: no such file"),
    ("verify {T}/folder --key {BPUB}", 2, "is a folder"),
    ("verify {T}/readme.txt --key {BPUB}", 2, "not a dossier bundle"),
    ("verify {BUNDLE} --key {T}/missing.pub", 2, "missing.pub: no such file"),
    ("verify {BUNDLE} --key {T}/readme.txt", 2, "is not a PEM file"),
    ("verify {BUNDLE} --key {T}/garbage.key", 2, "does not parse as a key"),
    ("diff {T}/missing.tar.gz {BUNDLE}", 2, "bundle A"),
    ("diff {BUNDLE} {T}/folder", 2, "bundle B"),
    ("report {T}/missing.tar.gz", 2, "no such file"),
    ("report {BUNDLE} -o {T}/folder", 2, "is a folder"),
    ("report {BUNDLE} -o {BUNDLE}", 2, "would be overwritten"),
    ("report {BUNDLE} -o {T}/readme.txt/report.md", 2, "is not a folder"),
    ("accept {T}/missing.tar.gz --profile h200-sxm-141gb --key {BPUB}", 2, "no such file"),
    ("accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --junit {T}/folder", 2, "--junit"),
    ("accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --summary {T}/readme.txt/s.md", 2, "--summary"),
    ("accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --html {T}/a.html --summary {T}/a.html", 2,
     "the same file as --summary"),
    ("accept {BUNDLE} --profile h200-sxm-141gb --key {BPUB} --attestation {T}/a.json --signing-key {T}/open.key",
     2, "chmod 600"),
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
@pytest.mark.parametrize("command", ["verify {T}/locked --key {BPUB}", "diff {T}/locked {BUNDLE}",
                                     "report {T}/locked", "health-diff {T}/locked {T}/locked",
                                     "verify {BUNDLE} --key {T}/locked"])
def test_an_unreadable_input_is_exit_2(world, command, capsys):
    locked = Path(world["T"]) / "locked"
    locked.write_bytes(BUNDLE.read_bytes())
    locked.chmod(0)
    assert cli.main([part.format(**world) for part in command.split()]) == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and "Traceback" not in err
