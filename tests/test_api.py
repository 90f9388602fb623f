"""The public Python API: its doctests, run on a tiny trained model, and what the examples do not show."""

from __future__ import annotations

import doctest
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import share_ner
import share_ner.api
from share_ner.errors import ShareNerError
from share_ner.inputs.files import read_notes

TEXT = Path(__file__).parent / "fixtures" / "tagger" / "text"
GOLD = Path(__file__).parent / "fixtures" / "tagger" / "gold"


def test_the_api_doctests_pass(tiny_model: Path) -> None:
    result = doctest.testmod(share_ner.api, extraglobs={"model_dir": tiny_model}, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10
    assert result.failed == 0


def test_every_public_name_resolves_and_nothing_else_is_lazy() -> None:
    for name in share_ner.__all__:
        assert getattr(share_ner, name) is not None
    assert share_ner.load is share_ner.api.load
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        share_ner.nothing_here  # noqa: B018


def test_import_share_ner_stays_light() -> None:
    code = "import sys, share_ner; print(sorted(m for m in ('numpy', 'scipy', 'spacy', 'pycrfsuite') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_pipe_in_two_processes_equals_one_note_at_a_time(tiny_model: Path) -> None:
    annotator = share_ner.load(tiny_model)
    docs = list(read_notes(TEXT).values())
    one_by_one = [annotator(d) for d in docs]
    assert sum(map(len, one_by_one)) > 0
    assert list(annotator.pipe(docs, batch_size=2, n_process=2)) == one_by_one
    assert list(annotator.pipe(docs, batch_size=4)) == one_by_one
    # strings are numbered notes
    texts = [d.text for d in docs[:2]]
    assert [{m.doc_id for m in ms} <= {str(i)} for i, ms in enumerate(annotator.pipe(texts))] == [True, True]
    assert {m.doc_id for m in annotator(texts[0])} == {share_ner.api.TEXT_ID}


def test_annotator_pickles_as_its_model_directory(tiny_model: Path) -> None:
    annotator = share_ner.load(tiny_model)
    again = pickle.loads(pickle.dumps(annotator))
    assert again.model_dir == annotator.model_dir
    doc = next(iter(read_notes(TEXT).values()))
    assert again(doc) == annotator(doc)
    assert pickle.loads(pickle.dumps(share_ner.load(tiny_model, time_limit=7))).time_limit == 7


def test_bad_arguments_are_one_line_errors(tiny_model: Path, tmp_path: Path) -> None:
    with pytest.raises(ShareNerError, match="nowhere: no such model folder"):
        share_ner.load(tmp_path / "nowhere")
    annotator = share_ner.load(tiny_model)
    with pytest.raises(ShareNerError, match="at least 1"):
        list(annotator.pipe(["x"], batch_size=0))
    with pytest.raises(TypeError, match="got int"):
        annotator(3)  # type: ignore[arg-type]


def test_evaluate_and_compare_read_paths(tiny_model: Path, tmp_path: Path) -> None:
    annotator = share_ner.load(tiny_model)
    notes = read_notes(TEXT)
    for doc, mentions in zip(notes.values(), annotator.pipe(notes.values())):
        share_ner.write_annotations(tmp_path, doc, mentions, "brat", with_text=True)
    from_paths = share_ner.evaluate(GOLD, tmp_path, notes=notes)
    assert from_paths == share_ner.evaluate(share_ner.read_annotations(GOLD), share_ner.read_annotations(tmp_path))
    assert from_paths.n_gold == 23  # the fixture notes' gold mentions, counted in tests/test_train.py
    same = share_ner.compare(GOLD, tmp_path, tmp_path, shuffles=50)
    assert same["strict_f1"].diff == 0.0 and same["strict_f1"].p_value == 1.0


def _python_blocks(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize("doc,block", [("README.md", 0), ("docs/python_api.md", 0), ("docs/spacy.md", 0)])
def test_the_documented_examples_run(doc: str, block: int, tiny_model: Path, monkeypatch, capsys) -> None:
    """The examples run as written (here on the tiny model standing in for the default one; the outputs the docs
    show are the default model's)."""
    import share_ner.default_model.build

    monkeypatch.setattr(share_ner.default_model.build, "default_model_dir", lambda: tiny_model)
    code = _python_blocks(ROOT / doc)[block]
    exec(compile(code, doc, "exec"), {})  # noqa: S102 - the project's own documentation
    lines = capsys.readouterr().out.splitlines()
    note = "The heart is enlarged. Hemoptysis and weight loss; no pleural effusion."
    expected = share_ner.load(tiny_model)(note)
    assert len(lines) >= len(expected) > 0


def test_pipe_reads_a_stream_only_ahead_of_the_workers(tiny_model: Path) -> None:
    annotator = share_ner.load(tiny_model)
    taken = []

    def stream():
        for i in range(200):
            taken.append(i)
            yield "Denies chest pain."

    results = annotator.pipe(stream(), batch_size=2, n_process=2)
    first = next(results)
    assert [m.spans for m in first] == [((7, 17),)]
    assert len(taken) <= (2 * 2 + 1) * 2  # two batches per worker in flight, and the one being read
    assert sum(1 for _ in results) == 199
    assert len(taken) == 200
