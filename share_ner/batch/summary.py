"""What a batch run's outputs hold and what the run did: :class:`RunSummary`, written to ``summary.json`` and
worded for people on stderr."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from share_ner.document import CUI_LESS, Mention

_THIS_RUN = ("tagged", "skipped_done", "tagged_tokens", "seconds", "startup_seconds", "jobs", "interrupted",
             "tagged_mentions", "negated", "cui_less")

TOP_CONCEPTS = 5  # concepts the summary for people names


@dataclass
class RunSummary:
    """What the outputs hold, and what this run did.

    ``notes``, ``mentions``, ``tokens``, ``characters``, ``rejected`` and the skipped counts describe the whole
    output: a run resumed after an interruption reports what an uninterrupted run would. ``tagged`` (and
    ``tagged_tokens``) are the notes this run tagged itself, ``skipped_done`` those an earlier run had finished.
    """

    notes: int = 0
    mentions: int = 0
    rejected: int = 0
    tokens: int = 0
    characters: int = 0
    skipped_iserror: int = 0  # MIMIC-III rows flagged ISERROR = 1, left out (no --include-errors)
    skipped_category: int = 0  # rows of another category than --category
    tagged: int = 0
    skipped_done: int = 0
    tagged_tokens: int = 0
    seconds: float = 0.0
    startup_seconds: float = 0.0
    jobs: int = 1
    interrupted: bool = False
    out: str | None = None
    rejects_file: str | None = None
    # the mentions of the notes this run tagged: how many, how many negated or CUI-less, and by concept
    tagged_mentions: int = 0
    negated: int = 0
    cui_less: int = 0
    concepts: Counter = field(default_factory=Counter)
    concept_names: dict[str, str] = field(default_factory=dict)

    def count_mentions(self, mentions: Sequence[Mention]) -> None:
        """Add the mentions of a note this run tagged to the counts of :meth:`details`."""
        self.tagged_mentions += len(mentions)
        for m in mentions:
            if m.attributes is not None and m.attributes.negation == "yes":
                self.negated += 1
            if m.cui == CUI_LESS:
                self.cui_less += 1
                continue
            self.concepts[m.cui] += 1
            if m.name:
                self.concept_names.setdefault(m.cui, m.name)

    def top_concepts(self, n: int = TOP_CONCEPTS) -> list[tuple[str, str, int]]:
        """The ``n`` most frequent concepts of this run's mentions: ``(CUI, name or "", count)``, ties by CUI."""
        ranked = sorted(self.concepts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        return [(cui, self.concept_names.get(cui, ""), count) for cui, count in ranked]

    @property
    def work_seconds(self) -> float:
        """Wall time after the model was loaded (the rates are per this time)."""
        return max(self.seconds - self.startup_seconds, 1e-9)

    def to_dict(self) -> dict[str, Any]:
        """The counts of the output at the top level; this run's own counts and timings under ``this_run``."""
        d = asdict(self)
        del d["concepts"], d["concept_names"]
        run = {k: d.pop(k) for k in _THIS_RUN}
        run["top_concepts"] = [{"cui": cui, "name": name, "mentions": count} for cui, name, count in self.top_concepts()]
        run["seconds"] = round(self.seconds, 3)
        run["startup_seconds"] = round(self.startup_seconds, 3)
        run["tokens_per_second"] = round(self.tagged_tokens / self.work_seconds, 1)
        run["notes_per_second"] = round(self.tagged / self.work_seconds, 2)
        d["this_run"] = run
        return d

    def line(self) -> str:
        """A one-line human summary for stderr."""
        text = (
            f"tagged {_count(self.tagged, 'note')} ({_count(self.tagged_tokens, 'token')}) in {self.seconds:.1f} s, "
            f"{self.tagged_tokens / self.work_seconds:,.0f} tokens/s after {self.startup_seconds:.1f} s of model "
            "loading"
        )
        if self.skipped_done:
            text += f"; {self.skipped_done} already done"
        text += f"; {_count(self.notes, 'note')}, {_count(self.mentions, 'mention')} in all"
        if self.skipped_iserror:
            text += f"; {self.skipped_iserror} ISERROR rows left out"
        if self.skipped_category:
            text += f"; {self.skipped_category} rows of other categories left out"
        if self.rejected:
            text += f"; {self.rejected} rejected" + (f" (see {self.rejects_file})" if self.rejects_file else "")
        return text

    def details(self) -> str | None:
        """A second line for people: the mentions of the notes this run tagged, the share negated and CUI-less,
        and the most frequent concepts with their names; None when this run tagged no mention."""
        n = self.tagged_mentions
        if not n:
            return None
        where = f"{_count(self.tagged, 'note')} tagged in this run" if self.skipped_done else _count(self.tagged,
                                                                                                     "note")
        text = (f"{_count(n, 'mention')} in {where}: {self.negated} negated ({100 * self.negated / n:.0f}%), "
                f"{self.cui_less} CUI-less ({100 * self.cui_less / n:.0f}%)")
        top = self.top_concepts()
        if top:
            text += "; most frequent: " + ", ".join(f"{name or cui} ({cui}) {count}" if name else f"{cui} {count}"
                                                    for cui, name, count in top)
        return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
