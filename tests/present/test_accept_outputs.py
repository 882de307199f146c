"""What `dossier accept` writes and says: every file announced, a JUnit XML that validates
against the common junit-10.xsd (the Jenkins xunit plugin's, vendored in tests/junit/ with its
licence) while keeping what consumers read; and the one-line errors of issue 14, through the CLI."""

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from harness import cli
from harness.signing.keys import generate
from tests.accept_support import h200_documents, write_bundle
from tests.bundle_support import make_key

XSD = Path(__file__).parents[1] / "junit" / "junit-10.xsd"
SXM, NVL = "h200-sxm-141gb", "h200-nvl-141gb"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("accept-outputs")
    key, public = make_key(tmp / "signer")
    acceptor, _ = make_key(tmp / "acceptor")
    return {
        "tmp": tmp,
        "public": public,
        "acceptor": acceptor,
        "bundle": write_bundle(tmp / "h200.tar.gz", h200_documents(), key),
    }


def accept(env, sku, *extra):
    return cli.main(["accept", str(env["bundle"]), "--profile", sku, "--key", str(env["public"]), *extra])


def test_every_file_written_is_announced(env, capsys):
    out = {name: env["tmp"] / f"all.{name}" for name in ("xml", "json", "md", "html")}
    assert (
        accept(
            env,
            SXM,
            "--junit",
            str(out["xml"]),
            "--attestation",
            str(out["json"]),
            "--signing-key",
            str(env["acceptor"].path),
            "--summary",
            str(out["md"]),
            "--html",
            str(out["html"]),
        )
        == 0
    )
    said = capsys.readouterr().out.splitlines()  # the notes, between the answer and its counts
    wrote = [line for line in said if line.startswith("note: wrote ")]
    assert said[0] == said[-1] and said[0].startswith("verdict: PASS: ")
    assert [line.split()[2] for line in wrote] == [str(out[n]) for n in ("json", "xml", "md", "html")]
    assert all(path.stat().st_size > 0 for path in out.values())
    assert "JUnit XML" in wrote[1] and "attestation" in wrote[0] and "Markdown" in wrote[2] and "HTML" in wrote[3]


@pytest.mark.parametrize("sku", [SXM, NVL])  # SXM: passes and skips; NVL: failures and incompletes too
def test_junit_validates_against_junit_10_xsd(env, sku, capsys):
    junit = env["tmp"] / f"{sku}.xml"
    accept(env, sku, "--junit", str(junit))
    capsys.readouterr()
    schema = xmlschema.XMLSchema(str(XSD))
    errors = [str(e.reason) for e in schema.iter_errors(str(junit))]
    assert errors == []


def test_the_xsd_check_can_fail(tmp_path):
    bad = tmp_path / "bad.xml"  # what the JUnit file held before: properties in a testcase, skipped on testsuites
    bad.write_text(
        '<testsuites skipped="0"><testsuite name="s" tests="1" failures="0" errors="0">'
        '<testcase name="c"><properties><property name="a" value="b"/></properties></testcase>'
        "</testsuite></testsuites>"
    )
    assert len(list(xmlschema.XMLSchema(str(XSD)).iter_errors(str(bad)))) >= 2


def test_junit_keeps_what_consumers_read(env, capsys):
    junit = env["tmp"] / "nvl-read.xml"
    assert accept(env, NVL, "--junit", str(junit), "--json") == 1
    result = __import__("json").loads(capsys.readouterr().out)
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == [c["name"] for c in result["criteria"]]  # each criterion a testcase
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    for criterion in result["criteria"]:
        case = cases[criterion["name"]]
        out = case.find("system-out").text
        measured = criterion["measured"]["text"] if criterion["measured"] else "not measured"
        assert f"measured: {measured}" in out and f"evidence: {criterion['evidence']}" in out
        assert properties[f"{criterion['name']}.status"] == criterion["status"]
        assert properties[f"{criterion['name']}.evidence"] == criterion["evidence"]
        if criterion["status"] == "fail":
            failure = case.find("failure")
            assert failure.get("message") == criterion["why"] and "threshold: " in failure.text
        elif criterion["status"] == "incomplete":
            assert (
                case.find("error").get("message") == criterion["why"] and case.find("error").get("type") == "incomplete"
            )
        elif criterion["status"] == "skip":
            assert case.find("skipped").get("message") == criterion["why"]
    assert int(suite.get("skipped")) == len(result["skipped"]) and suite.get("failures") == str(len(result["failed"]))
    assert suite.get("errors") == str(len(result["incomplete"]))


GARBAGE_KEYS = [  # (file content, the phrase of our one line)
    (b"-----BEGIN PUBLIC KEY-----\nAAAA\n", "does not parse as a key"),  # truncated: cryptography's MalformedFraming
    (b"-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n", "does not parse as a key"),
    (bytes(range(256)), "is not a PEM file"),
]


@pytest.mark.parametrize("content, phrase", GARBAGE_KEYS)
@pytest.mark.parametrize("command", ["verify", "accept"])
def test_a_garbage_key_is_one_line_of_ours_through_the_cli(env, tmp_path, capsys, content, phrase, command):
    key = tmp_path / "garbage.pub"
    key.write_bytes(content)
    key.chmod(0o600)
    argv = [command, str(env["bundle"]), "--key", str(key)] + (["--profile", SXM] if command == "accept" else [])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: public key {key} ") and phrase in err
    for leak in ("cryptography", "MalformedFraming", "http", "Traceback", "Error("):
        assert leak not in err


PRIVATE_KEYS = [
    b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\n",
    None,  # the signer's own Ed25519 private key (PKCS#8 PEM), beside its public half
]


@pytest.mark.parametrize("content", PRIVATE_KEYS, ids=["openssh", "own"])
@pytest.mark.parametrize("command", ["verify", "accept"])
def test_a_private_key_where_a_public_one_belongs_is_refused_with_the_fix(env, tmp_path, capsys, content, command):
    if content is None:
        private, public = generate(tmp_path / "own")
    else:
        private, public = tmp_path / "id_ed25519", None
        private.write_bytes(content)
        private.chmod(0o600)
    argv = [command, str(env["bundle"]), "--key", str(private)] + (["--profile", SXM] if command == "accept" else [])
    assert cli.main(argv) == 2
    error, hint = capsys.readouterr().err.splitlines()
    assert error == (
        f"error: public key {private} is a private key: a key that verifies is the public half "
        "(--signing-key takes the private one)"
    )
    assert hint.startswith("hint: pass its public half") and (public is None or f", {public};" in hint)


def _subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every leaf subcommand of the CLI, e.g. ("fleet", "collect"), with its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subcommands(sub, prefix + (name,))
            return
    if prefix:
        yield prefix, parser


SUBCOMMANDS = sorted(path for path, _ in _subcommands(cli.build_parser()))


@pytest.mark.parametrize("path", SUBCOMMANDS, ids=" ".join)
def test_an_unknown_option_shows_the_subcommands_own_usage(path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*path, "--no-such-option"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    # one line, the subcommand's own: the unknown option, or first the required arguments it lacks
    assert len(err.splitlines()) == 1 and err.startswith(f"error: dossier {' '.join(path)}: "), err
    assert err.rstrip().endswith(f"(dossier {' '.join(path)} --help lists the options)")
