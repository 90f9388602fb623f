"""share-ner: disorder mention recognition and normalization for clinical notes.

The ShARe/CLEF eHealth 2013 Task 1 setting: find disorder mentions (Task 1a),
including discontiguous ones, and map each to a UMLS CUI from SNOMED CT or
mark it ``CUI-less`` (Task 1b).

The public API is :data:`__all__` (documented in :mod:`share_ner.api`)::

    import share_ner
    annotator = share_ner.load()          # the built-in default model
    mentions = annotator("Denies chest pain.")

Names other than those of ``__all__`` are internals and may change.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

# share_ner.features, .lexicons and .eval are the repository's top-level folders (pyproject's package-dir): Python
# started in a source checkout imports this folder, not the installed package, and finds them there.
_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(os.path.join(os.path.dirname(__file__), "lexicons")) \
        and os.path.isfile(os.path.join(_TOP, "lexicons", "__init__.py")):
    __path__.append(_TOP)

from share_ner.document import CUI_LESS, DISORDER, Attributes, Document, Mention, Sentence, Token  # noqa: F401
from share_ner.lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time these load on first use (__getattr__)
    from share_ner.api import Annotator, Comparison, NoteTimeoutError, Scores, WorkerDiedError, compare, evaluate, load
    from share_ner.errors import ShareNerError
    from share_ner.formats import read_annotations, write_annotations  # noqa: F401
    from share_ner.inputs.files import read_notes

__version__ = "0.1.0"

# Loaded on first use, so that ``import share_ner`` stays fast (the API pulls in numpy, scipy and the formats).
_LAZY = {
    "Annotator": "share_ner.api",
    "Comparison": "share_ner.api",
    "Scores": "share_ner.api",
    "compare": "share_ner.api",
    "evaluate": "share_ner.api",
    "load": "share_ner.api",
    "NoteTimeoutError": "share_ner.api",
    "WorkerDiedError": "share_ner.api",
    "ShareNerError": "share_ner.errors",
    "read_annotations": "share_ner.formats",
    "write_annotations": "share_ner.formats",
    "read_notes": "share_ner.inputs.files",
}

__all__ = [
    "Annotator",
    "Attributes",
    "CUI_LESS",
    "Comparison",
    "DISORDER",
    "Document",
    "Mention",
    "NoteTimeoutError",
    "Scores",
    "ShareNerError",
    "WorkerDiedError",
    "__version__",
    "compare",
    "evaluate",
    "load",
    "read_annotations",
    "read_notes",
    "write_annotations",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
