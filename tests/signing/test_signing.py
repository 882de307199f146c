"""Keys, keyids, DSSE PAE and envelopes."""

import base64
import hashlib
import stat

import pytest
from cryptography.hazmat.primitives import serialization

from harness.cli import main
from harness.errors import UsageError
from harness.signing import dsse
from harness.signing.keys import generate, keyid, load_private, load_public, signing_key_for_run


def test_pae_matches_the_dsse_spec_example():
    # protocol.md test vector: type "http://example.com/HelloWorld", body "hello world"
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_keygen_writes_0600_private_key_and_keyid_is_sha256_of_der(tmp_path, capsys):
    assert main(["keygen", "--out", str(tmp_path)]) == 0
    private = tmp_path / "dossier.key"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    public = load_public(tmp_path / "dossier.pub")
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert keyid(public) == hashlib.sha256(der).hexdigest()
    assert capsys.readouterr().out.strip() == f"keyid {keyid(public)}"
    pem = private.read_bytes()
    assert main(["keygen", "--out", str(tmp_path)]) == 0  # the pair there is kept and shown, never replaced
    out, err = capsys.readouterr()
    assert out.strip() == f"keyid {keyid(public)}" and "already there, kept" in err and private.read_bytes() == pem


def test_keygen_refuses_a_lone_half_or_halves_of_two_pairs_and_force_replaces(tmp_path, capsys):
    assert main(["keygen", "--out", str(tmp_path / "a")]) == 0
    assert main(["keygen", "--out", str(tmp_path / "b")]) == 0
    (tmp_path / "a" / "dossier.pub").write_bytes((tmp_path / "b" / "dossier.pub").read_bytes())
    assert main(["keygen", "--out", str(tmp_path / "a")]) == 2
    assert "is not the public half of" in capsys.readouterr().err
    (tmp_path / "b" / "dossier.pub").unlink()
    assert main(["keygen", "--out", str(tmp_path / "b")]) == 2
    assert "without its other half" in capsys.readouterr().err
    old = (tmp_path / "b" / "dossier.key").read_bytes()
    assert main(["keygen", "--out", str(tmp_path / "b"), "--force"]) == 0
    assert (tmp_path / "b" / "dossier.key").read_bytes() != old and (tmp_path / "b" / "dossier.pub").exists()


def test_envelope_round_trip_and_rejections(tmp_path):
    key = load_private(generate(tmp_path / "a")[0])
    other = load_private(generate(tmp_path / "b")[0])
    envelope = dsse.sign(b'{"x": 1}', dsse.IN_TOTO_PAYLOAD_TYPE, key)
    assert envelope["signatures"][0]["keyid"] == key.keyid
    assert dsse.verify(envelope, key.public) == b'{"x": 1}'
    with pytest.raises(dsse.EnvelopeError, match="no signature verifies"):
        dsse.verify(envelope, other.public)
    tampered = dict(envelope, payload=base64.b64encode(b'{"x": 2}').decode())
    with pytest.raises(dsse.EnvelopeError):
        dsse.verify(tampered, key.public)
    retyped = dict(envelope, payloadType="application/json")
    with pytest.raises(dsse.EnvelopeError, match="payloadType"):
        dsse.verify(retyped, key.public)


def test_signing_is_deterministic(tmp_path):
    key = load_private(generate(tmp_path)[0])
    assert dsse.sign(b"same", "t", key) == dsse.sign(b"same", "t", key)


def test_run_makes_a_key_on_first_use_and_says_where(tmp_path, monkeypatch):
    monkeypatch.setenv("DOSSIER_KEY", str(tmp_path / "cfg" / "dossier.key"))
    key, note = signing_key_for_run(None)
    assert key.path == tmp_path / "cfg" / "dossier.key" and "made a new signing key" in note
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o600
    again, note = signing_key_for_run(None)
    assert again.keyid == key.keyid and note is None
    with pytest.raises(UsageError, match="signing key .*missing.key: no such file"):
        signing_key_for_run(tmp_path / "missing.key")


def test_a_public_key_is_not_a_signing_key(tmp_path):
    _, public = generate(tmp_path)
    with pytest.raises(UsageError):
        load_private(public)


def test_a_private_key_others_can_read_is_refused_as_ssh_does(tmp_path):
    private, _ = generate(tmp_path)
    private.chmod(0o644)
    with pytest.raises(UsageError) as refused:
        load_private(private)
    assert str(refused.value) == (
        f"private key {private} has mode 0644: others may read it; allow only its owner with `chmod 600 {private}`"
    )
    assert refused.value.exit_code == 2 and refused.value.hint is None
    with pytest.raises(UsageError, match="is a private key: a key that verifies is the public half"):
        load_public(private)  # a private key given where a public one is expected: refused, whatever its mode
    private.chmod(0o600)
    assert load_private(private).keyid == keyid(load_public(private.with_suffix(".pub")))


@pytest.mark.parametrize(
    "content, why",
    [
        (b"", "is empty"),
        (b"hello\n", "is not a PEM file"),
        (b"-----BEGIN PRIVATE KEY-----\nnot base64 at all\n-----END PRIVATE KEY-----\n", "does not parse as a key"),
        (b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n", "is encrypted"),
    ],
)
def test_a_garbage_key_file_is_one_line_of_ours(tmp_path, content, why):
    path = tmp_path / "bad.key"
    path.write_bytes(content)
    path.chmod(0o600)
    for load in (load_private, load_public):
        with pytest.raises(UsageError) as refused:
            load(path)
        text = refused.value.diagnostics()
        if load is load_public and b"PRIVATE KEY" in content:  # not a public key, whatever else it is
            assert f"public key {path} is a private key" in text and "\nhint: pass its public half" in text
        else:
            assert why in text and str(path) in text and "\n" not in text
        assert "cryptography" not in text and "MalformedFraming" not in text and "http" not in text


def _urlsafe(text):
    return text.replace("+", "-").replace("/", "_")


def test_url_safe_base64_is_accepted_as_dsse_allows_and_anything_else_is_refused(tmp_path):
    key = load_private(generate(tmp_path)[0])
    payload = (bytes(range(256)) * 3)[:-1]  # its standard base64 holds "+", "/" and one "=" of padding
    envelope = dsse.sign(payload, dsse.IN_TOTO_PAYLOAD_TYPE, key)
    urlsafe = {
        **envelope,
        "payload": _urlsafe(envelope["payload"]),
        "signatures": [{**envelope["signatures"][0], "sig": _urlsafe(envelope["signatures"][0]["sig"])}],
    }
    assert urlsafe["payload"] != envelope["payload"]
    assert dsse.verify(urlsafe, key.public) == payload
    standard = envelope["payload"]
    for bad in (
        standard.rstrip("="),
        standard[:40] + "\n" + standard[40:],
        standard + "=",
        "é" + standard[1:],
        "\udcff" + standard[1:],
    ):
        with pytest.raises(dsse.EnvelopeError, match="not valid standard or URL-safe base64"):
            dsse.verify({**envelope, "payload": bad}, key.public)


def test_only_the_signature_naming_the_trusted_keyid_is_tried(tmp_path):
    """As securesystemslib does (the docs' third-party check): a signature without a keyid makes the
    envelope malformed, one naming another key or an empty one is not tried (tests/verify/test_dsse_reference.py
    compares every such case with securesystemslib itself)."""
    key = load_private(generate(tmp_path)[0])
    envelope = dsse.sign(b"{}", dsse.IN_TOTO_PAYLOAD_TYPE, key)
    signature = envelope["signatures"][0]
    with pytest.raises(dsse.EnvelopeError, match="signature 0 has no keyid"):
        dsse.verify({**envelope, "signatures": [{k: v for k, v in signature.items() if k != "keyid"}]}, key.public)
    for other in ("", None, "0" * 64):
        with pytest.raises(dsse.EnvelopeError, match="no signature verifies"):
            dsse.verify({**envelope, "signatures": [{**signature, "keyid": other}]}, key.public)
    with pytest.raises(dsse.EnvelopeError, match="two signatures name keyid"):
        dsse.verify({**envelope, "signatures": [signature, signature]}, key.public)
    assert dsse.verify({**envelope, "signatures": [{**signature, "keyid": "0" * 64}, signature]}, key.public) == b"{}"


@pytest.mark.parametrize(
    "data, why",
    [
        (b"[" * 100_000, "not JSON"),
        (b"\xff", "not JSON"),
        (b"[]", "no signatures list"),
        (b'{"signatures": [], "payloadType": 1}', "no payloadType"),
    ],
)
def test_a_malformed_envelope_is_an_envelope_error(data, why):
    with pytest.raises(dsse.EnvelopeError, match=why):
        dsse.parse(data)


def test_signatures_beyond_the_cap_are_refused_not_tried(tmp_path):
    key = load_private(generate(tmp_path)[0])
    envelope = dsse.sign(b"{}", dsse.IN_TOTO_PAYLOAD_TYPE, key)
    many = {**envelope, "signatures": envelope["signatures"] * (dsse.MAX_SIGNATURES + 1)}
    with pytest.raises(dsse.EnvelopeError, match="at most 64 are tried"):
        dsse.verify(many, key.public)
