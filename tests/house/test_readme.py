"""README.md and docs/ document every command and option a user runs (kept current with the code)."""

import argparse
import re
from pathlib import Path

from harness.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = README + "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))


def subcommands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from subcommands(sub, prefix + (name,))


def test_readme_names_every_command():
    missing = [" ".join(path) for path, _ in subcommands(build_parser()) if f"dossier {' '.join(path)}" not in README]
    assert not missing, f"README.md does not show: {missing}"


def test_every_option_is_documented():
    missing = []
    for path, parser in subcommands(build_parser()):
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help" and not re.search(re.escape(flag) + r"\b", DOCS):
                    missing.append(f"dossier {' '.join(path)} {flag}")
    assert not missing, f"options documented nowhere in README.md or docs/: {missing}"


def test_readme_shows_the_two_fresh_machine_commands():
    assert "make dossier" in README and "make test" in README
