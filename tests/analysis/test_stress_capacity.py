"""The stress probe's bucket capacity, recomputed from the warm-up time the document records."""

from __future__ import annotations

from harness.analysis.stress.buckets import bucket_capacity, capacities


def test_the_capacity_sized_before_rounding_is_accepted() -> None:
    # One H200 dossier of 2026-12-02 (tests/fixtures/h200/campaign/c1-r3.tar.gz): the probe sized 740 from
    # the warm-up time before rounding it to 2.7624 ms; from the rounded time the count is 741.
    assert bucket_capacity(2.7624, 1.0) == 741
    assert capacities(2.7624, 1.0) == {740, 741}


def test_a_capacity_the_rounding_cannot_explain_is_refused() -> None:
    allowed = capacities(2.7624, 1.0)
    assert 739 not in allowed and 742 not in allowed
    assert capacities(9.0, 1.0) == {bucket_capacity(9.0, 1.0)}


def test_a_killed_workers_buckets_are_not_held_to_a_start_it_never_recorded():
    """A worker killed half way records no phase start: the document takes bucket 0's, opened a little later
    (its counts allocated first), so bucket 0 seems to close before its boundary (a CPU run under load,
    2026-12-02: 1.1844 s against 1.1882 s). The boundary is not checked then; with the start recorded it is."""
    import copy
    import json
    import tarfile
    from pathlib import Path

    from harness.analysis import stress as stress_analysis

    bundle = Path(__file__).parents[1] / "fixtures" / "h200" / "campaign" / "c3-r1.tar.gz"  # the H200, c3
    with tarfile.open(bundle) as archive:
        document = json.load(archive.extractfile("raw/stress.json"))
    assert stress_analysis.discrepancies(document) == []
    late = copy.deepcopy(document)
    gemm = late["devices"][0]["gemm"]
    gemm["started_s"] = gemm["buckets"][0]["start_s"] + 0.0038  # as if it were bucket 0's start, later
    assert any("closed by time" in d for d in stress_analysis.discrepancies(late))
    gemm["completed"] = False
    assert not any("closed by time" in d for d in stress_analysis.discrepancies(late))
