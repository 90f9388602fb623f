"""``share-ner tag --format parquet``: the same shards as JSON Lines, one mentions table each, read back to the same
mentions; with the real pipeline on a tiny trained model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mimic_csv import NOTE_1, NOTE_2, NOTE_3, mimic3_csv, write

from share_ner.cli import main
from share_ner.document import Attributes, Mention
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes

pytest.importorskip("pyarrow")

from share_ner.formats.parquet import COLUMNS, mention_rows, read_parquet, write_parquet  # noqa: E402

TAGGER_FIXTURES = Path(__file__).parent / "fixtures" / "tagger"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model trained on the six tagger fixture notes (no lexicon: quick)."""
    from share_ner.formats.share import read_pipe_dir
    from share_ner.training import train_model

    docs = read_notes(TAGGER_FIXTURES / "text")
    gold = read_pipe_dir(TAGGER_FIXTURES / "gold")
    return train_model(docs, gold, tmp_path_factory.mktemp("model") / "m", fit_normalizer=False)


def fixture_rows(n: int) -> list[tuple[str, str, str, str]]:
    """``n`` MIMIC-III rows cycling through the tagger fixture notes and the MIMIC test notes."""
    texts = [d.text for d in read_notes(TAGGER_FIXTURES / "text").values()] + [NOTE_1, NOTE_2, NOTE_3]
    return [(str(1000 + i), "Discharge summary", "", texts[i % len(texts)]) for i in range(n)]


def test_parquet_shards_round_trip_to_the_jsonl_mentions(model_dir: Path, tmp_path: Path) -> None:
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv(fixture_rows(25) + [("2000", "Radiology", "", "")]))
    common = [str(csv_path), "--model", str(model_dir), "--shard-size", "10", "--quiet"]
    assert main(["tag", *common, "--out", str(tmp_path / "j")]) == 0
    assert main(["tag", *common, "--out", str(tmp_path / "p"), "--format", "parquet"]) == 0
    shards = sorted(p.name for p in (tmp_path / "p" / "NOTEEVENTS").iterdir() if p.suffix == ".parquet")
    assert shards == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    jsonl = {k: v for k, v in read_annotations(tmp_path / "j" / "NOTEEVENTS").items() if v}
    assert sum(map(len, jsonl.values())) > 25
    assert read_parquet(tmp_path / "p" / "NOTEEVENTS") == jsonl
    assert read_parquet(tmp_path / "p" / "NOTEEVENTS" / "part-00001.parquet") == {
        k: v for k, v in jsonl.items() if 1010 <= int(k) < 1020}
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("j", "p")]
    for key in ("notes", "mentions", "rejected", "tokens", "characters"):
        assert summaries[0][key] == summaries[1][key]
    assert summaries[1]["notes"] == 25 and summaries[1]["rejected"] == 1  # the empty TEXT
    rejects = (tmp_path / "p" / "rejects.tsv").read_text().splitlines()
    fields = rejects[1].split("\t")  # source, note_id, row, byte, reason
    assert (fields[1], fields[-1]) == ("2000", "TEXT is empty")
    import pyarrow.parquet as pq

    assert tuple(pq.read_schema(tmp_path / "p" / "NOTEEVENTS" / "part-00000.parquet").names) == COLUMNS


def test_parquet_resume_keeps_completed_shards(model_dir: Path, tmp_path: Path) -> None:
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv(fixture_rows(25)))
    argv = ["tag", str(csv_path), "--model", str(model_dir), "--shard-size", "10", "--quiet", "--format", "parquet",
            "--out", str(tmp_path / "p")]
    assert main(argv) == 0
    shard_dir = tmp_path / "p" / "NOTEEVENTS"
    before = read_parquet(shard_dir)
    kept = (shard_dir / "part-00000.parquet").stat().st_mtime_ns
    (shard_dir / "part-00001.parquet").unlink()
    assert main(argv) == 0
    assert (shard_dir / "part-00000.parquet").stat().st_mtime_ns == kept
    assert read_parquet(shard_dir) == before
    summary = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert summary["this_run"]["skipped_done"] == 15 and summary["notes"] == 25  # shards 0 and 2 kept


def test_attributes_survive_the_table(tmp_path: Path) -> None:
    attrs = Attributes(negation="yes", body_location="C0018787")
    mentions = [Mention("n1", ((0, 5), (10, 14)), "C0011849").with_attributes(attrs), Mention("n1", ((20, 24),))]
    text = "chest pain and fever xyz"
    write_parquet(tmp_path / "t.parquet", mention_rows("n1", mentions, text))
    back = read_parquet(tmp_path / "t.parquet")
    assert back == {"n1": mentions}
    assert back["n1"][0].attributes == Attributes(negation="yes", body_location="C0018787")
    assert back["n1"][1].attributes is None


def test_names_survive_the_table(tmp_path: Path) -> None:
    mentions = [Mention("n1", ((0, 10),), "C0008031", name="Chest pain"), Mention("n1", ((15, 20),))]
    write_parquet(tmp_path / "t.parquet", mention_rows("n1", mentions, "chest pain and fever"))
    back = read_parquet(tmp_path / "t.parquet")
    assert back == {"n1": mentions} and [m.name for m in back["n1"]] == ["Chest pain", None]


def test_parquet_needs_a_csv_export_and_out(model_dir: Path, tmp_path: Path, capsys) -> None:
    note = tmp_path / "n.txt"
    note.write_text("fever")
    assert main(["tag", str(note), "--model", str(model_dir), "--format", "parquet", "--out", str(tmp_path / "o")]) == 2
    assert "Parquet output is written in shards of a CSV export" in capsys.readouterr().err
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv(fixture_rows(2)))
    assert main(["tag", str(csv_path), "--model", str(model_dir), "--format", "parquet"]) == 2
    assert capsys.readouterr().err == "share-ner: error: Parquet output needs --out DIR\n"
