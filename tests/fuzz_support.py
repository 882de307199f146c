"""Mutations of a real bundle, and the verdict on verify's answer to each (issue 14's fuzz, issue
28's re-signing layer).

Shared by tests/verify/test_verify_fuzz.py (hypothesis, a small derandomized budget) and
bench/fuzz_verify.py (a long seeded run). Four layers are mutated:
  - gzip: the compressed bytes as stored;
  - tar: the decompressed archive (bytes or header fields), re-gzipped in the canonical framing;
  - member: one member's bytes or, for a JSON member, one value of its tree; re-signed with the
    right key when the mutation says so (then the content is signed and may verify; without
    re-signing it must never verify);
  - resign: what a key holder editing a figure by hand does: one field of one document (a field of
    its schema the document holds, tests/field_inventory.py) changed as that file's edits change
    it (a number scaled or moved by one, a flag flipped, a text or enum changed, a list shortened,
    repeated or reversed, an optional field removed), then re-signed with the right key.
Every re-signed change verify accepts is classed (`accepted_change`): a member no check reads
(logs, plots), or a field docs/bundle.md lists as free or raw, by its row; anything else is an
unexplained acceptance, counted as a failure.
"""

from __future__ import annotations

import gzip
import json
import re
import struct
import tarfile
import zlib
from dataclasses import dataclass
from typing import Any

from harness import registry
from harness.bundle import layout
from harness.bundle.read import read_all
from harness.bundle.write import BLOCK, FIXED_MTIME, GZIP_HEADER, end_of_archive, gzip_bytes, padding, tar_bytes
from harness.signing import dsse
from harness.verify import INTERNAL_ERROR
from tests.bundle_support import resign
from tests.field_inventory import (
    ANY_KEY,
    ITEMS,
    changed_values,
    instances,
    listed,
    listing,
    replaced,
    schema_fields,
    shown,
    value_at,
)

BYTE_OPS = ("flip", "set", "insert", "delete", "truncate", "append", "duplicate")
OPS = {
    "gzip": BYTE_OPS,
    "tar": BYTE_OPS + ("header", "header", "swap", "after-end"),
    "member": BYTE_OPS + ("json", "json", "json"),
    "resign": ("field",),
}
ODD_VALUES = (
    None,
    [],
    {},
    "",
    "x",
    0,
    -1,
    1.5,
    1e308,
    True,
    [[[]]],
    {"unavailable": "x"},
    "é" * 300,
    [0] * 50,
    "\udcff",
    "|\n#",
)
HEADER_EDITS = (
    (100, b"0004755\0"),
    (108, b"0001750\0"),
    (136, b"00000000000\0"),
    (156, b"2"),
    (156, b"5"),
    (0, b"../x\0"),
    (0, b"/etc/x\0"),
    (124, b"77777777777\0"),
    (257, b"ustar  \0"),
    (265, b"root\0"),
)


@dataclass(frozen=True)
class Mutation:
    layer: str  # gzip, tar, member
    op: str
    where: float  # position (or tree node) as a fraction of the target's length, 0 to 1
    value: bytes  # bytes to insert, set or append; also picks among choices
    member: int  # which member (member layer; header index in the tar layer)
    resign: bool  # member layer: re-sign with the right key afterwards

    @property
    def resigned(self) -> bool:
        """Whether the mutant is re-signed with the right key (its content is then vouched for)."""
        return self.layer == "resign" or (self.layer == "member" and self.resign)

    def describe(self) -> str:
        return f"{self.layer}:{self.op} at {self.where:.4f} value {self.value.hex()} member {self.member}" + (
            " re-signed" if self.resigned else ""
        )


def byte_edit(data: bytes, op: str, where: float, value: bytes) -> bytes:
    i = min(int(where * len(data)), max(len(data) - 1, 0))
    first = value[0] if value else 1
    if op == "flip":
        return data[:i] + bytes([data[i] ^ (first or 1)]) + data[i + 1 :] if data else b"\x01"
    if op == "set":
        return data[:i] + bytes([first]) + data[i + 1 :]
    if op == "insert":
        return data[:i] + value + data[i:]
    if op == "delete":
        return data[:i] + data[i + len(value) :]
    if op == "truncate":
        return data[:i]
    if op == "append":
        return data + value * (1 + first % 4)
    if op == "duplicate":
        return data[:i] + data[i : i + 16 * len(value)] + data[i:]
    raise ValueError(op)


def _tar_edit(tar: bytes, m: Mutation) -> bytes:
    headers = [i for i in range(0, len(tar) - BLOCK, BLOCK) if tar[i + 257 : i + 263] == b"ustar\x00"]
    at = headers[m.member % len(headers)]
    if m.op == "header":
        offset, field = HEADER_EDITS[(m.value[0] if m.value else 0) % len(HEADER_EDITS)]
        block = bytearray(tar[at : at + BLOCK])
        block[offset : offset + len(field)] = field
        if m.where < 0.8:  # mostly with a correct checksum, so the header parses
            block[148:156] = b"        "
            block[148:156] = b"%06o\0 " % sum(block)
        return tar[:at] + bytes(block) + tar[at + BLOCK :]
    if m.op == "swap":  # the first member's header and data moved after another's
        other = headers[(m.member + 1) % len(headers)]
        if other == at:
            return tar
        first, second = sorted((at, other))
        return (
            tar[:first] + tar[second : _member_end(tar, second)] + tar[first:second] + tar[_member_end(tar, second) :]
        )
    if m.op == "after-end":  # a member hidden after the end-of-archive marker
        return tar + tar[at : _member_end(tar, at)] + bytes(10240)
    return byte_edit(tar, m.op, m.where, m.value)


def _member_end(tar: bytes, at: int) -> int:
    size = int(tar[at + 124 : at + 135].decode("ascii", "replace").strip("\0 ") or "0", 8)
    return at + BLOCK + size + (-size % BLOCK)


def _json_nodes(value: Any, path: tuple = ()) -> list[tuple]:
    nodes = [path]
    if isinstance(value, dict):
        for key in value:
            nodes += _json_nodes(value[key], path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            nodes += _json_nodes(item, path + (i,))
    return nodes


def json_edit(data: bytes, where: float, value: bytes) -> bytes:
    """One value of the JSON tree replaced by an odd one, or its key deleted or renamed."""
    document = json.loads(data)
    nodes = _json_nodes(document)
    path = nodes[min(int(where * len(nodes)), len(nodes) - 1)]
    choice = value[0] if value else 0
    if not path:
        return json.dumps(ODD_VALUES[choice % len(ODD_VALUES)]).encode()
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last, kind = path[-1], choice % 4
    if kind == 0 and isinstance(parent, dict):
        del parent[last]
    elif kind == 1 and isinstance(parent, dict):
        parent[str(last) + "_"] = parent.pop(last)
    else:
        parent[last] = ODD_VALUES[(choice // 4) % len(ODD_VALUES)]
    return json.dumps(document).encode()


def fast_gzip(data: bytes) -> bytes:
    """DATA as one gzip member in the canonical framing (GZIP_HEADER, then CRC-32 and length), its deflate
    stream made at level 1: verify reads any deflate stream of the canonical tar and never compares
    the deflate bytes (docs/bundle.md, "structure"), so a mutant the tar, member and resign layers
    build costs a fifth of the writer's level 9 and is judged the same."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    return (
        GZIP_HEADER
        + deflate.compress(data)
        + deflate.flush()
        + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    )


def mutant(files: dict[str, bytes], archive: bytes, m: Mutation, key=None) -> bytes:
    """The archive bytes of mutation M of the bundle whose members are FILES and bytes ARCHIVE (the
    gzip layer edits ARCHIVE as stored; the others gzip their tar with `fast_gzip`)."""
    if m.layer == "gzip":
        return byte_edit(archive, m.op, m.where, m.value)
    if m.layer == "tar":
        return fast_gzip(_tar_edit(gzip.decompress(archive), m))
    if m.layer == "resign":
        changed = field_edit(files, m)
        resign(changed, key)
        return fast_gzip(tar_bytes(changed))
    changed = dict(files)
    name = sorted(changed)[m.member % len(changed)]
    if m.op == "json" and name.endswith(".json"):
        changed[name] = json_edit(changed[name], m.where, m.value)
    else:
        changed[name] = byte_edit(changed[name], "flip" if m.op == "json" else m.op, m.where, m.value)
    if m.resign and key is not None:
        resign(changed, key)
    return fast_gzip(tar_bytes(changed))


def document_schemas(files: dict[str, bytes]) -> dict[str, str]:
    """member -> schema name, for every document commands.json names (and commands.json, environment.json,
    host-contention.json from format 6 on)."""
    named = {layout.COMMANDS: "commands", layout.ENVIRONMENT: "environment"}
    if layout.CONTENTION in files:
        named[layout.CONTENTION] = "host-contention"
    for entry in json.loads(files[layout.COMMANDS]).get("steps", []):
        if entry.get("output") in files and isinstance(entry.get("schema"), str):
            named[entry["output"]] = entry["schema"]
    return named


def field_edit(files: dict[str, bytes], m: Mutation) -> dict[str, bytes]:
    """FILES with one field of one document edited (the resign layer): the document by M.member, the
    field among those its schema has and it holds by M.where, the instance and the edit by M.value."""
    named = document_schemas(files)
    member = sorted(named)[m.member % len(named)]
    document = json.loads(files[member])
    held = [f for f in schema_fields(named[member]).values() if instances(document, f.path)]
    if not held:
        return dict(files)
    field = held[min(int(m.where * len(held)), len(held) - 1)]
    places = instances(document, field.path)
    where = places[m.value[0] % len(places)]
    options = [new for _, new in changed_values(value_at(document, where), field)]
    options += [REMOVE] if field.optional else []
    if not options:
        return dict(files)
    new = options[(m.value[1] if len(m.value) > 1 else 0) % len(options)]
    edited = replaced(document, where) if new is REMOVE else replaced(document, where, new)
    return {**files, member: json.dumps(edited, sort_keys=True, indent=1).encode() + b"\n"}


REMOVE = object()


def _changed_paths(a: Any, b: Any, path: tuple = ()) -> list[tuple]:
    if type(a) is not type(b):
        return [path]
    if isinstance(a, dict):
        return [
            p
            for key in set(a) | set(b)
            for p in (
                [path + (key,)] if key not in a or key not in b else _changed_paths(a[key], b[key], path + (key,))
            )
        ]
    if isinstance(a, list):
        if len(a) != len(b):
            return [path]
        changed = [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _changed_paths(x, y, path + (i,))]
        # items reordered or repeated, none new: a change of the list, not of its items' fields
        return [path] if changed and all(item in a for item in b) else changed
    return [] if a == b else [path]


def _undeclared(schema: str, field: tuple[str, ...]) -> bool:
    """Whether FIELD is a key its schema does not name, under an object whose keys the schema names
    (a free-form object's keys are classed by docs/bundle.md's rows)."""
    fields = schema_fields(schema)
    return (
        bool(field)
        and field not in fields
        and field[-1] not in (ITEMS, ANY_KEY)
        and any(f[:-1] == field[:-1] for f in fields)
    )


def _holds(document: Any, path: tuple) -> bool:
    for part in path:
        if (
            isinstance(document, dict)
            and part in document
            or isinstance(document, list)
            and isinstance(part, int)
            and part < len(document)
        ):
            document = document[part]
        else:
            return False
    return True


def field_of(schema: str, concrete: tuple) -> tuple[str, ...]:
    """The schema field a concrete path is an instance of (a list's element: the list)."""
    fields, out = schema_fields(schema), ()
    for part in concrete:
        if isinstance(part, int):
            out += (ITEMS,)
        else:
            out += (part,) if out + (part,) in fields or out + (ANY_KEY,) not in fields else (ANY_KEY,)
    while out and out[-1] == ITEMS:
        out = out[:-1]
    return out


def accepted_change(base: dict[str, bytes], mutant_files: dict[str, bytes]) -> str:
    """What a re-signed change verify accepted is, by docs/bundle.md's inventory: 'free ...' or
    'raw ...' (a row, with why), a member no check reads, or 'UNEXPLAINED ...' (a failure)."""
    named, found = document_schemas(base), set()
    for name in sorted((set(base) | set(mutant_files)) - {layout.ATTESTATION}):
        if base.get(name) == mutant_files.get(name):
            continue
        if name not in base or name not in mutant_files:
            found.add(f"UNEXPLAINED: member {name} added or removed")
        elif name.startswith(layout.LOGS_DIR):
            found.add(
                "free member: logs/ (a probe's stderr, a failed probe's stdout: kept as written, read by no check)"
            )
        elif name.startswith(layout.PLOTS_DIR):
            found.add(
                "free member: plots/ (drawn from the raw JSON, signed, not drawn again: matplotlib's bytes "
                "differ between builds)"
            )
        elif name in named and named[name] not in {row.document for row in listed()}:
            found.add(f"outside the inventory: a {named[name]}-schema document (a test probe's, no registry entry)")
        elif name in named:
            try:
                paths = _changed_paths(json.loads(base[name]), json.loads(mutant_files[name]))
            except ValueError:
                paths = [("(not JSON)",)]
            if not paths:
                found.add("free: the member's JSON formatting (the parsed document is the same)")
            mutated = json.loads(mutant_files[name]) if paths and paths[0] != ("(not JSON)",) else None
            planned = {step.step for step in registry.lab_plan()}
            steps = json.loads(base[name]).get("steps", []) if named[name] == "commands" else []
            for path in paths:
                if steps and path[:1] == ("steps",) and len(path) > 2 and steps[path[1]].get("step") not in planned:
                    found.add("outside the inventory: a step of another plan than this build's (the test plan's)")
                    continue
                field = field_of(named[name], path)
                row = listing(named[name], field)
                if _undeclared(named[name], field):
                    found.add(
                        f"free: {named[name]} `{shown(field)}`, a key its schema does not name (the schema "
                        "allows other keys there, and no check reads one)"
                    )
                elif row and row.kind in ("free", "raw"):
                    found.add(f"{row.kind}: {row.document} `{row.pattern}`")
                elif row and "may be absent" in row.why and not _holds(mutated, path):
                    found.add(f"absent: {row.document} `{row.pattern}` (may be absent, docs/bundle.md)")
                else:
                    found.add(f"UNEXPLAINED: {named[name]} {shown(field)} ({row.kind if row else 'not classed'})")
        else:
            found.add(f"UNEXPLAINED: member {name} (verify checks it)")
    return "; ".join(sorted(found)) or "free: nothing but the envelope changed"


def signed_content(files: dict[str, bytes]) -> tuple:
    """What the key vouches for: every member but the envelope, and the envelope's signed payload."""
    envelope = dsse.parse(files[layout.ATTESTATION])
    payload = dsse.decode_base64(envelope.get("payload"), "payload")
    return (
        envelope["payloadType"],
        payload,
        tuple(sorted((n, d) for n, d in files.items() if n != layout.ATTESTATION)),
    )


def verdict(base: dict[str, bytes], mutant_path, result, resigned: bool) -> str:
    """'refused: CHECK: reason', 'accepted: same content', 'accepted: re-signed change', or
    'ACCEPTED CHANGE' (verify passed content the key did not sign: a failure) or 'INTERNAL ERROR'."""
    if any(INTERNAL_ERROR in c.detail for c in result.checks):
        return "INTERNAL ERROR: " + next(c.detail for c in result.checks if INTERNAL_ERROR in c.detail)[:160]
    if not result.ok:
        first = result.failures[0]
        return f"refused: {first.check}: {normalized(first.detail)}"
    mutant_files = read_all(mutant_path)
    if signed_content(mutant_files) == signed_content(base):
        return "accepted: same content"
    if not resigned:
        return "ACCEPTED CHANGE"
    why = accepted_change(base, mutant_files)
    return f"ACCEPTED {why}" if "UNEXPLAINED" in why else f"accepted: re-signed change, {why}"


def normalized(detail: str) -> str:
    """A failure's detail with its particulars (names, numbers, hashes) blanked, to count by reason."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", detail)
    text = re.sub(r"[0-9a-f]{16}\.\.\.", "HASH...", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text[:90]


# Hostile archives (issue 28 item 2): each one of a real bundle's members kept, signed as they were,
# with one thing a tar can say and a bundle must not: `dossier verify` and the third-party check in
# docs/bundle.md must both refuse every one, before anything is written anywhere.


def _entry(name: str, data: bytes = b"", **fields: Any) -> tuple[bytes, bytes]:
    """One member's header (ustar unless FORMAT says otherwise) and data, the canonical fields
    changed as FIELDS say."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), FIXED_MTIME, 0o644
    tar_format = fields.pop("format", tarfile.USTAR_FORMAT)
    for field, value in fields.items():
        setattr(info, field, value)
    if info.type != tarfile.REGTYPE:
        info.size = 0
    return info.tobuf(tar_format, "utf-8", "surrogateescape"), data if info.type == tarfile.REGTYPE else b""


def _tar_of(entries: list[tuple[bytes, bytes]]) -> bytes:
    body = b"".join(header + data + bytes(padding(len(data))) for header, data in entries)
    return body + bytes(end_of_archive(len(body)))


def _with(
    files: dict[str, bytes],
    extra: list[tuple[str, tuple[bytes, bytes]]] = (),
    changed: dict[str, dict[str, Any]] | None = None,
) -> bytes:
    """The bundle's tar with EXTRA members (name, entry) in name order and members CHANGED as given."""
    entries = [(name, _entry(name, data, **(changed or {}).get(name, {}))) for name, data in files.items()]
    return _tar_of([entry for _, entry in sorted(entries + list(extra), key=lambda e: e[0])])


def _hidden_in_record_padding(files: dict[str, bytes]) -> bytes:
    """The archive of FILES with b"hidden" in the zero padding that fills its last 10240-byte record.

    Members that end exactly on a record boundary leave no padding; then the report grows by one
    block first, so the case exists whatever size the bundle has (its size differs by machine)."""
    tar = tar_bytes(files)
    members_end = sum(BLOCK + len(data) + padding(len(data)) for data in files.values())
    record_padding = members_end + 2 * BLOCK  # after the two zero blocks, up to a whole record
    if len(tar) == record_padding:
        files = {**files, layout.REPORT: files[layout.REPORT] + b"\n" * BLOCK}
        tar = tar_bytes(files)
        record_padding += BLOCK
    return gzip_bytes(tar[:record_padding] + b"hidden" + tar[record_padding + 6 :])


def _data_in_a_members_padding(files: dict[str, bytes]) -> bytes:
    """The archive of FILES with b"x" right after the data of the first member whose size is not a
    whole number of blocks (a report one byte longer where every member's is)."""
    if all(not padding(len(data)) for data in files.values()):
        files = {**files, layout.REPORT: files[layout.REPORT] + b"\n"}
    tar, offset = tar_bytes(files), 0
    for name in sorted(files):
        offset += BLOCK + len(files[name])
        if padding(len(files[name])):
            return gzip_bytes(tar[:offset] + b"x" + tar[offset + 1 :])
        offset += padding(len(files[name]))
    raise AssertionError("unreachable: some member has padding")


def hostile_archives(files: dict[str, bytes]) -> dict[str, bytes]:
    """Named archive bytes, each one hostile thing added to the bundle whose members are FILES."""
    special = {
        "symlink to /etc/passwd": ("raw/zz-link.json", dict(type=tarfile.SYMTYPE, linkname="/etc/passwd")),
        "hard link": ("raw/zz-hard.json", dict(type=tarfile.LNKTYPE, linkname=layout.REPORT)),
        "character device": ("dev-null", dict(type=tarfile.CHRTYPE, devmajor=1, devminor=3)),
        "block device": ("dev-sda", dict(type=tarfile.BLKTYPE, devmajor=8)),
        "FIFO": ("fifo", dict(type=tarfile.FIFOTYPE)),
        "directory": ("raw", dict(type=tarfile.DIRTYPE, mode=0o755)),
        "absolute name": ("/etc/cron.d/x", {}),
        "'..' name": ("../x", {}),
        "symlinked plots folder": ("plots", dict(type=tarfile.SYMTYPE, linkname="/tmp")),
    }
    out = {
        what: gzip_bytes(_with(files, [(name, _entry(name, b"x", **fields))]))
        for what, (name, fields) in special.items()
    }
    for what, fields in {
        "setuid bit": dict(mode=0o4755),
        "setgid bit": dict(mode=0o2644),
        "owned by a user": dict(uid=1000, uname="user"),
        "another mtime": dict(mtime=0),
        "pax extended header": dict(format=tarfile.PAX_FORMAT, pax_headers={"comment": "x"}),
        "GNU header": dict(format=tarfile.GNU_FORMAT),
    }.items():
        out[what] = gzip_bytes(_with(files, changed={layout.REPORT: fields}))
    tar = tar_bytes(files)
    hidden = tar_bytes({"evil.sh": b"#!/bin/sh\n"})
    out["data after the end-of-archive marker"] = gzip_bytes(tar + hidden)
    out["data hidden in the record padding"] = _hidden_in_record_padding(files)
    archive = gzip_bytes(tar)
    out["a second gzip member"] = archive + gzip_bytes(hidden)
    out["trailing bytes after the gzip stream"] = archive + b"garbage"
    out["a file name in the gzip header"] = b"\x1f\x8b\x08\x08" + archive[4:10] + b"b.tar\0" + archive[10:]
    names = sorted(files)
    entries = [_entry(name, files[name]) for name in names]
    out["members reordered"] = gzip_bytes(_tar_of([entries[1], entries[0], *entries[2:]]))
    out["a member twice"] = gzip_bytes(_tar_of([entries[0], *entries]))
    out["data in a member's padding"] = _data_in_a_members_padding(files)
    return out
