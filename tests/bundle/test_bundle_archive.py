"""The archive itself: deterministic bytes, atomic placement, and safe reading of hostile tars."""

import gzip
import io
import struct
import tarfile
import zlib
from pathlib import Path

import pytest

from harness.bundle.read import Limits, UnsafeBundle, read_all, read_members, scan
from harness.bundle.write import (
    FIXED_MTIME,
    GZIP_HEADER,
    archive_bytes,
    gzip_bytes,
    tar_bytes,
    ustar_header,
    write_atomically,
)
from harness.errors import UsageError

FILES = {"report.md": b"# r\n", "raw/b.json": b"{}\n", "raw/a.json": b"[]\n"}


def test_same_files_give_byte_identical_archives_with_normalised_headers():
    first, second = archive_bytes(FILES), archive_bytes(dict(reversed(list(FILES.items()))))
    assert first == second
    assert first[:2] == b"\x1f\x8b" and first[3] & 0x08 == 0  # gzip: no FNAME flag
    assert first[4:8] == b"\0\0\0\0"  # gzip MTIME 0
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(FILES)
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime, m.mode) for m in members} == {(0, 0, "", "", FIXED_MTIME, 0o644)}


def test_read_back_gives_the_same_files(tmp_path):
    path = tmp_path / "b.tar.gz"
    path.write_bytes(archive_bytes(FILES))
    assert read_all(path) == FILES
    members = read_members(path, keep=lambda name: name.endswith(".md"))
    assert members["raw/a.json"].data is None and members["report.md"].data == b"# r\n"


def test_atomic_write_never_overwrites_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out" / "b.tar.gz"
    write_atomically(b"one", target)
    with pytest.raises(UsageError, match="already exists"):
        write_atomically(b"two", target)
    assert target.read_bytes() == b"one"
    assert sorted(p.name for p in target.parent.iterdir()) == ["b.tar.gz"]


def hostile(tmp_path, *infos_and_data, raw_tail=b""):
    """A tar.gz made by hand from (TarInfo, bytes|None) pairs, headers written as given, in the
    canonical gzip framing (so the tar itself is what is judged)."""
    buffer = io.BytesIO()
    for info, data in infos_and_data:
        buffer.write(info.tobuf(format=tarfile.USTAR_FORMAT))
        if data:
            buffer.write(data + b"\0" * (-len(data) % 512))
    buffer.write(raw_tail or b"\0" * 10240)
    path = tmp_path / "hostile.tar.gz"
    path.write_bytes(gzip_bytes(buffer.getvalue()))
    return path


def regular(name, data=b"x"):
    """A member with the canonical header fields (only its name or content is hostile)."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), FIXED_MTIME, 0o644
    return info, data


def special(name, kind, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


@pytest.mark.parametrize(
    "member, why",
    [
        (special("raw/a.json", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
        (special("raw/a.json", tarfile.LNKTYPE, "report.md"), "hard link"),
        (special("dev", tarfile.CHRTYPE), "character device"),
        (special("blk", tarfile.BLKTYPE), "block device"),
        (special("fifo", tarfile.FIFOTYPE), "FIFO"),
        (special("raw", tarfile.DIRTYPE), "directory"),
        (regular("../x"), "'..' component"),
        (regular("raw/../../x"), "'..' component"),
        (regular("/etc/cron.d/x"), "absolute path"),
        (regular("./report.md"), "'.' component"),
    ],
)
def test_unsafe_members_are_rejected_before_any_content_is_read(tmp_path, member, why, monkeypatch):
    path = hostile(tmp_path, regular("report.md"), member)
    before = set(tmp_path.iterdir())
    with pytest.raises(UnsafeBundle, match=why):
        read_members(path, keep=lambda _: True)
    assert set(tmp_path.iterdir()) == before  # nothing extracted


def test_duplicate_names_are_rejected(tmp_path):
    path = hostile(tmp_path, regular("report.md", b"a"), regular("report.md", b"b"))
    with pytest.raises(UnsafeBundle, match="appears twice"):
        scan(path)


def test_oversize_declared_member_is_rejected_from_its_header_alone(tmp_path):
    info = tarfile.TarInfo("plots/huge.png")
    info.size = 4 * 2**30  # declared only: the archive holds no such data
    path = hostile(tmp_path, regular("logs/a.txt"), (info, None), raw_tail=b"\0" * 512)
    # Were the data skipped or read first, this would fail as truncated, not over the cap.
    with pytest.raises(UnsafeBundle, match="exceed the cap"):
        scan(path, Limits(max_total_bytes=2**30))


def test_total_over_the_cap_is_rejected(tmp_path):
    path = hostile(tmp_path, regular("a", b"x" * 600), regular("b", b"y" * 600))
    with pytest.raises(UnsafeBundle, match="cap of 1000 bytes"):
        scan(path, Limits(max_total_bytes=1000))


def test_not_gzip_and_truncated_archives_are_rejected(tmp_path):
    plain = tmp_path / "plain.tar.gz"
    plain.write_bytes(b"not a gzip stream at all")
    with pytest.raises(UnsafeBundle, match="gzip"):
        scan(plain)
    whole = archive_bytes({"report.md": b"z" * 5000})
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(gzip_bytes(gzip.decompress(whole)[:1500]))
    with pytest.raises(UnsafeBundle, match="truncated"):
        read_all(cut)


# Canonical form (issue 14 item 19): the archive is byte-deterministic, so the reader demands it.

CANONICAL = {"commands.json": b"{}\n", "raw/a.json": b"[1]\n", "report.md": b"# r\n"}
FIXTURE_BUNDLES = [
    Path(__file__).parents[1] / "fixtures" / "h200" / "dossier-h200.tar.gz",
    Path(__file__).parents[1] / "fixtures" / "h200x2" / "dossier-h200x2.tar.gz",
]


def written(tmp_path, data, name="b.tar.gz"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def canonical_tar():
    return tar_bytes(CANONICAL)


def refusal(tmp_path, data):
    with pytest.raises(UnsafeBundle) as caught:
        read_members(written(tmp_path, data), keep=lambda _: True)
    return str(caught.value)


def test_the_header_written_by_hand_is_what_tarfile_writes_on_this_python():
    for name in ("a", "raw/health.json", "plots/" + "d/" * 60 + "f.svg", "é/ü.png", "x" * 100):
        for size in (0, 1, 511, 512, 10**9):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = size, FIXED_MTIME, 0o644
            assert info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape") == ustar_header(name, size)


def test_archive_is_the_canonical_tar_in_one_canonical_gzip_member():
    data = archive_bytes(CANONICAL)
    assert data[:10] == GZIP_HEADER
    assert gzip.decompress(data) == canonical_tar()
    assert len(canonical_tar()) % 10240 == 0


@pytest.mark.parametrize("bundle", FIXTURE_BUNDLES, ids=lambda p: p.name)
def test_the_committed_h200_bundles_are_canonical(bundle):
    headers = scan(bundle)
    assert [h.name for h in headers] == sorted(h.name for h in headers) and len(headers) > 10


def test_other_deflate_bytes_of_the_canonical_tar_are_accepted(tmp_path):
    # Another zlib (or level) compresses differently; only the framing and the tar are canonical.
    tar = canonical_tar()
    deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
    body = deflate.compress(tar) + deflate.flush()
    data = GZIP_HEADER + body + struct.pack("<II", zlib.crc32(tar), len(tar))
    assert data != archive_bytes(CANONICAL)
    assert read_all(written(tmp_path, data)) == CANONICAL


def test_data_after_the_end_of_archive_marker_is_refused(tmp_path):
    hidden = tar_bytes({"evil.sh": b"#!/bin/sh\n"})
    tar = canonical_tar()
    end = tar.rindex(b"# r\n") + 512  # after report.md's data block: the end-of-archive marker starts
    smuggled = tar[: end + 1024] + hidden[: len(tar) - end - 1024]  # inside the record padding
    assert len(smuggled) == len(tar)
    assert "after the end-of-archive marker" in refusal(tmp_path, gzip_bytes(smuggled))
    assert "after the end-of-archive record padding" in refusal(tmp_path, gzip_bytes(tar + hidden))


def test_a_second_gzip_member_and_trailing_garbage_are_refused(tmp_path):
    data = archive_bytes(CANONICAL)
    assert "second gzip member" in refusal(tmp_path, data + gzip_bytes(b"\0" * 10240))
    assert "7 trailing bytes after the gzip stream" in refusal(tmp_path, data + b"garbage")


def test_members_out_of_order_are_refused(tmp_path):
    tar = b"".join(
        ustar_header(n, len(CANONICAL[n])) + CANONICAL[n].ljust(512, b"\0")
        for n in ("report.md", "commands.json", "raw/a.json")
    )
    tar += b"\0" * (10240 - len(tar))
    assert "member 'commands.json' is out of order (after 'report.md')" in refusal(tmp_path, gzip_bytes(tar))


def test_a_setuid_member_owned_by_a_user_is_refused_naming_the_fields(tmp_path):
    info, data = regular("raw/a.json", b"[1]\n")
    info.mode, info.uid = 0o4755, 1000
    why = refusal(tmp_path, gzip_bytes(info.tobuf(tarfile.USTAR_FORMAT) + data.ljust(10240 - 512, b"\0")))
    assert "member 'raw/a.json' has a non-canonical header" in why
    assert "mode 4755 (canonical 644)" in why and "uid 1000 (canonical 0)" in why


@pytest.mark.parametrize("field, value", [("uname", "root"), ("mtime", 0), ("type", tarfile.AREGTYPE)])
def test_other_header_fields_must_be_canonical(tmp_path, field, value):
    info, data = regular("raw/a.json", b"[1]\n")
    setattr(info, field, value)
    why = refusal(tmp_path, gzip_bytes(info.tobuf(tarfile.USTAR_FORMAT) + data.ljust(10240 - 512, b"\0")))
    assert f"non-canonical header: {field}" in why


def test_non_zero_padding_after_member_data_is_refused(tmp_path):
    tar = bytearray(canonical_tar())
    tar[512 + len(CANONICAL["commands.json"])] = ord("x")  # just after commands.json's data
    assert "non-zero bytes in the padding after member 'commands.json'" in refusal(tmp_path, gzip_bytes(bytes(tar)))


@pytest.mark.parametrize(
    "header, why",
    [
        (b"\x1f\x8b\x08\x08\x00\x00\x00\x00\x02\xff", "flags FNAME (a stored file name)"),
        (b"\x1f\x8b\x08\x00\x01\x00\x00\x00\x02\xff", "mtime 1 (canonical 0)"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "XFL 0 (canonical 2"),
    ],
)
def test_a_non_canonical_gzip_header_is_refused_naming_the_field(tmp_path, header, why):
    data = archive_bytes(CANONICAL)
    if header[3] & 0x08:
        header += b"b.tar\0"
    assert why in refusal(tmp_path, header + data[10:])


def test_a_corrupt_gzip_trailer_is_refused(tmp_path):
    data = bytearray(archive_bytes(CANONICAL))
    data[-5] ^= 0x01  # the CRC-32
    assert "gzip" in refusal(tmp_path, bytes(data))


def test_a_cut_gzip_stream_is_refused_as_truncated(tmp_path):
    data = archive_bytes(CANONICAL)
    assert "the gzip stream is truncated" in refusal(tmp_path, data[: len(data) // 2])
