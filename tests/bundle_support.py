"""Shared by the bundle tests: keys, the test-only plan, bundles read back and rewritten."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from harness.bundle import layout
from harness.bundle.read import read_all
from harness.bundle.seal import bundle_statement, sign_files
from harness.bundle.write import archive_bytes
from harness.run.display import RunDisplay
from harness.run.orchestrate import RunOptions, collect
from harness.runners.local import LocalRunner
from harness.signing.keys import generate, load_private
from harness.signing.statement import sign_statement
from tests.bundle_probes import plan as test_plan


def make_key(directory: Path):
    private, public = generate(directory)
    return load_private(private), public


def quiet_display(steps: int) -> RunDisplay:
    return RunDisplay(steps, console=Console(file=io.StringIO(), force_terminal=False))


@pytest.fixture
def tick_modules(monkeypatch):
    """The tick probe registered, with harness.analysis.tick and harness.present.plots.tick, test-only."""
    test_plan.install(monkeypatch)


def collect_test_plan(tmp: Path, plan=test_plan.PLAN):
    runner = LocalRunner(package=test_plan.PACKAGE)
    return collect(
        RunOptions(output_dir=tmp), runner, "tests: the test-only probe package", plan, display=quiet_display(len(plan))
    )


def signed_plan_bundle(tmp: Path):
    """A bundle of the test plan made and signed here, in TMP: (path, key, public key path). The
    tick probe is registered only while it is made; a test verifying it installs it again."""
    from harness.run.assemble import assemble

    with pytest.MonkeyPatch.context() as patch:
        test_plan.install(patch)
        key, public = make_key(tmp / "k")
        path = tmp / "clean.tar.gz"
        path.write_bytes(assemble(collect_test_plan(tmp), key))
    return path, key, public


def resign(files: dict[str, bytes], key) -> None:
    """Sign FILES as the key's holder would, whatever they hold: the predicate from commands.json
    where it can be drawn, else an empty one (a malformed commands.json fails before the predicate)."""
    files.pop(layout.ATTESTATION, None)
    try:
        files[layout.ATTESTATION] = sign_files(files, key)
    except Exception:  # noqa: BLE001 - commands.json too malformed to draw a predicate from
        files[layout.ATTESTATION] = sign_statement(bundle_statement(files, {}), key)


def rewrite(path: Path, out: Path, edit=None, resign_with=None) -> Path:
    """Read a bundle back, apply EDIT(files) and write it again, re-signed only if asked."""
    files = read_all(path)
    if edit:
        edit(files)
    if resign_with is not None:
        resign(files, resign_with)
    out.write_bytes(archive_bytes(files))
    return out
