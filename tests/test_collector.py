"""The garbage collector's setting in share-ner's own processes."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from share_ner import collector


@pytest.fixture
def threshold():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_collect_less_raises_the_young_threshold_and_keeps_the_older_ones(threshold):
    gc.set_threshold(700, 7, 9)
    collector.collect_less()
    assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, 7, 9)


def test_collect_less_never_lowers_a_threshold_set_higher(threshold):
    gc.set_threshold(collector.YOUNG_THRESHOLD * 2, 10, 10)
    collector.collect_less()
    assert gc.get_threshold() == (collector.YOUNG_THRESHOLD * 2, 10, 10)


def test_the_console_script_collects_less_and_a_library_import_does_not():
    # the console script's entry sets it before the command runs; importing the package leaves the caller's alone
    code = ("import gc, sys; from unittest import mock; import share_ner.cli as cli; before = gc.get_threshold()[0]; "
            "seen = []; cli.main = lambda: seen.append(gc.get_threshold()[0]) or 0; "
            "mock.patch('os._exit', lambda code: None).start(); cli.entry(); print(before, seen[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) < collector.YOUNG_THRESHOLD
    assert int(out[1]) == collector.YOUNG_THRESHOLD
