"""`dossier verify`: every tampering is caught and named; a clean bundle passes."""

import json

import pytest

from harness.bundle.read import read_all
from harness.bundle.write import archive_bytes, gzip_bytes
from harness.cli import main
from harness.run.assemble import assemble
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_support import collect_test_plan, make_key, rewrite, tick_modules  # noqa: F401 - a pytest fixture, requested by name


@pytest.fixture
def signed(tmp_path, tick_modules):  # noqa: F811 - the fixture imported above
    key, public = make_key(tmp_path / "k")
    path = tmp_path / "clean.tar.gz"
    path.write_bytes(assemble(collect_test_plan(tmp_path), key))
    return path, key, public


def failures(path, public):
    return verify_bundle(path, load_public(public)).failures


def test_clean_bundle_passes_with_exit_0(signed, capsys):
    path, _, public = signed
    assert main(["verify", str(path), "--key", str(public)]) == 0
    assert "verified" in capsys.readouterr().out


def _positions(name, size):
    """Where to flip a byte of member NAME: the first, a third, the middle and the last byte.

    In the attestation every one of these lies in signed data or in its JSON framing (the payload
    fills most of it); its keyid is an unsigned hint, so it is not a position chosen here.
    """
    return sorted({0, size // 3, size // 2, size - 1})


def test_one_flipped_byte_in_any_member_fails_and_names_it(signed, tmp_path):
    path, _, public = signed
    files = read_all(path)
    assert len(files) >= 10
    for name in sorted(files):
        for position in _positions(name, len(files[name])) if files[name] else []:

            def flip(files, name=name, position=position):
                data = bytearray(files[name])
                data[position] ^= 0x01
                files[name] = bytes(data)

            found = failures(rewrite(path, tmp_path / "flipped.tar.gz", flip), public)
            assert found, f"flipping byte {position} of {name} went unnoticed"
            expected = "sha256" if name != "attestation.intoto.json" else "signature"
            # The failure names the member, and nothing is read from content the key did not sign.
            assert [(f.check, f.subject) for f in found] == [(expected, name)], (
                name,
                position,
                [f.line() for f in found],
            )


def test_a_flipped_byte_in_the_compressed_file_fails(signed, tmp_path):
    path, _, public = signed
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(bytes(data))
    assert failures(broken, public)


def test_wrong_key_fails_with_exit_1(signed, tmp_path, capsys):
    path, _, _ = signed
    _, other_public = make_key(tmp_path / "other")
    assert main(["verify", str(path), "--key", str(other_public)]) == 1
    out = capsys.readouterr()
    assert "FAIL signature attestation.intoto.json: no signature verifies with the trusted key" in out.out


def _edit_report_figure(files):
    text = files["report.md"].decode()
    line = next(line for line in text.splitlines() if line.startswith("| `mean_mib_per_s` |"))
    files["report.md"] = text.replace(line, "| `mean_mib_per_s` | 999999 MiB/s |").encode()


def test_edited_report_figure_fails_even_when_re_signed(signed, tmp_path):
    path, key, public = signed
    unsigned = failures(rewrite(path, tmp_path / "a.tar.gz", _edit_report_figure), public)
    assert [(f.check, f.subject) for f in unsigned] == [("sha256", "report.md")]  # content checks end there
    resigned = failures(rewrite(path, tmp_path / "b.tar.gz", _edit_report_figure, resign_with=key), public)
    assert [f.check for f in resigned] == ["report"]
    assert "999999" in resigned[0].detail


def test_a_stated_figure_that_differs_from_the_raw_data_fails(signed, tmp_path):
    path, key, public = signed

    def inflate(files):
        document = json.loads(files["raw/tick.json"])
        document["mean_mib_per_s"] *= 2
        files["raw/tick.json"] = json.dumps(document).encode()

    found = failures(rewrite(path, tmp_path / "c.tar.gz", inflate, resign_with=key), public)
    assert any(f.check == "figures" and f.subject == "raw/tick.json" and "samples give" in f.detail for f in found)


def test_a_raw_document_breaking_its_schema_fails(signed, tmp_path):
    path, key, public = signed

    def break_commands(files):
        commands = json.loads(files["commands.json"])
        commands["steps"][0]["exit_code"] = "zero"
        files["commands.json"] = json.dumps(commands).encode()

    found = failures(rewrite(path, tmp_path / "d.tar.gz", break_commands, resign_with=key), public)
    assert any(f.check == "schema" and f.subject == "commands.json" for f in found)


def test_extra_and_missing_files_fail(signed, tmp_path):
    path, _, public = signed
    found = failures(rewrite(path, tmp_path / "e.tar.gz", lambda f: f.update({"raw/extra.json": b"{}"})), public)
    assert any(f.subject == "raw/extra.json" and "not covered" in f.detail for f in found)
    found = failures(rewrite(path, tmp_path / "f.tar.gz", lambda f: f.pop("logs/tick.stderr.txt")), public)
    assert any(f.subject == "logs/tick.stderr.txt" and "missing" in f.detail for f in found)


def test_unsafe_archive_fails_without_reading_contents_and_json_output(signed, tmp_path, capsys):
    path, _, public = signed
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("report.md")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    evil = tmp_path / "evil.tar.gz"
    evil.write_bytes(gzip_bytes(buffer.getvalue()))
    assert main(["verify", str(evil), "--key", str(public), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False and result["checks"][0]["check"] == "structure"
    assert "symbolic link" in result["checks"][0]["detail"]


def test_oversize_bundle_is_refused_by_the_cap(signed):
    path, _, public = signed
    assert main(["verify", str(path), "--key", str(public), "--max-size-mib", "0.001"]) == 1


def test_rearchiving_the_same_files_gives_the_same_bytes(signed, tmp_path):
    path, _, _ = signed
    again = tmp_path / "again.tar.gz"
    again.write_bytes(archive_bytes(read_all(path)))
    assert again.read_bytes() == path.read_bytes()
