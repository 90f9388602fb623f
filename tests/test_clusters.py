"""Word clusters: building on a tiny generated corpus, the file format, the CLI."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from share_ner.cli import main
from share_ner.errors import InputError, ShareNerError
from share_ner.features.clusters import build_clusters, cluster_key, load_clusters, parse_cluster_ids, save_clusters

SYMPTOMS = ["fever", "cough", "rash", "nausea", "dyspnea"]
ORGANS = ["abdomen", "chest", "heart", "lungs", "skin"]
DRUGS = ["aspirin", "lisinopril", "metformin", "heparin", "insulin"]


def tiny_notes(n_notes: int = 30, seed: int = 1) -> list[str]:
    """Notes where words of one class share their contexts, and classes never share one."""
    rng = random.Random(seed)
    notes = []
    for _ in range(n_notes):
        lines = []
        for _ in range(12):
            kind = rng.randrange(3)
            if kind == 0:
                lines.append(f"patient reports {rng.choice(SYMPTOMS)} since yesterday .")
            elif kind == 1:
                lines.append(f"exam of the {rng.choice(ORGANS)} was unremarkable today .")
            else:
                lines.append(f"continue {rng.choice(DRUGS)} 10 mg daily .")
        notes.append("\n".join(lines) + "\n")
    return notes


@pytest.fixture(scope="module")
def tiny_clusters() -> tuple[dict[str, str], object]:
    return build_clusters(tiny_notes(), n_clusters=(3, 8), min_count=3, seed=0)


def test_words_sharing_contexts_share_a_cluster(tiny_clusters) -> None:
    clusters, _ = tiny_clusters
    ids = {w: parse_cluster_ids(clusters[w]) for w in SYMPTOMS + ORGANS + DRUGS}
    for level in ("cl3", "cl8"):
        for group in (SYMPTOMS, ORGANS, DRUGS):
            assert len({ids[w][level] for w in group}) == 1, (level, group)
    # Apart at the finer level only: the 3 coarse clusters also hold the 15 words of the templates, and k-means
    # may put two of the classes with them there (which ones moves with the BLAS library's rounding). Among 8 the
    # classes, 5 alike vectors each, are worth a cluster each.
    assert len({ids[SYMPTOMS[0]]["cl8"], ids[ORGANS[0]]["cl8"], ids[DRUGS[0]]["cl8"]}) == 3


def test_every_word_gets_one_id_per_granularity(tiny_clusters) -> None:
    clusters, report = tiny_clusters
    assert report.n_clusters == (3, 8)
    assert report.notes == 30 and report.words == len(clusters)
    for ids in clusters.values():
        parsed = parse_cluster_ids(ids)
        assert set(parsed) == {"cl3", "cl8"}
        assert 0 <= int(parsed["cl3"]) < 3 and 0 <= int(parsed["cl8"]) < 8
    # the numbers were normalized: "10" is clustered as "00"
    assert "00" in clusters and "10" not in clusters


def test_build_is_deterministic_for_a_seed(tiny_clusters) -> None:
    again, _ = build_clusters(tiny_notes(), n_clusters=(3, 8), min_count=3, seed=0)
    assert again == tiny_clusters[0]


def test_min_count_drops_rare_words() -> None:
    clusters, _ = build_clusters(tiny_notes() + ["zebra fever\n"], n_clusters=(2,), min_count=3)
    assert "zebra" not in clusters and "fever" in clusters


def test_too_little_text_is_a_clear_error() -> None:
    with pytest.raises(ShareNerError, match="too little text"):
        build_clusters(["one two three"], n_clusters=(2,), min_count=5)


def test_cluster_key() -> None:
    assert cluster_key("BP120/80") == "bp000/00"


def test_file_round_trip_and_errors(tmp_path: Path, tiny_clusters) -> None:
    clusters, _ = tiny_clusters
    path = tmp_path / "clusters.tsv"
    save_clusters(path, clusters)
    assert path.read_text(encoding="utf-8").splitlines()[0] == "word\tcluster_ids"
    assert load_clusters(path) == clusters

    bad = tmp_path / "bad.tsv"
    bad.write_text("word\tcluster_ids\nfever\t64:1\ncough\tbig\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.tsv:3: cluster_ids"):
        load_clusters(bad)
    bad.write_text("word\tcluster\nfever\t64:1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.tsv:1: a cluster file starts with the header"):
        load_clusters(bad)
    assert load_clusters(_brown(tmp_path)) == {"fever": "0110"}


def _brown(tmp_path: Path) -> Path:
    p = tmp_path / "brown.tsv"
    p.write_text("word\tcluster_ids\nfever\t0110\n", encoding="utf-8")
    return p


def test_cli_builds_a_cluster_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], tiny_clusters) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i, text in enumerate(tiny_notes()):
        (notes / f"note{i:02d}.txt").write_text(text, encoding="utf-8")
    (notes / "broken.txt").write_bytes(b"fever \xff\xfe cough\n")
    out = tmp_path / "clusters.tsv"
    code = main(["clusters", "build", str(notes), "--out", str(out), "--n-clusters", "3,8", "--min-count", "3", "--seed", "0"])
    captured = capsys.readouterr()
    assert code == 0
    assert "broken.txt" in captured.err and "not valid utf-8" in captured.err
    assert "30 notes" in captured.out and "1 notes skipped" in captured.out
    assert load_clusters(out) == tiny_clusters[0]


def test_cli_missing_notes_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["clusters", "build", str(tmp_path / "absent"), "--out", str(tmp_path / "c.tsv")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "absent" in err
