"""The recommended-action vocabulary: its order, parsing, the driver's words and escalation."""

from __future__ import annotations

import pytest

from harness.analysis import actions
from harness.analysis.actions import Action


def test_order_is_mildest_first_and_complete() -> None:
    assert [a.severity for a in actions.ORDER] == list(range(len(Action)))
    assert set(actions.ORDER) == set(Action)
    assert all(actions.MEANING[a] for a in Action)


def test_most_severe_of_words_and_actions() -> None:
    assert actions.most_severe([]) is Action.NONE
    assert actions.most_severe(["rerun_idle", Action.RESET_GPU, "NONE"]) is Action.RESET_GPU
    with pytest.raises(ValueError, match="not a recommended action"):
        actions.most_severe(["RMA"])


def test_escalate_climbs_and_stops_at_the_top() -> None:
    assert actions.escalate(Action.RERUN_IDLE) is Action.RESET_GPU
    assert actions.escalate(Action.INSPECT_HARDWARE) is Action.INSPECT_HARDWARE


def test_driver_words_are_the_installed_pynvmls_and_map_into_ours() -> None:
    import pynvml

    prefix = "NVML_GPU_RECOVERY_ACTION_"
    named = {getattr(pynvml, n): n.removeprefix(prefix) for n in dir(pynvml) if n.startswith(prefix)}
    assert named == actions.DRIVER_WORDS
    assert [actions.from_driver(actions.DRIVER_WORDS[i]) for i in range(8)] == [
        Action.NONE,
        Action.RESET_GPU,
        Action.REBOOT_NODE,
        Action.DRAIN,
        Action.DRAIN,
        Action.DRAIN,
        Action.RESET_GPU,
        Action.REBOOT_NODE,
    ]
    with pytest.raises(ValueError, match="not a driver recovery action"):
        actions.from_driver("REPLACE")


def test_a_setting_is_the_mildest_action_and_escalates_to_a_rerun() -> None:
    assert actions.ORDER[1] is Action.RECONFIGURE
    assert actions.escalate(Action.RECONFIGURE) is Action.RERUN_IDLE


def test_recommendations_round_trip_and_the_most_severe_first_of_equals_wins() -> None:
    reset = actions.Recommendation(Action.RESET_GPU, "row_remaps.pending", "a remap waits for a reset")
    again = actions.Recommendation(Action.RESET_GPU, "ecc.uncorrectable", "uncorrectable errors")
    assert actions.Recommendation.from_json(reset.to_json()) == reset
    assert actions.overall([None, again, reset]) is again
    assert actions.overall([]) is actions.NOTHING
    with pytest.raises(ValueError, match="not a recommendation"):
        actions.Recommendation.from_json({"action": "RESET_GPU"})
    with pytest.raises(ValueError, match="not a recommended action"):
        actions.Recommendation.from_json({"action": "RMA", "rule": "x", "why": "y"})
