"""Token counting of large batches in helper processes, the caller counting beside them.

tiktoken encodes one text at a time and needs the GIL back after each, so threads
barely help; separate processes do. `counting` gives each chunk's counts in order:
the helpers count from the front of the batch while the caller does its other work
(validation, formatting, writes), and whenever the caller needs a chunk that is not
counted yet it counts one from the back itself rather than wait. Nothing depends on
the helpers being there: with none (``processes=0``, one core, a process that may not
start children) or a helper that dies, the caller counts what is left, and the numbers
are the same `tokens.count_many` gives.

Helpers are handed a few chunks at a time, never more than they are about to count, and
nothing handed out is ever taken back: the caller's chunks are the ones no helper was
given. (Cancelling a handed-out chunk races the executor failing it when a helper dies,
and on Python 3.11 that race leaves the executor unable to shut down.)

The helpers are started by the first large batch, with the "spawn" method (no fork of
a process that holds threads and database connections; like every spawn, each helper
imports the program's ``__main__``, which must keep its work under
``if __name__ == "__main__"``), and kept for the life of the process. Until all have
loaded the tokenizer (about 0.2 s) batches are counted by the caller alone, as without
helpers: a first import is never slower for waiting on one.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from context_engine import tokens

AHEAD = 1  # chunks handed to each helper beyond the one it is counting


def counting(chunks: Sequence[Sequence[str]], processes: int) -> Iterator[list[int]]:
    """Each chunk's token counts (`tokens.count_many`), in order, counted by up to
    ``processes`` helpers and the caller. The helpers start at once, before the first
    chunk is asked for. Stopping early leaves at most a few chunks to finish in the
    helpers, unread."""
    pool = None
    if processes > 0 and len(chunks) > 1 and tokens.backend() == "cl100k_base":
        helpers = _helpers_for(processes)
        if helpers is not None and helpers.ready.is_set():  # else still starting
            pool = helpers.pool
    counts = _InOrder(chunks, pool, processes * (1 + AHEAD))
    counts.hand_out()
    return iter(counts)


class _InOrder:
    """Chunks ``[0, front)`` are handed to the helpers, ``[back, n)`` counted here,
    ``[front, back)`` no one's yet. Each helper's finished chunk hands out the next
    (from the executor's thread), so the helpers never wait for the caller."""

    def __init__(self, chunks: Sequence[Sequence[str]], pool, depth: int):
        self.chunks, self.pool, self.depth = chunks, pool, depth
        self.front, self.back, self.busy = 0, len(chunks), 0
        self.handed: dict[int, Future] = {}
        self.counted: dict[int, list[int]] = {}
        self.lock = threading.RLock()  # a done future's callback runs in add_done_callback

    def __iter__(self) -> Iterator[list[int]]:
        for index in range(len(self.chunks)):
            with self.lock:
                future = self.handed.pop(index, None)
                mine = future is None and index not in self.counted
                if mine:  # no one's yet (index == front)
                    self.front = index + 1
            if future is not None:
                yield self._from_helper(index, future)
            elif mine:
                yield self._count(index)
            else:
                yield self.counted.pop(index)

    def hand_out(self) -> None:
        """Keep ``depth`` chunks with the helpers, front first."""
        with self.lock:
            while self.pool is not None and self.busy < self.depth and self.front < self.back:
                index = self.front
                try:
                    future = self.pool.submit(tokens.count_many, list(self.chunks[index]))
                except Exception:  # the pool broke (or was replaced): the caller counts the rest
                    _discard_pool(self.pool)
                    self.pool = None
                    return
                self.front, self.busy = index + 1, self.busy + 1
                self.handed[index] = future
                future.add_done_callback(self._done)

    def _done(self, future: Future) -> None:
        with self.lock:
            self.busy -= 1
        if not future.cancelled() and future.exception() is None:
            self.hand_out()

    def _from_helper(self, index: int, future: Future) -> list[int]:
        while not future.done():  # count from the back meanwhile
            with self.lock:
                if self.front >= self.back:
                    break
                self.back -= 1
                mine = self.back
            counts = self._count(mine)
            with self.lock:
                self.counted[mine] = counts
        try:
            return future.result()
        except BrokenProcessPool:  # a helper died: count it here instead
            with self.lock:
                pool, self.pool = self.pool, None
            if pool is not None:
                _discard_pool(pool)
            return self._count(index)

    def _count(self, index: int) -> list[int]:
        return tokens.count_many(list(self.chunks[index]))


def start(processes: int, *, wait: float = 0) -> bool:
    """Start ``processes`` helpers now rather than on the first large batch (a server
    that expects imports, a benchmark); True once they are ready, waiting up to ``wait``
    seconds for it."""
    helpers = _helpers_for(processes) if processes > 0 else None
    return helpers is not None and helpers.ready.wait(wait)


class _Helpers:
    """A pool of ``size`` helper processes, ``ready`` once each has loaded the tokenizer."""

    def __init__(self, size: int):
        self.size = size
        self.ready = threading.Event()
        self.pool = ProcessPoolExecutor(
            max_workers=size, mp_context=multiprocessing.get_context("spawn"), initializer=_warm
        )
        self._starting = size
        # Each submit while no helper is idle starts one more, up to ``size``.
        for _ in range(size):
            self.pool.submit(_warm).add_done_callback(self._started)

    def _started(self, future: Future) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        with _lock:
            self._starting -= 1
            if self._starting == 0:
                self.ready.set()


_lock = threading.Lock()
_helpers: _Helpers | None = None
_unavailable = False  # this process cannot start helpers (e.g. a daemonic one)


def _helpers_for(size: int) -> _Helpers | None:
    """The process's helpers (started here, on first use), or None if it cannot have any."""
    global _helpers, _unavailable
    with _lock:
        if _unavailable:
            return None
        if _helpers is not None and _helpers.size == size:
            return _helpers
        previous, _helpers = _helpers, None
    if previous is not None:
        previous.pool.shutdown(wait=False)  # batches under way finish on it
    try:
        helpers = _Helpers(size)
    except Exception:  # e.g. "daemonic processes are not allowed to have children"
        with _lock:
            _unavailable = True
        return None
    with _lock:
        if _helpers is None:
            _helpers = helpers
            return helpers
    helpers.pool.shutdown(wait=False)  # another thread was first
    return _helpers


def _warm() -> None:
    """In each helper as it starts: load the tokenizer's table before the first chunk."""
    tokens.count("warm")


def _discard_pool(pool: ProcessPoolExecutor) -> None:
    """Drop a broken pool, if it is still the process's: the next batch starts new helpers."""
    global _helpers
    with _lock:
        if _helpers is None or _helpers.pool is not pool:
            return  # already dropped or replaced, and shut down then
        _helpers = None
    pool.shutdown(wait=False)


def _forget_after_fork() -> None:
    """A forked child does not own its parent's helpers (their pipes are the parent's)."""
    global _helpers, _lock
    _helpers, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
