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


@pytest.mark.parametrize("key,value,want", [("top_k", "x", "an integer"), ("top_k", True, "an integer"),
                                            ("fuzz_weight", "0.3", "a number"), ("dense", 1, "true or false"),
                                            ("fuzz_scorer", 5, "a string")])
def test_a_value_of_another_type_is_one_error_naming_the_setting(key, value, want) -> None:
    with pytest.raises(ShareNerError, match=f"normalizer setting '{key}' must be {want}, got "):
        NormalizerConfig.from_dict({key: value})


def test_numbers_and_nulls_where_the_field_allows_them() -> None:
    assert NormalizerConfig.from_dict({"fuzz_weight": 1}).fuzz_weight == 1
    from share_ner.tagging.config import TaggerConfig

    assert TaggerConfig.from_dict({"max_iterations": None}).max_iterations is None
