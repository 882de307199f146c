"""Adding a probe touches its folder, its schema, its registry entry, its docs and its tests, nothing
else (docs/architecture.md, "How to add a probe"). A toy entry, added to registry.PROBES the way
every entry is, is offered as `dossier toy`, named by `dossier --help` and `dossier run --help`,
run by `dossier run`, verified, and compared by `dossier diff`, with no other edit. (Its probe and
analysis are the test-only tick probe's: tests/bundle_probes/.)"""

import sys

import pytest

from harness import registry
from harness.analysis.figure import Figure
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.cli import build_parser, chosen_parser, parse
from harness.present.diff import compare
from harness.registry.spec import CommandSpec, DiffField, ProbeSpec
from harness.registry.steps import ProbeStep
from harness.run.orchestrate import RunOptions, run_dossier
from harness.runners.local import LocalRunner
from harness.verify import verify_bundle
from tests.bundle_probes import plan as test_plan
from tests.bundle_probes import tick_analysis
from tests.bundle_support import make_key, quiet_display

TOY = ProbeSpec(
    name="toy",
    title="toy hashing rate (test)",
    lab="test",
    options=(),
    command=CommandSpec(
        help="the toy probe (test)", description="Hashes 1 MiB five times (test).", output="toy.json", timeout_s=60
    ),
    schema="common",
    analysis="tick",
    steps=(
        ProbeStep(
            "toy",
            "tick",
            "Toy hashing rate (test)",
            "test",
            schema="common",
            analysis="tick",
            plots=None,
            timeout_s=60,
            order=5,
        ),
    ),
    diff_fields=(DiffField("software", "toy samples", lambda heads: len(heads["samples_mib_per_s"])),),
    figures=(
        Figure(
            "toy hashing rate",
            "MiB/s",
            lambda heads: heads["mean_mib_per_s"],
            why="a toy: nothing a buyer asks about",
            noise_class="host",
        ),
    ),
)


@pytest.fixture
def toy(monkeypatch):
    """The toy entry in the registry, and its analysis module where the registry looks for it."""
    monkeypatch.setitem(sys.modules, "harness.analysis.tick", tick_analysis)
    monkeypatch.setattr(registry, "PROBES", (*registry.PROBES, TOY))


def test_the_cli_offers_it_and_the_help_names_it(toy):
    parser = build_parser()
    top_help = " ".join(parser.format_help().split())
    assert "toy hashing rate (test)" in top_help and "toy the toy probe (test)" in top_help
    run_help = " ".join(chosen_parser(parser, parse(["run"])).format_help().split())
    assert "Toy hashing rate (test)" in run_help and "toy" in run_help.split("one of ")[1]
    assert parse(["toy", "--output", "t.json"]).output.name == "t.json"


def test_run_records_it_verify_checks_it_and_diff_compares_it(toy, tmp_path):
    assert [s.step for s in registry.lab_plan()][0] == "toy"  # its order (5) places it first
    plan = tuple(s for s in registry.lab_plan() if s.step == "toy")  # the other steps measure for minutes
    key, public = make_key(tmp_path / "k")
    bundles = [
        run_dossier(
            RunOptions(tmp_path / "out", name=name),
            LocalRunner(package=test_plan.PACKAGE),
            "test",
            key,
            plan,
            display=quiet_display(1),
        )
        for name in ("a", "b")
    ]
    for bundle in bundles:
        result = verify_bundle(bundle, key.public)
        assert result.ok, [c.line() for c in result.failures]
    views = [BundleView.from_files(read_all(bundle), registry.analysis_module) for bundle in bundles]
    comparison = compare(*views)
    (rate,) = [m for m in comparison.metrics if m.metric == "toy hashing rate"]
    assert rate.unit == "MiB/s" and rate.a > 0 and rate.b > 0 and rate.ratio is not None
    (samples,) = [f for f in comparison.fields if f.field == "toy samples"]
    assert samples.section == "software" and samples.a == samples.b == 5
