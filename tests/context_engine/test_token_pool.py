"""Token counting in helper processes (`context_engine.token_pool`): the same numbers as
`tokens.count_many`, in order, whoever counts each chunk; the caller counts from the back
rather than wait; a dead helper or a process that cannot have any costs nothing but time."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import Future

import pytest

from context_engine import token_pool, tokens

pytestmark = pytest.mark.skipif(
    tokens.backend() != "cl100k_base", reason="helpers are used with tiktoken only"
)


def _chunks(n: int, size: int = 50) -> list[list[str]]:
    return [
        [f"Chunk {c}, text {i}: the ferryman's toll is {i * c} coppers." for i in range(size)]
        for c in range(n)
    ]


@pytest.fixture
def fresh_pool(monkeypatch):
    """This test's own helpers; the process's are left as they were."""
    monkeypatch.setattr(token_pool, "_helpers", None)
    monkeypatch.setattr(token_pool, "_unavailable", False)
    yield
    helpers = token_pool._helpers
    if helpers is not None:
        helpers.pool.shutdown(wait=True, cancel_futures=True)


def test_helpers_give_each_chunks_counts_in_order(fresh_pool):
    chunks = _chunks(12)
    assert token_pool.start(1, wait=60)
    got = list(token_pool.counting(chunks, 1))
    assert got == [tokens.count_many(chunk) for chunk in chunks]


def test_without_helpers_the_caller_counts_every_chunk(fresh_pool):
    chunks = _chunks(3)
    got = list(token_pool.counting(chunks, 0))
    assert got == [tokens.count_many(chunk) for chunk in chunks]
    assert token_pool._helpers is None  # nothing was started


def test_a_batch_while_helpers_start_is_counted_here_and_never_waits_for_them(monkeypatch):
    class Starting:
        ready = threading.Event()  # never set
        pool = None  # submitting to it would fail the test

    monkeypatch.setattr(token_pool, "_helpers_for", lambda size: Starting)
    chunks = _chunks(4)
    got = list(token_pool.counting(chunks, 1))
    assert got == [tokens.count_many(chunk) for chunk in chunks]


class _HeldPool:
    """A stand-in executor whose chunks finish only when the test says."""

    def __init__(self):
        self.futures: list[Future] = []

    def submit(self, fn, chunk):
        future = Future()
        future.set_running_or_notify_cancel()
        self.futures.append(future)
        return future


def test_the_caller_counts_from_the_back_while_the_helpers_hold_the_next_chunk():
    """Two chunks handed out (results marked) and held: while chunk 0 is not done the
    caller counts 5, 4, 3, 2 itself; nothing it counts was handed out."""
    chunks = _chunks(6)
    pool = _HeldPool()
    counts = token_pool._InOrder(chunks, pool, depth=2)
    counts.hand_out()
    assert len(pool.futures) == 2

    def helper():
        while counts.back > counts.front:  # until the caller has taken all the rest
            threading.Event().wait(0.001)
        for marker, future in enumerate(pool.futures, start=1):
            future.set_result([-marker] * 50)

    thread = threading.Thread(target=helper)
    thread.start()
    got = list(counts)
    thread.join()
    assert got[:2] == [[-1] * 50, [-2] * 50]
    assert got[2:] == [tokens.count_many(chunk) for chunk in chunks[2:]]
    assert len(pool.futures) == 2  # the caller's chunks were never handed out


def test_a_finished_chunk_hands_out_the_next_one():
    chunks = _chunks(5)
    pool = _HeldPool()
    counts = token_pool._InOrder(chunks, pool, depth=2)
    counts.hand_out()
    pool.futures[0].set_result([0] * 50)
    assert len(pool.futures) == 3
    assert counts.front == 3


def test_a_helper_that_dies_costs_nothing_but_time(fresh_pool):
    chunks = _chunks(8, size=2000)
    assert token_pool.start(1, wait=60)
    pool = token_pool._helpers.pool
    counts = token_pool.counting(chunks, 1)  # the helper has its first chunks
    for process in list(pool._processes.values()):  # mid-chunk: one takes ~15 ms
        os.kill(process.pid, signal.SIGKILL)
    got = list(counts)
    assert got == [tokens.count_many(chunk) for chunk in chunks]
    assert token_pool._helpers is None  # the broken pool was dropped: the next one is new
    assert token_pool.start(1, wait=60)
    assert token_pool._helpers.pool is not pool


def test_a_process_that_cannot_start_helpers_counts_alone(fresh_pool, monkeypatch):
    def refuse(size):
        raise AssertionError("daemonic processes are not allowed to have children")

    monkeypatch.setattr(token_pool, "_Helpers", refuse)
    chunks = _chunks(3)
    assert token_pool.start(1, wait=1) is False
    assert list(token_pool.counting(chunks, 1)) == [tokens.count_many(c) for c in chunks]
    assert token_pool._unavailable is True


def test_a_pool_that_refuses_work_is_dropped_and_the_caller_counts(fresh_pool, monkeypatch):
    class Refusing:
        def submit(self, fn, chunk):
            raise RuntimeError("cannot schedule new futures after shutdown")

        def shutdown(self, wait, **options):
            self.shut = True

    class Ready:
        size = 1
        ready = threading.Event()
        pool = Refusing()

    Ready.ready.set()
    monkeypatch.setattr(token_pool, "_helpers", Ready)
    chunks = _chunks(3)
    assert list(token_pool.counting(chunks, 1)) == [tokens.count_many(c) for c in chunks]
    assert token_pool._helpers is None  # the next batch starts new helpers
    assert Ready.pool.shut
