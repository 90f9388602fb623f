"""Importing spaCy for its tokenizer without its command line.

``spacy/__init__`` imports ``spacy.cli`` only to export ``spacy.info``; ``spacy.cli`` imports every spaCy command
and what they use (jinja2, typer, weasel, httpx, requests): about a third of spaCy's import time, and none of it
is needed to tokenize. :func:`import_spacy` imports spaCy with a stand-in ``spacy.cli`` that the import leaves
behind: a later ``import spacy.cli`` imports the real one, and ``spacy.info`` calls the real ``info``.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

_lock = threading.Lock()


def _info(*args: Any, **kwargs: Any) -> Any:
    from spacy.cli.info import info

    return info(*args, **kwargs)


def import_spacy() -> None:
    """Import ``spacy`` (once; nothing when it is imported already) without importing ``spacy.cli``.

    Should a spaCy release need more of ``spacy.cli`` while importing, the stand-in is removed and spaCy is
    imported as usual.
    """
    if "spacy" in sys.modules:
        return
    with _lock:
        if "spacy" in sys.modules:
            return
        cli = types.ModuleType("spacy.cli")
        cli.__path__ = []  # a package: "spacy.cli.info" below is its submodule
        info = types.ModuleType("spacy.cli.info")
        info.info = _info  # type: ignore[attr-defined]
        sys.modules["spacy.cli"] = cli
        sys.modules["spacy.cli.info"] = info
        try:
            import spacy  # noqa: F401
        except ImportError:
            pass
        finally:
            for name, module in (("spacy.cli.info", info), ("spacy.cli", cli)):
                if sys.modules.get(name) is module:
                    del sys.modules[name]
            spacy_module = sys.modules.get("spacy")
            if spacy_module is not None and getattr(spacy_module, "cli", None) is cli:
                del spacy_module.cli
        import spacy  # noqa: F401, F811  (the usual import when the one above failed; else a no-op)
