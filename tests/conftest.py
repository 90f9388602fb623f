from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import settings

# In CI the property tests draw the same examples on every run and keep no example database (.hypothesis/, git-ignored),
# so a landing never hangs on luck; locally they keep exploring new examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixtures"
TAGGER_FIXTURES = FIXTURES / "tagger"
SHARED_DATA = TESTS.parent.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def private_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test's ``SHARE_NER_CACHE`` (and ``XDG_CACHE_HOME``): never the user's ``~/.cache``. It lies in pytest's
    own cache directory, kept between runs, so the default model and the HPO index are built once, not per run (a
    model key or index hash that changes gives a new entry); a test that needs a cold cache sets its own."""
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    directory = cache.mkdir("share-ner-cache") if cache is not None else tmp_path_factory.mktemp("share-ner-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHARE_NER_CACHE", str(directory))
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield Path(directory)


def _train_small(out: Path, fit_normalizer: bool) -> Path:
    from share_ner.formats.share import read_pipe_dir
    from share_ner.inputs.files import read_notes
    from share_ner.training import train_model

    docs, gold = read_notes(TAGGER_FIXTURES / "text"), read_pipe_dir(TAGGER_FIXTURES / "gold")
    return train_model(docs, gold, out, fit_normalizer=fit_normalizer)


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tagger-only model trained on the six tagger fixture notes, default settings (quick)."""
    return _train_small(tmp_path_factory.mktemp("small-model") / "m", fit_normalizer=False)


@pytest.fixture(scope="session")
def small_model_with_normalizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same notes and settings, with the normalizer fitted (no lexicon: the notes' gazetteer alone)."""
    return _train_small(tmp_path_factory.mktemp("small-model-normalizer") / "m", fit_normalizer=True)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def shared_data() -> Path:
    if not (SHARED_DATA / "README.md").exists():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model with a normalizer, trained in about a second on the six tagger fixture notes and their lexicon."""
    from share_ner.formats.share import read_pipe_dir
    from share_ner.inputs.files import read_notes
    from share_ner.lexicons.loader import load_lexicon
    from share_ner.tagging.config import TaggerConfig
    from share_ner.training import train_model

    tagger = FIXTURES / "tagger"
    out = tmp_path_factory.mktemp("tiny_model") / "model"
    config = TaggerConfig(max_iterations=60, c1=0.0, c2=0.01)
    return train_model(read_notes(tagger / "text"), read_pipe_dir(tagger / "gold"), out, config,
                       lexicon=load_lexicon(tagger / "lexicon.tsv"))
