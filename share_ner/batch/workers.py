"""Worker processes for the batch runner: tasks out, results back, and a worker that dies is detected and
replaced.

``multiprocessing.Pool`` loses the task of a worker killed by a signal (the kernel's OOM killer, a segfault in a
C extension) and waits for its result forever. Here each worker has its own pipe and holds at most one task, so
the parent knows which task a dead worker held: :meth:`WorkerPool.wait` reports it as a :class:`Death` (with the
exit status) and starts a new worker in its place. What to do with the task (retry it, split it) is the
caller's decision.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable


@dataclass(frozen=True)
class Death:
    """A worker ended (killed or exited) while it held ``task`` (``None``: it held none)."""

    task: Any
    exitcode: int | None

    def reason(self) -> str:
        code = self.exitcode
        if code is not None and code < 0:
            return f"worker died (signal {-code})"
        return f"worker died (exit status {code})"


@dataclass(frozen=True)
class Done:
    """``task`` finished with ``result``."""

    task: Any
    result: Any


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_MASK = hasattr(signal, "pthread_sigmask")


def _worker_main(conn: Connection, initializer: Callable[..., None] | None, initargs: tuple,
                 work: Callable[[Any], Any], inherited: tuple[int, ...] = ()) -> None:
    # Ctrl-C goes to the whole process group: only the parent reacts, then ends its workers. The parent blocked
    # both signals around the fork, so that none arrives while the parent's handlers are still in place here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _MASK:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    # A forked worker holds copies of the parent's ends of every pipe made before it: closed, so that each
    # worker sees its own pipe end when the parent dies (SIGKILL), and exits instead of waiting forever.
    for fd in inherited:
        try:
            os.close(fd)
        except OSError:
            pass
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            payload = conn.recv()
        except (EOFError, OSError):
            return
        if payload is None:
            return
        conn.send(work(payload))


class _Worker:
    def __init__(self, ctx: Any, initializer: Callable[..., None] | None, initargs: tuple,
                 work: Callable[[Any], Any], others: list["_Worker"]) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        forked = ctx.get_start_method() == "fork"
        inherited = tuple(c.fileno() for c in [self.conn] + [w.conn for w in others if not w.conn.closed]) \
            if forked else ()
        self.process = ctx.Process(target=_worker_main, args=(child, initializer, initargs, work, inherited),
                                   daemon=True)
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if _MASK else None
        try:
            self.process.start()
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
        child.close()
        self.task: Any = None
        self.busy = False


class WorkerPool:
    """``jobs`` worker processes, each calling ``initializer(*initargs)`` once and then ``work(payload)`` for each
    task sent to it. Tasks are handed out in submission order to idle workers; one task per worker at a time, so
    a send never waits on a worker that is itself waiting to send its result back."""

    def __init__(self, jobs: int, work: Callable[[Any], Any], *, context: Any = None,
                 initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> None:
        self.ctx = context or multiprocessing.get_context()
        self.work = work
        self.initializer = initializer
        self.initargs = initargs
        self.queue: deque[tuple[Any, Any]] = deque()  # (task, payload) not yet handed out
        self.workers: list[_Worker] = []
        for _ in range(jobs):
            self.workers.append(self._start())
        self.deaths = 0  # workers replaced so far

    def _start(self) -> _Worker:
        return _Worker(self.ctx, self.initializer, self.initargs, self.work, self.workers)

    def submit(self, task: Any, payload: Any) -> None:
        """Queue ``payload``; its outcome is reported under ``task``."""
        self.queue.append((task, payload))
        self._dispatch()

    def outstanding(self) -> int:
        """Tasks submitted and not yet reported."""
        return len(self.queue) + sum(w.busy for w in self.workers)

    def _dispatch(self) -> list[Death]:
        deaths = []
        for i, w in enumerate(self.workers):
            if not self.queue:
                break
            if w.busy:
                continue
            task, payload = self.queue.popleft()
            w.task, w.busy = task, True
            try:
                w.conn.send(payload)
            except OSError:  # the worker is gone (its death is reported by wait)
                deaths.append(self._replace(i))
        return deaths

    def _replace(self, i: int) -> Death:
        w = self.workers[i]
        w.process.join(timeout=5)
        death = Death(w.task, w.process.exitcode)
        w.conn.close()
        self.deaths += 1
        self.workers[i] = self._start()
        return death

    def wait(self, timeout: float | None = None) -> list[Done | Death]:
        """Block until at least one task finishes or a worker dies (or ``timeout`` passes); what happened.

        A dead worker is replaced at once; one that died holding no task (while starting) is reported with
        ``task=None``."""
        events: list[Done | Death] = list(self._dispatch())
        if events:
            return events
        conns = {w.conn: i for i, w in enumerate(self.workers) if w.busy}
        sentinels = {w.process.sentinel: i for i, w in enumerate(self.workers)}
        ready = wait(list(conns) + list(sentinels), timeout)
        dead: set[int] = set()
        for obj in ready:
            if obj in conns:
                i = conns[obj]
                w = self.workers[i]
                try:
                    result = w.conn.recv()
                except (EOFError, OSError):
                    dead.add(i)
                    continue
                events.append(Done(w.task, result))
                w.task, w.busy = None, False
            else:
                dead.add(sentinels[obj])
        for i in sorted(dead):
            w = self.workers[i]
            if w.busy:
                # a result sent just before the exit is still in the pipe
                if w.conn.poll():
                    try:
                        events.append(Done(w.task, w.conn.recv()))
                        w.task, w.busy = None, False
                    except (EOFError, OSError):
                        pass
            if w.busy or not w.process.is_alive():
                events.append(self._replace(i))
        events.extend(self._dispatch())
        return events

    def close(self, kill: bool = False) -> None:
        """Stop the workers: ask them to finish (or, with ``kill``, terminate them) and reap them."""
        for w in self.workers:
            if not kill:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
            elif w.process.is_alive():
                try:
                    os.kill(w.process.pid, signal.SIGTERM)
                except OSError:
                    pass
        for w in self.workers:
            w.process.join(timeout=None if not kill else 5)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
        self.workers = []
