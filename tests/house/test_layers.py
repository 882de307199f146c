"""Imports run one way: the import-linter contracts in pyproject.toml ([tool.importlinter]), the
layers docs/architecture.md draws. `make lint` (which `make test` runs first) checks the code keeps
them; these tests check the contract is the one the docs draw and that it can fail."""

import re
import tomllib
from pathlib import Path

from importlinter import cli

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"


def contracts() -> list[dict]:
    return tomllib.loads(CONFIG.read_text())["tool"]["importlinter"]["contracts"]


def lint(config: Path) -> int:
    return cli.lint_imports(config_filename=str(config), no_cache=True, no_logo=True)


def test_the_layers_contract_sees_an_import_that_runs_up(tmp_path, capsys):
    """The same layers upside down must fail: the contract reads the real imports, it is no formality."""
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    text = CONFIG.read_text()
    listed = "\n".join(f'    "{layer}",' for layer in layers["layers"])
    upside_down = "\n".join(f'    "{layer}",' for layer in reversed(layers["layers"]))
    assert listed in text
    (tmp_path / "pyproject.toml").write_text(text.replace(listed, upside_down))
    assert lint(tmp_path / "pyproject.toml") == 1
    assert "is not allowed to import" in capsys.readouterr().out


def test_docs_draw_the_layers_the_contract_enforces():
    """docs/architecture.md ("Layers") lists the contract's layers, top first, one a line."""
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## Layers\n.*?```\n(.*?)```", doc, re.S)
    assert block, "docs/architecture.md has no ## Layers section with the layers in a code block"
    drawn = [line.split("  ")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert drawn == layers["layers"]
