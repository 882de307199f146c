"""Every field of every document a bundle holds is classed in docs/bundle.md, and every field it
calls recomputed or consistent is refused when a key holder edits it and re-signs (issue 28 item 3).

The documents are real: every step of the committed H200 bundles (the one-GPU full dossier of
format 4 and the two-GPU one of format 1); the full one re-made by this build (tests/h200_remade.py:
format 6, its run-to-run `repeatability` recorded as `dossier run` records it); a run of the flaky
test probe with `--retest 2` (a step's earlier `attempts`); the CPU captures in tests/fixtures
(roofline, bandwidth, stress); the lead's windowed H200 roofline capture (probe contract 3, five
dtypes: tests/fixtures/roofline/windows-h200.1.json) and the same windows as contract 4's probe
states them (tests/roofline_remade.py); a CPU stress run and a precision run on a small
safetensors file made here (the result digests: a stress reference digest, precision output
digests); and two-GPU transfer documents built by the probe's own code from the two-H200 captures
(tests/transfer_fixtures.py). For each field a document holds, its first and last
instance are edited every way tests/field_inventory.py knows; an edit the schema refuses proves
nothing and is skipped; every other one must be refused by what verify runs on that document: its
schema, its analysis (headlines and discrepancies), the figures other steps took from it
(harness.analysis.cross_checks), and, for commands.json and environment.json, the format checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from harness import registry
from harness.analysis import cross_checks, repeatability
from harness.bundle import layout
from harness.bundle.read import read_all
from harness.bundle.view import BundleFormatError, BundleView
from harness.registry import analysis_module as analysis
from harness.schemas import is_valid, violations
from harness.verify.bundled import check_bundled_schemas
from harness.verify.content import check_schemas, run_record_discrepancies
from harness.verify.contention import check_contention
from harness.verify.formats import FORMATS, check_format, check_members
from harness.verify.report import check_tables
from tests.bundle_probes import plan as test_plan
from tests.field_inventory import CHECKED_KINDS, edits, instances, listed, listing, schema_fields, shown

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUNDLES = [FIXTURES / "h200" / "dossier-h200-full.tar.gz", FIXTURES / "h200x2" / "dossier-h200x2.tar.gz"]
# the two-GPU bundle's steps the full one holds as well, in its newer format: left out (time)
SAME_AS_FULL = {"roofline-fp8", "roofline-fp16", "roofline-tf32", "roofline-fp32", "precision"}
STANDALONE = [
    ("roofline", "accept/roofline-cpu.json"),
    ("bandwidth", "bandwidth-cpu-sweep.json"),
    ("stress", "stress/stress-cpu.json"),
    ("roofline", "roofline/windows-h200.1.json"),
]
ROOT = FIXTURES.parents[1]
ALL = object()  # a source none of whose step documents is edited


@pytest.fixture(autouse=True)
def _flaky_probe_registered(monkeypatch):
    """The retest run's step is the flaky test probe's: verify checks a completed step by its entry."""
    test_plan.install_flaky(monkeypatch)


def document_schemas() -> list[str]:
    """The schema of every document a bundle holds: commands.json, environment.json and each step's."""
    steps = [step for spec in registry.PROBES for step in spec.steps]
    return sorted({"commands", "environment", "host-contention", *(step.schema for step in steps)})


@dataclass(frozen=True)
class Document:
    label: str
    schema: str
    document: Any
    refusal: Callable[[Any], str | None]  # why verify refuses this document edited so, or None
    only: tuple[str, ...] = ()  # where given, the fields edited (by their start): a document outside a bundle
    # cannot prove what verify checks across steps (a precision run's checkpoint is the host's)

    def edits_field(self, path: tuple[str, ...]) -> bool:
        return not self.only or shown(path).startswith(self.only)


def _probe_refusal(name: str, view: BundleView | None, step: str | None) -> Callable[[Any], str | None]:
    module = analysis(name)

    def refusal(document: Any) -> str | None:
        try:
            module.headlines(document)
            found = module.discrepancies(document)
        except Exception as exc:  # noqa: BLE001 - verify fails the step's figures on it
            return f"raised {type(exc).__name__}"
        if not found and view is not None:
            found = [p for _, p in cross_checks.discrepancies(view.steps, {**view.documents, step: document})]
        return found[0] if found else None

    return refusal


def _host_refusal(view: BundleView, entry: dict) -> Callable[[Any], str | None]:
    function = registry.host_function(entry["function"])
    expected = json.loads(json.dumps(function(*[view.documents[need] for need in entry["needs"]])))
    return lambda document: None if document == expected else "differs from its recomputation"


def _run_record_refusals(view: BundleView) -> tuple[Callable, Callable]:
    """What verify checks of commands.json and environment.json besides their schemas: the format's
    rules, the run record against itself and the registry, and every member named as it should be."""

    def check(commands: Any, environment: Any) -> str | None:
        checks, fmt = check_format(commands, environment, FORMATS)
        found = [c.detail for c in checks if not c.ok] + run_record_discrepancies(commands)
        found += repeatability.declaration_discrepancies(commands.get("repeatability"), view.documents)
        files = {
            **view.files,
            layout.COMMANDS: json.dumps(commands).encode(),
            layout.ENVIRONMENT: json.dumps(environment).encode(),
        }
        try:  # what verify reads the bundle through: each step once, every output present
            BundleView.from_files(files, analysis)
        except BundleFormatError as exc:
            found.append(str(exc))
        if not found and fmt is not None:
            edited = BundleView(files, commands, environment, view.documents, analysis)
            names = set(view.files) | {layout.ATTESTATION}
            checks = (
                check_members(commands, names, fmt)
                + check_bundled_schemas(edited, fmt, [])
                + check_schemas(edited, names)
                + check_tables(edited, fmt)
            )
            found = [c.detail for c in checks if not c.ok]
        return (found or [None])[0]

    return (lambda commands: check(commands, view.environment)), (lambda env: check(view.commands, env))


def _host_load_refusal(view: BundleView) -> Callable[[Any], str | None]:
    """What verify checks of host-contention.json besides its schema (harness.verify.contention)."""

    def refusal(document: Any) -> str | None:
        edited = BundleView(
            {**view.files, layout.CONTENTION: json.dumps(document).encode()},
            view.commands,
            view.environment,
            view.documents,
            analysis,
        )
        found = [
            c.detail for c in check_contention(edited, FORMATS[layout.FORMAT_VERSION], set(edited.files)) if not c.ok
        ]
        return (found or [None])[0]

    return refusal


def _remade_full() -> dict[str, bytes]:
    """The full H200 dossier's run re-made by this build (format 6), with the run-to-run block
    `dossier run` records for the SKU its health step identified."""
    from harness.run.assemble import unsigned_files
    from tests.h200_remade import remade

    return unsigned_files(remade(BUNDLES[0]))


def _retested(tmp: Path) -> dict[str, bytes]:
    """A run of the flaky test probe that failed twice and completed on its third attempt (--retest 2)."""
    from harness.run.assemble import unsigned_files
    from harness.run.orchestrate import RunOptions, collect
    from harness.runners.local import LocalRunner
    from tests.bundle_support import quiet_display
    from tests.commands.test_retest import flaky_plan

    plan = flaky_plan(tmp / "state", 2)
    return unsigned_files(
        collect(
            RunOptions(output_dir=tmp, retest=2),
            LocalRunner(package=test_plan.PACKAGE),
            "tests: the test-only probe package",
            plan,
            display=quiet_display(len(plan)),
        )
    )


def _probe_output(*argv: str) -> Any:
    done = subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, check=True, timeout=300)
    return json.loads(done.stdout)


def _precision_run(tmp: Path) -> Any:
    """The precision probe on a small safetensors file made here (as tests/probes/test_precision_probe.py's)."""
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(2)
    weights = torch.randn(16, 256) * 0.02
    weights[3, 7] = 0.9  # one outlier
    save_file({"emb": torch.randn(32, 128).half(), "proj": weights}, str(tmp / "model.safetensors"))
    return _probe_output(
        "harness.probes.precision",
        "--file",
        str(tmp / "model.safetensors"),
        "--tensor",
        "embedding=emb",
        "--tensor",
        "mlp_projection=proj",
        "--device",
        "cpu",
    )


@cache
def documents() -> tuple[Document, ...]:
    """The documents edited, made once; the runs that make some of them work in a temporary folder,
    removed when they are made (`make test` leaves no folder of its own behind)."""
    with tempfile.TemporaryDirectory(prefix="field-inventory-") as name:
        return _documents(Path(name))


def _documents(tmp: Path) -> tuple[Document, ...]:
    found = []
    # (label, files, the steps whose documents are edited: the re-made bundle's are the full one's, the
    # retest run's a test probe's)
    sources = [
        (BUNDLES[0].name, read_all(BUNDLES[0]), None),
        (BUNDLES[1].name, read_all(BUNDLES[1]), SAME_AS_FULL),
        ("dossier-h200-full re-made (format 6)", _remade_full(), ALL),
        ("retest run", _retested(tmp), ALL),
    ]
    for label, files, left_out in sources:
        view = BundleView.from_files(files, analysis)
        on_commands, on_environment = _run_record_refusals(view)
        found += [
            Document(f"{label}:{layout.COMMANDS}", "commands", view.commands, on_commands),
            Document(f"{label}:{layout.ENVIRONMENT}", "environment", view.environment, on_environment),
        ]
        if view.contention is not None:  # format 6 on: the host read while each step ran
            found.append(
                Document(f"{label}:{layout.CONTENTION}", "host-contention", view.contention, _host_load_refusal(view))
            )
        for entry in view.steps:
            step = entry["step"]
            if step not in view.documents or left_out is ALL or step in (left_out or ()):
                continue
            judge = (
                _host_refusal(view, entry)
                if entry.get("kind") == "host"
                else _probe_refusal(entry["analysis"], view, step)
            )
            found.append(Document(f"{label}:{entry['output']}", entry["schema"], view.documents[step], judge))
    for schema, name in STANDALONE:
        found.append(
            Document(name, schema, json.loads((FIXTURES / name).read_text()), _probe_refusal(schema, None, None))
        )
    from tests.analysis.test_bandwidth_again import measured_again

    found.append(
        Document(
            "the CPU sweep measured again (tests/analysis/test_bandwidth_again.py)",
            "bandwidth",
            measured_again(),
            _probe_refusal("bandwidth", None, None),
        )
    )
    from tests.roofline_remade import capture, contract4

    found.append(
        Document(
            "windows-h200.1.json as contract 4 states it (tests/roofline_remade.py)",
            "roofline",
            contract4(capture(1)),
            _probe_refusal("roofline", None, None),
        )
    )
    stress = _probe_output("harness.probes.stress", "--device", "cpu", "--seconds", "0.3", "--no-memory-test")
    found.append(Document("a CPU stress run made here", "stress", stress, _probe_refusal("stress", None, None)))
    found.append(
        Document(
            "a precision run made here",
            "precision",
            _precision_run(tmp),
            _probe_refusal("precision", None, None),
            only=("tensors",),
        )
    )
    from tests.transfer_fixtures import two_gpu_document

    two = two_gpu_document(FIXTURES / "h200x2" / "nvidia-smi-topo-m.txt", True, with_peer_copies=True)
    found.append(
        Document("two H200s (tests/transfer_fixtures.py)", "transfer", two, _probe_refusal("transfer", None, None))
    )
    return tuple(found)


def every_field() -> list[tuple[str, tuple[str, ...]]]:
    return [(schema, path) for schema in document_schemas() for path in schema_fields(schema)]


def test_the_documents_are_valid_and_consistent_before_any_edit():
    for doc in documents():
        assert violations(doc.schema, doc.document) == [], doc.label
        assert doc.refusal(doc.document) is None, (doc.label, doc.refusal(doc.document))


def test_every_field_of_every_document_is_classed_in_docs_bundle_md():
    unclassed = [f"{schema}: {shown(path)}" for schema, path in every_field() if listing(schema, path) is None]
    assert unclassed == [], "fields docs/bundle.md does not class (What verify checks in each document):\n" + "\n".join(
        unclassed
    )


def test_every_row_of_the_inventory_classes_a_field():
    stale = [
        f"{row.document}: {row.pattern}"
        for row in listed()
        if not any(row.matches(schema, path) for schema, path in every_field())
    ]
    assert stale == []


def unrefused(schema: str, path: tuple[str, ...]) -> list[str]:
    """Every schema-valid edit of the field, in every document holding it, that verify accepts (its
    removal is not asked to be refused where the row says the field "may be absent")."""
    field, row = schema_fields(schema)[path], listing(schema, path)
    absent_ok = row is not None and "may be absent" in row.why
    accepted = []
    for doc in documents():
        if doc.schema != schema or not doc.edits_field(path):
            continue
        for edit in edits(doc.document, field):
            if absent_ok and edit.what == "removed":
                continue
            if is_valid(schema, edit.document) and doc.refusal(edit.document) is None:
                accepted.append(f"{doc.label} {edit.describe()}")
    return accepted


@pytest.mark.parametrize("schema", document_schemas())
def test_every_checked_field_is_refused_when_edited(schema):
    claimed = [path for path in schema_fields(schema) if (row := listing(schema, path)) and row.kind in CHECKED_KINDS]
    accepted = {shown(path): found for path in claimed if (found := unrefused(schema, path))}
    assert accepted == {}, json.dumps(accepted, indent=1)


def survey() -> (
    None
):  # python -m tests.verify.test_field_inventory: the fields not classed, and whether verify refuses them
    for schema, path in every_field():
        row = listing(schema, path)
        if row is None or row.kind in CHECKED_KINDS:
            held = any(instances(d.document, path) for d in documents() if d.schema == schema and d.edits_field(path))
            found = unrefused(schema, path) if held else ["(no document holds it)"]
            print(
                f"{schema:11} {row.kind if row else '-':10} {'REFUSED' if not found else 'ACCEPTED':8} "
                f"{shown(path):55} {found[:2]}"
            )


if __name__ == "__main__":
    survey()
