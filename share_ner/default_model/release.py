"""The packaged default model: the synthetic training data plus distant-labelled MTSamples notes.

``share-ner tag`` without ``--model`` loads the model packaged in ``share_ner/data/default_model/``: nothing is
trained or downloaded on a user's machine. It is made, deterministically, by::

    python -m share_ner.default_model.release --notes DIR

with ``DIR`` the MTSamples notes (transcribed sample reports, CC0; one ``<id>.txt`` per note). The notes
themselves are not packaged, only the model trained on them:

1. the seed model is trained on the project's synthetic data alone (:func:`share_ner.default_model.build.train_default`:
   the hand-annotated notes and the template documents);
2. the last :attr:`NotesConfig.count` notes by id are labelled by lexicon matching (:mod:`share_ner.training.distant`:
   HPO's phenotypic abnormalities, the project's lists, ICD-10-CM's short disorder names and the derived
   adjectives of one-word names, with the body sites and disorder adjectives before a match joined), and the seed model's confident mentions (every token's marginal
   at least :attr:`NotesConfig.min_confidence`) replace the labels they overlap: self-training, so that the
   notes teach the disorders the lists lack instead of teaching them as "no disorder";
3. of those notes only the sentences holding a label are kept (the others become spaces, offsets unchanged), and
   some are recased as the template documents are;
4. the tagger is trained on the synthetic data (counted :attr:`NotesConfig.synthetic_weight` times) plus those
   notes; the normalizer on the synthetic data alone, whose CUIs are annotated: a distant label's CUI is the
   lexicon's own and a self-trained mention has none.

``release.json`` beside the model records its key (:func:`share_ner.default_model.build.model_key`: the package
version, the code, the packaged data, ``hp.obo`` and the settings), the digest of the notes it was trained on and
the counts. :func:`share_ner.default_model.build.default_model_dir` uses the packaged model only while its key is
the running code's; otherwise it builds the synthetic-only model into the user cache and says so.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from share_ner.default_model.build import (
    DEFAULT_NOTES,
    DEFAULT_SYNTH,
    DEFAULT_TAGGER,
    PACKAGED_DIR,
    RELEASE_FILE,
    NotesConfig,
    model_key,
    train_default,
)
from share_ner.default_model.synthetic import SynthConfig, recase_docs, training_data
from share_ner.document import CUI_LESS, Document, Mention
from share_ner.errors import ShareNerError
from share_ner.inputs.files import read_notes
from share_ner.io import atomic_write_text
from share_ner.lexicons import default_lexicon
from share_ner.pipeline import Pipeline
from share_ner.text import split_sentences
from share_ner.training.distant import DistantConfig, confident_mentions, label_notes, relabel, repeated

# The files of a model directory that a rebuild must reproduce byte for byte (config.json also records the
# training's wall time and memory).
MODEL_FILES = ("model.crfsuite", "terms.tsv", "normalizer/gazetteer.tsv", "normalizer/lexicon.tsv",
               "normalizer/normalizer.json", RELEASE_FILE)


def release_notes(notes_dir: Path, count: int) -> dict[str, Document]:
    """The last ``count`` notes of ``notes_dir`` by id (the throughput benchmarks time the first ones)."""
    if not Path(notes_dir).is_dir():
        raise ShareNerError(f"{notes_dir}: not a directory of notes")
    raw = read_notes(notes_dir)
    if len(raw) < count:
        raise ShareNerError(f"{notes_dir}: {len(raw)} notes, the default model is trained on {count}")
    ids = sorted(raw)[len(raw) - count:]
    return {f"mts-{k}": Document(f"mts-{k}", raw[k].text) for k in ids}


def notes_digest(notes: Mapping[str, Document]) -> str:
    """A SHA-256 over the notes' ids and texts, in id order."""
    h = hashlib.sha256()
    for doc_id in sorted(notes):
        h.update(doc_id.encode("utf-8") + b"\0" + notes[doc_id].text.encode("utf-8") + b"\0")
    return h.hexdigest()


def labelled_sentences_only(doc: Document, labels: Sequence[Mention]) -> Document:
    """``doc`` with every sentence that holds no label blanked to spaces (line breaks and offsets unchanged)."""
    text = list(doc.text)
    starts = [m.spans[0][0] for m in labels]
    for sentence in split_sentences(doc):
        a, b = sentence.tokens[0].start, sentence.tokens[-1].end
        if not any(a <= s < b for s in starts):
            text[a:b] = [c if c in "\r\n" else " " for c in text[a:b]]
    return Document(doc.id, "".join(text))


def distant_notes(notes: Mapping[str, Document], seed_model: Path | None, synth: SynthConfig = DEFAULT_SYNTH,
                  min_confidence: float = DEFAULT_NOTES.min_confidence, config: DistantConfig = DistantConfig()
                  ) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """The notes as training data: lexicon labels, the confident mentions of ``seed_model`` in their place where
    they overlap (none when ``seed_model`` is None), labelled sentences only, recased as ``synth`` says. The labels
    take the derived adjectives when the default's lexicons do (``synth.derived_names``)."""
    config = replace(config, derived_names=synth.derived_names, disease_names=synth.disease_names)
    labels = label_notes(notes, default_lexicon(), config)
    if seed_model is not None:
        seed = Pipeline.load(seed_model)
        for doc_id, doc in notes.items():
            confident, _ = confident_mentions(seed, doc, min_confidence)
            labels[doc_id] = relabel(labels[doc_id], confident, lambda m: CUI_LESS)
    docs = recase_docs({k: labelled_sentences_only(d, labels[k]) for k, d in notes.items()}, synth)
    return docs, labels


def train_combined(docs: Mapping[str, Document], gold: Mapping[str, list[Mention]],
                   note_docs: Mapping[str, Document], labels: Mapping[str, list[Mention]], out: Path,
                   synth: SynthConfig = DEFAULT_SYNTH, synthetic_weight: int = DEFAULT_NOTES.synthetic_weight) -> Path:
    """The tagger trained on the synthetic data (``synthetic_weight`` times over) and the labelled notes; the
    normalizer on the synthetic data alone."""
    weighted_docs, weighted_gold = repeated(docs, gold, synthetic_weight)
    return train_default({**weighted_docs, **note_docs}, {**weighted_gold, **labels}, out, synth,
                         normalizer_data=(docs, gold))


def build_release(notes_dir: Path, out: Path, *, synth: SynthConfig = DEFAULT_SYNTH, notes: NotesConfig = DEFAULT_NOTES,
                  progress: Callable[[str], None] | None = None) -> Path:
    """Train the default model on the synthetic data plus ``notes.count`` notes of ``notes_dir`` into ``out``
    (replaced when complete), with its ``release.json``."""
    say = progress or (lambda msg: None)
    chosen = release_notes(Path(notes_dir), notes.count)
    docs, gold = training_data(synth)
    with tempfile.TemporaryDirectory(prefix="share-ner-release-") as tmp:
        say("training the seed model on the synthetic data")
        seed = train_default(docs, gold, Path(tmp) / "seed", synth) if notes.self_train else None
        say(f"labelling {len(chosen)} notes")
        note_docs, labels = distant_notes(chosen, seed, synth, notes.min_confidence)
        say("training the default model")
        built = train_combined(docs, gold, note_docs, labels, Path(out), synth, notes.synthetic_weight)
    release = {
        "key": model_key(synth, DEFAULT_TAGGER, notes),
        "notes": {"count": len(chosen), "first": min(chosen), "last": max(chosen), "sha256": notes_digest(chosen),
                  "characters": sum(len(d.text) for d in chosen.values()),
                  "labels": sum(map(len, labels.values()))},
        "settings": notes.to_dict(),
        "command": "python -m share_ner.default_model.release --notes DIR",
    }
    atomic_write_text(built / RELEASE_FILE, json.dumps(release, indent=2) + "\n")
    return built


def differing_files(a: Path, b: Path) -> list[str]:
    """The model files (:data:`MODEL_FILES`) whose bytes differ between model directories ``a`` and ``b``."""
    return [name for name in MODEL_FILES
            if not ((a / name).is_file() and (b / name).is_file()
                    and (a / name).read_bytes() == (b / name).read_bytes())]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m share_ner.default_model.release",
                                     description="Build the packaged default model from the MTSamples notes.")
    parser.add_argument("--notes", type=Path, required=True, help="the MTSamples notes, one <id>.txt per note")
    parser.add_argument("--out", type=Path, default=PACKAGED_DIR, help="model directory (default: the packaged one)")
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temporary directory and compare with --out instead of writing it")
    args = parser.parse_args(argv)

    def say(msg: str) -> None:
        print(f"share-ner: {msg}", file=sys.stderr, flush=True)

    try:
        if not args.check:
            build_release(args.notes, args.out, progress=say)
            say(f"wrote {args.out}")
            return 0
        with tempfile.TemporaryDirectory(prefix="share-ner-release-check-") as tmp:
            rebuilt = build_release(args.notes, Path(tmp) / "model", progress=say)
            differ = differing_files(rebuilt, args.out)
        if differ:
            say(f"{args.out}: differs from the rebuild in {', '.join(differ)}")
            return 1
        say(f"{args.out}: identical to the rebuild")
        return 0
    except ShareNerError as exc:
        print(f"share-ner: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
