"""A bundle checked by independent implementations (issue 14 item 17, issue 28 item 2):
securesystemslib's DSSE Envelope with an SSlibKey, in-toto-attestation's Statement, and Python's
zlib and tarfile header parser, as docs/bundle.md's third-party check uses them.

The code under test is docs/bundle.md's recipe itself (the block after its "tested" marker), run
as written: in-process for the many archives, and once as the script a third party saves and runs.
It must pass the committed H200 bundles and one made here, and refuse every hostile archive
`dossier verify` is tested against (tests/fuzz_support.py hostile_archives), writing nothing.
"""

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError

from harness.bundle import layout
from harness.bundle.read import UnsafeBundle, read_all
from harness.bundle.write import BLOCK, RECORD, archive_bytes, tar_bytes
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_support import signed_plan_bundle, tick_modules  # noqa: F401 - a pytest fixture, requested by name
from tests.fuzz_support import hostile_archives

ROOT = Path(__file__).parents[2]
FIXTURES = [
    (ROOT / "tests/fixtures/h200/dossier-h200.tar.gz", ROOT / "tests/fixtures/h200/dossier-h200.pub"),
    (ROOT / "tests/fixtures/h200x2/dossier-h200x2.tar.gz", ROOT / "tests/fixtures/h200x2/dossier-h200x2.pub"),
    (ROOT / "tests/fixtures/h200/dossier-h200-full.tar.gz", ROOT / "tests/fixtures/h200/dossier-h200-full.pub"),
]


def documented_recipe() -> str:
    text = (ROOT / "docs/bundle.md").read_text()
    marker = text.index("<!-- tested: tests/verify/test_verify_independent.py")
    return re.search(r"```python\n(.*?)```", text[marker:], re.S).group(1)


@pytest.fixture(scope="module")
def recipe() -> dict:
    """The recipe's functions, from the exact text of the docs (run as a module, not as a script)."""
    namespace = {"__name__": "check_bundle"}
    exec(compile(documented_recipe(), "docs/bundle.md", "exec"), namespace)  # the recipe of our own docs
    return namespace


def run_recipe(recipe, bundle: Path, public: Path) -> str:
    return recipe["check"](str(bundle), str(public))[1]


@pytest.fixture(scope="module")
def made_here(tmp_path_factory):
    """A bundle of the test plan made by this build, and its key pair."""
    return signed_plan_bundle(tmp_path_factory.mktemp("independent"))


@pytest.mark.parametrize("bundle, public", FIXTURES, ids=["h200", "h200x2", "h200-full"])
def test_the_documented_third_party_check_passes_on_the_h200_bundles(recipe, bundle, public):
    assert run_recipe(recipe, bundle, public).startswith("verified: ")


def test_the_documented_script_run_as_written_verifies_then_extracts_into_a_new_folder(made_here, tmp_path):
    path, _, public = made_here
    script = tmp_path / "check_bundle.py"
    script.write_text(documented_recipe())
    out = tmp_path / "extracted"
    done = subprocess.run(
        [sys.executable, str(script), str(path), str(public), str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.startswith(
        "verified: 16 files"
    )  # 14 before format 6's host-contention.json and its schema, done.stderr
    written = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written == read_all(path)
    again = subprocess.run(
        [sys.executable, str(script), str(path), str(public), str(out)], capture_output=True, text=True, timeout=120
    )
    assert again.returncode != 0 and "FileExistsError" in again.stderr  # never into an existing folder


def _hostile(made_here):
    return hostile_archives(read_all(made_here[0]))


HOSTILE = [
    "symlink to /etc/passwd",
    "hard link",
    "character device",
    "block device",
    "FIFO",
    "directory",
    "absolute name",
    "'..' name",
    "symlinked plots folder",
    "setuid bit",
    "setgid bit",
    "owned by a user",
    "another mtime",
    "pax extended header",
    "GNU header",
    "data after the end-of-archive marker",
    "data hidden in the record padding",
    "a second gzip member",
    "trailing bytes after the gzip stream",
    "a file name in the gzip header",
    "members reordered",
    "a member twice",
    "data in a member's padding",
]


def test_the_hostile_archives_are_the_ones_named_here(made_here):
    assert sorted(_hostile(made_here)) == sorted(HOSTILE)


def test_the_padding_cases_exist_whatever_size_the_members_have(tmp_path):
    # two 512-byte headers, 8 + 8 blocks of data and the two end-of-archive blocks = 10240 bytes
    files = {layout.REPORT: b"r" * 8 * BLOCK, "raw/a.json": b"a" * 8 * BLOCK}
    assert len(tar_bytes(files)) == RECORD
    data = hostile_archives(files)["data hidden in the record padding"]
    path = tmp_path / "hidden.tar.gz"
    path.write_bytes(data)
    with pytest.raises(UnsafeBundle, match="end-of-archive"):
        read_all(path)
    # and every member's data a whole number of blocks: the member-padding case exists too
    path.write_bytes(hostile_archives(files)["data in a member's padding"])
    with pytest.raises(UnsafeBundle, match="padding"):
        read_all(path)


def test_every_hostile_archive_is_refused_by_both_and_nothing_is_written(recipe, made_here, tmp_path):
    _, _, public = made_here
    for what, data in _hostile(made_here).items():
        bundle = tmp_path / "hostile.tar.gz"
        bundle.write_bytes(data)
        before = sorted(tmp_path.rglob("*"))
        result = verify_bundle(bundle, load_public(public))
        assert [c.check for c in result.checks] == ["structure"] and not result.ok, what
        with pytest.raises((ValueError, OSError)):  # tarfile.HeaderError is an Exception: named below
            try:
                recipe["check"](str(bundle), str(public))
            except Exception as exc:  # any refusal counts (raised again as a ValueError); a pass fails the test
                raise ValueError(f"{what}: {exc}") from exc
        assert sorted(tmp_path.rglob("*")) == before, what


def _with_envelope(bundle: Path, out: Path, change) -> Path:
    files = read_all(bundle)
    envelope = json.loads(files[layout.ATTESTATION])
    files[layout.ATTESTATION] = json.dumps(change(envelope), indent=1, sort_keys=True).encode() + b"\n"
    out.write_bytes(archive_bytes(files))
    return out


def _urlsafe(envelope):
    def url(text):
        return base64.urlsafe_b64encode(base64.b64decode(text)).decode()

    return {
        **envelope,
        "payload": url(envelope["payload"]),
        "signatures": [{**s, "sig": url(s["sig"])} for s in envelope["signatures"]],
    }


def test_a_url_safe_envelope_passes_here_and_in_securesystemslib(recipe, tmp_path):
    bundle, public = FIXTURES[2]
    changed = _with_envelope(bundle, tmp_path / "urlsafe.tar.gz", _urlsafe)
    envelope = json.loads(read_all(changed)[layout.ATTESTATION])
    assert envelope != json.loads(read_all(bundle)[layout.ATTESTATION])  # '+' or '/' became '-' or '_'
    assert verify_bundle(changed, load_public(public), allow_formats=(4,)).ok  # the committed dossier's format
    assert run_recipe(recipe, changed, public).startswith("verified: ")


def test_a_changed_payload_fails_here_and_in_securesystemslib(recipe, tmp_path):
    bundle, public = FIXTURES[2]

    def retype(envelope):
        statement = json.loads(base64.b64decode(envelope["payload"]))
        statement["predicate"]["runner"]["name"] = "docker"
        return {**envelope, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}

    changed = _with_envelope(bundle, tmp_path / "changed.tar.gz", retype)
    assert [c.check for c in verify_bundle(changed, load_public(public)).failures] == ["signature"]
    with pytest.raises(VerificationError):
        run_recipe(recipe, changed, public)


def test_a_bundle_this_build_writes_passes_the_documented_check(recipe, made_here, tick_modules):  # noqa: F811 - the fixture imported above
    path, key, public = made_here
    assert verify_bundle(path, load_public(public)).ok
    assert run_recipe(recipe, path, public).startswith("verified: ")
    envelope = Envelope.from_dict(json.loads(read_all(path)[layout.ATTESTATION]))
    assert envelope.signatures.keys() == {key.keyid}  # the keyid we write is the one third parties pass
