"""Closed-class cues in every language :mod:`memstore.extraction.language` claims, read
through the rules that use them (:mod:`memstore.extraction.statements`).

Each language gets one sentence of each kind, written for this test: a stated preference, an
identity fact, a rule that opens with a limit, a rule stated as an obligation, a decision, a
request, a whole turn of chatter, a relative day, and a plain statement that is none of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from memstore.extraction.language import (
    CUES,
    LANGUAGES,
    RELATIVE_DAYS,
    folded,
    has_cue,
    is_chatter_text,
    opens_with,
    relative_days,
)
from memstore.extraction.statements import (
    is_chatter,
    is_constraint,
    is_first_person,
    is_question,
    is_request,
    score,
    statement_cue,
)


@dataclass(frozen=True)
class Said:
    """One language's sentences, one of each kind."""

    preference: str
    identity: str
    opener: str  # a rule that opens with a limit ("never ...")
    obligation: str  # a rule stated as an obligation anywhere in it ("... must ...")
    decision: str
    request: str
    chatter: str
    relative: tuple[str, str, int]  # a sentence, its relative-day word, the offset in days
    plain: str  # a statement that is none of the above


SAID = {
    "en": Said(
        preference="I prefer dark mode in every editor.",
        identity="My name is Dana Kowalski.",
        opener="Never push to the release branch on Fridays.",
        obligation="Every invoice you must file under the client's number.",
        decision="Let's go with the blue theme for the landing page.",
        request="Please convert the quarterly report to PDF.",
        chatter="Ok, thanks a lot!",
        relative=("I renewed the parking permit yesterday.", "yesterday", -1),
        plain="The train leaves the station at nine.",
    ),
    "ru": Said(
        preference="Я предпочитаю чай без сахара по утрам.",
        identity="Меня зовут Алексей Петров.",
        opener="Никогда не удаляй резервные копии базы.",
        obligation="Публиковать отчёт до пятницы нельзя.",
        decision="Мы решили взять тариф за 900 рублей.",
        request="Пожалуйста, переведи этот договор на английский.",
        chatter="Спасибо, понятно.",
        relative=("Я отправил письмо вчера.", "вчера", -1),
        plain="Поезд отправляется со станции в девять.",
    ),
    "zh": Said(
        preference="我喜欢用深色主题写代码。",
        identity="我叫王小明，住在杭州。",
        opener="不要在周五发布新版本。",
        obligation="密码必须包含至少十二个字符。",
        decision="我们决定用红色的封面。",
        request="请把这份报告翻译成英文。",
        chatter="好的，谢谢",
        relative=("我昨天交了报告。", "昨天", -1),
        plain="火车九点从车站出发。",
    ),
    "ja": Said(
        preference="私は紅茶が好きです。",
        identity="私の名前は田中です。",
        opener="決して本番のデータを消さないこと。",
        obligation="毎日ログを確認しなければならない。",
        decision="青い表紙にします。",
        request="この文章を英語に翻訳してください。",
        chatter="ありがとうございます",
        relative=("昨日メールを送りました。", "昨日", -1),
        plain="電車は九時に駅を出ます。",
    ),
    "es": Said(
        preference="Prefiero las reuniones cortas.",
        identity="Me llamo Lucía Fernández.",
        opener="Nunca borres la carpeta de facturas.",
        obligation="El informe del trimestre tienes que enviarlo antes del lunes.",
        decision="Decidimos reservar el hotel cerca de la playa.",
        request="Por favor traduce este correo al inglés.",
        chatter="Hola, gracias",
        relative=("Ayer compré los billetes.", "Ayer", -1),
        plain="El tren sale de la estación a las nueve.",
    ),
    "de": Said(
        preference="Ich bevorzuge kurze Antworten ohne Emojis.",
        identity="Ich heiße Jonas Becker.",
        opener="Niemals das Passwort per E-Mail schicken.",
        obligation="Der Bericht muss bis Freitag fertig sein.",
        decision="Wir nehmen das Angebot für 450 Euro.",
        request="Bitte übersetze den Vertrag ins Englische.",
        chatter="Danke, alles klar",
        relative=("Gestern habe ich den Antrag abgeschickt.", "Gestern", -1),
        plain="Der Zug fährt um neun vom Bahnhof ab.",
    ),
    "fr": Said(
        preference="Je préfère les réponses courtes et précises.",
        identity="Je m'appelle Camille Laurent.",
        opener="Jamais de réunion le mercredi après-midi.",
        obligation="Le rapport doit être envoyé avant lundi.",
        decision="Nous avons décidé de partir en train.",
        request="S'il vous plaît, traduisez ce message en anglais.",
        chatter="Merci beaucoup",
        relative=("Hier j'ai envoyé le dossier.", "Hier", -1),
        plain="Le train quitte la gare à neuf heures.",
    ),
}


def test_every_claimed_language_has_its_sentences_here() -> None:
    assert set(SAID) == set(LANGUAGES)
    for category, by_language in CUES.items():
        if category != "question_end":  # only Chinese and Japanese end questions with particles
            assert set(by_language) == set(LANGUAGES), category
    assert set(RELATIVE_DAYS) == set(LANGUAGES)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_stated_preference(language: str) -> None:
    assert statement_cue(SAID[language].preference) == "preference"


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_identity_fact(language: str) -> None:
    assert statement_cue(SAID[language].identity) == "identity"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_rule_that_opens_with_a_limit(language: str) -> None:
    said = SAID[language].opener
    assert opens_with("constraint_opener", said)
    assert is_constraint(said)
    assert not is_request(said)  # a rule is a constraint, not an instruction


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_rule_stated_as_an_obligation(language: str) -> None:
    said = SAID[language].obligation
    assert has_cue("obligation", said)
    assert is_constraint(said)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_decision(language: str) -> None:
    assert statement_cue(SAID[language].decision) == "decision"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_request(language: str) -> None:
    said = SAID[language].request
    assert is_request(said)
    assert not is_constraint(said) and statement_cue(said) == ""


@pytest.mark.parametrize("language", LANGUAGES)
def test_chatter_is_worth_nothing(language: str) -> None:
    said = SAID[language].chatter
    assert is_chatter_text(said) and is_chatter(said)
    assert score(said) == 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_relative_day_is_found_with_its_offset(language: str) -> None:
    sentence, word, offset = SAID[language].relative
    ((start, end, days),) = relative_days(sentence)
    assert sentence[start:end] == word and days == offset


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_plain_statement_is_none_of_them(language: str) -> None:
    said = SAID[language].plain
    assert statement_cue(said) == ""
    assert not is_constraint(said) and not is_request(said)
    assert not is_chatter(said) and score(said) > 0
    assert not is_question(said) and not relative_days(said)


@pytest.mark.parametrize("language", ["en", "ru", "zh", "ja", "de", "fr"])
def test_the_speaker_speaking_of_themselves(language: str) -> None:
    # Spanish drops the pronoun ("Prefiero ..."): its preference cue says it alone.
    assert is_first_person(SAID[language].preference)
    assert not is_first_person(SAID[language].plain)


@pytest.mark.parametrize(
    ("sentence", "question"),
    [
        ("你明天来吗", True),
        ("明天会下雨吗。", True),
        ("你在看什么呢", True),
        ("我明天去北京。", False),
        ("東京に行きますか。", True),
        ("これは本当ですか", True),
        ("これは本です。", False),
        ("Is the build green?", True),
        ("Сборка зелёная？", True),  # a full-width question mark
        ("The build is green.", False),
    ],
)
def test_a_question_ends_with_a_mark_or_a_particle(sentence: str, question: bool) -> None:
    assert is_question(sentence) is question


@pytest.mark.parametrize(
    "sentence",
    [
        "You must have hiked the whole ridge that day.",  # a guess about the past
        "We must have been exhausted after the move.",
        "I must say the dumplings were excellent.",  # the speaker of themselves
        "Should we never deploy on Fridays?",  # a question sets no rule
    ],
)
def test_what_looks_like_a_rule_and_is_not(sentence: str) -> None:
    assert not is_constraint(sentence)


def test_a_rule_may_open_after_a_lead_word_and_an_obligation_binds_others() -> None:
    assert is_constraint("Also, never log full card numbers.")
    assert is_constraint("Please never log full card numbers.")
    assert is_constraint("You must have a valid ticket to board the ferry.")  # not a guess
    assert is_constraint("И никогда не звони после десяти.")
    assert not is_request("Please never log full card numbers.")  # a rule, not a task


def test_a_rule_after_a_lines_label_is_still_a_rule() -> None:
    # A numbered note or a transcript's step ("Turn 3: never ...") opens with its label.
    assert is_constraint("Turn 3: never deploy the billing service on Fridays.")
    assert is_constraint("Step 2: always tag the release before the rollout.")


def test_a_request_says_enough_to_be_a_task() -> None:
    assert not is_request("Please, thanks.")
    assert not is_request("Can you?")
    assert is_request("Could you rename the staging bucket to assets-eu.")


def test_cues_are_matched_as_whole_words_in_spaced_languages() -> None:
    assert not has_cue("preference", "The likelihood of rain is low.")  # "like" inside a word
    assert not has_cue("identity", "Mycelium grows under the floorboards.")
    assert has_cue("preference", "Honestly I LIKE the old logo more.")  # case folded


def test_cues_match_whatever_the_apostrophe_and_width() -> None:
    assert statement_cue("I’d rather take the night train.") == "preference"
    assert folded("ＡＢＣ’s") == "abc's"


@pytest.mark.parametrize(
    "sentence",
    [
        pytest.param("我昨天提交了签证申请。", id="application"),  # 申请, not 请 "please"
        pytest.param("他邀请我们周六去吃饭。", id="invitation"),  # 邀请
    ],
)
def test_a_request_cue_inside_a_chinese_word_is_no_request(sentence: str) -> None:
    assert not is_request(sentence)


def test_the_spanish_morning_is_not_tomorrow() -> None:
    # "mañana" is tomorrow alone, but "esta mañana" is this morning and "por la mañana" in
    # the morning: neither says a day after the one it was said on.
    for sentence in ("Esta mañana llamé al banco.", "Prefiero las reuniones por la mañana."):
        assert all(offset != 1 for _, _, offset in relative_days(sentence)), sentence
