from __future__ import annotations

from pathlib import Path

import pytest

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
