"""A bundle's envelope and statement checked by independent implementations (issue 14 item 17):
securesystemslib's DSSE Envelope with an SSlibKey, and in-toto-attestation's Statement.

The code under test is docs/bundle.md's example itself (the block after its "tested" marker),
run as a third party would, on the committed H200 bundles and on one made here.
"""

import base64
import json
import re
from pathlib import Path

import pytest
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError

from harness.bundle import layout
from harness.bundle.assemble import assemble
from harness.bundle.read import read_all
from harness.bundle.verify import verify_bundle
from harness.bundle.write import archive_bytes
from harness.signing.keys import load_public
from tests.bundle_support import collect_test_plan, make_key, tick_modules  # noqa: F401

ROOT = Path(__file__).parents[1]
FIXTURES = [(ROOT / "tests/fixtures/h200/dossier-h200.tar.gz", ROOT / "tests/fixtures/h200/dossier-h200.pub"),
            (ROOT / "tests/fixtures/h200x2/dossier-h200x2.tar.gz", ROOT / "tests/fixtures/h200x2/dossier-h200x2.pub")]


def documented_example() -> str:
    text = (ROOT / "docs/bundle.md").read_text()
    marker = text.index("<!-- tested: tests/test_verify_independent.py")
    return re.search(r"```python\n(.*?)```", text[marker:], re.S).group(1)


def run_example(bundle: Path, public: Path) -> str:
    code = documented_example().replace('"dossier.tar.gz", "dossier.pub"', f"{str(bundle)!r}, {str(public)!r}")
    printed = []
    exec(compile(code, "docs/bundle.md", "exec"), {"print": printed.append})  # noqa: S102 - our own docs
    return printed[0]


@pytest.mark.parametrize("bundle, public", FIXTURES, ids=["h200", "h200x2"])
def test_the_documented_third_party_check_passes_on_the_h200_bundles(bundle, public):
    assert run_example(bundle, public).startswith("verified: ")


def _with_envelope(bundle: Path, out: Path, change) -> Path:
    files = read_all(bundle)
    envelope = json.loads(files[layout.ATTESTATION])
    files[layout.ATTESTATION] = json.dumps(change(envelope), indent=1, sort_keys=True).encode() + b"\n"
    out.write_bytes(archive_bytes(files))
    return out


def _urlsafe(envelope):
    def url(text):
        return base64.urlsafe_b64encode(base64.b64decode(text)).decode()
    return {**envelope, "payload": url(envelope["payload"]),
            "signatures": [{**s, "sig": url(s["sig"])} for s in envelope["signatures"]]}


def test_a_url_safe_envelope_passes_here_and_in_securesystemslib(tmp_path):
    bundle, public = FIXTURES[0]
    changed = _with_envelope(bundle, tmp_path / "urlsafe.tar.gz", _urlsafe)
    envelope = json.loads(read_all(changed)[layout.ATTESTATION])
    assert envelope != json.loads(read_all(bundle)[layout.ATTESTATION])  # '+' or '/' became '-' or '_'
    assert verify_bundle(changed, load_public(public), allow_formats=(1,)).ok  # a format-1 bundle
    assert run_example(changed, public).startswith("verified: ")


def test_a_changed_payload_fails_here_and_in_securesystemslib(tmp_path):
    bundle, public = FIXTURES[0]

    def retype(envelope):
        statement = json.loads(base64.b64decode(envelope["payload"]))
        statement["predicate"]["runner"]["name"] = "docker"
        return {**envelope, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}
    changed = _with_envelope(bundle, tmp_path / "changed.tar.gz", retype)
    assert [c.check for c in verify_bundle(changed, load_public(public)).failures] == ["signature"]
    with pytest.raises(VerificationError):
        run_example(changed, public)


def test_a_bundle_this_build_writes_passes_the_documented_check(tmp_path, tick_modules):  # noqa: F811
    key, public = make_key(tmp_path / "k")
    path = tmp_path / "made-here.tar.gz"
    path.write_bytes(assemble(collect_test_plan(tmp_path), key))
    assert verify_bundle(path, load_public(public)).ok
    assert run_example(path, public).startswith("verified: ")
    envelope = Envelope.from_dict(json.loads(read_all(path)[layout.ATTESTATION]))
    assert envelope.signatures.keys() == {key.keyid}  # the keyid we write is the one third parties pass
