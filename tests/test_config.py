"""Settings: every bad value, of any type, given directly or through the environment, is a
ConfigurationError that names the setting (or the variable that fed it)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from badinput import check_error

from memstore import ConfigurationError, Settings

BAD_SETTINGS = [
    ("max_item_bytes", {"max_item_bytes": 0}),
    ("max_item_bytes", {"max_item_bytes": True}),
    ("max_item_bytes", {"max_item_bytes": 1.5}),
    ("busy_timeout_s", {"busy_timeout_s": 0}),
    ("busy_timeout_s", {"busy_timeout_s": -1.0}),
    ("busy_timeout_s", {"busy_timeout_s": "5"}),
    ("summarizer_timeout_s", {"summarizer_timeout_s": 0}),
    ("lease_s", {"lease_s": False}),
    ("sqlite_synchronous", {"sqlite_synchronous": "SOMETIMES"}),
    ("busy_timeout_s", {"busy_timeout_s": float("nan")}),
]


@pytest.mark.parametrize(("field", "kwargs"), BAD_SETTINGS, ids=[f"{k}" for _, k in BAD_SETTINGS])
def test_invalid_settings(field: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings(**kwargs)
    check_error(info.value, ConfigurationError, field)


#: Values of every type, for every setting: each wrong one is a ConfigurationError naming the
#: setting, never an AttributeError or TypeError from inside the check.
ANY_TYPE: list[object] = [None, True, 1, 1.5, float("nan"), "FULL", b"FULL", [], {}, object()]
SETTING_FIELDS = [field.name for field in dataclasses.fields(Settings)]


@pytest.mark.parametrize("field", SETTING_FIELDS)
@pytest.mark.parametrize("value", ANY_TYPE, ids=lambda v: type(v).__name__)
def test_a_setting_of_any_wrong_type_names_the_setting(field: str, value: object) -> None:
    try:
        settings = Settings(**{field: value})  # type: ignore[arg-type]
    except ConfigurationError as error:
        check_error(error, ConfigurationError, field)
    else:  # accepted: then it is a value of the setting's own kind
        assert type(getattr(settings, field)) is type(getattr(Settings(), field))


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"MEMSTORE_MAX_ITEM_BYTES": "big"}, "MEMSTORE_MAX_ITEM_BYTES"),
        ({"MEMSTORE_BUSY_TIMEOUT": "soon"}, "MEMSTORE_BUSY_TIMEOUT"),
        ({"MEMSTORE_BUSY_TIMEOUT": "-1"}, "MEMSTORE_BUSY_TIMEOUT"),
        ({"MEMSTORE_LEASE_SECONDS": "0"}, "MEMSTORE_LEASE_SECONDS"),
        ({"MEMSTORE_SUMMARIZER_TIMEOUT": "never"}, "MEMSTORE_SUMMARIZER_TIMEOUT"),
    ],
)
def test_invalid_settings_from_env(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env(env)
    check_error(info.value, ConfigurationError, var)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"MEMSTORE_BUSY_TIMEOUT": "-1"}, "positive"),
        ({"MEMSTORE_LEASE_SECONDS": "never"}, "must be a number"),
    ],
)
def test_a_number_out_of_range_is_not_called_not_a_number(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        Settings.from_env(env)


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"MEMSTORE_MAX_ITEM_BYTES": "0"}, "MEMSTORE_MAX_ITEM_BYTES"),
        ({"MEMSTORE_SQLITE_SYNCHRONOUS": "fast"}, "MEMSTORE_SQLITE_SYNCHRONOUS"),
    ],
)
def test_out_of_range_settings_from_env_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env(env)
    assert var in str(info.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("busy_timeout_s", float("nan")),
        ("busy_timeout_s", float("inf")),
        ("lease_s", float("nan")),
        ("summarizer_timeout_s", float("nan")),
    ],
)
def test_non_finite_settings_are_rejected(field: str, value: float) -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings(**{field: value})
    check_error(info.value, ConfigurationError, field)
