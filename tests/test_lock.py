"""The exclusive lock on an output directory: a second run stops naming the first, a killed run's lock is taken
over, and a run that finds the directory locked touches nothing in it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import share_ner.batch.lock as lock_module
from share_ner.batch.lock import LOCK_NAME, output_lock
from share_ner.batch.runner import BatchOptions, run_batch
from share_ner.errors import ShareNerError

HOLD = """
import sys, time
from pathlib import Path
from share_ner.batch.lock import output_lock
with output_lock(Path(sys.argv[1]), "share-ner tag"):
    print("locked", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path: Path):
    """A process holding the lock on ``tmp_path / "out"``; killed at the end of the test."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    yield out, proc
    proc.kill()
    proc.wait()


def test_a_second_run_stops_naming_the_first(holder) -> None:
    out, proc = holder
    with pytest.raises(ShareNerError) as err:
        with output_lock(out, "share-ner tag"):
            pass
    message = str(err.value)
    assert "\n" not in message
    assert f"pid {proc.pid} on {socket.gethostname()}" in message
    assert "share-ner tag" in message and "started 20" in message
    assert str(out) in message
    assert (out / LOCK_NAME).exists()  # the holder's record is left alone


def test_a_killed_runs_lock_is_taken_over(holder) -> None:
    out, proc = holder
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (out / LOCK_NAME).exists()  # a killed run cannot clean up
    with output_lock(out, "share-ner tag") as lock:
        assert lock.stale is not None and lock.stale.pid == proc.pid
        assert lock.holder.pid == os.getpid()
    assert not (out / LOCK_NAME).exists()  # a run that ends leaves only its outputs


def test_locks_in_one_process_exclude_each_other_and_release(tmp_path: Path) -> None:
    with output_lock(tmp_path / "o", "first"):
        with pytest.raises(ShareNerError, match=f"pid {os.getpid()} .*first"):
            with output_lock(tmp_path / "o", "second"):
                pass
    with output_lock(tmp_path / "o", "third") as lock:
        assert lock.stale is None


def test_without_flock_the_recorded_holder_is_checked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(lock_module, "_try_flock", lambda fd: None)  # a file system without locks
    out = tmp_path / "o"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = socket.gethostname()
        record = f'{{"pid": {sleeper.pid}, "host": "{host}", "started": "2024-01-01T00:00:00", "command": "x"}}'
        out.mkdir()
        (out / LOCK_NAME).write_text(record)
        with pytest.raises(ShareNerError, match=f"pid {sleeper.pid} .*remove .*{LOCK_NAME}"):
            with output_lock(out, "share-ner tag"):
                pass
    finally:
        sleeper.kill()
        sleeper.wait()
    with output_lock(out, "share-ner tag") as lock:  # its process is gone: stale
        assert lock.stale is not None and lock.stale.pid == sleeper.pid


def _factory():
    raise AssertionError("a locked-out run must not load a model")


def test_a_batch_into_a_locked_directory_touches_nothing(holder, tmp_path: Path) -> None:
    out, _ = holder
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("fever\n")
    temp = out / ".a.pipe.txt.tmp99999"  # the first run's note being written
    temp.write_text("half")
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ShareNerError, match="another run is writing into this directory"):
        run_batch([notes], _factory, BatchOptions(out=out, progress=False))
    assert sorted(p.name for p in out.iterdir()) == before
    assert temp.read_text() == "half"


def test_tag_into_a_locked_directory_is_one_line_and_exit_2(holder, tmp_path: Path, small_model: Path) -> None:
    out, proc = holder
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("fever\n")
    run = subprocess.run([sys.executable, "-m", "share_ner.cli", "tag", str(notes), "--model", str(small_model),
                          "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and f"pid {proc.pid}" in run.stderr


@pytest.mark.parametrize("command", ["attributes", "normalize"])
def test_other_commands_writing_a_directory_take_the_lock(holder, fixtures: Path, command: str, capsys) -> None:
    from share_ner.cli import main

    out, proc = holder
    tagger = fixtures / "tagger"
    extra = ["--lexicon", str(tagger / "lexicon.tsv")] if command == "normalize" else []
    code = main([command, str(tagger / "text"), "--mentions", str(tagger / "gold"), "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert code == 2 and f"pid {proc.pid}" in err and err.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]
