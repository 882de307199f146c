"""A bundle is verified by the rules of the format it claims (issue 28 item 1): formats this build
cannot fully check fail unless allowed, and then the checks not done are listed; a newer bundle
relabelled with an older format fails on the members that format does not carry; environment.json
repeats the claim."""

import json
from pathlib import Path

import pytest

from harness.bundle import layout
from harness.cli import main
from harness.fleet.node import NodeTask, check_node
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from harness.verify.formats import FORMATS, fully_checked, not_done, oldest_fully_checked, renders
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import rewrite, signed_plan_bundle

FIXTURES = Path(__file__).parents[1] / "fixtures"
FORMAT_1 = FIXTURES / "h200" / "dossier-h200.tar.gz"  # rig-dossier 0.1.0, the lent H200


def test_every_format_up_to_the_one_this_build_writes_has_its_rules():
    assert sorted(FORMATS) == list(range(1, layout.FORMAT_VERSION + 1)), (
        "a new FORMAT_VERSION needs its row in harness/bundle/verify/formats.py FORMATS"
    )


def test_only_the_format_this_build_renders_is_fully_checked():
    assert renders(layout.FORMAT_VERSION) and fully_checked() == [layout.FORMAT_VERSION]
    assert oldest_fully_checked() == layout.FORMAT_VERSION
    previous = FORMATS[layout.FORMAT_VERSION - 1]
    older = not_done(previous)  # what the format before this build's misses here: its report, its tables
    assert [c.subject for c in older] == [layout.REPORT] + ([f"{layout.TABLES_DIR}*"] if previous.tables else [])
    assert all(c.ok and "not re-rendered" in c.detail for c in older)


@pytest.fixture(scope="module")
def plan_bundle(tmp_path_factory):
    return signed_plan_bundle(tmp_path_factory.mktemp("formats"))


@pytest.fixture
def signed(plan_bundle, monkeypatch):
    test_plan.install(monkeypatch)
    return plan_bundle


def _claiming(version, environment=None, strip=False, report=None):
    """An edit: commands.json (and environment.json) say VERSION; STRIP the schemas/ members and
    their listing, the run-to-run block and host-contention.json (what an older format lacks); REPORT
    replaces one line of report.md."""

    def edit(files):
        commands, env = json.loads(files[layout.COMMANDS]), json.loads(files[layout.ENVIRONMENT])
        commands["format_version"], env["format_version"] = version, version if environment is None else environment
        if strip:
            commands.pop("schemas")
            commands.pop("repeatability")
            for name in [n for n in files if n.startswith(layout.SCHEMAS_DIR) or n == layout.CONTENTION]:
                del files[name]
        files[layout.COMMANDS], files[layout.ENVIRONMENT] = json.dumps(commands).encode(), json.dumps(env).encode()
        if report:
            old, new = report
            files[layout.REPORT] = files[layout.REPORT].replace(old, new)

    return edit


def _verified(signed, tmp_path, edit, allow=()):
    path, key, public = signed
    return verify_bundle(
        rewrite(path, tmp_path / "edited.tar.gz", edit, resign_with=key), load_public(public), allow_formats=allow
    )


def test_a_downgraded_bundle_with_an_edited_report_fails_unless_its_format_is_allowed(signed, tmp_path):
    edit = _claiming(3, strip=True, report=(b"| `mean_mib_per_s` | ", b"| `mean_mib_per_s` | 9"))
    refused = _verified(signed, tmp_path, edit)
    assert [(c.check, c.subject) for c in refused.failures] == [("format", layout.COMMANDS)]
    assert "older than the oldest this build fully checks" in refused.failures[0].detail
    assert "--allow-format 3" in refused.failures[0].detail
    allowed = _verified(signed, tmp_path, edit, allow=(3,))
    assert allowed.ok  # what the user allowed: verified without the report, and told so
    assert [(c.check, c.subject) for c in allowed.not_done] == [("report", layout.REPORT)]


def test_a_newer_bundle_relabelled_older_fails_on_the_members_that_format_lacks(signed, tmp_path):
    result = _verified(signed, tmp_path, _claiming(3), allow=(3,))
    assert [(c.check, c.subject) for c in result.failures] == [
        ("format", layout.COMMANDS),
        ("format", "schemas/commands.schema.json"),
        ("format", layout.CONTENTION),
    ]
    assert "format 3 bundles carry no repeatability in commands.json" in result.failures[0].detail
    assert "format 3 bundles carry no schemas/ members" in result.failures[1].detail
    assert "format 3 bundles carry no host-contention.json" in result.failures[2].detail


def test_a_bundle_of_this_format_without_its_host_readings_fails(signed, tmp_path):
    def drop(files):
        del files[layout.CONTENTION]

    result = _verified(signed, tmp_path, drop)  # the report, rendered without its host section, differs too
    assert [(c.check, c.subject) for c in result.failures] == [("files", layout.CONTENTION), ("report", layout.REPORT)]
    assert "record the host read while each step ran, but this one lacks it" in result.failures[0].detail


def test_a_bundle_of_this_format_without_its_run_to_run_block_fails(signed, tmp_path):
    def drop(files):
        commands = json.loads(files[layout.COMMANDS])
        commands.pop("repeatability")
        files[layout.COMMANDS] = json.dumps(commands).encode()

    result = _verified(signed, tmp_path, drop)  # the report rendered without the block differs too
    assert [(c.check, c.subject) for c in result.failures] == [("format", layout.COMMANDS), ("report", layout.REPORT)]
    assert f"format {layout.FORMAT_VERSION} bundles record repeatability" in result.failures[0].detail


def test_environment_json_must_repeat_the_format(signed, tmp_path):
    result = _verified(signed, tmp_path, _claiming(layout.FORMAT_VERSION, environment=layout.FORMAT_VERSION - 1))
    assert [(c.check, c.subject) for c in result.failures] == [("format", layout.ENVIRONMENT)]


def test_a_format_this_build_does_not_know_fails(signed, tmp_path):
    newer = layout.FORMAT_VERSION + 5
    result = _verified(signed, tmp_path, _claiming(newer), allow=(newer,))
    assert [c.check for c in result.failures] == ["format"]
    assert "is not a bundle format this build knows" in result.failures[0].detail
    assert "a newer rig-dossier made it" in result.failures[0].detail


def test_the_cli_refuses_to_allow_a_format_it_does_not_know(signed, capsys):
    path, _, public = signed
    assert main(["verify", str(path), "--key", str(public), "--allow-format", "99"]) == 2
    assert "--allow-format 99: no bundle format 99" in capsys.readouterr().err


def test_fleet_collect_applies_the_same_rule(tmp_path):
    public = str(FORMAT_1.with_suffix("").with_suffix(".pub"))
    refused = check_node(NodeTask("n1", str(FORMAT_1), public, "h200-sxm-141gb"))
    assert refused["status"] == "rejected" and "format 1" in refused["why"]
    allowed = check_node(NodeTask("n1", str(FORMAT_1), public, "h200-sxm-141gb", allow_formats=(1,)))
    assert allowed["status"] == "ok" and allowed["verify"]["not_done"][0].startswith(
        "report report.md: not re-rendered"
    )
