"""Words of any language (:mod:`memstore.core.words`): the splitter extraction and search
share, and the units Chinese and Japanese runs are counted and searched in."""

from __future__ import annotations

from memstore.core.words import (
    has_unspaced,
    normalize,
    search_text,
    search_units,
    units,
    word_units,
    words,
)


def test_words_of_any_script_normalized_and_case_folded() -> None:
    assert words("Ёлка зелёная, naïve Café; Ωμέγα 2024 ١٢٣") == [
        "ёлка",
        "зелёная",
        "naïve",
        "café",
        "ωμέγα",
        "2024",
        "١٢٣",
    ]
    assert words("Ｒｅｆ ＡＢ１２ Straße") == ["ref", "ab12", "strasse"]  # full width, ß folded
    assert normalize("ＡＢＣ") == "abc"


def test_underscore_and_punctuation_separate_words() -> None:
    assert words("parse_config(v2.3) — ok!") == ["parse", "config", "v2", "3", "ok"]
    assert words("...") == [] and words("") == []


def test_which_scripts_are_unspaced() -> None:
    assert has_unspaced("花生") and has_unspaced("ひらがな") and has_unspaced("カタカナー")
    assert has_unspaced("人々")  # the iteration mark
    assert not has_unspaced("한국어 문장")  # Korean writes spaces
    assert not has_unspaced("ภาษาไทย")  # Thai is unspaced but searched by run
    assert not has_unspaced("Kazan")


def test_a_run_is_one_word_and_counts_in_character_pairs() -> None:
    assert words("我女儿叫小雨，她对花生过敏。") == ["我女儿叫小雨", "她对花生过敏"]
    assert units("她对花生过敏") == ("她对", "对花", "花生", "生过", "过敏")
    assert units("雨") == ("雨",)
    assert units("iphone手机") == ("iphone", "手机")  # the spaced part stays whole
    assert units("a東京b") == ("a", "東京", "b")
    assert units("ภาษาไทย") == ("ภาษาไทย",)
    assert word_units("我女儿 likes 花生") == ["我女", "女儿", "likes", "花生"]


def test_a_query_run_is_searched_as_the_phrase_of_its_characters() -> None:
    assert search_units("花生") == ("花", "生")
    assert search_units("iphone手机") == ("iphone", "手", "机")
    assert search_units("kazan") == ("kazan",)


def test_the_index_text_adds_each_run_apart_on_a_line_of_its_own() -> None:
    assert search_text("plain text, nothing to add") == "plain text, nothing to add"
    assert search_text("东京 and 大阪") == "东京 and 大阪\n东 京 大 阪"
    indexed = search_text("小雨对花生过敏")
    assert indexed.splitlines() == ["小雨对花生过敏", "小 雨 对 花 生 过 敏"]
