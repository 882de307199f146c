"""`dossier verify` answers every input with a result (issue 14 items 1-3): signed but malformed
content is a named failed check, never a traceback, and memory stays bounded."""

import json
import tracemalloc

import pytest

from harness.bundle import layout
from harness.bundle.read import Limits, read_all
from harness.bundle.write import archive_bytes
from harness.signing.keys import load_public
from harness.verify import INTERNAL_ERROR, verify_bundle
from tests.bundle_probes import tick_analysis
from tests.bundle_support import rewrite, signed_plan_bundle, tick_modules  # noqa: F401 - a pytest fixture, requested by name


@pytest.fixture(scope="module")
def plan_bundle(tmp_path_factory):
    """One real bundle of the test plan (tick, a failed step, a dependent and a not-run one)."""
    return signed_plan_bundle(tmp_path_factory.mktemp("robust"))


@pytest.fixture
def signed(plan_bundle, tick_modules):  # noqa: F811 - the fixture imported above
    return plan_bundle


def verified(path, public, limits=Limits()):
    return verify_bundle(path, load_public(public), limits)


def resigned(signed, tmp_path, edit):
    path, key, public = signed
    return verified(rewrite(path, tmp_path / "edited.tar.gz", edit, resign_with=key), public)


def no_crash(result):
    """The result names its failures; none is the internal-error guard (a bug, not a verdict)."""
    assert not result.ok
    assert not any(INTERNAL_ERROR in c.detail for c in result.checks), [c.line() for c in result.failures]
    return [(c.check, c.subject) for c in result.failures]


def edit_json(name, change):
    def edit(files):
        document = json.loads(files[name])
        files[name] = json.dumps(change(document)).encode()

    return edit


def test_the_clean_bundle_passes(signed):
    path, _, public = signed
    assert verified(path, public).ok


def test_a_raw_document_that_is_a_list_is_a_named_failure(signed, tmp_path):
    result = resigned(signed, tmp_path, edit_json("raw/tick.json", lambda d: [d]))
    failed = no_crash(result)
    assert ("figures", "raw/tick.json") in failed  # headlines cannot read a list: named, not raised
    assert any("TypeError" in c.detail for c in result.failures if c.subject == "raw/tick.json")


@pytest.mark.parametrize(
    "change",
    [
        lambda c: {**c, "steps": [1, "two", None]},
        lambda c: {**c, "steps": "not a list"},
        lambda c: {k: v for k, v in c.items() if k != "tool"},
        lambda c: {**{k: v for k, v in c.items() if k != "duration_s"}, "duration_t": c["duration_s"]},
        lambda c: {**c, "steps": [{**s, "duration_t": s.pop("duration_s")} for s in c["steps"]]},
        lambda c: {**c, "steps": c["steps"] + c["steps"][:1]},
        lambda c: [c],
    ],
    ids=[
        "steps-not-objects",
        "steps-not-a-list",
        "no-tool",
        "renamed-duration",
        "renamed-step-key",
        "duplicate-step",
        "a-list",
    ],
)
def test_malformed_commands_json_is_its_schema_failure_and_nothing_after(signed, tmp_path, change):
    failed = no_crash(resigned(signed, tmp_path, edit_json(layout.COMMANDS, change)))
    assert failed[0] == ("schema", layout.COMMANDS)
    assert "report" not in {check for check, _ in failed}


@pytest.mark.parametrize("change", [lambda e: [e], lambda e: {**e, "host": "a string"}], ids=["a-list", "bad-host"])
def test_a_malformed_environment_fails_its_schema_and_the_report_is_not_rendered(signed, tmp_path, change):
    failed = no_crash(resigned(signed, tmp_path, edit_json(layout.ENVIRONMENT, change)))
    assert ("schema", layout.ENVIRONMENT) in failed and "report" not in {check for check, _ in failed}


@pytest.mark.parametrize(
    "text, why",
    [
        (b'{"mean_mib_per_s": NaN}', "NaN is not JSON"),
        (b'{"mean_mib_per_s": 1e999}', "out of range"),
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 64 deep"),
        (b'{"x": ' + b"9" * 5000 + b"}", "not JSON"),
        (b'\xff{"x": 1}', "not JSON"),
        ('{"x": 1}'.encode("utf-16"), "not JSON"),
    ],
    ids=["nan", "infinity", "deep", "huge-int", "not-utf8", "utf16"],
)
def test_a_raw_document_that_is_not_strict_json_is_named(signed, tmp_path, text, why):
    result = resigned(signed, tmp_path, lambda files: files.update({"raw/tick.json": text}))
    no_crash(result)
    assert any("raw/tick.json" in c.detail and why in c.detail for c in result.failures), [
        c.line() for c in result.failures
    ]


@pytest.mark.parametrize("text", [b"[" * 100_000, b'{"payload": ' + b"1" * 5000 + b"}", b"\xfe\xff", b"[]"])
def test_an_attestation_that_is_not_an_envelope_fails_the_signature_check(signed, tmp_path, text):
    path, _, public = signed
    result = verified(rewrite(path, tmp_path / "a.tar.gz", lambda f: f.update({layout.ATTESTATION: text})), public)
    assert no_crash(result) == [("signature", layout.ATTESTATION)]


def _host_step(function):
    def edit(files):
        commands = json.loads(files[layout.COMMANDS])
        tick = next(s for s in commands["steps"] if s["step"] == "tick")
        commands["steps"].append(
            {
                **tick,
                "step": "hostile",
                "kind": "host",
                "argv": None,
                "env": None,
                "stdout": None,
                "stderr": None,
                "output": "derived/hostile.json",
                "analysis": None,
                "plots": [],
                "needs": ["tick"],
                "function": function,
            }
        )
        files[layout.COMMANDS] = json.dumps(commands).encode()
        files["derived/hostile.json"] = b"{}"

    return edit


@pytest.mark.parametrize(
    "function, why",
    [
        ("harness.analysis.health.diff:json", "defines no function 'json'"),
        ("harness.analysis.health.diff:_private", "is not in harness.analysis"),
        ("harness.present.report:render_report", "is not in harness.analysis"),
        ("os:system", "is not in harness.analysis"),
    ],
)
def test_a_host_function_must_be_a_public_function_of_harness_analysis(signed, tmp_path, function, why):
    result = resigned(signed, tmp_path, _host_step(function))
    no_crash(result)
    assert any(c.subject == "derived/hostile.json" and why in c.detail for c in result.failures), [
        c.line() for c in result.failures
    ]


def test_an_analysis_that_raises_is_a_named_figures_failure(signed, tmp_path, monkeypatch):
    def broken(document):
        raise ZeroDivisionError("no samples")

    monkeypatch.setattr(tick_analysis, "discrepancies", broken)
    path, _, public = signed
    result = verified(path, public)
    assert no_crash(result) == [("figures", "raw/tick.json"), ("figures", "raw/tock.json")]
    assert "discrepancies() raised ZeroDivisionError: no samples" in result.failures[0].detail


def test_a_check_that_raises_is_reported_as_an_internal_error_never_raised(signed, monkeypatch):
    import harness.verify

    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(harness.verify, "check_content", broken)
    path, _, public = signed
    result = verified(path, public)
    assert not result.ok and [c.check for c in result.checks] == ["internal"]
    assert result.checks[0].detail.startswith(f"{INTERNAL_ERROR}: RuntimeError: boom")


def test_a_directory_or_a_missing_file_is_a_structure_failure(tmp_path, signed):
    _, _, public = signed
    for path, why in ((tmp_path, "cannot read"), (tmp_path / "missing.tar.gz", "does not exist")):
        result = verified(path, public)
        assert [c.check for c in result.checks] == ["structure"] and why in result.checks[0].detail


def test_a_member_kept_in_memory_is_capped_from_its_header(signed, tmp_path):
    path, _, public = signed
    result = verified(path, public, Limits(max_kept_member_bytes=1024))
    assert [c.check for c in result.checks] == ["structure"]
    assert "a member read into memory is capped at 1024 bytes" in result.checks[0].detail


def _peak_bytes(function):
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("size_mib", [8, 64])
def test_a_highly_compressible_member_just_under_the_cap_is_streamed(signed, tmp_path, size_mib):
    """Verify holds a chunk, not the member: the peak does not grow with the member's size."""
    path, _, public = signed
    files = read_all(path)
    files["logs/huge.stderr.txt"] = bytes(size_mib << 20)  # zeros: ~1000x compression
    big = tmp_path / "big.tar.gz"
    big.write_bytes(archive_bytes(files))
    del files
    limits = Limits(max_total_bytes=(size_mib + 1) << 20)
    peak = _peak_bytes(lambda: verified(big, public, limits))
    assert peak < 8 << 20, f"verify peaked at {peak / 2**20:.1f} MiB for a {size_mib} MiB member"


def test_a_kept_member_just_under_its_cap_is_held_once_and_never_parsed_unsigned(signed, tmp_path):
    path, _, public = signed
    files = read_all(path)
    files["raw/tick.json"] = b"[" + b"{}," * ((4 << 20) // 3 - 1) + b"{}]"  # parsing it would take ~100 MiB
    big = tmp_path / "kept.tar.gz"
    big.write_bytes(archive_bytes(files))
    del files
    limits = Limits(max_kept_member_bytes=5 << 20)
    result = []
    peak = _peak_bytes(lambda: result.append(verified(big, public, limits)))
    assert [(c.check, c.subject) for c in result[0].failures] == [("sha256", "raw/tick.json")]
    assert peak < 16 << 20, f"verify peaked at {peak / 2**20:.1f} MiB for a 4 MiB kept member"


def test_a_lone_surrogate_in_a_signed_document_is_a_named_failure_and_prints(signed, tmp_path):
    def odd_limitation(files):
        document = json.loads(files["raw/tick.json"])
        document["limitations"] = [{"what": "\udcff", "why": "a lone surrogate, escaped in JSON"}]
        files["raw/tick.json"] = json.dumps(document).encode()  # ASCII: "\udcff" as an escape

    result = resigned(signed, tmp_path, odd_limitation)
    assert no_crash(result) == [("report", layout.REPORT)]
    detail = result.failures[0].detail  # the report cannot be re-rendered, or re-renders otherwise: named either way
    assert "UnicodeEncodeError" in detail or "differs from the report re-rendered" in detail
    assert all(c.line().encode("utf-8") for c in result.checks)


def test_a_signed_subject_name_that_is_not_a_safe_member_name_fails_the_statement(signed, tmp_path):
    from harness.bundle.seal import bundle_statement
    from harness.signing.statement import sign_statement

    path, key, public = signed

    def odd_subject(files):
        files.pop(layout.ATTESTATION)
        files[layout.ATTESTATION] = sign_statement(bundle_statement({**files, "\udcff/x": b""}, {}), key)

    result = verified(rewrite(path, tmp_path / "s.tar.gz", odd_subject), public)
    assert no_crash(result) == [("statement", layout.ATTESTATION)]
    assert "not UTF-8" in result.failures[0].detail and result.failures[0].line().encode("utf-8")
