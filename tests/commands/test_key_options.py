"""Key options are named by what they hold, in every command: --signing-key a private key (it signs),
--key a public key (it verifies); the old spellings still work, with one line saying the new one."""

import argparse

import pytest

from harness.cli import build_parser, parse


def options(parser: argparse.ArgumentParser, path: str = "dossier"):
    """(command path, option string, action) for every visible option of every subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from options(child, f"{path} {name}")
        elif action.help != argparse.SUPPRESS:
            for flag in action.option_strings:
                yield path, flag, action


def test_every_key_option_says_what_it_holds():
    found = {(path, flag): action for path, flag, action in options(build_parser()) if "key" in flag}
    assert ("dossier run", "--signing-key") in found and ("dossier fleet submit", "--signing-key") in found
    for (path, flag), action in found.items():
        words = f"{action.metavar} {action.help}".lower()
        if flag == "--signing-key":
            assert action.metavar == "PRIV" and "private" in words, path
        elif flag in (
            "--key",
            "--key-a",
            "--key-b",
            "--key-mine",
            "--key-good",
            "--profile-key",
            "--bundle-key",
        ):  # each a public key that verifies
            assert "public" in words or action.metavar == "PUB", path
        else:
            pytest.fail(f"{path} {flag}: a key option other than --key and --signing-key")


@pytest.mark.parametrize(
    "argv, old",
    [
        (["run", "--key", "mine.key"], "--key"),
        (["fleet", "submit", "--nodes", "2", "--key", "fleet.key"], "--key"),
        (["fleet", "collect", "7", "--key", "fleet.pub", "--sign-key", "fleet.key"], "--sign-key"),
    ],
)
def test_an_old_spelling_still_works_and_names_the_new_one(argv, old, capsys):
    args = parse(argv)
    assert args.signing_key is not None and args.signing_key.suffix == ".key"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{old} is deprecated: use --signing-key" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--signing-key", "mine.key"],
        ["fleet", "submit", "--nodes", "2", "--signing-key", "fleet.key"],
        ["fleet", "collect", "7", "--key", "fleet.pub", "--signing-key", "fleet.key"],
    ],
)
def test_the_new_spelling_is_quiet(argv, capsys):
    assert parse(argv).signing_key.name.endswith(".key")
    assert capsys.readouterr().err == ""
