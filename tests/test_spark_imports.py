"""How Spark's executors import share_ner.spark: the Python daemon (``python -m share_ner.spark.daemon``) imports
the package, runs as ``__main__`` and registers itself under its name; the workers forked from it then import
share_ner.spark.dataframe when they unpickle its functions. No PySpark needed."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import runpy, sys, types
import share_ner.spark
assert "share_ner.spark.dataframe" not in sys.modules  # the daemon starts without it
names = runpy.run_module("share_ner.spark.daemon", run_name="share_ner_daemon")
daemon = types.ModuleType("share_ner.spark.daemon")
daemon.__dict__.update(names)
sys.modules["share_ner.spark.daemon"] = daemon  # as main() registers it: in sys.modules, not on the package
import share_ner.spark.dataframe as dataframe
assert dataframe.spark_daemon is daemon
from share_ner.spark import annotate
assert annotate is dataframe.annotate
try:
    share_ner.spark.no_such_name
except AttributeError as exc:
    print(exc)
"""


def test_a_worker_forked_from_the_daemon_imports_the_dataframe_module():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "module 'share_ner.spark' has no attribute 'no_such_name'"
