"""``share-ner spark`` in local mode (local[2], one session for the whole module): the same mentions and counts
as ``share-ner tag``, rejects, resume, one-line errors; with the real pipeline on a tiny trained model."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys
from pathlib import Path

import hostile_inputs
import pytest
from hostile_inputs import (
    COUNTS,
    MARKER,
    TrippedFactory,
    spark_outcome,
    stop_spark,
    tag_outcome,
    term_factory,
    write_hostile_inputs,
)
from mimic_csv import NOTE_1, NOTE_2, NOTE_3, mimic3_csv, mimic4_csv, write

from share_ner.cli import main
from share_ner.errors import ShareNerError
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from share_ner.formats.parquet import read_parquet  # noqa: E402
from share_ner.spark.job import SparkOptions, check_java, run_spark  # noqa: E402

TAGGER_FIXTURES = Path(__file__).parent / "fixtures" / "tagger"


@pytest.fixture(scope="module")
def spark():
    """One local[2] session for all the Spark tests (they are all in this module). Stopped with its JVM when they
    end: a JVM and its py4j threads left in the pytest process would be inherited by later tests that fork."""
    try:
        check_java()
    except ShareNerError:
        pytest.skip("no Java runtime for Spark")

    from share_ner.spark.job import start_session

    session = start_session("local[2]", app="share-ner-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    stop_spark(session)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model trained on the six tagger fixture notes (no lexicon: quick)."""
    from share_ner.formats.share import read_pipe_dir
    from share_ner.training import train_model

    docs = read_notes(TAGGER_FIXTURES / "text")
    gold = read_pipe_dir(TAGGER_FIXTURES / "gold")
    return train_model(docs, gold, tmp_path_factory.mktemp("model") / "m", fit_normalizer=False)


def note_texts() -> list[str]:
    # the tagger fixture notes (with mentions), with CRLF and quote-laden MIMIC notes among them
    return [d.text for d in read_notes(TAGGER_FIXTURES / "text").values()] + [NOTE_1, NOTE_2, NOTE_3]


def tag_jsonl(csv_path: Path, model_dir: Path, out: Path) -> tuple[dict, dict]:
    assert main(["tag", str(csv_path), "--model", str(model_dir), "--out", str(out), "--quiet"]) == 0
    stem = csv_path.name.split(".")[0]
    return read_annotations(out / stem), json.loads((out / "summary.json").read_text())




def test_spark_equals_tag_on_200_mimic3_notes(spark, model_dir: Path, tmp_path: Path) -> None:
    texts = note_texts()
    rows = [(str(5000 + i), "Discharge summary", "1" if i == 7 else "", texts[i % len(texts)]) for i in range(200)]
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv(rows))
    expected, tag_summary = tag_jsonl(csv_path, model_dir, tmp_path / "tag")
    summary = run_spark(SparkOptions(str(csv_path), str(tmp_path / "spark"), model=str(model_dir)), spark)
    got = read_parquet(tmp_path / "spark" / "mentions")
    assert got == {k: v for k, v in expected.items() if v}
    assert sum(map(len, got.values())) > 200 and len(expected) == 199  # ISERROR row left out by both
    written = json.loads((tmp_path / "spark" / "summary.json").read_text())
    for key in COUNTS:
        assert written[key] == tag_summary[key], key
    assert summary.notes == 199 and written["chunks"] == 1
    # one pass: the counts and the rejects came through the accumulator, the worker figures with them
    assert json.loads((tmp_path / "spark" / "chunks" / "chunk=00000.json").read_text()) == {
        key: tag_summary[key] for key in COUNTS} | {"complete": True}
    assert written["skipped_iserror"] == 1  # counted, as share-ner tag counts it
    assert 1 <= len(written["workers"]) <= 2
    assert all(w["process_cpu_seconds"] >= w["cpu_seconds"] > 0 for w in written["workers"].values())
    # the session's Python daemon (share_ner.spark.daemon) loaded the model; the workers forked from it did not
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "share_ner.spark.daemon"
    assert all(w["load_seconds"] == 0 and w["preload_seconds"] > 0 for w in written["workers"].values())
    assert all(0 < w["private_kb"] <= w["rss_kb"] for w in written["workers"].values())
    from share_ner.spark.daemon import PRELOAD_ENV

    assert PRELOAD_ENV not in spark.sparkContext.environment  # the session's environment left as it was
    # the mention text column is the spans' words, as in the JSON Lines
    import pyarrow.dataset as ds

    table = ds.dataset(str(tmp_path / "spark" / "mentions"), partitioning="hive").to_table().to_pylist()
    docs = {r[0]: r[3] for r in rows}
    assert all(r["text"] == " ".join(docs[r["note_id"]][s["start"]:s["end"]] for s in r["spans"]) for r in table)
    assert all(r["negation"] in ("no", "yes") for r in table)  # the pipeline fills attributes by default


def test_bad_rows_and_a_raising_note_are_rejected_and_the_rest_written(spark, model_dir: Path, tmp_path: Path) -> None:
    texts = note_texts()
    rows = [(str(i), "Radiology", "", texts[i % len(texts)]) for i in range(1, 13)]
    rows += [("20", "Radiology", "", ""), ("21", "Radiology", "", "fever and BADBYTE pain"),
             ("22", "Radiology", "", texts[0] + " KABOOM")]
    csv_path = tmp_path / "NOTEEVENTS.csv"
    csv_path.write_bytes(mimic3_csv(rows).encode("utf-8").replace(b"BADBYTE", b"caf\xe9"))
    out = tmp_path / "spark"
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(hostile_inputs)  # the workers cannot import the tests' modules
    run_spark(SparkOptions(str(csv_path), str(out)), spark, factory=TrippedFactory(model_dir, "KABOOM"))
    import pyarrow.dataset as ds

    rejects = {r["note_id"]: r["reason"] for r in ds.dataset(str(out / "rejects"), partitioning="hive").to_table()
               .to_pylist()}
    assert rejects.pop("22").startswith("annotation failed: ValueError in hostile_inputs.py:")
    assert rejects == {"20": "TEXT is empty", "21": "TEXT is not valid utf-8 at character 13"}
    expected, tag_summary = tag_jsonl(csv_path, model_dir, tmp_path / "tag")
    assert read_parquet(out / "mentions") == {k: v for k, v in expected.items() if v and k != "22"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["notes"] == 12 and summary["rejected"] == 3
    # a factory is nothing the daemon can load first: each worker ran it itself
    assert all(w["load_seconds"] > 0 and w["preload_seconds"] == 0 for w in summary["workers"].values())
    assert tag_summary["rejected"] == 2  # share-ner tag rejects the same empty and undecodable rows
    assert "fever" not in json.dumps(rejects)


def test_rerun_keeps_committed_chunks_and_redoes_a_killed_one(spark, model_dir: Path, tmp_path: Path) -> None:
    texts = note_texts()
    exports = tmp_path / "note"
    exports.mkdir()
    write(exports / "discharge.csv", mimic4_csv([(f"1-DS-{i}", "DS", texts[i % len(texts)]) for i in range(10)]))
    write(exports / "radiology.csv.gz", mimic4_csv([(f"1-RR-{i}", "RR", texts[i % len(texts)]) for i in range(10)]),
          gz=True)
    out = tmp_path / "spark"
    shipped = tmp_path / "shipped model"  # the driver's own copy, sent to the executors as an archive
    shutil.copytree(model_dir, shipped)
    opt = SparkOptions(str(exports), str(out), model=str(shipped), ship_model=True)
    run_spark(opt, spark)
    first = read_parquet(out / "mentions")
    whole = json.loads((out / "summary.json").read_text())
    assert {k.split("-")[1] for k in first} == {"DS", "RR"}
    # the daemon loaded the shipped model from where Spark unpacked it, before forking the workers
    assert all(w["load_seconds"] == 0 and w["preload_seconds"] > 0 for w in whole["workers"].values())
    kept = sorted(p.stat().st_mtime_ns for p in (out / "mentions" / "chunk=00000").iterdir())
    # a job killed while committing chunk 1: its _SUCCESS is missing and part of its files are gone
    killed = out / "mentions" / "chunk=00001"
    (killed / "_SUCCESS").unlink()
    for part in sorted(killed.glob("part-*"))[:2]:
        part.unlink()
    run_spark(opt, spark)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["chunks"] == 2 and summary["chunks_kept"] == 1
    # counted as share-ner tag counts a resumed run: the whole output as before, this run's part apart
    assert {k: summary[k] for k in COUNTS} == {k: whole[k] for k in COUNTS} and summary["notes"] == 20
    assert (summary["this_run"]["tagged"], summary["this_run"]["skipped_done"]) == (10, 10)
    assert sorted(p.stat().st_mtime_ns for p in (out / "mentions" / "chunk=00000").iterdir()) == kept
    assert read_parquet(out / "mentions") == first
    # killed after both tables of chunk 1 were committed but before its counts were written: chunk 1 is redone
    (out / "chunks" / "chunk=00001.json").unlink()
    run_spark(opt, spark)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["chunks_kept"] == 1 and {k: summary[k] for k in COUNTS} == {k: whole[k] for k in COUNTS}
    assert (out / "chunks" / "chunk=00001.json").exists() and read_parquet(out / "mentions") == first
    # the same model at another path is the same run: only the other setting is named
    with pytest.raises(ShareNerError, match=r"other settings \(include_errors False then True\).*--overwrite"):
        run_spark(SparkOptions(str(exports), str(out), model=str(model_dir), include_errors=True), spark)
    (out / "stray.txt").write_text("not the run's", encoding="utf-8")
    run_spark(SparkOptions(str(exports), str(out), model=str(model_dir), include_errors=True, overwrite=True), spark)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["chunks_kept"] == 0 and {k: summary[k] for k in COUNTS} == {k: whole[k] for k in COUNTS}
    assert read_parquet(out / "mentions") == first and (out / "stray.txt").is_file()
    assert json.loads((out / "run.json").read_text())["include_errors"] is True


def test_parquet_table_and_note_directory_inputs(spark, model_dir: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = read_notes(TAGGER_FIXTURES / "text")
    pq.write_table(pa.table({"id": list(docs), "body": [d.text for d in docs.values()]}), tmp_path / "notes.parquet")
    from share_ner.pipeline import Pipeline

    pipeline = Pipeline.load(model_dir)
    expected = {k: m for k, m in ((d.id, pipeline.annotate(d)) for d in docs.values()) if m}
    run_spark(SparkOptions(str(tmp_path / "notes.parquet"), str(tmp_path / "p"), model=str(model_dir),
                           id_col="id", text_col="body"), spark)
    assert read_parquet(tmp_path / "p" / "mentions") == expected
    notes = tmp_path / "dir"
    shutil.copytree(TAGGER_FIXTURES / "text", notes / "ward")
    shutil.copy(TAGGER_FIXTURES / "gold" / sorted(p.name for p in (TAGGER_FIXTURES / "gold").iterdir())[0],
                notes / "ward")
    run_spark(SparkOptions(str(notes), str(tmp_path / "t"), model=str(model_dir)), spark)
    # one table for the directory: a note below a sub-directory is named by its path there
    assert read_parquet(tmp_path / "t" / "mentions") == {
        f"ward/{k}": [dataclasses.replace(m, doc_id=f"ward/{k}") for m in v] for k, v in expected.items()}
    assert json.loads((tmp_path / "t" / "summary.json").read_text())["notes"] == len(docs)  # the gold file is no note
    # a URI is listed by Hadoop's file system, to the same notes
    run_spark(SparkOptions(f"file://{notes}", str(tmp_path / "u"), model=str(model_dir)), spark)
    assert read_parquet(tmp_path / "u" / "mentions") == read_parquet(tmp_path / "t" / "mentions")
    with pytest.raises(ShareNerError) as err:
        run_spark(SparkOptions(str(tmp_path / "notes.parquet"), str(tmp_path / "q"), model=str(model_dir)), spark)
    assert str(err.value) == (f"{tmp_path / 'notes.parquet'}: not a table of notes: no ROW_ID or note_id column "
                              "(pass --id-col and --text-col); columns: id, body")


def test_unreadable_model_on_the_executors_is_one_line(spark, tmp_path: Path) -> None:
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("1", "Radiology", "", NOTE_3)]))
    empty = tmp_path / "model"
    empty.mkdir()
    with pytest.raises(ShareNerError) as err:
        run_spark(SparkOptions(str(csv_path), str(tmp_path / "o"), model=str(empty)), spark)
    assert str(err.value).startswith("cannot load the model on an executor: ") and str(empty) in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ShareNerError, match="nowhere: no such model folder"):
        run_spark(SparkOptions(str(csv_path), str(tmp_path / "o2"), model=str(tmp_path / "nowhere")), spark)


def test_daemon_preload_loads_the_named_model_or_falls_back(model_dir: Path, tmp_path: Path, monkeypatch,
                                                          capsys) -> None:
    from share_ner.spark import daemon as spark_daemon
    from share_ner.spark import dataframe as share_spark
    from share_ner.spark.daemon import preload

    monkeypatch.setattr(share_spark, "_MODELS", {})
    monkeypatch.setattr(spark_daemon, "PRELOADED", {})
    monkeypatch.setattr("share_ner.batch.processes.settle_heap", lambda: None)  # not pytest's own heap
    spec = json.dumps({"key": f"path:{model_dir}", "path": str(model_dir)})
    assert preload(spec) == f"path:{model_dir}"
    # a worker forked from the daemon takes that model for that key, and loads any other itself
    assert share_spark._annotator(f"path:{model_dir}", lambda: pytest.fail("loaded again"))[1] == 0.0
    assert spark_daemon.PRELOADED["seconds"] > 0
    assert share_spark._annotator("path:other", lambda: "other")[0] == "other"
    assert capsys.readouterr().out == ""  # the daemon's stdout carries its port to the JVM
    # nothing asked, a directory this executor does not have, a spec that is none, a model that does not load:
    # nothing loaded, and the workers load it themselves
    empty = tmp_path / "empty"
    empty.mkdir()
    spark_daemon.PRELOADED.clear()
    assert preload(None) is None and preload(json.dumps({"key": "shipped:m", "path": str(tmp_path / "m")})) is None
    assert preload("not json") is None
    assert preload(json.dumps({"key": f"path:{empty}", "path": str(empty)})) is None
    assert spark_daemon.PRELOADED == {}
    err = capsys.readouterr()
    assert err.out == "" and err.err.count("\n") == 2 and "the workers load the model" in err.err


def test_cli_errors_without_pyspark_or_java(tmp_path: Path, capsys, monkeypatch) -> None:
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("1", "Radiology", "", NOTE_3)]))
    argv = ["spark", str(csv_path), "--out", str(tmp_path / "o"), "--master", "local[1]"]
    with pytest.raises(SystemExit):
        main([*argv, "--conf", "spark.ui.enabled"])
    assert "expected KEY=VALUE, got 'spark.ui.enabled'" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert main(argv) == 2
    assert capsys.readouterr().err == ("share-ner: error: Spark needs a Java 17+ runtime: none found on PATH or in "
                                       "JAVA_HOME\n")
    monkeypatch.setitem(sys.modules, "pyspark", None)
    assert main(argv) == 2
    assert capsys.readouterr().err == "share-ner: error: share-ner spark needs PySpark: pip install 'share-ner[spark]'\n"


def test_annotate_api_gives_mentions_and_rejects(spark, model_dir: Path) -> None:
    from share_ner.pipeline import Pipeline
    from share_ner.spark import annotate

    docs = list(read_notes(TAGGER_FIXTURES / "text").values())[:3]
    df = spark.createDataFrame([(d.id, d.text) for d in docs] + [("empty", "")], "note_id string, text string")
    mentions, rejects = annotate(df, model=str(model_dir), rejects=True, attributes=False)
    assert mentions.columns == ["note_id", "mention", "spans", "text", "cui", "name"]
    assert [tuple(r) for r in rejects.collect()] == [("empty", "text is empty")]
    pipeline = Pipeline.load(model_dir)
    got = {}
    for r in mentions.orderBy("note_id", "mention").collect():
        got.setdefault(r["note_id"], []).append((tuple((s["start"], s["end"]) for s in r["spans"]), r["cui"]))
    assert got == {d.id: [(m.spans, m.cui) for m in ms] for d in docs if (ms := pipeline.annotate(d))}
    with pytest.raises(ShareNerError, match=r"the input: no column 'body'; columns: note_id, text"):
        annotate(df, text_col="body", model=str(model_dir))


def test_tag_and_spark_share_one_input_contract_on_hostile_inputs(spark, tmp_path: Path) -> None:
    """The same notes, ids, rejects (with their reasons, rows and files) and counts from both commands, for CSV
    exports, Parquet tables and a directory of notes full of what breaks readers."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(hostile_inputs)  # the workers cannot import the tests' modules
    inputs = write_hostile_inputs(tmp_path / "in")
    for name, path in inputs.items():
        tag = tag_outcome(path, tmp_path, term_factory)
        got = spark_outcome(spark, path, tmp_path / f"spark-{name}", factory=term_factory)
        assert got[0] == tag[0], name  # mention for mention, every note tagged (each has a mention)
        assert got[1] == tag[1], name
        assert got[2] == tag[2], name
        assert MARKER not in json.dumps(got[1])
    mentions, rejects, counts = tag
    # the directory: one name in two sub-directories is two notes, each named by its path
    assert {"a/note1", "b/note1", "c/deep/note2", "big", "crlf"} == mentions.keys()
    assert counts["characters"] > 10_000_000
    hidden = "hidden file name (starts with '.' or '_'; Spark and Hadoop skip such files)"
    separators = "the file name contains '||' or a control character (it would break the output lines)"
    assert rejects == sorted([
        (".hidden.txt", ".hidden", None, hidden), ("_under.txt", "_under", None, hidden),
        ("bad.txt", "bad", None, "not valid utf-8 (byte 15); pass --encoding for another encoding"),
        ("empty.txt", "empty", None, "empty file"), ("nul.txt", "nul", None, "binary file (NUL byte at byte 5)"),
        ("t ab.txt", "", None, separators), ("x||y.txt", "", None, separators)])


def test_a_note_that_crashes_its_python_worker_is_rejected_alone(spark, model_dir: Path, tmp_path: Path) -> None:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(hostile_inputs)
    texts = note_texts()
    rows = [(str(i), "Radiology", "", texts[i % len(texts)]) for i in range(1, 13)]
    rows[5] = ("6", "Radiology", "", texts[0] + " POISON")
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv(rows))
    out = tmp_path / "spark"
    run_spark(SparkOptions(str(csv_path), str(out)), spark, factory=TrippedFactory(model_dir, "POISON", True))
    import pyarrow.dataset as ds

    rejects = ds.dataset(str(out / "rejects"), partitioning="hive").to_table().to_pylist()
    assert [(r["note_id"], r["reason"], r["row"]) for r in rejects] == [("6", "worker died (signal 9)", 6)]
    expected, _ = tag_jsonl(csv_path, model_dir, tmp_path / "tag")
    assert read_parquet(out / "mentions") == {k: v for k, v in expected.items() if v and k != "6"}
    assert json.loads((out / "summary.json").read_text())["notes"] == 11


def test_corrupt_parquet_and_truncated_gzip_are_rejected_by_name_and_redone_once_repaired(
        spark, model_dir: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = note_texts()
    table = tmp_path / "table"
    table.mkdir()
    for k in range(3):
        pq.write_table(pa.table({"note_id": [f"{k}-{i}" for i in range(5)],
                                 "text": [texts[(k + i) % len(texts)] for i in range(5)]}),
                       table / f"part-{k}.parquet")
    whole = (table / "part-1.parquet").read_bytes()
    (table / "part-1.parquet").write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "p"
    opt = SparkOptions(str(table), str(out), model=str(model_dir))
    run_spark(opt, spark)
    import pyarrow.dataset as ds

    (reject,) = ds.dataset(str(out / "rejects"), partitioning="hive").to_table().to_pylist()
    assert reject["source"] == str(table / "part-1.parquet") and reject["note_id"] == ""
    assert reject["reason"].startswith("cannot read part-1.parquet (") and reject["reason"].endswith(
        "): 0 of its rows were read, the rest are lost")
    assert {k.split("-")[0] for k in read_parquet(out / "mentions")} == {"0", "2"}
    assert json.loads((out / "chunks" / "chunk=00000.json").read_text())["complete"] is False
    (table / "part-1.parquet").write_bytes(whole)  # repaired: the chunk is done again, whole
    run_spark(opt, spark)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["notes"], summary["rejected"], summary["chunks_kept"]) == (15, 0, 0)
    # a truncated gzip: the notes before the cut are tagged, the loss is one reject, as share-ner tag has it
    # (short notes: the cut comes within the lines read to check the header, which are read leniently too)
    rows = [(str(i), "Radiology", "", texts[i % len(texts)]) for i in range(1, 80)]
    gz = write(tmp_path / "NOTEEVENTS.csv.gz", mimic3_csv(rows), gz=True)
    gz.write_bytes(gz.read_bytes()[: gz.stat().st_size * 2 // 3])
    run_spark(SparkOptions(str(gz), str(tmp_path / "g"), model=str(model_dir)), spark)
    (reject,) = ds.dataset(str(tmp_path / "g" / "rejects"), partitioning="hive").to_table().to_pylist()
    assert re.fullmatch(r"the gzip stream ends early \(truncated file\) after row (\d+); later rows are lost",
                        reject["reason"])
    tagged = json.loads((tmp_path / "g" / "summary.json").read_text())["notes"]
    assert 0 < tagged < 79 and str(tagged) in reject["reason"]  # no row lost without a word
    _, tag_summary = tag_jsonl(gz, model_dir, tmp_path / "tag")
    assert (tag_summary["notes"], tag_summary["rejected"]) == (tagged, 1)
    assert (tmp_path / "tag" / "rejects.tsv").read_text().splitlines()[1].endswith("\t" + reject["reason"])


def test_a_second_run_into_the_same_output_stops_naming_the_first(spark, model_dir: Path, tmp_path: Path) -> None:
    from share_ner.batch.lock import output_lock

    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("1", "Radiology", "", NOTE_3)]))
    out = tmp_path / "out"
    with output_lock(out, "share-ner tag"):
        with pytest.raises(ShareNerError, match=r"another run is writing into this directory \(pid \d+ on .*"
                                                r"share-ner tag"):
            run_spark(SparkOptions(str(csv_path), str(out), model=str(model_dir)), spark)
    assert not (out / "run.json").exists()
