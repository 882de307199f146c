"""`dossier verify` and securesystemslib agree on every DSSE envelope (issue 28 item 4).

Each case edits the envelope of a bundle made here and asks both: `dossier verify` (its whole
verdict) and docs/bundle.md's third-party check (securesystemslib's Envelope, as the docs run it).
They must give the same answer, except the one documented difference: verify tries at most 64
signatures. The decisions (docs/bundle.md, "Where the two agree on envelopes"): base64 decoded as
securesystemslib decodes it; a keyid required on every signature and only the trusted one tried;
a keyid named twice refused; UTF-8 JSON without a byte-order mark.
"""

from __future__ import annotations

import json
import random

import pytest

from harness.bundle import layout
from harness.bundle.read import read_all
from harness.bundle.write import archive_bytes
from harness.run.assemble import assemble
from harness.signing import dsse
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import collect_test_plan, make_key
from tests.fuzz_support import json_edit
from tests.verify.test_verify_independent import documented_recipe

OTHER = "0" * 64


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """A bundle of the test plan and its key pair, with the tick modules installed while it is checked."""
    tmp = tmp_path_factory.mktemp("dsse")
    with pytest.MonkeyPatch.context() as patch:
        test_plan.install(patch)
        record = collect_test_plan(tmp)
        for attempt in range(100):  # a key whose signature holds two '+' or '/' (nearly every key's does)
            key, public = make_key(tmp / f"k{attempt}")
            data = assemble(record, key)
            path = tmp / "signed.tar.gz"
            path.write_bytes(data)
            if sum(map(_signature(_envelope_of(path))["sig"].count, "+/")) >= 2:
                break
        namespace = {"__name__": "check_bundle"}
        exec(compile(documented_recipe(), "docs/bundle.md", "exec"), namespace)  # the recipe of our own docs
        yield path, key, public, namespace["check"], tmp


def answers(signed, envelope_bytes: bytes) -> tuple[bool, bool]:
    """(dossier verify accepts, the documented securesystemslib check accepts) the bundle with this envelope."""
    path, _, public, check, tmp = signed
    files = read_all(path)
    files[layout.ATTESTATION] = envelope_bytes
    changed = tmp / "changed.tar.gz"
    changed.write_bytes(archive_bytes(files))
    ours = verify_bundle(changed, load_public(public)).ok
    try:
        check(str(changed), str(public))
        theirs = True
    except Exception:  # noqa: BLE001 - any refusal
        theirs = False
    return ours, theirs


def _envelope_of(path) -> dict:
    return json.loads(read_all(path)[layout.ATTESTATION])


def _envelope(signed) -> dict:
    return _envelope_of(signed[0])


def _pad_bits(text: str) -> str:
    """TEXT with the unused low bits of its last base64 digit set (same bytes decoded)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = text.rstrip("=")
    unused = {1: 4, 2: 2}[text.count("=")]  # "==": 4 pad bits in the last digit, "=": 2
    last = alphabet.index(body[-1]) | ((1 << unused) - 1)
    return body[:-1] + alphabet[last] + "=" * text.count("=")


def _urlsafe(text: str) -> str:
    return text.replace("+", "-").replace("/", "_")


def _mixed(text: str) -> str:
    """Standard base64 with one '+' or '/' written URL-safe: both alphabets in one string."""
    at = next(i for i, c in enumerate(text) if c in "+/")
    return text[:at] + {"+": "-", "/": "_"}[text[at]] + text[at + 1 :]


def _signature(envelope: dict) -> dict:
    return envelope["signatures"][0]


CASES = {  # name: (edit of the envelope dict, both accept?)
    "unchanged": (lambda e: e, True),
    "URL-safe base64": (
        lambda e: {
            **e,
            "payload": _urlsafe(e["payload"]),
            "signatures": [{**_signature(e), "sig": _urlsafe(_signature(e)["sig"])}],
        },
        True,
    ),
    "both alphabets in one string": (
        lambda e: {**e, "signatures": [{**_signature(e), "sig": _mixed(_signature(e)["sig"])}]},
        True,
    ),
    "non-zero pad bits in the signature": (
        lambda e: {**e, "signatures": [{**_signature(e), "sig": _pad_bits(_signature(e)["sig"])}]},
        True,
    ),
    "padding left out": (
        lambda e: {**e, "signatures": [{**_signature(e), "sig": _signature(e)["sig"].rstrip("=")}]},
        False,
    ),
    "a padding character too many": (
        lambda e: {**e, "signatures": [{**_signature(e), "sig": _signature(e)["sig"] + "="}]},
        False,
    ),
    "a newline in the payload": (lambda e: {**e, "payload": e["payload"][:40] + "\n" + e["payload"][40:]}, False),
    "no keyid": (lambda e: {**e, "signatures": [{"sig": _signature(e)["sig"]}]}, False),
    "an empty keyid": (lambda e: {**e, "signatures": [{**_signature(e), "keyid": ""}]}, False),
    "a null keyid": (lambda e: {**e, "signatures": [{**_signature(e), "keyid": None}]}, False),
    "a number for keyid": (lambda e: {**e, "signatures": [{**_signature(e), "keyid": 5}]}, False),
    "a list for keyid": (lambda e: {**e, "signatures": [{**_signature(e), "keyid": [_signature(e)["keyid"]]}]}, False),
    "another key's keyid": (lambda e: {**e, "signatures": [{**_signature(e), "keyid": OTHER}]}, False),
    "one keyid twice": (lambda e: {**e, "signatures": [_signature(e), _signature(e)]}, False),
    "another key's signature first": (
        lambda e: {**e, "signatures": [{"keyid": OTHER, "sig": "AAAA"}, _signature(e)]},
        True,
    ),
    "an empty keyid beside ours": (lambda e: {**e, "signatures": [{"keyid": "", "sig": "AAAA"}, _signature(e)]}, True),
    "a signature without keyid beside ours": (lambda e: {**e, "signatures": [{"sig": "AAAA"}, _signature(e)]}, False),
    "another key's signature not base64": (
        lambda e: {**e, "signatures": [{"keyid": OTHER, "sig": "A"}, _signature(e)]},
        False,
    ),
    "a signature that is not a string": (lambda e: {**e, "signatures": [{**_signature(e), "sig": 5}]}, False),
    "no signatures": (lambda e: {**e, "signatures": []}, False),
    "signatures as an object": (lambda e: {**e, "signatures": {"0": _signature(e)}}, False),
    "another payloadType": (lambda e: {**e, "payloadType": "application/json"}, False),
    "no payloadType": (lambda e: {k: v for k, v in e.items() if k != "payloadType"}, False),
    "an extra envelope field": (lambda e: {**e, "note": "x"}, True),
    "an extra signature field": (lambda e: {**e, "signatures": [{**_signature(e), "note": "x"}]}, True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_verify_and_securesystemslib_give_the_same_answer(signed, name):
    edit, accepted = CASES[name]
    assert answers(signed, dsse.envelope_bytes(edit(_envelope(signed)))) == (accepted, accepted)


@pytest.mark.parametrize(
    "encode, accepted",
    [
        (lambda e: b"\xef\xbb\xbf" + dsse.envelope_bytes(e), False),  # a UTF-8 byte-order mark
        (lambda e: json.dumps(e).encode("utf-16"), False),
        (lambda e: json.dumps(e, separators=(",", ":")).encode(), True),  # other whitespace: JSON is JSON
    ],
    ids=["bom", "utf-16", "compact"],
)
def test_the_envelope_bytes_are_read_alike(signed, encode, accepted):
    assert answers(signed, encode(_envelope(signed))) == (accepted, accepted)


def test_the_one_documented_difference_more_than_64_signatures(signed):
    envelope = _envelope(signed)
    others = [{"keyid": f"{i:064x}", "sig": "AAAA"} for i in range(dsse.MAX_SIGNATURES)]
    assert answers(signed, dsse.envelope_bytes({**envelope, "signatures": others + envelope["signatures"]})) == (
        False,
        True,
    )


def test_every_json_edit_of_the_envelope_in_the_fuzz_corpus_is_answered_alike(signed):
    """fuzz_support.json_edit on the envelope (the member layer of tests/verify/test_verify_fuzz.py and
    bench/fuzz_verify.py): a value replaced by an odd one, a key deleted or renamed."""
    original = read_all(signed[0])[layout.ATTESTATION]
    rng = random.Random(28)
    disagree = []
    for _ in range(60):
        edited = json_edit(original, rng.random(), rng.randbytes(1))
        ours, theirs = answers(signed, edited)
        if ours != theirs:
            disagree.append(edited[:200])
    assert disagree == []
