"""What the benchmark scripts share: where the corpora are, and how a results file is written.

The scripts run as files (``python benchmarks/bench_X.py``), so this folder is on their import path.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def data_dir(arg: str | None) -> Path:
    """``--data``, else ``$SHARE_NER_DATA``, else ``<repo>/../shared/data``."""
    return Path(arg or os.environ.get("SHARE_NER_DATA") or REPO.parent / "shared" / "data")


def write_results(path: str | Path, text: str) -> None:
    """Print the results and write them to ``path`` (its folder made if needed)."""
    print(text)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
