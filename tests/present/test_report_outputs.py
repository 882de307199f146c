"""What a person reads in a bundle: report.md under 24 KB with no line over 200 characters outside
tables (commands short, the environment once, long values folded), no empty plot (one GPU: no
all-reduce plot, and the report says why), roofline labels that do not overlap.

The H200 bundles are the committed ones (tests/fixtures/h200*/, taken on the lent H200s), read as
this build renders them: `dossier report` of the bundle, and the bundle re-made by this build from
its own recorded run (same argv, environment, raw output and stderr). Both hold for any H200
bundle put there, the format-1 ones of today and the one the lead retakes.
"""

import json
from pathlib import Path

import pytest
from matplotlib.text import Text

from harness.bundle import layout
from harness.bundle.read import read_all
from harness.cli import main
from harness.present.folding import LINE_LIMIT, fold, short_command, wrap_markdown
from harness.present.plots import NothingToPlot
from harness.present.plots import allreduce as allreduce_plot
from harness.present.plots import roofline as roofline_plot
from harness.run.assemble import unsigned_files
from tests.h200_remade import record_of
from tests.roofline_remade import capture, contract4

FIXTURES = Path(__file__).parents[1] / "fixtures"
H200 = FIXTURES / "h200" / "dossier-h200.tar.gz"
H200X2 = FIXTURES / "h200x2" / "dossier-h200x2.tar.gz"
H200_FULL = FIXTURES / "h200" / "dossier-h200-full.tar.gz"  # format 4, every step with stress and transfer
REPORT_LIMIT_BYTES = 24_000  # format 6 sets every headline rate beside its known-good (issue 38)


def assert_readable(report: str) -> None:
    """Under 24 KB, and no line over LINE_LIMIT characters outside tables."""
    assert len(report.encode()) < REPORT_LIMIT_BYTES, len(report.encode())
    long = [line[:80] for line in report.splitlines() if len(line) > LINE_LIMIT and not line.startswith("|")]
    assert long == []


@pytest.fixture(scope="module")
def remade():
    """The one-GPU H200 bundle's files as this build makes them from its recorded run."""
    return unsigned_files(record_of(H200))


@pytest.mark.parametrize("bundle", [H200, H200X2, H200_FULL], ids=["h200", "h200x2", "h200-full"])
def test_dossier_report_of_the_h200_bundles_is_small_and_short_lined(bundle, capsys):
    # formats 1 and 4 (the committed dossiers): rendered by this build's rules
    assert main(["report", str(bundle), "--allow-format", "1", "--allow-format", "4"]) == 0
    assert_readable(capsys.readouterr().out)


def test_dossier_report_refuses_an_older_format_unless_allowed(capsys):
    assert main(["report", str(H200)]) == 2
    err = capsys.readouterr().err
    assert "is a format-1 bundle: this build renders format" in err and "--allow-format 1" in err
    assert main(["report", str(H200), "--allow-format", "1"]) == 0
    assert "is a format-1 bundle, rendered by format" in capsys.readouterr().err


def test_the_remade_h200_report_is_small_short_lined_and_says_each_thing_once(remade):
    report = remade[layout.REPORT].decode()
    assert_readable(report)
    commands = json.loads(remade[layout.COMMANDS])
    interpreter = commands["steps"][0]["argv"][0]
    assert interpreter not in [
        word.strip("`") for line in report.splitlines() if "python -m" in line for word in line.split()
    ]  # the interpreter's path is folded to `python`
    assert "- Health and toolchain at idle: `python -m harness.probes.health`" in report
    for key, value in commands["steps"][0]["env"].items():  # every step's environment, shown once
        assert report.count(f"`{key}=") == 1, key
        if len(value) > 100:
            assert value not in report and f"({len(value)} characters)" in report


def test_one_gpu_all_reduce_has_no_plot_and_the_report_says_why(remade):
    assert not [name for name in remade if name.startswith("plots/allreduce/")]
    entry = next(s for s in json.loads(remade[layout.COMMANDS])["steps"] if s["step"] == "allreduce")
    why = "No all-reduce curve was measured, so there is nothing to plot: 1 visible GPU: all-reduce needs at least 2."
    assert entry["plots"] == [] and entry["plot_note"] == why
    report = remade[layout.REPORT].decode()
    criterion = report.split("### All-reduce between GPUs: ", 1)[1].split("\n### ", 1)[0]
    assert f"No plot for All-reduce curves: {' '.join(why.split())}" in " ".join(criterion.split())
    assert "plots/allreduce" not in report


def test_the_precision_table_is_a_member_the_report_links(remade):
    assert layout.table_name("precision") in remade
    assert remade[layout.table_name("precision")].startswith(b"# Precision of checkpoint tensors (M1T3)")
    assert f"]({layout.table_name('precision')})" in remade[layout.REPORT].decode()


def test_the_remade_bundle_carries_the_schemas_its_documents_use(remade):
    commands = json.loads(remade[layout.COMMANDS])
    assert commands["schemas"] == sorted(name for name in remade if name.startswith(layout.SCHEMAS_DIR))
    assert {
        "schemas/common.schema.json",
        "schemas/commands.schema.json",
        "schemas/health-diff.schema.json",
        "schemas/precision.schema.json",
    } <= set(commands["schemas"])


def test_the_allreduce_plot_of_no_curve_raises_nothing_to_plot_with_one_sentence():
    document = json.loads(read_all(H200)["raw/allreduce.json"])
    with pytest.raises(NothingToPlot) as raised:
        allreduce_plot.render(document, Path("/nonexistent/never-written"))
    assert str(raised.value).count(". ") == 0 and str(raised.value).endswith(".")


def _roofline_documents():
    yield "h200 bf16", json.loads(read_all(H200)["raw/roofline.json"])
    yield "h200x2 bf16", json.loads(read_all(H200X2)["raw/roofline.json"])
    yield "h200 fp8", json.loads(read_all(H200)["raw/roofline-fp8.json"])
    yield "h200 bf16 kernel-only", contract4(capture(1))  # launch-bound shapes drawn twice (kernel-only, eager)


@pytest.mark.parametrize("name, document", list(_roofline_documents()), ids=lambda v: v if isinstance(v, str) else "")
def test_roofline_labels_overlap_no_label_and_no_point(name, document):
    fig = roofline_plot.figure(document)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = list(ax.texts)
    points = roofline_plot.points(document)
    assert sorted(t.get_text() for t in labels) == sorted(p["label"] for p in points)
    boxes = [Text.get_window_extent(t, renderer) for t in labels]  # the text alone, not its leader line
    frame = ax.get_window_extent(renderer)
    for i, box in enumerate(boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        for j in range(i + 1, len(boxes)):
            assert not box.overlaps(boxes[j]), (labels[i].get_text(), labels[j].get_text())
        for p in points + roofline_plot.eager_points(document):  # the unlabelled eager points too
            x, y = ax.transData.transform((p["ai"], p["tflops"]))
            assert not (box.x0 < x < box.x1 and box.y0 < y < box.y1), (labels[i].get_text(), p["label"])
    compute = [
        p for p in points if p["ai"] > document["roofs"]["peak_tflops"] * 1e3 / document["roofs"]["bandwidth_gbps"]
    ]
    assert name != "h200 bf16" or len(compute) >= 10  # the crowded compute-bound cluster is among them


def test_fold_names_what_was_left_out_and_where():
    items = "; ".join(f"shape-{i}: compute" for i in range(40))
    folded = fold(f"classifications: {items}", "raw/roofline.json")
    assert len(folded) <= 200 and folded.endswith("more in raw/roofline.json")
    left = int(folded.rsplit("… ", 1)[1].split()[0])
    assert folded.count("shape-") + left == 40
    assert fold("short", "x") == "short"


def test_wrap_keeps_markdown_structure_and_leaves_tables_and_code():
    text = "- " + "word " * 60 + "\n  - " + "nested " * 40 + "\n| " + "cell | " * 60 + "\n    " + "code " * 60
    wrapped = wrap_markdown(text, 100).splitlines()
    assert all(len(line) <= 100 for line in wrapped if not line.startswith(("|", "    code")))
    assert wrapped[0].startswith("- word") and wrapped[1].startswith("  word")
    assert any(line.startswith("  - nested") for line in wrapped) and any(
        line.startswith("    nested") for line in wrapped
    )
    assert (
        sum(line.startswith("|") for line in wrapped) == 1 and sum(line.startswith("    code") for line in wrapped) == 1
    )


def test_short_command_folds_the_interpreter_json_and_long_paths():
    argv = [
        "/opt/torch/.venv/bin/python3",
        "-m",
        "harness.probes.precision",
        "--file",
        "/root/.cache/rig-dossier/blobs/sha256/" + "a" * 64,
        "--tensor-index",
        json.dumps({"k": "v" * 100}),
        "--tensor",
        "attention_projection=encoder.layer.0.attention.self.query.weight",
    ]
    assert short_command(argv) == (
        "python -m harness.probes.precision --file '…/aaaaaaaaaaaa…' --tensor-index "
        "'{…109 characters…}' --tensor "
        "attention_projection=encoder.layer.0.attention.self.query.weight"
    )
    assert short_command(["python3.12", "-m", "x", "/short/path"]) == "python -m x /short/path"


def test_the_full_h200_bundle_stores_a_small_short_lined_report():
    """The report as the GPU machine rendered and signed it (verify proves this build renders the same)."""
    assert_readable(read_all(H200_FULL)[layout.REPORT].decode())
