"""How pydantic-ai's free-form names are stored: every string round-trips, no two share a key,
ordinary ids are stored as they are, and long ones by a digest of bounded length."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.core.conversation_keys import (
    DIGEST_PREFIX,
    MAX_KEY_CHARS,
    escape,
    key_of,
    original,
    stored_name,
    unescape,
)
from memstore.errors import ValidationError

#: Any code point, lone surrogates and NUL included: what a Python string may hold.
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=700)


@given(ANY_TEXT)
def test_every_string_round_trips(value: str) -> None:
    name = stored_name(value, "id")
    assert original(name.key, name.name) == value
    assert unescape(escape(value)) == value


@given(ANY_TEXT, ANY_TEXT)
def test_no_two_strings_share_a_key(a: str, b: str) -> None:
    if a != b:
        assert key_of(a, "id") != key_of(b, "id")


@given(ANY_TEXT)
def test_keys_are_storable_text_of_bounded_length(value: str) -> None:
    key = key_of(value, "id")
    assert "\x00" not in key and len(key) <= MAX_KEY_CHARS
    key.encode("utf-8")  # no lone surrogate left


@pytest.mark.parametrize(
    "value", ["01a2490d-9297-77be-8360-ed1850422700", "user:alice", "chat 1", "ü日本🙂", ""]
)
def test_ordinary_ids_are_stored_as_they_are(value: str) -> None:
    assert stored_name(value, "id").key == value and stored_name(value, "id").name is None


def test_what_a_database_refuses_is_escaped_and_long_names_become_digests() -> None:
    assert escape("a\\b\x00c\ud800") == "a\\\\b\\0c\\ud800"
    long = stored_name("x" * 2000, "id")
    assert long.key.startswith(DIGEST_PREFIX) and long.name == "x" * 2000
    assert not escape("\\#abc").startswith(DIGEST_PREFIX)


def test_a_name_that_is_not_a_string_is_refused_by_its_field() -> None:
    with pytest.raises(ValidationError) as raised:
        key_of(42, "conversation_id")
    assert raised.value.field == "conversation_id"
