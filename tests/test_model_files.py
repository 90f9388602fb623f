"""A model directory is untrusted input: every file is checked against the manifest written with the model (or,
for a model saved before the manifest, against what it recorded then), and the CRFsuite file's structure before
CRFsuite's C reader sees it. A bad model is one line naming the file and exit 2 in ``tag``, a ``ModelError`` in
the API and the spaCy component: never a signal or a traceback."""

from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import share_ner
from share_ner.batch.annotate import load_annotator
from share_ner.errors import ShareNerError
from share_ner.linking.normalizer import Normalizer
from share_ner.model import CHECKSUM_KEY, MANIFEST_KEY, ModelError, read_model_info, read_terms, write_config
from share_ner.tagging.weights import WeightsError, check_model_bytes


def _copy(model: Path, tmp_path: Path, manifest: bool = True) -> Path:
    out = tmp_path / "model"
    shutil.copytree(model, out)
    if not manifest:  # as saved before the manifest existed
        path = out / "config.json"
        data = json.loads(path.read_text())
        data.pop(MANIFEST_KEY)
        data.pop(CHECKSUM_KEY)
        path.write_text(json.dumps(data, indent=2))
    return out


def _cut(path: Path, share: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * share)])


def test_the_manifest_lists_every_file_with_its_size_and_hash(tiny_model: Path) -> None:
    data = json.loads((tiny_model / "config.json").read_text())
    files = data[MANIFEST_KEY]
    assert {"model.crfsuite", "terms.tsv", "normalizer/normalizer.json", "normalizer/lexicon.tsv"} <= set(files)
    assert "config.json" not in files
    crf = files["model.crfsuite"]
    assert crf["bytes"] == (tiny_model / "model.crfsuite").stat().st_size and len(crf["sha256"]) == 64


def test_a_truncated_crf_file_is_one_error_naming_it(tiny_model: Path, tmp_path: Path) -> None:
    model = _copy(tiny_model, tmp_path)
    crf = model / "model.crfsuite"
    original = crf.read_bytes()
    for k in range(16):
        crf.write_bytes(original[: len(original) * k // 16])
        with pytest.raises(ModelError) as err:
            share_ner.load(model)
        assert str(err.value).startswith(f"{crf}: ") and "\n" not in str(err.value)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "share_ner.cli", *args], capture_output=True, text=True, timeout=300)


def test_tag_with_a_truncated_crf_file_exits_2_without_a_signal(tiny_model: Path, tmp_path: Path) -> None:
    """In a child process: CRFsuite's reader, given the file, would end it with SIGSEGV."""
    model = _copy(tiny_model, tmp_path)
    _cut(model / "model.crfsuite", 0.5)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("He has chest pain.\n")
    for jobs in ("1", "2"):
        run = _cli("tag", str(notes), "--model", str(model), "--jobs", jobs, "--out", str(tmp_path / f"out{jobs}"))
        assert run.returncode == 2, run.stderr
        assert run.stderr.count("\n") == 1 and f"{model / 'model.crfsuite'}: " in run.stderr
    # sealed as it is now, the file reaches the structure check, which stops it before CRFsuite's reader
    config = (model / "config.json").read_bytes()
    run = _cli("model", "seal", str(model), "--force")
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "model.crfsuite: not a readable CRFsuite model (truncated" in run.stderr
    assert (model / "config.json").read_bytes() == config  # put back as it was


def test_a_model_saved_before_the_manifest_is_refused_until_sealed(tiny_model: Path, tmp_path: Path) -> None:
    model = _copy(tiny_model, tmp_path, manifest=False)
    with pytest.raises(ModelError, match=rf"^{model}: saved before share-ner checked the files of a model .*"
                                         rf"'share-ner model seal {model}'"):
        share_ner.load(model)
    run = _cli("model", "seal", str(model))
    assert run.returncode == 0, run.stderr
    assert share_ner.load(model)("He has chest pain.")
    assert _cli("model", "check", str(model)).returncode == 0
    run = _cli("model", "seal", str(model))
    assert run.returncode == 2 and "sealed already, and every file matches its manifest" in run.stderr
    _cut(model / "terms.tsv", 0.9)
    run = _cli("model", "seal", str(model))  # a sealed model that changed is not sealed again unless forced
    assert run.returncode == 2 and f"{model / 'terms.tsv'}: " in run.stderr
    assert _cli("model", "check", str(model)).returncode == 2


def _flip(data: bytes, rnd: random.Random, n: int) -> bytes:
    out = bytearray(data)
    for _ in range(n):
        out[rnd.randrange(len(out))] ^= 1 << rnd.randrange(8)
    return bytes(out)


FUZZ = """
import random, sys
import pycrfsuite
from share_ner.tagging.weights import WeightsError, check_model_bytes, read_weights

original = open(sys.argv[1], "rb").read()
names = [n.decode() for n in read_weights(original).attributes]
items = [{n: 1.0 for n in names[i:i + 30]} | {f"unseen{i}": 1.0} for i in range(0, len(names), 30)]
passed = 0
for seed in range(int(sys.argv[2])):
    rnd = random.Random(seed)
    data = bytearray(original)
    for _ in range(rnd.choice([1, 2, 8])):
        at = rnd.randrange(len(data))
        if rnd.random() < 0.5:
            data[at] ^= 1 << rnd.randrange(8)
        else:  # a whole offset or count replaced
            at &= ~3
            data[at:at + 4] = rnd.randrange(1 << 32).to_bytes(4, "little")
    data = bytes(data[:len(original)])
    try:
        check_model_bytes(data)
    except WeightsError:
        continue
    passed += 1
    tagger = pycrfsuite.Tagger()
    tagger.open_inmemory(data)
    tagger.labels()
    tagger.tag(items)
print("survived", passed)
"""


def test_a_crf_file_that_passes_the_structure_check_never_crashes_crfsuite(small_model: Path) -> None:
    """Random bytes and words flipped: each file either fails the check or is opened and tagged with by CRFsuite
    (in a child process, whose death by a signal would fail the test)."""
    run = subprocess.run([sys.executable, "-c", FUZZ, str(small_model / "model.crfsuite"), "300"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-500:]
    assert int(run.stdout.split()[-1]) > 0  # some corruptions are harmless to the structure (weights, names)


def test_the_structure_check_finds_what_a_cut_with_a_mended_size_leaves(small_model: Path) -> None:
    original = (small_model / "model.crfsuite").read_bytes()
    for k in range(1, 16):
        cut = bytearray(original[: len(original) * k // 16])
        struct.pack_into("<I", cut, 4, len(cut))  # the header's file size made to match
        with pytest.raises(WeightsError):
            check_model_bytes(bytes(cut))
    check_model_bytes(original)


@pytest.mark.parametrize("name", ["terms.tsv", "normalizer/lexicon.tsv", "normalizer/gazetteer.tsv"])
def test_a_truncated_file_is_refused_by_the_manifest(tiny_model: Path, tmp_path: Path, name: str) -> None:
    model = _copy(tiny_model, tmp_path)
    _cut(model / name, 0.5)
    with pytest.raises(ModelError, match=rf"^{model / name}: \d+ bytes where the model's manifest has \d+"):
        share_ner.load(model)


def test_a_flipped_byte_is_refused_by_the_manifest(tiny_model: Path, tmp_path: Path) -> None:
    model = _copy(tiny_model, tmp_path)
    crf = model / "model.crfsuite"
    data = bytearray(crf.read_bytes())
    data[len(data) // 3] ^= 0x10  # inside the weights: the structure is intact, a weight is not
    crf.write_bytes(bytes(data))
    with pytest.raises(ModelError, match=rf"^{crf}: its content differs from the model's manifest"):
        load_annotator(model)  # the loader of tag's workers and of Spark's daemon


def test_config_changed_after_saving_is_refused_by_its_checksum(tiny_model: Path, tmp_path: Path) -> None:
    model = _copy(tiny_model, tmp_path)
    path = model / "config.json"
    path.write_text(path.read_text().replace('"window_size": 2', '"window_size": 3'))
    with pytest.raises(ModelError, match=r"config.json: its content differs from its checksum"):
        read_model_info(model)


def test_terms_and_a_lexicon_copy_are_checked_against_what_the_model_recorded(tiny_model: Path,
                                                                             tmp_path: Path) -> None:
    """Besides the manifest: the row count config.json records for the terms, the hash normalizer.json records for
    its lexicon (a normalizer directory may be loaded alone, ``share-ner normalize --model``)."""
    model = _copy(tiny_model, tmp_path)
    rows = json.loads((model / "config.json").read_text())["terms"]["rows"]
    assert len(list(read_terms(model / "terms.tsv", rows))) == rows
    terms = model / "terms.tsv"
    lines = terms.read_text().splitlines(keepends=True)
    terms.write_text("".join(lines[: len(lines) // 2]))
    with pytest.raises(ModelError, match=rf"^{terms}: {len(lines) // 2 - 1} terms where config.json records {rows}"):
        list(read_terms(terms, rows))
    normalizer = model / "normalizer"
    meta = json.loads((normalizer / "normalizer.json").read_text())
    meta["lexicon"]["path"] = str(tmp_path / "elsewhere.tsv")  # the model moved to a machine without the original
    (normalizer / "normalizer.json").write_text(json.dumps(meta))
    Normalizer.load(normalizer)  # its copy is used
    lexicon = normalizer / "lexicon.tsv"
    lines = lexicon.read_text().splitlines(keepends=True)
    lexicon.write_text("".join(lines[: len(lines) // 2]))
    with pytest.raises(ModelError, match=rf"^{lexicon}: differs from the lexicon this normalizer was fitted with"):
        Normalizer.load(normalizer)


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.update(tagger=[1]), '"tagger" must be an object, not a list'),
    (lambda d: d.update(terms="yes"), '"terms" must be an object or null, not a string'),
    (lambda d: d.update(normalizer=1), '"normalizer" must be an object or null, not a number'),
    (lambda d: d["tagger"].update(c1="abc"), "tagger setting 'c1' must be a number, got 'abc'"),
    (lambda d: d["tagger"]["features"].update(window_size="2"), "'window_size' must be an integer"),
])
def test_config_values_of_the_wrong_type_are_one_error(tiny_model: Path, tmp_path: Path, edit, message) -> None:
    model = _copy(tiny_model, tmp_path)
    data = json.loads((model / "config.json").read_text())
    edit(data)
    write_config(model, data)  # a consistent checksum: the types themselves are checked
    with pytest.raises(ModelError) as err:
        share_ner.load(model)
    assert str(err.value).startswith(f"{model / 'config.json'}: ") and message in str(err.value)


@pytest.mark.parametrize("key,value,message", [
    ("threshold", "x", '"threshold" must be a number or null'),
    ("config", [1], '"config" must be an object'),
    ("gazetteer", "../../config.json", '"gazetteer" must name a file of the normalizer directory'),
    ("lexicon", 5, '"lexicon" must be an object'),
    ("ranker", 5, '"ranker" must be null or an object'),
])
def test_normalizer_settings_of_the_wrong_type_are_one_error(tiny_model: Path, tmp_path: Path, key, value,
                                                             message) -> None:
    model = _copy(tiny_model, tmp_path)
    path = model / "normalizer" / "normalizer.json"
    meta = json.loads(path.read_text())
    meta[key] = value
    path.write_text(json.dumps(meta))
    with pytest.raises(ShareNerError) as err:
        Normalizer.load(model / "normalizer")  # as the model's loader reads it, the manifest aside
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    with pytest.raises(ModelError, match="normalizer.json: "):
        share_ner.load(model)


def test_the_spacy_component_raises_the_models_error(tiny_model: Path, tmp_path: Path) -> None:
    spacy = pytest.importorskip("spacy")
    model = _copy(tiny_model, tmp_path)
    _cut(model / "model.crfsuite", 0.75)
    nlp = spacy.blank("en")
    with pytest.raises(ModelError, match="model.crfsuite: "):  # loaded when added
        nlp.add_pipe("share_ner", config={"model": str(model)})
