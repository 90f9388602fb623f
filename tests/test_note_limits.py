"""No note can hang a run or take the API down: the time limit per note (a runaway note is stopped and rejected,
with ``--jobs 1`` and ``--jobs N``, in the API too), site placeholder patterns that backtrack refused when loaded,
``Annotator.pipe`` surviving a worker that dies, and notes over spaCy's million characters in the API."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import share_ner
from share_ner.batch.annotate import annotate_notes, load_annotator
from share_ner.batch.runner import BatchOptions, run_batch
from share_ner.batch.timeout import NoteTimeout, note_seconds, time_limit
from share_ner.document import Document, Mention
from share_ner.errors import InputError
from share_ner.placeholders import backtracking_risk, load_placeholder_patterns

RUNAWAY = "RUNAWAY"
TERMS = re.compile(r"\b(fever|pain)\b")


class Runaway:
    """A picklable annotator whose notes holding RUNAWAY never finish; counts its renewals."""

    renewed = 0

    def __call__(self, doc: Document) -> list[Mention]:
        if RUNAWAY in doc.text:
            while True:
                pass
        return [Mention(doc.id, ((m.start(), m.end()),)) for m in TERMS.finditer(doc.text)]

    def many(self, docs: list[Document]) -> list[list[Mention]]:
        return [self(d) for d in docs]

    def renew(self) -> None:
        Runaway.renewed += 1


def runaway_factory() -> Runaway:
    return Runaway()


def test_time_limit_stops_a_loop_and_a_regex_and_leaves_no_alarm() -> None:
    start = time.monotonic()
    with pytest.raises(NoteTimeout):
        with time_limit(0.3):
            re.search(r"(a+)+b", "a" * 60)  # Python's regex engine checks for signals
    with pytest.raises(NoteTimeout):
        with time_limit(0.3):
            while True:
                pass
    assert time.monotonic() - start < 5
    with time_limit(0.3):
        pass
    time.sleep(0.5)  # the alarm was cancelled with the block
    assert note_seconds(300, 10) == 300 and note_seconds(300, 2_500_000) == 900 and note_seconds(0, 5) is None


def test_a_runaway_note_is_stopped_alone_and_the_annotator_renewed() -> None:
    Runaway.renewed = 0
    docs = [Document("a", "fever"), Document("b", f"pain {RUNAWAY}"), Document("c", "pain and fever")]
    start = time.monotonic()
    got = annotate_notes(Runaway(), docs, seconds=0.5)
    assert time.monotonic() - start < 10
    assert [len(r.mentions) for r in got] == [1, 0, 2]
    assert got[0].error is None and got[2].error is None
    assert got[1].error == "stopped after 0.5 s (the time limit per note)"
    assert Runaway.renewed == 2  # after the batch ran out of time, and after the note alone did


@pytest.mark.parametrize("jobs", [1, 2])
def test_tag_rejects_a_runaway_note_with_jobs(tmp_path: Path, jobs: int) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(6):
        (notes / f"n{i}.txt").write_text("fever and pain\n" + (RUNAWAY if i == 3 else ""))
    out = tmp_path / "out"
    summary = run_batch([notes], runaway_factory, BatchOptions(out=out, progress=False, jobs=jobs, note_seconds=1))
    rejects = (out / "rejects.tsv").read_text().splitlines()[1:]
    assert [r.split("\t")[1] for r in rejects] == ["n3"]
    assert rejects[0].split("\t")[4] == "stopped after 1 s (the time limit per note)"
    assert summary.notes == 5 and summary.rejected == 1
    assert sorted(p.name for p in out.glob("*.pipe.txt")) == [f"n{i}.pipe.txt" for i in range(6) if i != 3]


def test_a_renewed_pipeline_annotates_as_a_fresh_one(tiny_model: Path, monkeypatch) -> None:
    from share_ner.tagging.crf import CrfTagger

    docs = [Document(f"n{i}", t) for i, t in enumerate(["He has chest pain.", "Denies fever.", "HTN, DM."])]
    clean = [r.mentions for r in annotate_notes(load_annotator(tiny_model), docs)]
    annotator = load_annotator(tiny_model)
    first = annotator.pipeline
    real = CrfTagger.tag_many

    def stuck_on_n1(self, batch):
        if any(d.id == "n1" for d in batch):
            while True:
                pass
        return real(self, batch)

    monkeypatch.setattr(CrfTagger, "tag_many", stuck_on_n1)
    got = annotate_notes(annotator, docs, seconds=0.5)
    assert annotator.pipeline is not first  # loaded again after it was interrupted
    assert got[1].error.startswith("stopped after") and got[0].mentions == clean[0] and got[2].mentions == clean[2]


@pytest.mark.parametrize("regex", [r"(a+)+b", r"(\w+\s?)+$", r"(a|aa)+b", r"(x+x+)+y", r"(.*a){20}"])
def test_a_placeholder_pattern_that_backtracks_is_refused_naming_its_line(tmp_path: Path, regex: str) -> None:
    path = tmp_path / "site.tsv"
    path.write_text(f"name\tregex\nok\t<<[A-Z]+>>\nbad\t{regex}\n")
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:3: the regex for 'bad' can take exponential"):
        load_placeholder_patterns(path)


@pytest.mark.parametrize("regex", [r"(?:[A-Z][a-z]+\s?)+", r"(?:\d+-)+\d+", r"(?:\[\*\*[^*]+\*\*\]\s*)+", r"_{3,}"])
def test_placeholder_patterns_without_that_risk_pass(regex: str) -> None:
    assert backtracking_risk(regex) is None
    for packaged in load_placeholder_patterns().values():
        assert backtracking_risk(packaged) is None


def test_tag_jobs_2_with_a_slow_site_pattern_rejects_that_note_only(small_model: Path, tmp_path: Path) -> None:
    """A polynomial pattern the load-time check lets through: the time limit stops the note it runs away on."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(4):
        (notes / f"n{i}.txt").write_text("He has chest pain.\n" + ("a" * 400 if i == 2 else ""))
    site = tmp_path / "site.tsv"
    site.write_text("name\tregex\nslow\ta*a*a*a*a*a*a*b\n")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "share_ner.cli", "tag", str(notes), "--model", str(small_model),
                          "--out", str(out), "--jobs", "2", "--placeholders", str(site), "--note-timeout", "2",
                          "--quiet"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    rejects = (out / "rejects.tsv").read_text().splitlines()[1:]
    assert [(r.split("\t")[1], r.split("\t")[4]) for r in rejects] == [("n2", "stopped after 2 s (the time limit "
                                                                            "per note)")]
    assert sorted(p.name for p in out.glob("*.pipe.txt")) == ["n0.pipe.txt", "n1.pipe.txt", "n3.pipe.txt"]
    site.write_text("name\tregex\nbad\t(a+)+b\n")
    run = subprocess.run([sys.executable, "-m", "share_ner.cli", "tag", str(notes), "--model", str(small_model),
                          "--out", str(tmp_path / "o2"), "--jobs", "2", "--placeholders", str(site)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and f"{site}:2: the regex for 'bad'" in run.stderr


def test_the_api_stops_a_runaway_note_with_a_clear_error(tiny_model: Path, monkeypatch) -> None:
    from share_ner.tagging.crf import CrfTagger

    annotator = share_ner.load(tiny_model, time_limit=0.5)
    real = CrfTagger.tag_many

    def stuck(self, batch):
        if any(RUNAWAY in d.text for d in batch):
            while True:
                pass
        return real(self, batch)

    monkeypatch.setattr(CrfTagger, "tag_many", stuck)
    with pytest.raises(share_ner.NoteTimeoutError, match=r"^note text: stopped after 0.5 s"):
        annotator(f"chest pain {RUNAWAY}")
    assert [m.spans for m in annotator("He has chest pain.")] == [((7, 17),)]


KILLED_WORKER = """
import os, signal, sys
import share_ner
from share_ner.pipeline import Pipeline

real_many, real_one = Pipeline.annotate_many, Pipeline.annotate

def deadly(real):
    def annotate(self, docs):
        if "KILLME" in str(docs):
            os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer does
        return real(self, docs)
    return annotate

Pipeline.annotate_many, Pipeline.annotate = deadly(real_many), deadly(real_one)
annotator = share_ner.load(sys.argv[1])
notes = ["He has chest pain."] * 5 + ["KILLME chest pain"] + ["Denies fever."] * 5
got = []
try:
    for mentions in annotator.pipe(notes, batch_size=2, n_process=2):
        got.append(len(mentions))
except share_ner.WorkerDiedError as exc:
    print("died:", exc)
print("before:", got)
"""


def test_pipe_in_two_processes_survives_a_worker_that_dies(tiny_model: Path) -> None:
    """Each note before the deadly one is given; that note raises WorkerDiedError, named; nothing hangs."""
    run = subprocess.run([sys.executable, "-c", KILLED_WORKER, str(tiny_model)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-800:]
    assert "died: note 5: worker died (signal 9)" in run.stdout
    assert "before: [1, 1, 1, 1, 1]" in run.stdout


def test_the_api_tags_a_note_over_a_million_characters(tiny_model: Path) -> None:
    """spaCy's limit on one text (the abbreviation detector's) no longer caps the API: long notes go in pieces."""
    annotator = share_ner.load(tiny_model)
    base = "Congestive heart failure (CHF). He has chest pain.\n"
    far = len(base) + 1_000_000
    got = annotator(base + "\n" * 1_000_000 + base)
    near = annotator(base)
    assert got == near + [Mention("text", tuple((s + far, e + far) for s, e in m.spans), m.cui, m.type)
                          for m in near]


def test_the_spacy_component_tags_a_long_note_once_max_length_allows(tiny_model: Path) -> None:
    spacy = pytest.importorskip("spacy")
    nlp = spacy.blank("en")
    nlp.add_pipe("share_ner", config={"model": str(tiny_model)})
    base = "He has chest pain (CP).\n"
    text = base + "\n" * 1_000_000 + base
    with pytest.raises(ValueError, match="E088"):  # spaCy's own limit, before any component runs
        nlp(text)
    nlp.max_length = 2_000_000
    doc = nlp(text)
    assert [s.text for s in doc.spans["share_ner"]] == ["chest pain", "chest pain"]


def test_a_document_of_the_wrong_type_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="note 'd': its text must be a str, got int"):
        Document("d", 123)
    with pytest.raises(TypeError, match="a note id must be a str, got int"):
        Document(7, "text")


def test_the_time_limit_is_an_option_of_tag() -> None:
    from share_ner.cli import build_parser

    args = build_parser("tag").parse_args(["tag", "x", "--note-timeout", "2.5"])
    assert args.note_timeout == 2.5
    assert build_parser("tag").parse_args(["tag", "x"]).note_timeout == 300
