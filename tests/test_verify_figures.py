"""`dossier verify` recomputes every figure from raw samples: tampered consistently, re-signed with
the right key, a real H200 bundle must fail, naming the figure.

The bundles are the committed signed dossiers made on the lent H200 SXM and on two NVLink H200s
(tests/fixtures/h200/, tests/fixtures/h200x2/). Each test changes a raw document the way an
attacker would (keeping it schema-valid), re-signs the whole bundle with a key made here and
verifies with that key's public half: the signature, hashes and schemas then pass, so only the
recomputation can catch the change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_support import make_key, rewrite

FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "h200" / "dossier-h200.tar.gz"
H200X2 = FIXTURES / "h200x2" / "dossier-h200x2.tar.gz"


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    private, public = make_key(tmp_path_factory.mktemp("signer"))
    return private, load_public(public)


def edit_json(member: str, change: Callable[[dict], None]) -> Callable[[dict], None]:
    def edit(files):
        document = json.loads(files[member])
        change(document)
        files[member] = json.dumps(document, allow_nan=False, sort_keys=True).encode()
    return edit


def failures(bundle: Path, member: str, change, signer, tmp_path) -> list:
    private, public = signer
    out = rewrite(bundle, tmp_path / "tampered.tar.gz", edit_json(member, change), resign_with=private)
    return verify_bundle(out, public).failures


def assert_named(found, member: str, *words: str) -> None:
    """Only figure checks fail (signature, hashes and schemas pass), and one names every word."""
    assert found, f"the change to {member} verified"
    assert {f.check for f in found} == {"figures"}, [f.line() for f in found]
    assert any(f.subject == member and all(w in f.detail for w in words) for f in found), \
        [f.line() for f in found]


@pytest.mark.parametrize("bundle", [H200, H200X2], ids=["h200", "h200x2"])
def test_the_untouched_bundle_re_signed_here_verifies(bundle, signer, tmp_path):
    private, public = signer
    out = rewrite(bundle, tmp_path / "resigned.tar.gz", resign_with=private)
    assert verify_bundle(out, public).failures == []


# --- item 9: roofline and fusion rates come from the per-call times ----------------------------

def _times_three(timed: dict) -> None:
    timed["times_s"] = [t * 3 for t in timed["times_s"]]


def test_gemm_per_call_times_multiplied_by_three_fail(signer, tmp_path):
    def slower(document):
        for shape in document["measurements"]["shapes"]:
            if shape["status"] == "measured":
                _times_three(shape)
    found = failures(H200, "raw/roofline.json", slower, signer, tmp_path)
    assert_named(found, "raw/roofline.json", "square-4096", "median_s", "times_s")


def test_fusion_per_call_times_multiplied_by_three_fail(signer, tmp_path):
    found = failures(H200, "raw/roofline.json", lambda d: _times_three(d["fusion"]["fused"]), signer, tmp_path)
    assert_named(found, "raw/roofline.json", "fusion.fused", "median_s", "times_s")


def test_a_stated_median_and_everything_it_feeds_restated_still_fails_on_the_times(signer, tmp_path):
    """The attacker halves one shape's median and restates every figure made from it: the per-call
    times it claims to summarise still give the measured median."""
    from harness.analysis import roofline as rl

    def faster(document):
        shape = next(s for s in document["measurements"]["shapes"] if s["label"] == "square-8192")
        prediction = next(p for p in document["predictions"]["shapes"] if p["label"] == "square-8192")
        shape["median_s"] /= 2
        shape["achieved_tflops"] = prediction["flops"] / shape["median_s"] / 1e12
        shape["effective_gbps"] = prediction["min_bytes"] / shape["median_s"] / 1e9
        shape["fraction_of_attainable"] = shape["achieved_tflops"] / prediction["attainable_tflops"]
        explanation = rl.explain(prediction, shape, rl.context_of(document))
        shape["explanation"] = {k: explanation[k] for k in ("verdict", "explained", "causes", "text")}
        document["summary"]["best_tflops"] = max(document["summary"]["best_tflops"], shape["achieved_tflops"])
        document["summary"]["best_shape"] = "square-8192"
    found = failures(H200, "raw/roofline.json", faster, signer, tmp_path)
    assert_named(found, "raw/roofline.json", "square-8192", "median_s", "times_s")
    assert any("summary.best_tflops" in f.detail for f in found)
