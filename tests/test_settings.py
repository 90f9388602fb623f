from __future__ import annotations

import pytest

from share_ner.errors import ShareNerError
from share_ner.features import FeatureConfig
from share_ner.linking.config import NormalizerConfig
from share_ner.settings import checked_settings


def test_every_settings_class_names_unknown_keys_and_allowed_ones():
    for cls, what in [(FeatureConfig, "feature"), (NormalizerConfig, "normalizer")]:
        with pytest.raises(ShareNerError) as err:
            cls.from_dict({"zzz": 1})
        assert str(err.value).startswith(f"unknown {what} setting(s) 'zzz'; allowed: ")


def test_a_list_is_not_a_settings_object():
    with pytest.raises(ShareNerError, match="feature settings: expected a JSON object, got list"):
        checked_settings(FeatureConfig, [1, 2], "feature")
