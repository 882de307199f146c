"""The streamed fleet archive (harness/fleet/archive.py): the canonical bundle form, node bundles
stored from disk without being held, a member that changed since it was verified refused."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile

import pytest

from harness.bundle.read import read_members
from harness.bundle.write import archive_bytes
from harness.fleet.archive import ChangedMember, FileMember, write_archive, write_atomically


def streamed(members) -> bytes:
    out = io.BytesIO()
    write_archive(out, members)
    return out.getvalue()


def test_without_file_members_it_is_byte_for_byte_the_bundle_writer():
    files = {"fleet.json": b'{"kind": "rig-dossier fleet"}\n', "fleet.md": b"# Fleet\n" * 300, "logs/a.out": b""}
    assert streamed(files) == archive_bytes(files)


def test_file_members_are_streamed_into_a_canonical_archive(tmp_path):
    inner = tmp_path / "n1.tar.gz"
    inner.write_bytes(os.urandom(300_000))  # incompressible, like a node bundle
    member = FileMember(inner, inner.stat().st_size, hashlib.sha256(inner.read_bytes()).hexdigest())
    files = {"fleet.json": b"{}\n", "nodes/n1.tar.gz": member, "zz.txt": b"last\n" * 1000}
    out = tmp_path / "fleet.tar.gz"
    write_atomically(out, files)
    members = read_members(out, lambda name: True)  # the verifier's reader: canonical form checked
    assert members["nodes/n1.tar.gz"].data == inner.read_bytes() and members["zz.txt"].data == b"last\n" * 1000
    with tarfile.open(out) as tar:
        assert tar.getnames() == ["fleet.json", "nodes/n1.tar.gz", "zz.txt"]
    assert streamed(files) == out.read_bytes()  # deterministic
    assert out.stat().st_size < 320_000  # stored, not inflated; the text still compressed


def test_a_node_bundle_changed_since_it_was_verified_is_refused_and_nothing_is_written(tmp_path):
    inner = tmp_path / "n1.tar.gz"
    inner.write_bytes(b"verified bytes")
    member = FileMember(inner, inner.stat().st_size, hashlib.sha256(b"verified bytes").hexdigest())
    inner.write_bytes(b"replaced bytes")
    out = tmp_path / "fleet.tar.gz"
    with pytest.raises(ChangedMember, match="changed after it was verified"):
        write_atomically(out, {"nodes/n1.tar.gz": member})
    assert not out.exists() and list(tmp_path.iterdir()) == [inner]
