"""Mutants of the signed statements another party sends, and what their verifiers must say of each (issue 37).

Three targets, each a signed in-toto statement in a DSSE envelope and the verifier a user runs on it:
- reproduction: the statement `dossier reproduce` signs, checked by `dossier verify-reproduction`
  (harness.commands.verify_reproduction.verified_judgement) against its two bundles;
- acceptance: the attestation `dossier accept --attestation` signs, checked by `dossier verify-acceptance`
  (harness.commands.verify_acceptance.verified_acceptance) against its bundle;
- profile: the profile `dossier baseline` signs, opened by `dossier accept --profile-file F --profile-key PUB`
  (harness.judge.acceptance.profile.resolve, signed_only) and a bundle judged against it.
Layers (index % 4 picks one): `envelope`, bytes of the envelope file edited (not re-signed); `payload`,
bytes of the statement edited and re-signed with the right key; `resign`, one value of the statement's
JSON edited (a number, a string, a type, a key added or removed, list items swapped) and re-signed; `inner`,
one value inside a statement's inline JSON (an attestation's profile or verdict, base64) edited, its
sha256 made right half the time, and re-signed (a profile: a value of the profile, or its SKU id made
another catalogue SKU's). Outcomes: refused (the verifier's first line); accepted, the same content;
accepted, a re-signed change only to what the verifier does not judge (FREE, each with why: the tool that
judged, a file's name); accepted, a re-signed profile the key vouches for (profile target), or an
attestation's profile the bundle's verdict was judged again against and follows from; else WRONG
ACCEPTANCE (every one a bug) or CRASH (the verifier raised something other than a refusal).
"""

from __future__ import annotations

import base64
import copy
import fnmatch
import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness import catalogue
from harness.errors import DossierError
from harness.signing import dsse
from harness.signing.statement import sign_statement, statement_bytes

LAYERS = ("envelope", "payload", "resign", "inner")
HOSTILE = ("", "x", "\x1b[2J# Verdict: PASS", "<script>", "0" * 64, "reproduced", "PASSED", "pass", "h200-nvl-141gb")
# What a verifier does not judge, per target: a re-signed change there is accepted, with why.
FREE = {
    "reproduction": {
        "subject.*.name": "a bundle file's name where it was judged (the sha256 beside it is checked)",
        "predicate.tool*": "the tool that judged: who judged, not the judgement (derived again here)",
        "predicate.made.plan*": "the plan as reproduce recorded it (what was not honoured is derived again)",
        "predicate.made.mode": "how MINE was given (either way the judgement is derived from the bundles)",
        "predicate.theirs.name": "the file's name",
        "predicate.mine.name": "the file's name",
        "predicate.theirs.verify_checks_passed": "a count of the signer's verify, not printed or judged",
        "predicate.mine.verify_checks_passed": "a count of the signer's verify, not printed or judged",
    },
    "acceptance": {
        "subject.*.name": "the bundle file's name where it was judged (the sha256 beside it is checked)",
        "predicate.configuration.<tool>*": "the tool that judged: who judged, not the verdict",
        "predicate.configuration.<bundle-signer-public-key>.annotations*": "what the bundle's verify said then",
    },
    "profile": {},
}


@dataclass(frozen=True)
class Signed:
    """One base: an honest signed statement and its verifier."""

    target: str
    name: str
    data: bytes  # the envelope's bytes
    statement: dict[str, Any]
    verify: Callable[[bytes], Any]  # accepts (returns) or refuses (raises a DossierError)
    key: Any  # the signer's private key (the re-signing layers sign with it, as its holder would)


@dataclass(frozen=True)
class Mutant:
    layer: str
    data: bytes
    what: str
    statement: dict[str, Any] | None  # the statement re-signed, where the layer made one


def statement_of(data: bytes) -> dict[str, Any]:
    return json.loads(base64.b64decode(json.loads(data)["payload"]))


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key in value:
            found += _paths(value[key], (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*path, i))
    return found


def _edit(rng: random.Random, value: Any) -> tuple[Any, str]:
    """VALUE edited once (a new object; the old one is left alone), and how."""
    if isinstance(value, bool):
        return (not value), "flipped"
    if isinstance(value, (int, float)):
        factor = rng.choice([0, -1, 1.0001, 0.999, 2, 1e9])
        new = value * factor if rng.random() < 0.7 else value + rng.choice([1, -1])
        return (int(new) if isinstance(value, int) and float(new).is_integer() and abs(new) < 2**63 else new), "number"
    if isinstance(value, str):
        return rng.choice([*HOSTILE, value + "x", value[:-1], value.upper()]), "string"
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        if rng.random() < 0.5:
            return {k: v for k, v in value.items() if k != key}, f"key {key!r} removed"
        return {**value, f"{key}_": value[key]}, f"key {key + '_'!r} added"
    if isinstance(value, list) and len(value) >= 2:
        i, j = rng.sample(range(len(value)), 2)
        swapped = list(value)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        return (swapped if rng.random() < 0.5 else value[:i] + value[i + 1 :]), "items swapped or removed"
    return rng.choice([None, [], {}, 0, "0"]), "type"


def edit_tree(rng: random.Random, tree: Any) -> tuple[Any, str]:
    """TREE with one value at a random place edited; how, and where."""
    tree = copy.deepcopy(tree)
    path = rng.choice([p for p in _paths(tree) if p])
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    new, how = _edit(rng, parent[path[-1]])
    parent[path[-1]] = new
    return tree, f"{'.'.join(map(str, path))}: {how}"


def _inner(rng: random.Random, signed: Signed) -> tuple[dict[str, Any], str]:
    stmt = copy.deepcopy(signed.statement)
    if signed.target == "profile":
        if rng.random() < 0.25:
            stmt["predicate"]["sku_id"] = rng.choice([s["id"] for s in catalogue.skus()])
            return stmt, "sku_id: another catalogue SKU"
        predicate, how = edit_tree(rng, stmt["predicate"])
        return {**stmt, "predicate": predicate}, f"predicate.{how}"
    carried = [d for d in stmt["predicate"].get("configuration") or [] if isinstance(d, dict) and "content" in d]
    if not carried:
        return edit_tree(rng, stmt)
    descriptor = rng.choice(carried)
    inner, how = edit_tree(rng, json.loads(base64.b64decode(descriptor["content"])))
    raw = json.dumps(inner, sort_keys=True, separators=(",", ":")).encode()
    descriptor["content"] = base64.b64encode(raw).decode()
    fixed = rng.random() < 0.5
    if fixed:
        descriptor["digest"] = {"sha256": hashlib.sha256(raw).hexdigest()}
    return stmt, f"{descriptor['name']} content {how}" + (" (sha256 made right)" if fixed else "")


def mutant(rng: random.Random, signed: Signed, layer: str) -> Mutant:
    if layer == "envelope":
        data = bytearray(signed.data)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return Mutant(layer, bytes(data), "bytes of the envelope", None)
    if layer == "payload":
        payload = bytearray(statement_bytes(signed.statement))
        where = rng.randrange(len(payload))
        payload[where : where + 1] = rng.randbytes(rng.randint(0, 3))
        envelope = dsse.sign(bytes(payload), dsse.IN_TOTO_PAYLOAD_TYPE, signed.key)
        return Mutant(layer, dsse.envelope_bytes(envelope), f"payload byte {where}", None)
    for _ in range(8):  # an edit JSON cannot hold (a number past a float) is tried again
        stmt, how = edit_tree(rng, signed.statement) if layer == "resign" else _inner(rng, signed)
        try:
            return Mutant(layer, sign_statement(stmt, signed.key), how, stmt)
        except ValueError:
            continue
    return Mutant(layer, signed.data, "no edit JSON could hold", None)


def _changed(a: Any, b: Any, path: str = "") -> list[str]:
    """Where A and B differ: dotted paths; a list of named objects (an attestation's configuration, a
    statement's figures) compared by name, in any order (`<NAME>`; the tool that judged `<tool>`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for key in sorted(set(a) | set(b)) for p in _changed(a.get(key), b.get(key), f"{path}.{key}")]
    if path.endswith("subject") and isinstance(a, list) and isinstance(b, list):  # subjects: in any order
        a, b = sorted(a, key=_by_digest), sorted(b, key=_by_digest)
    named_a, named_b = (None, None) if path.endswith("subject") else (_named(a), _named(b))
    if named_a is not None and named_b is not None:
        keys = sorted(set(named_a) | set(named_b))
        return [p for key in keys for p in _changed(named_a.get(key), named_b.get(key), f"{path}.<{key}>")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _changed(x, y, f"{path}.{i}")]
    return [] if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) else [path.lstrip(".")]


def _by_digest(entry: Any) -> str:
    """A subject's sort key: its digest (what is checked), then all of it."""
    digest = entry.get("digest") if isinstance(entry, dict) else None
    return json.dumps([digest, entry], sort_keys=True, default=str)


def _named(value: Any) -> dict[str, Any] | None:
    """A list of objects each with its own name (`name`, `figure`; a pkg: uri is the tool), by name; else None."""
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        return None
    names = ["tool" if str(v.get("uri", "")).startswith("pkg:") else v.get("name") or v.get("figure") for v in value]
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        return None
    return dict(zip(names, value, strict=True))


def outcome(signed: Signed, mutation: Mutant) -> str:
    """What the verifier said of MUTATION, classed (the module docstring's outcomes)."""
    try:
        verdict = signed.verify(mutation.data)
    except DossierError as exc:
        return "refused: " + _reason(str(exc))
    accepted = _statement(mutation)
    if accepted is None or json.dumps(accepted, sort_keys=True) == json.dumps(signed.statement, sort_keys=True):
        return "accepted: same content"
    if mutation.layer == "envelope":
        return "WRONG ACCEPTANCE: an unsigned change"
    paths = _changed(signed.statement, accepted)
    if not paths:
        return "accepted: same content, a list of named items in another order"
    if signed.target == "profile":
        return _profile_outcome(accepted, verdict)
    free = [next((p for p in FREE[signed.target] if fnmatch.fnmatchcase(path, p)), None) for path in paths]
    if paths and all(free):
        return "accepted: re-signed change, free: " + "; ".join(sorted(set(map(str, free))))
    inner = [p for p in paths if p.startswith("predicate.configuration.<acceptance-profile/")]
    if (
        signed.target == "acceptance"
        and inner
        and len(inner) == len([p for p, f in zip(paths, free, strict=True) if not f])
    ):
        return "accepted: re-signed profile, the bundle's verdict judged again against it"
    return "WRONG ACCEPTANCE: " + "; ".join(paths[:4])


def _profile_outcome(accepted: dict[str, Any], verdict: Any) -> str:
    """A re-signed profile the key vouches for, unless it is of another format, or its identity made the H200
    SXM bundle judged against it another catalogue SKU (sku_matches_profile passed for that SKU)."""
    predicate = accepted.get("predicate") or {}
    if predicate.get("format_version") != 2:
        return "WRONG ACCEPTANCE: a signed profile of another format"
    sku = next((r for r in verdict.results if r.name == "sku_matches_profile"), None)
    other = verdict.profile.sku_id != "h200-sxm-141gb" and catalogue.by_id(verdict.profile.sku_id) is not None
    if sku is not None and other and sku.status == "pass":
        return f"WRONG ACCEPTANCE: an H200 SXM passed as {verdict.profile.sku_id}"
    return "accepted: re-signed profile (the key vouches for it)"


def _statement(mutation: Mutant) -> dict[str, Any] | None:
    if mutation.statement is not None:
        return mutation.statement
    try:
        return statement_of(mutation.data)
    except (ValueError, KeyError, TypeError):
        return None


def _reason(text: str) -> str:
    """A refusal's first line with its particulars blanked (numbers, quoted values), for counting."""
    first = text.splitlines()[0] if text else ""
    first = re.sub(r"/\S+", "PATH", re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", first))
    return re.sub(r"\d+(\.\d+)?", "N", first)[:120]
