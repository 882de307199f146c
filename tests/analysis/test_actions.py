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


def test_driver_words_map_into_ours() -> None:
    assert [actions.from_driver(actions.DRIVER_WORDS[i]) for i in range(6)] == [
        Action.NONE,
        Action.RESET_GPU,
        Action.REBOOT_NODE,
        Action.DRAIN,
        Action.DRAIN,
        Action.RESET_GPU,
    ]
    with pytest.raises(ValueError, match="not a driver recovery action"):
        actions.from_driver("REPLACE")
