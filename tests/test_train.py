"""``share-ner train`` end to end on six hand-written notes: train → tag → evaluate, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from share_ner.cli import main
from share_ner.formats.share import gold_file_name, read_pipe_dir, write_pipe
from share_ner.inputs.files import read_notes
from share_ner.model import CHECKSUM_KEY, MANIFEST_KEY, ModelError, seal_model, write_config
from share_ner.pipeline import Pipeline

FIXTURES = Path(__file__).parent / "fixtures" / "tagger"
TEXT = FIXTURES / "text"
GOLD = FIXTURES / "gold"
LEXICON = FIXTURES / "lexicon.tsv"
# Few iterations keep the test at a second or two; the six notes are learned well before that.
QUICK = {"max_iterations": 60, "c1": 0.0, "c2": 0.01}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model trained once by the CLI on the fixture notes, with the fixture lexicon and the normalizer."""
    root = tmp_path_factory.mktemp("train")
    config = root / "quick.json"
    config.write_text(json.dumps(QUICK), encoding="utf-8")
    model = root / "model"
    assert main(["train", "--text", str(TEXT), "--gold", str(GOLD), "--model", str(model), "--config", str(config),
                 "--lexicon", str(LEXICON), "--dev-text", str(TEXT), "--dev-gold", str(GOLD), "--quiet"]) == 0
    return model


def test_train_writes_complete_model_directory(trained: Path) -> None:
    names = {p.name for p in trained.iterdir()}
    assert {"model.crfsuite", "config.json", "terms.tsv", "normalizer"} <= names
    config = json.loads((trained / "config.json").read_text(encoding="utf-8"))
    assert config["format_version"] == 1 and config["share_ner_version"]
    assert config["tagger"]["max_iterations"] == 60 and config["tagger"]["scheme"] == "biohd"
    assert config["lexicon"]["entries"] == 10
    counts = config["training"]["counts"]
    # Hand-counted: 6 notes, 23 mentions, 6 discontiguous; note05's "Abdomen: soft, nontender"
    # crosses the sentence break after the "Abdomen:" header.
    assert (counts["docs"], counts["mentions"], counts["discontiguous"]) == (6, 23, 6)
    assert counts["cross_sentence"] == 1
    assert counts["dropped"] == 0 and counts["inexact"] == 0


def test_train_prints_counts_and_dev_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "quick.json"
    config.write_text(json.dumps(QUICK), encoding="utf-8")
    assert main(["train", "--text", str(TEXT), "--gold", str(GOLD), "--model", str(tmp_path / "m"),
                 "--config", str(config), "--lexicon", "none", "--no-normalizer", "--quiet",
                 "--dev-text", str(TEXT), "--dev-gold", str(GOLD)]) == 0
    out = capsys.readouterr().out
    assert "6 notes" in out and "23 mentions (6 discontiguous)" in out
    assert "1 crossing a sentence break" in out
    assert "dev strict" in out and "dev relaxed" in out
    assert not (tmp_path / "m" / "normalizer").exists()


def test_train_keeps_a_mention_whose_span_takes_in_the_line_end(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # "prostate cancer\r": the gold span ends on the line's "\r", past the sentence's last token; it is trained
    # as "prostate cancer", not counted as crossing the sentence break
    text, gold = tmp_path / "text", tmp_path / "gold"
    shutil.copytree(TEXT, text)
    shutil.copytree(GOLD, gold)
    note = "History of prostate cancer\r\nNo fever.\r\n"
    (text / "note07.txt").write_bytes(note.encode())
    start, end = note.index("prostate"), note.index("\r") + 1
    (gold / gold_file_name("note07")).write_text(f"note07.txt||Disease_Disorder||CUI-less||{start}||{end}\n",
                                                 encoding="utf-8")
    config = tmp_path / "quick.json"
    config.write_text(json.dumps(QUICK), encoding="utf-8")
    assert main(["train", "--text", str(text), "--gold", str(gold), "--model", str(tmp_path / "m"),
                 "--config", str(config), "--lexicon", "none", "--no-normalizer", "--quiet"]) == 0
    assert "gold mentions with whitespace at a span's end: 1 (trained without it)" in capsys.readouterr().out
    counts = json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))["training"]["counts"]
    assert (counts["mentions"], counts["trimmed"], counts["cross_sentence"], counts["dropped"]) == (24, 1, 1, 0)


def test_train_keeps_a_site_abbreviation_list_in_the_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "quick.json"
    config.write_text(json.dumps(QUICK), encoding="utf-8")
    site = tmp_path / "site.tsv"
    site.write_text("abbreviation\texpansion\nXQZ\theadache\n", encoding="utf-8")
    args = ["train", "--text", str(TEXT), "--gold", str(GOLD), "--config", str(config), "--lexicon", "none",
            "--quiet", "--abbreviations", str(site)]
    assert main([*args, "--model", str(tmp_path / "m")]) == 0
    assert Pipeline.load(tmp_path / "m").normalizer.site_abbreviations == {"XQZ": ["headache"]}
    assert (tmp_path / "m" / "normalizer" / "abbreviations.tsv").is_file()
    capsys.readouterr()
    assert main([*args, "--model", str(tmp_path / "n"), "--no-normalizer"]) == 2
    assert "--no-normalizer fits none" in capsys.readouterr().err
    site.write_text("abbreviation\tsense\nXQZ\theadache\n", encoding="utf-8")
    assert main([*args, "--model", str(tmp_path / "n")]) == 2  # before any training: file and line
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{site}:1" in err and not (tmp_path / "n").exists()


def test_train_tag_evaluate_round_trip(trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Re-tagging the training notes gives back every mention one tag sequence can hold."""
    docs = read_notes(TEXT)
    gold = read_pipe_dir(GOLD)
    pipeline = Pipeline.load(trained)
    pred_dir = tmp_path / "pred"
    pred_dir.mkdir()
    for doc_id, doc in docs.items():
        write_pipe(pred_dir / gold_file_name(doc_id), pipeline.annotate(doc))
    pred = read_pipe_dir(pred_dir)
    spans = lambda ms: sorted(m.spans for m in ms)  # noqa: E731
    for doc_id in docs:
        expected = [m for m in gold[doc_id] if not (doc_id == "note05" and m.spans == ((89, 96), (104, 113)))]
        assert spans(pred[doc_id]) == spans(expected), doc_id
    # The shared-head pair and the other discontiguous mentions are among them.
    assert ((15, 22), (32, 41)) in spans(pred["note02"]) and ((15, 22), (43, 55)) in spans(pred["note02"])
    assert ((91, 106), (117, 124)) in spans(pred["note03"])

    capsys.readouterr()
    assert main(["evaluate", "--gold", str(GOLD), "--pred", str(pred_dir), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    strict = scores["strict"] if "strict" in scores else scores["task1a"]["strict"]
    # 23 gold mentions, 22 found exactly, nothing spurious.
    assert (strict["tp"], strict["fp"], strict["fn"]) == (22, 0, 1)


def test_normalizer_gives_training_cuis(trained: Path) -> None:
    docs = read_notes(TEXT)
    pipeline = Pipeline.load(trained)
    cuis = {m.text(docs["note01"].text): m.cui for m in pipeline.annotate(docs["note01"])}
    assert cuis["hypertension"] == "C0020538"
    assert cuis["chest pain"] == "C0008031"


def _copy_fixture(tmp_path: Path) -> tuple[Path, Path]:
    text, gold = tmp_path / "text", tmp_path / "gold"
    shutil.copytree(TEXT, text)
    shutil.copytree(GOLD, gold)
    return text, gold


def _train(text: Path, gold: Path, model: Path, *extra: str) -> int:
    return main(["train", "--text", str(text), "--gold", str(gold), "--model", str(model), "--lexicon", "none",
                 "--no-normalizer", "--quiet", *extra])


def test_empty_and_whitespace_notes_are_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, gold = _copy_fixture(tmp_path)
    (text / "empty.txt").write_bytes(b"")
    (text / "blank.txt").write_bytes(b"  \r\n\t\n")
    (text / "long.txt").write_text("fever " * 20000 + "\n", encoding="utf-8")
    config = tmp_path / "c.json"
    config.write_text(json.dumps(QUICK))
    assert _train(text, gold, tmp_path / "m", "--config", str(config)) == 0
    counts = json.loads((tmp_path / "m" / "config.json").read_text())["training"]["counts"]
    assert counts["docs"] == 9 and counts["empty_docs"] == 2
    pipeline = Pipeline.load(tmp_path / "m")
    from share_ner.document import Document

    assert pipeline.annotate(Document("e", "")) == []
    assert pipeline.annotate(Document("w", " \n\r\n ")) == []


def test_non_utf8_note_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, gold = _copy_fixture(tmp_path)
    original = (TEXT / "note04.txt").read_text(encoding="utf-8")
    (text / "note04.txt").write_bytes((original + "Caf\u00e9 au lait spots.\n").encode("latin-1"))
    assert _train(text, gold, tmp_path / "m") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "note04.txt" in err and "--encoding" in err
    assert not (tmp_path / "m").exists()
    assert _train(text, gold, tmp_path / "m", "--encoding", "latin-1", "--config",
                  str(_write(tmp_path / "c.json", QUICK))) == 0


def test_gold_outside_note_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, gold = _copy_fixture(tmp_path)
    (gold / "note04.pipe.txt").write_text("note04.txt||Disease_Disorder||CUI-less||29||500\n")
    assert _train(text, gold, tmp_path / "m") == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"share-ner: error: {gold / 'note04.pipe.txt'}:1: span 29-500 of note note04 ends past the note's end "
                   "(95 characters)")


def test_refuses_to_overwrite_a_non_model_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert _train(TEXT, GOLD, out) == 2
    assert "not a share-ner model" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "x"


def test_bad_config_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write(tmp_path / "c.json", {"c1": 0.1, "iterations": 5})
    assert _train(TEXT, GOLD, tmp_path / "m", "--config", str(config)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'iterations'" in err and "allowed:" in err


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("algorithm, says", [("pa", "(passive-aggressive, 20 iterations)"),
                                             ("lbfgs", "(L-BFGS, c1=0.0, c2=0.01, max 20 iterations)")])
def test_train_uses_the_configured_algorithm(tmp_path: Path, algorithm: str, says: str) -> None:
    from share_ner.tagging.config import TaggerConfig
    from share_ner.training import train_model

    said: list[str] = []
    config = TaggerConfig(algorithm=algorithm, max_iterations=20, c1=0.0, c2=0.01)
    model = train_model(read_notes(TEXT), read_pipe_dir(GOLD), tmp_path / "m", config, fit_normalizer=False,
                        progress=said.append)
    assert any(says in line for line in said)
    saved = json.loads((model / "config.json").read_text(encoding="utf-8"))["tagger"]
    assert saved["algorithm"] == algorithm and saved["max_iterations"] == 20
    # Either learner fits the six training notes: most gold mentions come back exactly.
    pipeline = Pipeline.load(model)
    gold = read_pipe_dir(GOLD)
    docs = read_notes(TEXT)
    found = sum(len({m.spans for m in pipeline.tag(doc)} & {m.spans for m in gold.get(doc_id, ())})
                for doc_id, doc in docs.items())
    assert found >= 20, found  # of 23 gold mentions


def test_train_algorithm_flag_overrides_the_config(tmp_path: Path) -> None:
    config = tmp_path / "quick.json"
    config.write_text(json.dumps({**QUICK, "algorithm": "pa"}), encoding="utf-8")
    model = tmp_path / "m"
    assert main(["train", "--text", str(TEXT), "--gold", str(GOLD), "--model", str(model), "--config", str(config),
                 "--algorithm", "lbfgs", "--lexicon", "none", "--no-normalizer", "--quiet"]) == 0
    saved = json.loads((model / "config.json").read_text(encoding="utf-8"))["tagger"]
    assert saved["algorithm"] == "lbfgs" and saved["max_iterations"] == 60


def test_a_model_saved_before_the_algorithm_setting_reads_back_as_lbfgs(trained: Path, tmp_path: Path) -> None:
    import shutil

    old = tmp_path / "old"
    shutil.copytree(trained, old)
    meta = json.loads((old / "config.json").read_text(encoding="utf-8"))
    assert Pipeline.load(old).config.algorithm == meta["tagger"]["algorithm"]
    del meta["tagger"]["algorithm"]  # as written before the setting existed, when L-BFGS was the only learner
    write_config(old, meta)
    assert Pipeline.load(old).config.algorithm == "lbfgs"


def test_a_model_saved_before_the_learned_pairing_decodes_with_the_rules(trained: Path, tmp_path: Path) -> None:
    import shutil

    assert (trained / "pairing.json").is_file() and Pipeline.load(trained).tagger.pairing is not None
    old = tmp_path / "old"
    shutil.copytree(trained, old)
    meta = json.loads((old / "config.json").read_text(encoding="utf-8"))
    del meta["tagger"]["pairing"]  # as written before the setting existed, and before models had a manifest
    for key in (MANIFEST_KEY, CHECKSUM_KEY):
        del meta[key]
    (old / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    (old / "pairing.json").unlink()
    seal_model(old, Pipeline.load)
    pipeline = Pipeline.load(old)
    assert pipeline.config.pairing == "rules" and pipeline.tagger.pairing is None
    note = next(iter(read_notes(TEXT).values()))
    assert pipeline.tag(note)  # the rules decode its tags
    # a model that names the learned pairing but lost its file is refused in one line naming the file
    meta["tagger"]["pairing"] = "learned"
    (old / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ModelError, match="pairing.json"):
        seal_model(old, Pipeline.load, force=True)


def test_gold_without_note_and_note_without_gold_are_warned_and_strict_stops(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, gold = _copy_fixture(tmp_path)
    (gold / "ghost.pipe.txt").write_text("ghost.txt||Disease_Disorder||CUI-less||0||5\n"
                                         "ghost.txt||Disease_Disorder||CUI-less||6||9\n")
    (text / "orphan.txt").write_text("no gold here\n")
    config = _write(tmp_path / "c.json", QUICK)
    assert _train(text, gold, tmp_path / "m", "--config", str(config)) == 0
    err = capsys.readouterr().err
    assert (f"warning: 1 gold file(s) name no note of {text}, so their 2 mention(s) are not used: "
            f"{gold / 'ghost.pipe.txt'}") in err
    assert f"warning: 1 note(s) of {text} have no gold file in {gold} and are trained on as mention-free: orphan" in err
    counts = json.loads((tmp_path / "m" / "config.json").read_text())["training"]["counts"]
    assert counts["mentions"] == sum(len(v) for v in read_pipe_dir(GOLD).values())  # the ghost's 2 are not counted
    assert _train(text, gold, tmp_path / "m2", "--strict") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "ghost.pipe.txt" in err and "(--strict)" in err
    assert not (tmp_path / "m2").exists()
