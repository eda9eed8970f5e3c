"""The long-lived worker processes of a check run: results in order whatever the order the
workers finish in, state kept between messages, errors raised in the parent, a dead or
busy worker never hanging the run."""

import os
import signal
import time

import pytest

from torchleaklint.engine.workers import WorkerError, Workers


def square_slowly(state, items):
    state.setdefault("seen", []).extend(items)
    for x in items:
        time.sleep(0.001 * (x % 3))  # chunks finish out of order
    return [(x * x, os.getpid()) for x in items]


def seen(state, _):
    return sorted(state.get("seen", []))


def each(state, items):
    return ((x, os.getpid()) for x in items)


def fail(state, items):
    time.sleep(0.2 if items[0] == 5 else 0)  # the later item fails first
    raise ValueError(f"bad item {items[0]}")


def sleep_long(state, items):
    time.sleep(60)
    return items


HANDLERS = {"square": square_slowly, "seen": seen, "each": each, "fail": fail, "sleep": sleep_long}


@pytest.fixture
def workers():
    pool = Workers(2, HANDLERS)
    yield pool
    pool.close()


def test_results_in_order_and_each_worker_keeps_its_state(workers):
    items = list(range(40))
    results = list(workers.map("square", items, chunk=3))
    assert [r for _, (r, _) in results] == [x * x for x in items]
    by_worker = {}
    for worker, (_, pid) in results:
        by_worker.setdefault(worker, set()).add(pid)
    assert all(len(pids) == 1 for pids in by_worker.values())  # a worker is one process
    kept = workers.ask("seen")
    assert sorted(kept[0] + kept[1]) == items  # each item went to exactly one worker, which kept it
    # Assigned work goes to the worker named for it, answered in the items' order.
    assigned = [worker for worker, _ in results]
    pids = {worker: pid for worker, (_, pid) in results}
    answers = list(workers.map_assigned("each", items, assigned))
    assert [x for x, _ in answers] == items
    assert [pid for _, pid in answers] == [pids[w] for w in assigned]


def test_an_error_in_a_worker_is_raised_in_the_parent_in_item_order(workers):
    with pytest.raises(ValueError, match="bad item 5"):
        list(workers.map("fail", [5, 6], chunk=1))


def test_a_killed_worker_is_an_error_not_a_hang(workers):
    pid = workers._procs[0].pid
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerError):
        list(workers.map_assigned("each", [1, 2], [0, 0]))


def test_closing_does_not_wait_for_a_busy_worker():
    pool = Workers(2, HANDLERS)
    pool._send(0, ("map", "sleep", [1]))  # busy for a minute
    procs = list(pool._procs)
    started = time.monotonic()
    pool.close()
    assert time.monotonic() - started < 10
    assert not any(proc.is_alive() for proc in procs)
