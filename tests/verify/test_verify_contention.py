"""host-contention.json checked by verify (bundle format 6, issue 35), on a bundle of the test plan made
and signed here (its two tick steps each read the host while they ran): every edit a key holder could
make of it, resigned, is named."""

import json

import pytest

from harness.bundle import layout
from harness.bundle.read import read_all
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import rewrite, signed_plan_bundle


@pytest.fixture(scope="module")
def plan_bundle(tmp_path_factory):
    return signed_plan_bundle(tmp_path_factory.mktemp("contention"))


@pytest.fixture
def signed(plan_bundle, monkeypatch):
    test_plan.install(monkeypatch)
    return plan_bundle


def _edited(signed, tmp_path, change):
    path, key, public = signed

    def edit(files):
        document = json.loads(files[layout.CONTENTION])
        change(document)
        files[layout.CONTENTION] = json.dumps(document).encode()

    return verify_bundle(rewrite(path, tmp_path / "edited.tar.gz", edit, resign_with=key), load_public(public))


def _failures(result):
    return [(c.check, c.subject, c.detail) for c in result.failures]


def test_the_plan_bundle_records_a_window_for_each_probe_step_that_ran(signed):
    path, _, public = signed
    result = verify_bundle(path, load_public(public))
    assert result.ok
    assert any(c.subject == layout.CONTENTION and "recomputed from its samples" in c.detail for c in result.checks)
    document = json.loads(read_all(path)[layout.CONTENTION])
    assert [e["step"] for e in document["steps"]] == ["tick", "fails", "tock"]  # not run: no window


def test_an_edited_summary_is_named(signed, tmp_path):
    def quiet(document):  # another figure than the readings give, whatever the host did (0.0 on an idle one)
        summary = document["steps"][0]["summary"]
        summary["others_cores"] = summary["others_cores"] + 1.0

    [failure] = _failures(_edited(signed, tmp_path, quiet))
    assert failure[:2] == ("figures", layout.CONTENTION) and "summary others_cores" in failure[2]


def test_a_process_added_to_the_readings_is_named(signed, tmp_path):
    def invent(document):
        document["steps"][0]["samples"][-1]["others"].append({"pid": 999999, "comm": "invented", "ticks": 500})

    found = _failures(_edited(signed, tmp_path, invent))
    assert ("figures", layout.CONTENTION) in [f[:2] for f in found]  # (and report.md, rendered from the readings)
    assert any("summary others_cores" in f[2] for f in found)


def test_a_window_of_a_step_that_ran_no_process_is_named(signed, tmp_path):
    def invent(document):
        document["steps"].append({**document["steps"][0], "step": "orphan"})

    found = _failures(_edited(signed, tmp_path, invent))
    assert any("a window of step 'orphan', which ran no probe process" in f[2] for f in found), found


def test_a_document_against_its_schema_fails_and_the_report_is_not_rendered_from_it(signed, tmp_path):
    def break_it(document):
        document["steps"][0]["samples"][0]["loadavg"] = "high"

    found = _failures(_edited(signed, tmp_path, break_it))
    assert [f[:2] for f in found] == [("schema", layout.CONTENTION)]


def test_its_format_version_must_be_the_bundles(signed, tmp_path):
    def older(document):
        document["format_version"] = layout.FORMAT_VERSION + 1

    [failure] = [f for f in _failures(_edited(signed, tmp_path, older)) if f[1] == layout.CONTENTION]
    assert f"format_version {layout.FORMAT_VERSION + 1} but commands.json says {layout.FORMAT_VERSION}" in failure[2]


def test_a_window_left_out_or_out_of_order_is_named(signed, tmp_path):
    def drop(document):
        document["steps"].pop()  # tock's

    found = _failures(_edited(signed, tmp_path, drop))
    assert any("step 'tock' ran a probe process but has no window" in f[2] for f in found), found

    def reverse(document):
        document["steps"].reverse()

    found = _failures(_edited(signed, tmp_path, reverse))
    assert any("not in the order commands.json ran their steps" in f[2] for f in found), found
