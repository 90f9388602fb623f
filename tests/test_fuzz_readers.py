"""Every reader, fed random and mutated inputs: a parsed result or the project's one-line ShareNerError, never
another exception (fixed seed, bounded example counts: the same examples on every run)."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mimic_csv import NOTE_1, NOTE_2, mimic3_csv, mimic4_csv

from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.formats import read_annotations
from share_ner.formats.brat import format_brat, read_brat
from share_ner.formats.jsonl import format_record, read_jsonl
from share_ner.formats.share import read_pipe
from share_ner.inputs.files import read_note, read_notes, walk_note_files
from share_ner.inputs.mimic import iter_csv_notes, read_header
from share_ner.lexicons.loader import load_lexicon
from share_ner.lexicons.umls import UmlsFilter, iter_umls_entries

FIXTURES = Path(__file__).parent / "fixtures"
FUZZ = settings(derandomize=True, max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Bytes that mean something to one reader or another: separators, quotes, line breaks, brackets, numbers, bad UTF-8.
TRICKY = [b"|", b"||", b"\t", b"\n", b"\r\n", b"\r", b'"', b'""', b",", b"\x00", b"\xff", b"\xc3", b"\xef\xbb\xbf",
          b"0", b"-1", b"99999999999999999999", b"1e309", b"{", b"}", b"[", b"]", b":", b";", b" ", b"T1", b"#1",
          b"null", b"true", b"CUI-less", b"[**", b"**]", b"1,2,3,4,5,6,7,8,9,10,"]


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` after a few random edits: insertions of tricky or random bytes, deletions, duplications, cuts."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "truncate"]))
        pos = draw(st.integers(0, len(data)))
        if op == "insert":
            data[pos:pos] = draw(st.sampled_from(TRICKY) | st.binary(min_size=1, max_size=6))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 30))]
        elif op == "replace":
            data[pos:pos + 1] = draw(st.sampled_from(TRICKY))
        elif op == "duplicate":
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 60))]
        else:
            del data[pos:]
    return bytes(data)


def inputs(seed: bytes) -> st.SearchStrategy[bytes]:
    """Mutations of a valid input, plus bytes and text with no relation to it."""
    return st.one_of(mutated(seed), mutated(seed), st.binary(max_size=300),
                     st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))


def parses_or_fails_cleanly(read: Callable[[], object]) -> None:
    try:
        read()
    except ShareNerError as exc:
        assert "\n" not in str(exc) and str(exc)


def in_file(name: str, data: bytes, check: Callable[[Path], object]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        parses_or_fails_cleanly(lambda: check(path))


DOC = Document("note01", (FIXTURES / "tagger/text/note01.txt").read_text(encoding="utf-8"))
PIPE = (FIXTURES / "tagger/gold/note01.pipe.txt").read_bytes()
MENTIONS = read_pipe(FIXTURES / "tagger/gold/note01.pipe.txt")


@FUZZ
@given(inputs(PIPE))
def test_share_pipe(data: bytes) -> None:
    in_file("note01.pipe.txt", data, read_pipe)
    in_file("note01.pipe.txt", data, lambda p: read_annotations(p.parent, {"note01": DOC}))


@FUZZ
@given(inputs(format_brat(MENTIONS, DOC.text).encode()))
def test_brat(data: bytes) -> None:
    in_file("note01.ann", data, lambda p: read_brat(p, "note01"))
    in_file("note01.ann", data, lambda p: read_annotations(p.parent, {"note01": DOC}))


@FUZZ
@given(inputs((format_record("note01", MENTIONS, DOC.text) + "\n"
               + format_record("n2", [Mention("n2", ((0, 4),))], "pain") + "\n").encode()))
def test_jsonl(data: bytes) -> None:
    in_file("pred.jsonl", data, read_jsonl)
    in_file("pred.jsonl", data, lambda p: read_annotations(p, {"note01": DOC}))


CSV_III = mimic3_csv([("174", "Discharge summary", "", NOTE_1), ("175", "Nursing", "1", NOTE_2),
                      ("176", "Radiology", "", 'He said "no".\n12,3,4')]).encode()
CSV_IV = mimic4_csv([("10000032-DS-21", "DS", NOTE_2), ("10000032-RR-14", "RR", NOTE_1)]).encode()


def read_csv(path: Path) -> None:
    read_header(path)
    for rec in iter_csv_notes(path):
        assert (rec.doc is None) != (rec.reason is None)


@FUZZ
@given(inputs(CSV_III) | inputs(CSV_IV))
def test_mimic_csv(data: bytes) -> None:
    in_file("NOTEEVENTS.csv", data, read_csv)


@FUZZ
@given(st.one_of(mutated(gzip.compress(CSV_IV)), st.builds(gzip.compress, inputs(CSV_IV))))
def test_mimic_csv_gzipped(data: bytes) -> None:
    in_file("discharge.csv.gz", data, read_csv)


@FUZZ
@given(inputs(DOC.text.encode()))
def test_note_files(data: bytes) -> None:
    in_file("note01.txt", data, lambda p: read_note(p, reject_empty=True))
    in_file("note01.txt", data, lambda p: (list(walk_note_files(p.parent)), read_notes(p.parent)))


LEXICON = (FIXTURES / "tagger/lexicon.tsv").read_bytes()


@FUZZ
@given(data=inputs(LEXICON))
def test_lexicon_tsv(data: bytes, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    in_file("lexicon.tsv", data, lambda p: load_lexicon(p).entries)


MRCONSO = (FIXTURES / "umls/META/MRCONSO.RRF").read_bytes()
MRSTY = (FIXTURES / "umls/META/MRSTY.RRF").read_bytes()


@FUZZ
@given(inputs(MRCONSO), inputs(MRSTY), st.booleans())
def test_umls_rrf(conso: bytes, sty: bytes, gzipped: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp)
        suffix = ".gz" if gzipped else ""
        (meta / f"MRCONSO.RRF{suffix}").write_bytes(gzip.compress(conso) if gzipped else conso)
        (meta / "MRSTY.RRF").write_bytes(sty)
        parses_or_fails_cleanly(lambda: list(iter_umls_entries(meta, UmlsFilter.disorders())))
