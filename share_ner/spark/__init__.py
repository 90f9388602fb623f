"""share-ner on Apache Spark: annotate a DataFrame of notes, one output row per mention.

    >>> from share_ner.spark import annotate                        # doctest: +SKIP
    >>> notes = spark.read.parquet("s3://lake/notes")               # doctest: +SKIP
    >>> mentions, rejects = annotate(notes, model="/dbfs/models/m", rejects=True)  # doctest: +SKIP

The work per partition is :func:`share_ner.batch.annotate_notes`, the function ``share-ner tag`` maps over its
batches, so both give the same mentions. It runs in ``mapInPandas``, over records already checked under the input
contract (:mod:`share_ner.spark.inputs`: a note, or the reason of a reject). Under :mod:`share_ner.spark.daemon`
(the sessions share-ner starts use it) each executor's Python daemon loads the model once and forks the workers
from it; otherwise each Python worker loads it at its first task. Either way a worker keeps it (a module-level
cache keyed by the model) for every later task, never loading it once per row. The model is read from a path
every executor can read, or shipped with the job (``ship_model=True``: a zip archive, ``SparkContext.addArchive``).

Output columns are those of :mod:`share_ner.formats.parquet` (``note_id``, ``mention``, ``spans``, ``text``,
``cui`` and the attribute columns). A note that cannot be tagged (a bad id, empty, undecodable, or the annotator
raised) becomes a reject row (``note_id``, ``reason``, ``source``, ``row``; never the text) and the task goes on.
:func:`annotate_counted` returns the mentions alone and gathers the counts and rejects into an accumulator, so
that the one action writing the mentions is the only pass over the notes; :func:`annotate_records` is the same
over records (what ``share-ner spark`` runs), with ``guarded=True`` annotating each batch in a child process, so
that a note that crashes the process is rejected alone.

PySpark, pyarrow and pandas come with the ``spark`` extra and are imported only in this package.

The package's modules: ``dataframe.py`` (annotating a DataFrame, the work per partition), ``inputs.py`` (the
input contract of ``share-ner tag`` applied to Spark's readers), ``job.py`` (``share-ner spark``: the session, the
chunks and their output) and ``daemon.py`` (PySpark's Python daemon with the model loaded first).
"""

from __future__ import annotations

from typing import Any

# The package's modules: never looked up in dataframe.py (a module being imported is found in sys.modules, and the
# daemon run as __main__ is registered there under its name without being set on the package).
_MODULES = frozenset({"daemon", "dataframe", "inputs", "job"})


def __getattr__(name: str) -> Any:
    # Spark starts share_ner.spark.daemon in every executor, which imports this package first: it stays empty
    # until a name of share_ner.spark.dataframe is asked for, so the daemon starts without PySpark's modules.
    if name in _MODULES or name.startswith("__"):
        raise AttributeError(f"module 'share_ner.spark' has no attribute {name!r}")
    import share_ner.spark.dataframe as dataframe

    try:
        return getattr(dataframe, name)
    except AttributeError:
        raise AttributeError(f"module 'share_ner.spark' has no attribute {name!r}") from None
