"""The archive itself: deterministic bytes, atomic placement, and safe reading of hostile tars."""

import gzip
import io
import tarfile

import pytest

from harness.bundle.read import Limits, UnsafeBundle, read_all, read_members, scan
from harness.bundle.write import FIXED_MTIME, archive_bytes, write_atomically
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
    """A tar.gz made by hand from (TarInfo, bytes|None) pairs, headers written as given."""
    buffer = io.BytesIO()
    for info, data in infos_and_data:
        buffer.write(info.tobuf(format=tarfile.USTAR_FORMAT))
        if data:
            buffer.write(data + b"\0" * (-len(data) % 512))
    buffer.write(raw_tail or b"\0" * 1024)
    path = tmp_path / "hostile.tar.gz"
    path.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    return path


def regular(name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def special(name, kind, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


@pytest.mark.parametrize("member, why", [
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
])
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
    path = hostile(tmp_path, regular("report.md"), (info, None), raw_tail=b"\0" * 512)
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
    cut.write_bytes(gzip.compress(gzip.decompress(whole)[:1500], mtime=0))
    with pytest.raises(UnsafeBundle, match="truncated"):
        read_all(cut)
