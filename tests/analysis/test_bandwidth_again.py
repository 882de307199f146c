"""Repeats measured again (probe contract 6, issue 35), checked by verify on a real recorded CPU sweep
(tests/fixtures/bandwidth-cpu-sweep.json) made into a document whose first repeats disagreed: the first
round is recomputed from its times, it must have disagreed, been measured again longer, and a document of
contract 6 whose repeats disagree must say why they were not measured again."""

import copy

from harness.analysis.bandwidth import discrepancies, headlines
from harness.analysis.bandwidth import figures as bw
from harness.probes.bandwidth.points import point_record
from tests.bandwidth_fixtures import cpu_sweep


def _run_like(document, run, scale):
    """RUN of DOCUMENT with every iteration SCALE times slower, its stated figures recomputed."""
    cache = document["cache"]["size_bytes"] if isinstance(document["cache"]["size_bytes"], int) else None
    times = [t * scale for t in run["iteration_times_s"]]
    return point_record(
        run["size_mib"], run["elements"], document["kernel"], times, cache, document["launch"]["empty_launch_s"]
    )


def measured_again():
    """The real sweep as if its first repeats had disagreed (the middle one 30% slower) and the repeats
    it recorded were the round measured again, 4 x longer."""
    document = copy.deepcopy(cpu_sweep())
    repeats = document["repeats"]
    first_runs = [_run_like(document, run, scale) for run, scale in zip(repeats["runs"], (1.0, 1.3, 1.0), strict=True)]
    medians = [r["median_gbps"] for r in first_runs]
    repeats["first_round"] = {
        "repeat_budget_s": 0.1,
        "runs": first_runs,
        "medians_gbps": medians,
        "spread": bw.spread(medians),
        "verdict": "fail",
    }
    repeats["repeat_budget_s"] = 0.4
    repeats["again"] = {"rule": bw.AGAIN_RULE, "factor": bw.AGAIN_FACTOR, "budget_s": 15.0, "why": "first disagreed"}
    return document


def test_a_round_measured_again_verifies_and_its_first_round_is_a_headline():
    document = measured_again()
    assert discrepancies(document) == []
    heads = headlines(document)
    assert heads["repeat_first_spread"] > bw.REPEAT_SPREAD_MAX > heads["repeat_spread"]
    assert heads["repeat_first_budget_s"] == 0.1 and heads["repeat_budget_s"] == 0.4


def test_an_edited_first_round_is_named():
    document = measured_again()
    document["repeats"]["first_round"]["spread"] = 0.01
    assert any(line.startswith("repeats.first_round.spread") for line in discrepancies(document))


def test_measuring_again_repeats_that_agreed_or_not_longer_is_named():
    document = measured_again()
    document["repeats"]["first_round"]["runs"][1] = copy.deepcopy(document["repeats"]["runs"][1])
    first = document["repeats"]["first_round"]
    first["medians_gbps"] = [r["median_gbps"] for r in first["runs"]]
    first["spread"], first["verdict"] = bw.spread(first["medians_gbps"]), "pass"
    assert any("measured again although the first repeats agreed" in line for line in discrepancies(document))
    longer = measured_again()
    longer["repeats"]["repeat_budget_s"] = 0.1
    assert any("each longer" in line for line in discrepancies(longer))


def test_disagreeing_repeats_of_contract_6_must_say_why_they_were_not_measured_again():
    document = measured_again()
    repeats = document["repeats"]
    for key in ("runs", "medians_gbps", "spread"):
        repeats[key] = repeats["first_round"][key]
    repeats["verdict"], repeats["trusted"] = "fail", False
    repeats["diagnosis"] = {"causes": [], "summary": "no telemetry to diagnose from (device=cpu: no GPU to sample)"}
    del repeats["first_round"], repeats["again"]
    document["contract_version"] = 6  # (the fixture, of contract 1, kept no empty-launch times: they are its median)
    document["launch"]["empty_launch_times_s"] = [document["launch"]["empty_launch_s"]] * 3
    found = discrepancies(document)
    assert any("were not measured again and repeats.again does not say why" in line for line in found), found
    document["contract_version"] = 5  # a document of an earlier probe: its rule, kept
    assert not any("measured again" in line for line in discrepancies(document))
