"""PySpark's Python daemon with the model loaded first: ``spark.python.daemon.module=share_ner.spark.daemon``.

Spark starts one Python daemon per executor (``python -m <daemon module> <worker module>``) and forks every Python
worker from it. Run as that module, this loads the model the job names in the ``SHARE_NER_SPARK_PRELOAD``
environment variable (set by :mod:`share_ner.spark` on the functions it hands to Spark, so it reaches the daemon's
environment), freezes it into the garbage collector's permanent generation, and then runs
:func:`pyspark.daemon.manager`: the forked workers inherit the loaded model, copy-on-write, as the workers of
``share-ner tag --jobs N`` do, instead of each loading its own.

Any trouble falls back to PySpark's own behaviour: with no preload variable, a model directory the daemon cannot
find (a shipped model not yet fetched) or a model that fails to load (one line on the daemon's stderr, in the
executor's log), the daemon runs as ``pyspark.daemon`` and each worker loads the model itself when its first task
asks for it (where a model that cannot be loaded is reported to the driver, as before).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any

PRELOAD_ENV = "SHARE_NER_SPARK_PRELOAD"
# in the daemon and the workers it forks: the model loaded before the forks (key, annotator, load seconds), which
# share_ner.spark's workers take when their job asks for that key
PRELOADED: dict[str, Any] = {}


def preload(spec: str | None) -> str | None:
    """Load the model ``spec`` names (JSON: ``key`` and ``path``) into :data:`PRELOADED`; the key loaded, or None
    (nothing asked, or the one-line reason already written to stderr)."""
    if not spec:
        return None
    try:
        wanted = json.loads(spec)
        key, path = str(wanted["key"]), str(wanted["path"])
    except (ValueError, KeyError, TypeError):
        print(f"share-ner spark daemon: {PRELOAD_ENV} is not a model spec; the workers load the model", file=sys.stderr)
        return None
    if not os.path.isdir(path):  # e.g. a shipped model this executor has not fetched yet
        return None
    # One loaded model serves every worker forked from here: no thread pools per worker (as share-ner tag's).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Imported only to preload: without a model to load the daemon is PySpark's, with nothing imported before its
    # forks that could start threads (numpy's, the model's).
    from share_ner.batch.annotate import load_annotator
    from share_ner.batch.processes import settle_heap

    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the daemon's stdout carries its port to the JVM
            annotator = load_annotator(path)
    except Exception as exc:  # noqa: BLE001 - the workers load it themselves and report the error to the driver
        print(f"share-ner spark daemon: cannot preload {path} ({type(exc).__name__}); the workers load the model",
              file=sys.stderr)
        return None
    settle_heap()
    PRELOADED.clear()
    PRELOADED.update(key=key, annotator=annotator, seconds=time.perf_counter() - start)
    return key


def main() -> None:
    # Run as ``python -m``, this module is __main__; registered under its own name too, so that share_ner.spark in
    # the forked workers finds PRELOADED here rather than in a second, empty copy of the module.
    sys.modules.setdefault(__spec__.name if __spec__ else "share_ner.spark.daemon", sys.modules[__name__])
    preload(os.environ.get(PRELOAD_ENV))
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
