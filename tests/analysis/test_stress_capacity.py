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
