"""Every figure is declared once, beside its probe's analysis (issue 36): what `dossier reproduce` and `diff`
judge, what `dossier fleet collect` compares, the known-good kinds acceptance holds and the figures a
baseline is made of all come from the probes' tables (harness/analysis/NAME/declared.py), and nothing else
in the harness declares one."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from harness import registry
from harness.analysis.figure import DECIDES, INFORMS, Figure
from harness.bundle.read import read_all
from harness.bundle.view import BundleView
from harness.judge.acceptance.baseline.figures import figures_of
from harness.judge.facts import BundleFacts

ROOT = Path(__file__).parents[2]
FULL = ROOT / "tests" / "fixtures" / "h200" / "dossier-h200-full.tar.gz"


def tables() -> dict[str, tuple[Figure, ...]]:
    return {
        entry.name: importlib.import_module(f"harness.analysis.{entry.analysis}").FIGURES
        for entry in registry.PROBES
        if entry.analysis
    }


def test_the_registry_judges_exactly_the_analyses_tables():
    found = tables()
    for entry in registry.PROBES:
        assert entry.figures is found.get(entry.name, ()), entry.name
    assert [f for _, _, f in registry.figures()] == [f for t in found.values() for f in t]
    assert registry.diff_figures() == registry.figures()


def test_every_fleet_metric_and_known_good_kind_is_a_figures_view():
    views = {v.name for t in tables().values() for f in t for v in f.fleets}
    assert {m.name for _, m in registry.fleet_metrics()} == views and len(views) == len(registry.fleet_metrics())
    kinds = {f.accept.known_good for t in tables().values() for f in t if f.accept}
    assert set(registry.known_good_kinds()) == kinds


def test_a_baselines_figures_are_the_accept_views_of_the_tables():
    view = BundleView.from_files(read_all(FULL), registry.analysis_module)
    baseline = figures_of(BundleFacts(view))
    accepted = {f.accept.known_good.field for t in tables().values() for f in t if f.accept}
    assert baseline and {f.known_good[0] for f in baseline} <= accepted
    # every dtype the roofline timed, its own and each dtype check's (a format-5 bundle's checks included)
    assert {f.criterion for f in baseline} >= {"gemm_bf16", "gemm_fp8", "gemm_tf32", "stress_sustained_bf16"}


def test_every_figure_says_what_it_is_for():
    for probe, figures in tables().items():
        for figure in figures:
            assert figure.role in (DECIDES, INFORMS) or callable(figure.role), (probe, figure.name)
            assert figure.role != INFORMS or figure.why, (probe, figure.name)


def test_no_other_module_declares_a_figure():
    """A Figure(...), a fleet view or a known-good kind is built only in the analysis tables (and the class's
    own module); the registry, the judges and the fleet read them."""
    pattern = re.compile(r"\b(Figure|Fleet|KnownGood|Accept)\(")
    for path in sorted((ROOT / "harness").rglob("*.py")):
        text = path.read_text()
        if path.name == "declared.py" or path.name == "figure.py":
            continue
        hits = [line for line in text.splitlines() if pattern.search(line) and "class " not in line]
        assert not hits, (path, hits[:2])
