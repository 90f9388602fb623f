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
