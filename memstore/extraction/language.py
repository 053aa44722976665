"""Closed-class cues, per language: the few words that say what kind of statement a line is.

What a summary or a long-term entry keeps is decided by structure (kind, role, specifics,
what a line adds; :mod:`memstore.extraction.statements`), never by topic. A handful of
*closed* word classes still carry meaning no structure shows, and each is listed here for
every language it claims, and tested in each:

* ``first_person``: the speaker's pronouns (``I``, ``мой``, ``我``): a statement about oneself;
* ``function``: articles, prepositions, conjunctions, auxiliaries, pronouns, ``now``: words
  that say nothing on their own (a line adds what is left; ``now`` marks a restatement);
* ``chatter``: greetings, thanks and acknowledgements that make up a whole turn;
* ``preference``: ``I prefer``, ``мне нравится``, ``我喜欢``: a stated preference;
* ``identity``: ``my name is``, ``я живу``, ``我叫``, and ``my`` with a kinship term: who the
  speaker is and who their people are;
* ``constraint_opener``: a sentence that opens with ``always``, ``never``, ``только``,
  ``不要`` sets a rule; ``obligation``: ``must``, ``нельзя``, ``必须`` anywhere does too;
* ``decision``: ``let's go with``, ``решили``, ``决定``: a choice made;
* ``request``: ``please``, ``can you``, ``пожалуйста``, ``请``: an instruction;
* ``relative_day``: ``yesterday`` and its kind, with their offset in days (``mañana`` and
  ``morgen`` after an article or ``esta``/``heute`` are a morning, not tomorrow);
* ``question_end``: particles that end a question without a question mark (``吗``).

Languages: English, Russian, Chinese, Japanese, Spanish, German, French. All lists are read
at once, whatever the text's language (a conversation may mix them); spaced languages match
whole words, Chinese and Japanese match inside a run (they have no spaces to match at). A
cue written with a leading ``^`` (``^请``) counts only where a word may start, not after a
letter: one character inside a run is often part of a longer word (``申请`` is
"application", ``邀请`` "invitation", not ``请`` "please").

Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from memstore.core.words import has_unspaced, normalize

LANGUAGES = ("en", "ru", "zh", "ja", "es", "de", "fr")

_KIN_EN = "wife husband partner son daughter kids children sister brother mother mom mum father dad parents"  # noqa: E501

#: category -> language -> the cues (space-separated phrases are joined by "|").
CUES: Mapping[str, Mapping[str, str]] = {
    "first_person": {
        "en": "i|i'm|i've|i'll|i'd|my|me|mine|myself|we|we're|we've|our|us",
        "ru": "я|мой|моя|моё|мое|мои|мне|меня|мной|мы|наш|наша|наше|наши|нам|нас",
        "zh": "我",
        "ja": "私|僕|俺|わたし",
        "es": "yo|mi|mis|me|mío|mía|nosotros|nosotras|nuestro|nuestra",
        "de": "ich|mein|meine|meinen|meinem|meiner|mir|mich|wir|unser|unsere",
        "fr": "je|j'|moi|mon|ma|mes|me|nous|notre|nos",
    },
    "function": {
        "en": (
            "a|an|the|and|or|but|if|of|to|in|on|at|by|for|from|with|about|as|into|than|"
            "then|so|is|are|was|were|be|been|being|am|do|does|did|have|has|had|will|would|"
            "can|could|should|shall|may|might|it|its|it's|this|that|these|those|there|"
            "here|he|she|they|them|his|her|their|you|your|what|which|who|whom|when|where|"
            "why|how|not|no|yes|just|also|very|really|too|some|any|all|more|most|up|out|"
            "over|only|own|same|such|each|both|few|other|again|once|get|got|let|lot|"
            "thing|things|stuff|yeah|oh|well|okay|ok|sure|gonna|kinda|maybe|like|now"
        ),
        "ru": (
            "и|в|во|не|на|с|со|что|как|а|но|к|ко|по|из|у|за|о|об|от|до|для|это|то|так|же|"
            "ли|бы|был|была|были|было|быть|есть|он|она|оно|они|его|её|ее|их|ты|вы|тот|та|"
            "те|этот|эта|эти|там|тут|здесь|уже|ещё|еще|очень|просто|когда|где|кто|чем|"
            "чтобы|или|если|да|нет|ну|вот|всё|все|сейчас|теперь"
        ),
        "zh": "的|了|是|在|和|也|就|都|而|与|着|或|吧|啊|呢|吗|这|那|个|有|很|现在",
        "ja": "は|が|を|に|で|と|の|も|へ|や|から|まで|です|ます|した|する|ある|いる|この|その|今",
        "es": (
            "el|la|los|las|un|una|unos|unas|y|o|de|del|a|al|en|con|por|para|que|es|son|"
            "fue|era|está|están|se|lo|le|les|su|sus|tu|este|esta|eso|muy|pero|como|más|ahora"
        ),
        "de": (
            "der|die|das|den|dem|des|ein|eine|einen|einem|und|oder|aber|in|im|an|am|auf|"
            "zu|zum|zur|mit|von|vom|für|ist|sind|war|waren|hat|haben|es|sie|er|du|ihr|"
            "dass|wie|sehr|auch|noch|schon|so|jetzt"
        ),
        "fr": (
            "le|la|les|l'|un|une|des|et|ou|de|du|d'|à|au|aux|en|dans|sur|avec|pour|par|que|"
            "qui|est|sont|était|a|ont|ce|cette|ces|il|elle|ils|elles|vous|tu|se|très|mais|"
            "comme|plus|pas|ne|n'|maintenant"
        ),
    },
    "chatter": {
        "en": (
            "hi|hello|hey|yo|thanks|thank you|thx|cheers|good morning|good afternoon|"
            "good evening|good night|ok|okay|k|sure|great|cool|got it|sounds good|"
            "you're welcome|perfect|nice|awesome|yes|yeah|yep|no|nope|nah|right|true|same|"
            "me too|wow|bye|see you|welcome|alright|of course|i see|i know|good|fine|"
            "exactly|definitely|totally|really|lol|haha|hmm|oh"
        ),
        "ru": (
            "привет|здравствуйте|здравствуй|спасибо|большое спасибо|пожалуйста|ок|окей|"
            "хорошо|ладно|да|нет|понятно|ясно|пока|до свидания|отлично|супер|круто|"
            "согласен|согласна|конечно|ага|угу"
        ),
        "zh": "你好|您好|谢谢|谢谢你|好的|好|嗯|对|是的|没问题|再见|哈哈|明白|知道了|好吧|可以",
        "ja": (
            "こんにちは|ありがとう|ありがとうございます|はい|いいえ|了解|わかりました|"
            "よろしく|おはよう|こんばんは|さようなら|なるほど"
        ),
        "es": "hola|gracias|muchas gracias|vale|sí|si|no|claro|perfecto|adiós|buenos días|de nada|genial",  # noqa: E501
        "de": "hallo|danke|vielen dank|ja|nein|okay|gut|tschüss|alles klar|genau|super|bitte",
        "fr": "bonjour|salut|merci|merci beaucoup|oui|non|d'accord|parfait|au revoir|bien sûr|super",  # noqa: E501
    },
    "preference": {
        "en": (
            "i prefer|i'd prefer|i would prefer|i like|i love|i hate|i enjoy|i don't like|"
            "i do not like|i dislike|i'd rather|i would rather|my favorite|my favourite|"
            "i usually|i always|i never"
        ),
        "ru": (
            "предпочитаю|я люблю|люблю|мне нравится|мне нравятся|не люблю|мне не нравится|"
            "я хочу|хочу|мой любимый|моя любимая|моё любимое|мое любимое"
        ),
        "zh": "喜欢|更喜欢|最喜欢|偏好|我爱|讨厌|我想要|习惯用",
        "ja": "好き|大好き|嫌い|好みます|がいいです|欲しい|派です",
        "es": "prefiero|me gusta|me gustan|me encanta|no me gusta|odio|quiero|mi favorito|mi favorita",  # noqa: E501
        "de": "ich bevorzuge|bevorzuge|ich mag|mag ich|ich liebe|ich hasse|ich möchte|lieber|mein lieblings",  # noqa: E501
        "fr": "je préfère|préfère|j'aime|j'adore|je déteste|je n'aime pas|je veux|mon préféré|ma préférée",  # noqa: E501
    },
    "identity": {
        "en": (
            "my name is|i'm called|i am called|call me|i live in|i'm from|i am from|"
            "i work at|i work as|i work for|i was born|my birthday|i am a|i'm a|"
            + "|".join(f"my {kin}" for kin in _KIN_EN.split())
        ),
        "ru": (
            "меня зовут|моё имя|мое имя|я живу|живу в|я из|я работаю|я родился|я родилась|"
            "мой брат|моя сестра|моя дочь|мой сын|моя жена|мой муж|моя мама|мой папа|"
            "мои родители|мои дети"
        ),
        "zh": (
            "我叫|名字是|我是|我住在|我来自|我在|我女儿|我儿子|我妻子|我丈夫|我老婆|我老公|"
            "我妈妈|我爸爸|我姐姐|我妹妹|我哥哥|我弟弟|我的孩子"
        ),
        "ja": "私の名前は|名前は|と申します|と言います|に住んで|出身|私の娘|私の息子|私の妻|私の夫|私の母|私の父",  # noqa: E501
        "es": (
            "me llamo|mi nombre es|vivo en|soy de|trabajo en|trabajo como|nací|mi hija|"
            "mi hijo|mi esposa|mi esposo|mi hermana|mi hermano|mi madre|mi padre"
        ),
        "de": (
            "ich heiße|mein name ist|ich wohne in|ich lebe in|ich komme aus|ich arbeite|"
            "meine tochter|mein sohn|meine frau|mein mann|meine schwester|mein bruder|"
            "meine mutter|mein vater"
        ),
        "fr": (
            "je m'appelle|mon nom est|j'habite|je vis à|je viens de|je travaille|ma fille|"
            "mon fils|ma femme|mon mari|ma sœur|mon frère|ma mère|mon père"
        ),
    },
    "constraint_opener": {
        "en": "always|never|don't|do not|only|avoid|please don't|please do not|please always|please never|please only",  # noqa: E501
        "ru": "всегда|никогда|не надо|не нужно|только|обязательно|не используй|не используйте",
        "zh": "总是|永远|从不|不要|别|必须|务必|只用|只能|一定要",
        "ja": "いつも|必ず|絶対に|決して",
        "es": "siempre|nunca|no uses|no utilices|solo|sólo|asegúrate",
        "de": "immer|niemals|nie|nur|bitte keine|achte darauf",
        "fr": "toujours|jamais|ne jamais|seulement|uniquement|n'utilise pas",
    },
    "obligation": {
        "en": "must not|mustn't|must never|should never|you must|we must|do not",
        "ru": "нельзя|должен|должна|должны|обязательно",
        "zh": "必须|一定要|务必|不能|不可以|不允许",
        "ja": "なければならない|してはいけない|しないでください|必ず",
        "es": "debe|debes|deben|no debe|tienes que|hay que",
        "de": "muss|müssen|darf nicht|dürfen nicht|darfst nicht",
        "fr": "il faut|doit|doivent|ne doit pas|ne faut pas",
    },
    "decision": {
        "en": "let's go with|we'll go with|i'll go with|we decided|i decided|decided to|i'll take|we'll take|we chose|i chose",  # noqa: E501
        "ru": "решили|решил|решила|выбираю|выбрали|берём|берем|остановимся на",
        "zh": "决定|就用|选择了|定了",
        "ja": "決めた|決めました|にします|にしましょう",
        "es": "decidí|decidimos|vamos con|me quedo con|elegimos",
        "de": "entschieden|nehmen wir|ich nehme|wir nehmen",
        "fr": "j'ai décidé|nous avons décidé|on part sur|je prends|on prend",
    },
    "request": {
        "en": "please|can you|could you|would you|will you|i need you to|help me|let's",
        "ru": "пожалуйста|можешь|можете|помоги|помогите|давай|давайте|нужно",
        "zh": "^请|帮我|能不能|可以帮|麻烦你|麻烦",
        "ja": "ください|お願い|してくれ|してほしい",
        "es": "por favor|puedes|podrías|ayúdame|necesito que",
        "de": "bitte|kannst du|könnten sie|können sie|hilf mir",
        "fr": "s'il te plaît|s'il vous plaît|peux-tu|pouvez-vous|aide-moi",
    },
    "question_end": {
        "zh": "吗|呢|么",
        "ja": "か|ですか|ますか",
    },
}

#: Relative days and their offset from the day they were said on.
RELATIVE_DAYS: Mapping[str, Mapping[str, int]] = {
    "en": {"today": 0, "tonight": 0, "yesterday": -1, "last night": -1, "tomorrow": 1},
    "ru": {"сегодня": 0, "вчера": -1, "позавчера": -2, "завтра": 1, "послезавтра": 2},
    "zh": {"今天": 0, "昨天": -1, "前天": -2, "明天": 1, "后天": 2},
    "ja": {"今日": 0, "昨日": -1, "一昨日": -2, "明日": 1, "明後日": 2},
    "es": {"hoy": 0, "ayer": -1, "anteayer": -2, "mañana": 1, "pasado mañana": 2},
    "de": {"heute": 0, "gestern": -1, "vorgestern": -2, "morgen": 1, "übermorgen": 2},
    "fr": {"aujourd'hui": 0, "hier": -1, "avant-hier": -2, "demain": 1, "après-demain": 2},
}

#: Marks a cue that counts only where a word may start (module docstring).
WORD_START = "^"
#: Words after which a relative day is a time of day, not a day: Spanish ``mañana`` and
#: German ``morgen`` are also "morning" (``esta mañana``, ``por la mañana``, ``guten Morgen``,
#: ``heute Morgen``).
NOT_A_DAY_AFTER: Mapping[str, frozenset[str]] = {
    "mañana": frozenset({"la", "esta", "una", "cada", "toda", "media"}),
    "morgen": frozenset({"guten", "am", "heute", "jeden", "den", "einen", "diesen", "gestern"}),
}
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})


def folded(text: str) -> str:
    """``text`` as cues are matched: NFKC, case folded, one kind of apostrophe."""
    return normalize(text).translate(_APOSTROPHES)


def phrases(category: str) -> tuple[str, ...]:
    """Every cue of ``category``, all languages, longest first."""
    found = {folded(p) for cues in CUES[category].values() for p in cues.split("|") if p}
    return tuple(sorted(found, key=lambda p: (-len(p), p)))


@functools.cache
def _pattern(category: str, anchored: bool) -> re.Pattern[str]:
    """One expression for a category: spaced cues as whole words, unspaced ones anywhere
    (``anchored``: only at the start, past a few lead words)."""
    parts = []
    for phrase in phrases(category):
        phrase = phrase.removeprefix(WORD_START)
        body = r"\s+".join(re.escape(word) for word in phrase.split())
        parts.append(body if has_unspaced(phrase) else rf"(?<![\w']){body}(?![\w])")
    alternation = "|".join(parts)
    if anchored:
        return re.compile(rf"^(?:{_LABEL})?(?:{_LEAD}\s*)*(?:{alternation})")
    return re.compile(alternation)


#: A line's label before its sentence (``Turn 3:``, ``Step 2:``, ``Note:``): up to three
#: words and a colon.
_LABEL = r"[^\W_][\w'.-]*(?: [\w'.-]+){0,2}:\s+"
#: Words that may come before a sentence's real opening (``also``, ``и``, ``但是``).
_LEAD = r"(?:also|please|now|then|so|and|but|just|ok|okay|и|а|но|также|пожалуйста|也|但是|还有|请|también|por favor|bitte|auch|aussi|s'il te plaît)[\s,]"  # noqa: E501


@functools.cache
def _parts(category: str) -> tuple[frozenset[str], re.Pattern[str] | None, tuple[str, ...]]:
    """A category's cues split for a quick look: single words (a set lookup), phrases of
    several words or with an apostrophe and cues bound to a word's start (one expression),
    and the unspaced ones (substrings)."""
    single, phrased, unspaced = set(), [], []
    for phrase in phrases(category):
        if phrase.startswith(WORD_START):
            phrased.append(phrase)
        elif has_unspaced(phrase):
            unspaced.append(phrase)
        elif " " in phrase or "'" in phrase or "-" in phrase:
            phrased.append(phrase)
        else:
            single.add(phrase)
    alternatives = [
        rf"(?<!\w){re.escape(p[1:])}"
        if p[0] == WORD_START
        else r"(?<![\w'])" + r"\s+".join(re.escape(w) for w in p.split()) + r"(?![\w])"
        for p in phrased
    ]
    body = "|".join(alternatives)
    pattern = re.compile(body) if body else None
    return frozenset(single), pattern, tuple(unspaced)


_WORDS = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=16384)
def has_cue(category: str, text: str) -> bool:
    """Whether ``text`` holds a cue of ``category`` (in any of the languages)."""
    single, pattern, unspaced = _parts(category)
    text = folded(text)
    if single and not single.isdisjoint(_WORDS.findall(text)):
        return True
    if pattern is not None and pattern.search(text):
        return True
    return bool(unspaced) and has_unspaced(text) and any(cue in text for cue in unspaced)


def opens_with(category: str, text: str) -> bool:
    """Whether ``text`` opens with a cue of ``category`` (past a line's label and lead
    words: ``Step 2: always ...``, ``and never ...``)."""
    return _pattern(category, True).search(folded(text).strip()) is not None


@functools.cache
def word_set(category: str) -> frozenset[str]:
    """The single-word cues of ``category`` (all languages), folded."""
    return frozenset(p.removeprefix(WORD_START) for p in phrases(category) if " " not in p)


@functools.cache
def _chatter() -> re.Pattern[str]:
    alternation = "|".join(re.escape(p) for p in phrases("chatter"))
    # A whole turn of greetings and thanks, with punctuation, emoji and "there"/"team".
    return re.compile(
        rf"^(?:(?:{alternation})[\W\d_]*(?:there|all|team|again|a lot|so much)?[\W\d_]*)+$"
    )


def is_chatter_text(text: str) -> bool:
    """Whether ``text`` is nothing but greetings, thanks and acknowledgements."""
    return _chatter().match(folded(text).strip()) is not None


@functools.cache
def _relative_days() -> tuple[re.Pattern[str], dict[str, int]]:
    offsets = {
        folded(word): days for table in RELATIVE_DAYS.values() for word, days in table.items()
    }
    ordered = sorted(offsets, key=lambda w: -len(w))
    parts = [
        re.escape(w) if has_unspaced(w) else rf"(?<![\w']){re.escape(w)}(?![\w'])" for w in ordered
    ]
    return re.compile("|".join(parts), re.I), offsets


@functools.lru_cache(maxsize=16384)
def relative_days(text: str) -> tuple[tuple[int, int, int], ...]:
    """Each relative-day word in ``text``: (start, end, offset in days)."""
    pattern, offsets = _relative_days()
    found = []
    for match in pattern.finditer(text):
        word = folded(match[0])
        before = text[: match.start()].split()
        if before and folded(before[-1]) in NOT_A_DAY_AFTER.get(word, ()):
            continue  # a time of day (NOT_A_DAY_AFTER)
        found.append((match.start(), match.end(), offsets[word]))
    return tuple(found)
