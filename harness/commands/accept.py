"""`dossier accept BUNDLE --profile SKU`: pre-procurement acceptance of a verified bundle.

I/O only: the profile comes from harness.judge.acceptance.profile, verification from harness.verify,
the judgement from harness.judge.acceptance.outcome; this module reads the bundle, prints, and writes
the JUnit XML, the signed attestation and the summary pages asked for.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

from harness import catalogue, paths, registry
from harness.analysis.verdict import Verdict, answer_line, counted
from harness.bundle.read import UnsafeBundle, read_members
from harness.bundle.view import BundleFormatError, BundleView
from harness.commands.verify import add_allow_format_option, allowed_formats, not_done_lines
from harness.errors import CheckFailed, UsageError
from harness.escape import terminal
from harness.judge.acceptance import predicate
from harness.judge.acceptance.junit import junit_xml
from harness.judge.acceptance.outcome import Acceptance, BundleRef, judge
from harness.judge.acceptance.profile import resolve
from harness.present.accept_summary import Files, render_html, render_markdown
from harness.run import provenance
from harness.signing.keys import (
    configured_key_path,
    keyid,
    load_private,
    load_public,
    public_path_for,
    signing_key_for_run,
)
from harness.verify import verify_bundle

STATUS_MARK = {v: v.shown[:4].ljust(4) for v in Verdict}  # PASS, WARN, FAIL, INCO, SKIP


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "accept",
        help="judge a verified bundle against a SKU's acceptance thresholds",
        description="Verify BUNDLE (a bundle that fails `dossier verify` is refused), then judge it against "
        "the acceptance profile of SKU: the catalogue's thresholds and known-good figures for that "
        "exact SKU and form factor, overridden by --profile-file. Each criterion is pass, warn (within "
        "the profile's band above a fail line, or passed on a retest), fail, incomplete (required by "
        "the profile, not measured: it fails closed) or skip (not required, not measured), each with "
        "why. Exit 0 on pass or warn, 1 when a criterion failed, 5 when none failed but a required "
        "one is incomplete.",
    )
    parser.add_argument("bundle", type=Path, help="the bundle (.tar.gz) to judge")
    parser.add_argument(
        "--profile",
        metavar="SKU",
        help="the SKU being bought, as the catalogue names it (e.g. h200-sxm-141gb); may be "
        "left out with --profile-file, whose SKU is then used",
    )
    parser.add_argument(
        "--profile-file",
        type=Path,
        metavar="F",
        help="your own profile (JSON, schemas/acceptance-profile.schema.json), or the signed "
        "profile `dossier baseline` wrote: replaces the catalogue's thresholds and "
        "known-good figures it names",
    )
    parser.add_argument(
        "--profile-key", type=Path, metavar="PUB", help="the public key that signed --profile-file (default: --key)"
    )
    parser.add_argument(
        "--key",
        type=Path,
        metavar="PUB",
        help="the bundle signer's public key (default: the public half of your own key, for a bundle you made)",
    )
    parser.add_argument(
        "--signing-key",
        type=Path,
        metavar="PRIV",
        help="private key that signs --attestation (default: $DOSSIER_KEY or the default key, made on first use)",
    )
    parser.add_argument("--junit", type=Path, metavar="F", help="write a JUnit XML report (one testcase per criterion)")
    parser.add_argument(
        "--attestation",
        type=Path,
        metavar="F",
        help="write a signed in-toto test-result attestation (DSSE) about the bundle",
    )
    parser.add_argument("--summary", type=Path, metavar="F.md", help="write the one-page summary (Markdown)")
    parser.add_argument("--html", type=Path, metavar="F.html", help="write the one-page summary (HTML)")
    parser.add_argument("--json", action="store_true", help="print the acceptance as JSON on stdout")
    parser.add_argument(
        "--prometheus",
        type=Path,
        metavar="FILE.prom",
        help="write the result and each criterion's verdict (0/1 gauges) for node_exporter's textfile collector",
    )
    add_allow_format_option(parser)
    parser.set_defaults(func=handle)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise UsageError(f"bundle {path}: cannot be read ({exc.strerror or exc})") from exc
    return digest.hexdigest()


def trusted_key(explicit: Path | None, say: Callable[[str], None] | None = None) -> tuple[Path, object]:
    """The public key the bundle must verify with: --key, else the public half of your own key (SAY
    tells which: the calling command's note, on stderr by default)."""
    if explicit is not None:
        return explicit, load_public(explicit)
    path = public_path_for(configured_key_path())
    if not path.exists():
        raise UsageError(
            f"no --key given and no key of your own at {path}",
            hint="pass --key SIGNER.pub: the public key of whoever signed the bundle",
        )
    (say or _note("accept"))(f"verifying with your own key {path}; pass --key for a bundle someone else signed")
    return path, load_public(path)


def _note(command: str) -> Callable[[str], None]:
    """A command's note on stderr, prefixed with its name (`baseline: ...`)."""
    return lambda text: print(f"{command}: {text}", file=sys.stderr)


def verified_view(
    bundle: Path, key_path: Path, trusted, allow_formats: tuple[int, ...] = (), command: str | None = None
) -> tuple[BundleView, BundleRef]:
    """The bundle's data, only if `dossier verify` passes on exactly the bytes judged (with the
    older formats ALLOW_FORMATS allows; the checks not done are recorded in the BundleRef, and
    printed as COMMAND's notes when COMMAND is given)."""
    before = sha256_file(bundle)
    result = verify_bundle(bundle, trusted, allow_formats=allow_formats)
    if not result.ok:
        lines = "\n".join("  " + c.line() for c in result.failures[:20])
        raise CheckFailed(
            f"refused: {bundle} does not verify with {key_path} (keyid {result.keyid[:16]}...): "
            f"{len(result.failures)} check(s) failed:\n{lines}",
            hint="a bundle that fails `dossier verify` is never judged: check that --key is the "
            "signer's public key, and get an untouched copy of the bundle",
        )
    try:
        members = read_members(bundle, lambda name: name.endswith((".json", ".md")))
        files = {n: m.data for n, m in members.items() if m.data is not None}
        view = BundleView.from_files(files, registry.analysis_module)
    except (UnsafeBundle, BundleFormatError) as exc:
        raise CheckFailed(f"refused: {bundle} changed while it was read: {exc}") from exc
    if sha256_file(bundle) != before:
        raise CheckFailed(f"refused: {bundle} changed while it was being verified")
    for line in not_done_lines(result) if command else ():
        print(f"{command}: verify {line}", file=sys.stderr)
    return view, BundleRef(
        bundle.name,
        before,
        result.keyid,
        result.passed,
        tuple(f"{c.check} {c.subject}: {c.detail}" for c in result.not_done),
    )


ORDER = (Verdict.FAIL, Verdict.INCOMPLETE, Verdict.WARN, Verdict.PASS, Verdict.SKIP)  # worst first


def answer(acceptance: Acceptance) -> str:
    """accept's answer line: the verdict, of what against what, and the counts."""
    return answer_line(
        acceptance.result,
        f"{acceptance.bundle.name} against {acceptance.profile.sku_id}: "
        + counted(r.status for r in acceptance.results),
        acceptance.exit_code,
    )


def print_results(acceptance: Acceptance, notes: list[str]) -> None:
    """The answer first and last; between them each criterion, worst first (what failed, what could
    not be judged, what warned, then what passed and what was skipped, each with why), the notes."""
    print(terminal(answer(acceptance)))
    for verdict in ORDER:
        for r in (r for r in acceptance.results if r.status == verdict):
            measured = r.measured.text if r.measured else "not measured"
            threshold = r.threshold.text if r.threshold else "no threshold"
            print(terminal(f"{STATUS_MARK[r.status]} {r.name}: {measured} (threshold: {threshold})"))
            if r.status != Verdict.PASS:
                print(f"     why: {terminal(r.why)}")
            if r.status == Verdict.FAIL:
                print(f"     action: {terminal(r.recommendation.shown())}: {terminal(r.recommendation.why)}")
    for line in notes:
        print(terminal(f"note: {line}"))
    print(
        f"{acceptance.result.shown}: {terminal(acceptance.bundle.name)} against {terminal(acceptance.profile.sku_id)}: "
        f"{len(acceptance.named(Verdict.PASS))} passed, {len(acceptance.named(Verdict.WARN))} warned, "
        f"{len(acceptance.named(Verdict.FAIL))} failed, {len(acceptance.named(Verdict.INCOMPLETE))} incomplete "
        f"(required, not measured), {len(acceptance.named(Verdict.SKIP))} skipped (not required, not measured)"
        + (f"; action: {acceptance.recommendation.shown()}" if acceptance.named(Verdict.FAIL) else "")
    )
    print(answer(acceptance))


OUTPUT_OPTIONS = (
    ("--junit", "junit"),
    ("--attestation", "attestation"),
    ("--summary", "summary"),
    ("--html", "html"),
    ("--prometheus", "prometheus"),
)


def check_paths(args: argparse.Namespace) -> None:
    """Every file named is readable and every output writable, before any verifying or judging."""
    paths.input_bundle(args.bundle)
    signing_key = args.signing_key if args.attestation else None  # only read to sign an attestation
    if args.profile is None and args.profile_file is None:
        raise UsageError("name what the machine is judged against: --profile SKU, --profile-file F, or both")
    for option, path in (
        ("--profile-file", args.profile_file),
        ("--key", args.key),
        ("--profile-key", args.profile_key),
        ("--signing-key", signing_key),
    ):
        if path is not None:
            paths.input_file(path, option)
    inputs = [
        p for p in (args.bundle, args.profile_file, args.key, args.profile_key, args.signing_key) if p is not None
    ]
    paths.output_files([(option, getattr(args, attr)) for option, attr in OUTPUT_OPTIONS], inputs)
    if args.prometheus is not None:
        from harness.export.textfile import check_path

        check_path(args.prometheus)


def _name(path: Path | None) -> str | None:
    """A file as the one-page summary names it: by its name, as the reader has it beside the page
    (the full path is this machine's own)."""
    return path.name if path is not None else None


def write_outputs(args: argparse.Namespace, acceptance: Acceptance, view: BundleView, key_path: Path) -> list[str]:
    """Write what was asked for; returns what was written, as notes for the output."""
    notes, acceptor_keyid = [], None
    if args.attestation:
        key, note = signing_key_for_run(args.signing_key)
        notes += [note] if note else []
        paths.write_output(
            args.attestation,
            predicate.signed_envelope(acceptance, key, provenance.tool_info(), catalogue.CATALOGUE_PATH.read_bytes()),
            "--attestation",
        )
        acceptor_keyid = keyid(key.public)
        notes.append(
            f"wrote {args.attestation} (in-toto test-result attestation, signed by keyid {acceptor_keyid[:16]}...)"
        )
    if args.junit:
        paths.write_output(args.junit, junit_xml(acceptance), "--junit")
        notes.append(f"wrote {args.junit} (JUnit XML, one testcase per criterion)")
    files = Files(
        bundle=args.bundle.name,
        signer_key=key_path.name,
        attestation=_name(args.attestation),
        acceptor_keyid=acceptor_keyid,
        profile_file=_name(args.profile_file),
        profile_key=_name(args.profile_key),
    )
    if args.summary:
        paths.write_output(args.summary, render_markdown(acceptance, view, files), "--summary")
        notes.append(f"wrote {args.summary} (one-page summary, Markdown)")
    if args.html:
        paths.write_output(args.html, render_html(acceptance, view, files), "--html")
        notes.append(f"wrote {args.html} (one-page summary, HTML)")
    if args.prometheus:
        from harness.export import gauges

        gauges.accept(acceptance, view).write(args.prometheus)
        notes.append(f"wrote {args.prometheus} (Prometheus textfile)")
    return notes


def handle(args: argparse.Namespace) -> int:
    check_paths(args)
    profile_key = args.profile_key or args.key
    profile = resolve(
        args.profile,
        args.profile_file,
        registry.known_good_kinds(),  # an unknown SKU is refused
        load_public(profile_key) if profile_key else None,
        profile_key,
        signed_only=args.profile_key is not None,  # a key named for the profile: only a profile it signed
    )  # before any reading
    if args.attestation and args.signing_key is not None:
        load_private(args.signing_key)  # a bad signing key is refused before the bundle is judged
    notes: list[str] = []
    key_path, trusted = trusted_key(args.key, notes.append)
    view, bundle = verified_view(args.bundle, key_path, trusted, allowed_formats(args))
    notes += [f"verify NOT DONE {line}" for line in bundle.checks_not_done]
    acceptance = judge(view, profile, bundle, registry.acceptance_criteria())
    notes += write_outputs(args, acceptance, view, key_path)
    if args.json:
        for line in notes:
            print(f"accept: {line}", file=sys.stderr)
        print(json.dumps(acceptance.to_json(), indent=1, sort_keys=True, allow_nan=False))
    else:
        print_results(acceptance, notes)
    return acceptance.exit_code
