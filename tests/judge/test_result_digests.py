"""Result digests against silent data corruption (issue 24): what is hashed is exactly the reference
GEMM result and the quantized outputs, two CPU runs agree, and acceptance names the GPU whose result
differs from its neighbours' even when it agrees with itself.

The multi-GPU stress documents are CONSTRUCTED from the real one-GPU H200 run
(tests/fixtures/h200/stress-bf16.json, recorded before digests existed): its device record copied to
four GPUs, each given a reference digest written by the test (named PLANTED where one differs). The
lead captures real H200 digests on the device later."""

import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness import registry
from harness.analysis import stress as analysis
from harness.analysis.digests import quorum
from harness.analysis.verdict import Verdict
from harness.judge.acceptance.criteria import evaluate
from harness.judge.facts import BundleFacts
from harness.probes.precision import quantize
from harness.probes.result_digest import tensor_sha256
from harness.schemas import violations
from tests.accept_support import apply_file, h200_documents, h200_raw, resolve, view_of

CRITERIA = registry.acceptance_criteria()  # as `dossier accept` judges them

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "h200"
SXM = "h200-sxm-141gb"
GOOD, BAD = "a" * 64, "b" * 64
CUBLAS = {"library": "/opt/torch/lib/libcublas.so.13", "version": "13.1.0"}


def stress_cpu_run(tmp_path: Path, name: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "harness.probes.stress", "--device", "cpu", "--seconds", "0.3", "--no-memory-test"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=300,
    )
    document = json.loads(out.stdout)
    (tmp_path / name).write_bytes(out.stdout)
    return document


@pytest.fixture(scope="module")
def two_cpu_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("digests")
    return stress_cpu_run(tmp, "one.json"), stress_cpu_run(tmp, "two.json")


def test_two_cpu_stress_runs_record_the_same_reference_digest(two_cpu_runs):
    one, two = (run["devices"][0]["gemm"]["reference_digest"] for run in two_cpu_runs)
    assert violations("stress", two_cpu_runs[0]) == []
    assert one == two and one["dtype"] == "float32" and one["shape"] == [512, 512] and one["seed"] == 16
    assert one["gemm_index"] == 4 and one["bytes"] == 512 * 512 * 4
    assert one["libraries"]["torch"] == torch.__version__ and one["libraries"]["threads"] >= 1


def test_the_digest_is_the_sha256_of_the_gemm_result_recomputed_here(two_cpu_runs):
    """Exactly what is hashed: C = A @ B^T's float32 bytes, A [512,1024] then B [512,1024] drawn by
    torch.randn from a CPU generator seeded 16, as the probe's Operands draws them."""
    record = two_cpu_runs[0]["devices"][0]["gemm"]["reference_digest"]
    threads = torch.get_num_threads()
    torch.set_num_threads(record["libraries"]["threads"])
    try:
        generator = torch.Generator(device="cpu").manual_seed(16)
        a = torch.randn(512, 1024, generator=generator, dtype=torch.float32)
        w = torch.randn(512, 1024, generator=generator, dtype=torch.float32)
        out = torch.empty(512, 512, dtype=torch.float32)
        torch.mm(a, w.t(), out=out)
    finally:
        torch.set_num_threads(threads)
    assert hashlib.sha256(out.numpy().tobytes()).hexdigest() == record["sha256"] == tensor_sha256(out)


def test_two_cpu_runs_of_the_quantizers_give_the_same_output_digests():
    x = torch.randn(96, 384, generator=torch.Generator().manual_seed(3), dtype=torch.float32)
    first, second = quantize.measure_formats(x), quantize.measure_formats(x.clone())
    digests = {row["format"]: row["output_sha256"] for row in first}
    assert digests == {row["format"]: row["output_sha256"] for row in second}
    assert len(set(digests.values())) == len(digests)  # every format's output is its own
    fmt = quantize.FORMATS_BY_NAME["int4_per_group128"]
    assert digests[fmt.name] == hashlib.sha256(quantize.quantize(x, fmt).values.numpy().tobytes()).hexdigest()


def gpus_with_digests(digests, libraries=None) -> dict:
    """The real one-GPU run's record copied to one GPU per digest (CONSTRUCTED; see the module docstring)."""
    base = json.loads((FIXTURES / "stress-bf16.json").read_text())
    document = copy.deepcopy(base)
    record = base["devices"][0]
    document["devices"] = []
    for index, digest in enumerate(digests):
        copy_ = copy.deepcopy(record)
        copy_["index"], copy_["uuid"] = index, f"GPU-{index:08d}-test"
        copy_["gemm"]["reference_digest"] = {
            "sha256": digest,
            "dtype": "bfloat16",
            "shape": [8192, 8192],
            "bytes": 8192 * 8192 * 2,
            "seed": 16,
            "gemm_index": 4,
            "libraries": libraries
            or {"torch": "2.11.0+cu130", "byteorder": "little", "cuda_runtime": "13.0", "cublas": CUBLAS},
        }
        document["devices"].append(copy_)
    document["summary"] = analysis.headlines(document)
    assert violations("stress", document) == []
    return document


def judged(stress=None, profile=None, precision=None):
    documents = {
        **h200_documents(),
        **({"stress": stress} if stress else {}),
        **({"precision": precision} if precision else {}),
    }
    return {r.name: r for r in evaluate(BundleFacts(view_of(documents)), profile or resolve(SXM), CRITERIA)}


def test_gpus_that_agree_pass():
    result = judged(gpus_with_digests([GOOD] * 4))["stress_digests_agree"]
    assert result.status == Verdict.PASS and result.measured.value == 4


def test_a_planted_disagreement_names_the_gpu_that_agrees_with_itself_but_not_its_neighbours():
    result = judged(gpus_with_digests([GOOD, GOOD, BAD, GOOD]))["stress_digests_agree"]  # PLANTED: GPU2
    assert result.status == Verdict.FAIL
    assert "GPU2's reference result differs from the 3 other GPUs'" in result.why
    assert "possible silent data corruption" in result.why
    assert "it agrees with itself, not with its neighbours" in result.why  # its own 0 mismatches
    assert "GPU0" not in result.why.split("GPU2")[0]


def test_two_gpus_that_disagree_fail_without_naming_one():
    result = judged(gpus_with_digests([GOOD, BAD]))["stress_digests_agree"]  # PLANTED
    assert result.status == Verdict.FAIL and "split evenly" in result.why


def test_one_gpu_or_no_digest_is_skipped_with_why():
    assert judged(gpus_with_digests([GOOD]))["stress_digests_agree"].status == Verdict.SKIP
    old = judged(json.loads((FIXTURES / "stress-bf16.json").read_text()))["stress_digests_agree"]
    assert old.status == Verdict.SKIP and "no reference digest recorded" in old.why


def expecting(digest, torch_version="2.11.0+cu130"):
    entry = {
        "sha256": digest,
        "dtype": "bfloat16",
        "shape": [8192, 8192],
        "seed": 16,
        "libraries": {"torch": torch_version, "byteorder": "little", "cublas": CUBLAS},
        "source": "test",
    }
    return apply_file(resolve(SXM), {"sku_id": SXM, "digests": {"stress": [entry]}}, "test profile")


def test_the_digest_the_profile_expects_for_this_build():
    assert judged(gpus_with_digests([GOOD] * 2), expecting(GOOD))["stress_digest_expected"].status == Verdict.PASS
    wrong = judged(gpus_with_digests([GOOD, BAD]), expecting(GOOD))["stress_digest_expected"]
    assert wrong.status == Verdict.FAIL and wrong.why.startswith("GPU1:")


def test_another_library_build_is_not_comparable():
    result = judged(gpus_with_digests([GOOD]), expecting(GOOD, torch_version="2.12.0+cu130"))
    row = result["stress_digest_expected"]
    assert row.status == Verdict.SKIP and "not comparable" in row.why and "2.12.0+cu130" in row.why


def test_precision_outputs_against_the_profiles_digests():
    document = json.loads(json.dumps(h200_raw("precision")))
    tensor = document["tensors"][0]
    for row in tensor["formats"]:
        row["output_sha256"] = GOOD  # CONSTRUCTED: the recorded H200 precision run predates output digests
    expected = {tensor["sha256"]: {row["format"]: GOOD for row in tensor["formats"]}}
    profile = apply_file(resolve(SXM), {"sku_id": SXM, "digests": {"precision": {"outputs": expected}}}, "test")
    assert judged(precision=document, profile=profile)["precision_digests_expected"].status == Verdict.PASS
    tensor["formats"][3]["output_sha256"] = BAD  # PLANTED
    row = judged(precision=document, profile=profile)["precision_digests_expected"]
    assert row.status == Verdict.FAIL and f"{tensor['role']} {tensor['formats'][3]['format']}" in row.why


def test_the_quorum_rule():
    assert quorum({"a": GOOD, "b": GOOD, "c": BAD}).outliers == {"c": BAD}
    assert quorum({"a": GOOD, "b": BAD}).ambiguous
    assert quorum({"a": GOOD}).unanimous
