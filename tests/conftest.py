from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# In CI the property tests draw the same examples on every run, so a landing never hangs on luck;
# locally they keep exploring new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixtures"
SHARED_DATA = TESTS.parent.parent / "shared" / "data"


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
    from share_ner.config import TaggerConfig
    from share_ner.formats.share import read_pipe_dir
    from share_ner.lexicons.lexicon import load_lexicon
    from share_ner.notes import read_notes
    from share_ner.tagger import train_model

    tagger = FIXTURES / "tagger"
    out = tmp_path_factory.mktemp("tiny_model") / "model"
    config = TaggerConfig(max_iterations=60, c1=0.0, c2=0.01)
    return train_model(read_notes(tagger / "text"), read_pipe_dir(tagger / "gold"), out, config,
                       lexicon=load_lexicon(tagger / "lexicon.tsv"))
