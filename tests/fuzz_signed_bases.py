"""The honest signed statements bench/fuzz_verify.py mutates for --target reproduction, acceptance, profile
(tests/fuzz_statements.py says how), made once per run in a work folder, and their verifiers.

- reproduction: `dossier reproduce --against` of tests/reproduce_pairs.py's clean pair and contended pair
  (bundles made from real H200 captures, the contended one with issue 23's measured co-tenant effects),
  each statement signed by the reproducer's key made here;
- acceptance: `dossier accept --attestation` of the H200 bundle of tests/accept_support.py (real captures)
  against the catalogue's profile (PASS) and against a signed baseline of it (PASS), and of the same bundle
  with its bandwidth sweep at half (CONSTRUCTED) against the catalogue's (FAIL);
- profile: that signed baseline (`dossier baseline` of the H200 bundle), opened with --profile-key and the
  H200 bundle judged against it.
In a worker, the reproduction verifier's two bundle views and their comparison are made once per pair and
kept (`memo`): the bundles never change between mutants, so every mutant is judged by the same
comparison the command makes; what differs per mutant (the statement's signature, subjects, consistency
and every recorded value against that comparison) is checked in full each time.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from pathlib import Path
from typing import Any

from harness import registry
from harness.cli import main
from harness.commands import verify_reproduction
from harness.commands.verify_acceptance import verified_acceptance
from harness.commands.verify_reproduction import verified_judgement
from harness.judge.acceptance.outcome import BundleRef, judge
from harness.judge.acceptance.profile import resolve
from harness.signing.keys import load_private, load_public
from tests.accept_support import h200_bandwidth, h200_health, write_bundle
from tests.bundle_support import make_key
from tests.fuzz_statements import Signed, statement_of

SXM = "h200-sxm-141gb"


def _quiet(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(list(argv))


def _reproductions(work: Path) -> dict[str, dict[str, str]]:
    from tests import reproduce_pairs

    made = {}
    for name, pair in (("clean", reproduce_pairs.clean_pair), ("contended", reproduce_pairs.contended_pair)):
        tmp = work / name
        tmp.mkdir(parents=True)
        theirs, their_pub, mine, my_pub = pair(tmp)
        statement = tmp / "statement.intoto.json"
        _quiet(
            "reproduce", str(theirs), "--key", str(their_pub), "--against", str(mine), "--key-mine", str(my_pub),
            "--output-dir", str(tmp), "--signing-key", str(tmp / "mine-key" / "dossier.key"),
            "--statement", str(statement), "--summary", str(tmp / "summary.md"),
        )  # fmt: skip
        made[name] = {
            "data": str(statement),
            "theirs": str(theirs),
            "mine": str(mine),
            "key": str(tmp / "mine-key" / "dossier.key"),
        }
    return made


def _acceptances(work: Path) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    key, public = make_key(work / "vendor")
    buyer, buyer_public = make_key(work / "buyer")
    idle, load = h200_health()
    good = write_bundle(work / "good.tar.gz", {"health": idle, "bandwidth": h200_bandwidth(), "health-load": load}, key)
    slow = write_bundle(
        work / "slow.tar.gz", {"health": idle, "bandwidth": h200_bandwidth(scale=0.5), "health-load": load}, key
    )
    profile = work / "golden.profile.json"
    _quiet("baseline", str(good), "--key", str(public), "--out", str(profile), "--signing-key", str(buyer.path))
    made = {}
    for name, bundle, how in (
        ("catalogue-pass", good, ("--profile", SXM)),
        ("catalogue-fail", slow, ("--profile", SXM)),
        ("baseline-pass", good, ("--profile-file", str(profile), "--profile-key", str(buyer_public))),
    ):
        out = work / f"{name}.intoto.json"
        _quiet(
            "accept",
            str(bundle),
            *how,
            "--key",
            str(public),
            "--attestation",
            str(out),
            "--signing-key",
            str(buyer.path),
        )
        made[name] = {"data": str(out), "bundle": str(bundle), "key": str(buyer.path)}
    profiles = {"baseline": {"data": str(profile), "bundle": str(good), "key": str(buyer.path)}}
    return made, profiles


def build(target: str, work: Path) -> dict[str, dict[str, str]]:
    """TARGET's bases: name -> {data: the envelope's path, key: the signer's private key, and its inputs}."""
    if target == "reproduction":
        return _reproductions(work)
    acceptances, profiles = _acceptances(work)
    return acceptances if target == "acceptance" else profiles


def memo() -> None:
    """In a worker: each pair's bundle views and comparison made once (the module docstring says why)."""
    verify_reproduction._view = functools.lru_cache(maxsize=8)(verify_reproduction._view)  # type: ignore[assignment]  # the same function, cached
    original = verify_reproduction.compare
    made: dict[tuple[int, int], Any] = {}

    def compare(theirs, mine, *rest):
        key = (id(theirs), id(mine))
        if key not in made:
            made[key] = original(theirs, mine, *rest)
        return made[key]

    verify_reproduction.compare = compare  # type: ignore[assignment]  # the same comparison, made once


def signed(target: str, name: str, base: dict[str, str], scratch: Path) -> Signed:
    """The base as tests/fuzz_statements.py mutates it, with its verifier."""
    data = Path(base["data"]).read_bytes()
    key = load_private(Path(base["key"]))
    public = load_public(Path(base["key"]).with_suffix(".pub"))
    if target == "reproduction":
        theirs, mine = Path(base["theirs"]), Path(base["mine"])
        return Signed(
            target, name, data, statement_of(data), lambda d: verified_judgement(d, theirs, mine, public), key
        )
    bundle = Path(base["bundle"])
    if target == "acceptance":
        return Signed(target, name, data, statement_of(data), lambda d: verified_acceptance(d, bundle, public), key)
    view = view_from(bundle)
    path = scratch / f"profile-{name}-{os.getpid()}.json"  # one file per worker process

    def judged(d: bytes) -> Any:
        path.write_bytes(d)
        key_path = Path(base["key"]).with_suffix(".pub")
        profile = resolve(None, path, registry.known_good_kinds(), public, key_path, signed_only=True)
        return judge(view, profile, BundleRef(bundle.name, "0" * 64, "test", 0), registry.acceptance_criteria())

    return Signed(target, name, data, statement_of(data), judged, key)


def view_from(bundle: Path) -> Any:
    from harness.bundle.read import read_all
    from harness.bundle.view import BundleView

    return BundleView.from_files(read_all(bundle), registry.analysis_module)
