"""The fleet's worker pool (harness/fleet/pool.py): a task whose worker raises, is killed by a
signal or overruns its time is reported with its own task, the worker replaced, the rest done."""

from __future__ import annotations

from harness.fleet import pool
from tests.pool_tasks import pool_task


def outcomes(tasks, workers=2, timeout_s=60.0):
    return {done.task: done for done in pool.run(tasks, pool_task, workers, timeout_s)}


def test_every_task_comes_back_once_with_its_result():
    tasks = [("ok", n) for n in range(25)]
    done = outcomes(tasks)
    assert set(done) == set(tasks) and all(done[t].result == t[1] ** 2 and done[t].error is None for t in tasks)


def test_an_exception_is_that_task_s_error_and_the_worker_goes_on():
    done = outcomes([("ok", 1), ("raise", 2), ("ok", 3)], workers=1)
    assert done[("raise", 2)].error.startswith("ValueError: task 2 is broken at pool_tasks.py:")
    assert done[("ok", 3)].result == 9


def test_a_worker_killed_by_a_signal_is_named_with_its_task_and_replaced():
    tasks = [("ok", 1), ("kill", 2), ("ok", 3), ("kill", 4), ("ok", 5)]
    done = outcomes(tasks, workers=1)
    for killed in (("kill", 2), ("kill", 4)):
        assert done[killed].error == (
            "the worker process checking it killed by SIGKILL (the out-of-memory killer sends it)"
        )
    assert [done[("ok", n)].result for n in (1, 3, 5)] == [1, 9, 25]


def test_a_task_past_its_time_has_its_worker_stopped():
    done = outcomes([("hang", 1), ("ok", 2)], workers=1, timeout_s=1)
    assert done[("hang", 1)].error == "checking it took over 1 s: its worker process was stopped"
    assert done[("ok", 2)].result == 4


def test_a_worker_death_is_described_in_words():
    assert pool.death(-9).startswith("killed by SIGKILL")
    assert pool.death(-11) == "killed by SIGSEGV"
    assert pool.death(3) == "exited with code 3"
