"""One run at a time per output directory: an exclusive lock on ``--out``.

Two runs writing into one directory would mix their outputs and remove each other's temporary files. A run
takes :func:`output_lock` before it writes anything; a second run started meanwhile stops at once with one line
naming the first (its pid, host, start time and command).

The lock is ``fcntl.flock`` on the file :data:`LOCK_NAME` in the directory, which also records who holds it. The
kernel drops a flock when its process ends, however it ends, so the lock of a run killed by SIGKILL or a power
loss is stale by construction: the next run takes it over (and says so in :attr:`OutputLock.stale`). Where
``flock`` is not available (a file system without locks), the recorded holder is checked instead: a holder on
this host whose process is gone is stale; one on another host is trusted to be alive.

A run that ends removes the file, so a finished output directory holds only outputs.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from share_ner.errors import ShareNerError

try:
    import fcntl
except ImportError:  # not POSIX: the recorded holder is checked instead
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".share-ner.lock"

RUN_NAME = "run.json"  # the record of the run that writes into an output folder: its command or settings


@dataclass(frozen=True)
class Holder:
    """The run that holds (or held) a lock."""

    pid: int
    host: str
    started: str  # local time, ISO 8601 to the second
    command: str

    @classmethod
    def this_run(cls, what: str) -> "Holder":
        argv = " ".join(sys.argv) if sys.argv and sys.argv[0] else ""
        command = what if not argv else f"{what}: {argv}"
        return cls(os.getpid(), socket.gethostname(), time.strftime("%Y-%m-%dT%H:%M:%S"), command)

    @classmethod
    def from_dict(cls, d: Any) -> "Holder | None":
        """The holder a lock file records; ``None`` for an empty or unreadable record."""
        if not isinstance(d, dict):
            return None
        try:
            return cls(int(d["pid"]), str(d["host"]), str(d["started"]), str(d["command"]))
        except (KeyError, TypeError, ValueError):
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started}, {self.command}"


@dataclass(frozen=True)
class OutputLock:
    """A lock held on ``directory``; ``stale`` is the killed run whose lock was taken over, if any."""

    directory: Path
    path: Path
    holder: Holder
    stale: Holder | None = None


def _read_holder(fd: int) -> Holder | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 65536)
        return Holder.from_dict(json.loads(data.decode("utf-8")))
    except (OSError, ValueError):
        return None


def _alive(holder: Holder) -> bool:
    """Whether the run that recorded ``holder`` may still run (without flock: by its pid, on this host only)."""
    if holder.host != socket.gethostname():
        return True  # cannot be checked from here
    if holder.pid == os.getpid():
        return True
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _busy(directory: Path, path: Path, holder: Holder | None, locked: bool) -> ShareNerError:
    who = holder.describe() if holder is not None else "its lock file records no details"
    # a flock ends with its process; only a lock checked by its record can outlive its run (on another host)
    hint = "" if locked else f" (if that run is gone, remove {path})"
    return ShareNerError(f"{directory}: another run is writing into this directory ({who}); wait for it to end or "
                         f"give another output folder{hint}")


def _try_flock(fd: int) -> bool | None:
    """Take the lock: True when taken, False when another run holds it, None when the file system has no locks."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            return None
        raise
    return True


def acquire(directory: Path, what: str) -> tuple[int, OutputLock]:
    """Take the lock on ``directory`` (created if missing): the open lock file and the lock.

    Raises :class:`ShareNerError` naming the other run when it is held. Prefer :func:`output_lock`.
    """
    directory = Path(directory)
    path = directory / LOCK_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ShareNerError(f"{directory}: output folder is not writable ({exc.strerror or exc})") from None
    for _ in range(100):  # the file can be removed between open and lock by the run that ends: open it again
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ShareNerError(f"{directory}: output folder is not writable ({exc.strerror or exc})") from None
        try:
            got = _try_flock(fd)
            earlier = _read_holder(fd)
            if got is False or (got is None and earlier is not None and _alive(earlier)):
                raise _busy(directory, path, earlier, got is False)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            holder = Holder.this_run(what)
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, (json.dumps(holder.__dict__) + "\n").encode("utf-8"))
            os.fsync(fd)
            return fd, OutputLock(directory, path, holder, earlier)
        except BaseException:
            try:
                os.close(fd)
            except OSError:
                pass
            raise
    raise ShareNerError(f"{path}: the lock file keeps being replaced; is another run starting and ending here?")


def release(fd: int, lock: OutputLock) -> None:
    """Remove the lock file (while still holding the lock, so that no run locks the removed file) and let go."""
    try:
        lock.path.unlink(missing_ok=True)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def output_lock(directory: Path, what: str) -> Iterator[OutputLock]:
    """Hold the exclusive lock on the output directory ``directory`` for a run described by ``what`` (e.g.
    ``"share-ner tag"``); the directory is created if missing.

    Raises :class:`ShareNerError` (one line naming the other run) when another live run holds it; the lock of a
    killed run is taken over and reported in :attr:`OutputLock.stale`.
    """
    fd, lock = acquire(directory, what)
    try:
        yield lock
    finally:
        release(fd, lock)
