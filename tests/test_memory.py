"""What keeps `share-ner tag`'s memory down: loading a model and its lexicon index imports no scikit-learn (only
building an index or fitting note contexts does), and the index's own 3-gram analyzer is scikit-learn's."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys

from share_ner.lexicons import default_lexicon
from share_ner.lexicons.index import build_index, char_wb_trigrams, make_vectorizer


def test_the_trigram_analyzer_is_scikit_learns():
    theirs = make_vectorizer().build_analyzer()
    rng = random.Random(11)
    alphabet = "ab c\t\n  xé-ß'"
    texts = ["", " ", "a", "ab", "abc", "  heart   attack ", "naïve\u00a0ß", "x" * 40]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(2000)]
    for text in texts:
        assert char_wb_trigrams(text) == theirs(text), repr(text)


def test_loading_an_index_and_the_tag_command_import_no_scikit_learn(tmp_path):
    index = build_index(default_lexicon())
    path = tmp_path / "index.pkl"
    path.write_bytes(pickle.dumps(index))
    code = (
        "import pickle, sys\n"
        "import share_ner.commands.tag, share_ner.pipeline, share_ner.linking.normalizer, share_ner.batch.runner\n"
        f"index = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "assert index.vectors(['heart attack']).nnz > 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'pandas')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
