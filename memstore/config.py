"""Settings: the one place that reads environment variables.

Everything tunable lives in :class:`Settings`, a frozen dataclass built from the environment
(:meth:`Settings.from_env`) or by hand. Validation names the setting (and its variable) so that
a typo in a deployment fails at start-up with a message an operator can act on.
"""

from __future__ import annotations

import math
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field

from memstore.errors import ConfigurationError, ModelConfigurationError

#: Defaults: compaction starts at 1500 estimated tokens and finishes at 900.
DEFAULT_HARD_LIMIT = 1500
DEFAULT_TARGET_LIMIT = 900
DEFAULT_KEEP_RECENT = 4
#: One MiB of UTF-8 per item: larger blobs belong in files, not in a model's context.
DEFAULT_MAX_ITEM_BYTES = 1 << 20
#: 64 KiB of JSON per long-term value: preferences and facts, not documents; each one may be
#: rendered into a model's input, and every version is kept in the entry's history.
DEFAULT_LTM_MAX_VALUE_BYTES = 64 << 10
#: Five seconds: long enough to queue behind a compaction commit, short enough to surface a
#: stuck writer to the caller as LockTimeoutError instead of hanging an agent turn.
DEFAULT_BUSY_TIMEOUT_S = 5.0
#: A summarizer gets this long before its answer is abandoned and recorded as an error.
DEFAULT_SUMMARIZER_TIMEOUT_S = 30.0
#: Ten seconds: the holder renews its lease every third of it while its summarizer runs, so
#: the lease only has to outlive a missed heartbeat or two, and a holder that dies on another
#: host delays the session's compaction by at most this long (on its own host, not at all).
DEFAULT_LEASE_S = 10.0
#: How long a call may wait for its output before compaction stops protecting it: long
#: enough for a slow tool or a person approving a call, short enough that a crashed worker's
#: call does not hold the budget for good.
DEFAULT_PENDING_S = 900.0
#: FULL: an acknowledged append survives power loss, not only a crash of the process.
DEFAULT_SQLITE_SYNCHRONOUS = "FULL"
DEFAULT_DB = "memstore.db"
#: The model `memstore chat` and the examples use when neither --model nor OPENAI_MODEL says:
#: small, cheap and good with function tools.
DEFAULT_MODEL = "gpt-4o-mini"

#: Where ``memstore mcp --http`` finds its bearer token unless ``--token-env`` names another
#: variable (an environment variable, never an option: options show up in ``ps``).
MCP_TOKEN_VARIABLE = "MEMSTORE_MCP_TOKEN"
#: Shortest token accepted: guessing 16 random characters over the network is hopeless, a
#: word or a PIN is not (``openssl rand -hex 32`` makes a good one).
MIN_MCP_TOKEN_CHARS = 16

_SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
#: The largest token limit: sessions store their limits in integer columns, and PostgreSQL's
#: ``integer`` ends here (a larger one would fail inside the driver at the first append).
MAX_LIMIT = 2**31 - 1


def require_int(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` if it is a real int (not a bool) within ``minimum``..``maximum``.

    Raises:
        ConfigurationError: naming ``name`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(name, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigurationError(name, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigurationError(name, f"must be <= {maximum}, got {value}")
    return value


def require_positive_float(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a positive, finite number (NaN and inf refused)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigurationError(name, f"must be a positive finite number, got {value!r}")
    return float(value)


def env_int(env: Mapping[str, str], var: str, default: int) -> int:
    """Read an integer environment variable; a non-integer names the variable."""
    raw = env.get(var)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise ConfigurationError(var, f"must be an integer, got {raw!r}") from None


def _env_float(
    env: Mapping[str, str],
    var: str,
    default: float,
) -> float:
    raw = env.get(var)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(var, f"must be a number, got {raw!r}") from None
    return require_positive_float(var, value)  # outside the try: its error is a ValueError


@dataclass(frozen=True)
class Settings:
    """Store-wide settings (per-session limits live in :class:`memstore.MemoryLimits`).

    Attributes:
        max_item_bytes: Largest item content accepted, in UTF-8 bytes (``MEMSTORE_MAX_ITEM_BYTES``).
        busy_timeout_s: How long a writer waits for the lock (``MEMSTORE_BUSY_TIMEOUT``).
        summarizer_timeout_s: Budget of one summarizer call (``MEMSTORE_SUMMARIZER_TIMEOUT``).
        lease_s: Compaction lease length, renewed every third of it while its holder works
            (``MEMSTORE_LEASE_SECONDS``).
        sqlite_synchronous: SQLite ``synchronous`` pragma (``MEMSTORE_SQLITE_SYNCHRONOUS``).
        ltm_max_value_bytes: Largest long-term value, in UTF-8 bytes of compact JSON
            (``MEMSTORE_LTM_MAX_VALUE_BYTES``).
        pending_s: How long a call a worker added waits for its output, protected from
            compaction, unless that worker moves on or closes first
            (``MEMSTORE_PENDING_SECONDS``).
    """

    max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
    summarizer_timeout_s: float = DEFAULT_SUMMARIZER_TIMEOUT_S
    lease_s: float = DEFAULT_LEASE_S
    sqlite_synchronous: str = DEFAULT_SQLITE_SYNCHRONOUS
    ltm_max_value_bytes: int = DEFAULT_LTM_MAX_VALUE_BYTES
    pending_s: float = DEFAULT_PENDING_S

    def __post_init__(self) -> None:
        require_int("max_item_bytes", self.max_item_bytes, minimum=1)
        require_int("ltm_max_value_bytes", self.ltm_max_value_bytes, minimum=1)
        object.__setattr__(
            self, "busy_timeout_s", require_positive_float("busy_timeout_s", self.busy_timeout_s)
        )
        object.__setattr__(
            self,
            "summarizer_timeout_s",
            require_positive_float("summarizer_timeout_s", self.summarizer_timeout_s),
        )
        object.__setattr__(self, "lease_s", require_positive_float("lease_s", self.lease_s))
        object.__setattr__(self, "pending_s", require_positive_float("pending_s", self.pending_s))
        if (
            not isinstance(self.sqlite_synchronous, str)
            or self.sqlite_synchronous.upper() not in _SYNCHRONOUS_MODES
        ):
            raise ConfigurationError(
                "sqlite_synchronous",
                f"must be one of {', '.join(_SYNCHRONOUS_MODES)}, got {self.sqlite_synchronous!r}",
            )
        object.__setattr__(self, "sqlite_synchronous", self.sqlite_synchronous.upper())

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``MEMSTORE_*`` environment variables (defaults otherwise).

        Raises:
            ConfigurationError: naming the *variable* that holds a bad value.
        """
        env = os.environ if env is None else env
        try:
            return cls(
                max_item_bytes=env_int(env, "MEMSTORE_MAX_ITEM_BYTES", DEFAULT_MAX_ITEM_BYTES),
                busy_timeout_s=_env_float(env, "MEMSTORE_BUSY_TIMEOUT", DEFAULT_BUSY_TIMEOUT_S),
                summarizer_timeout_s=_env_float(
                    env, "MEMSTORE_SUMMARIZER_TIMEOUT", DEFAULT_SUMMARIZER_TIMEOUT_S
                ),
                lease_s=_env_float(env, "MEMSTORE_LEASE_SECONDS", DEFAULT_LEASE_S),
                sqlite_synchronous=env.get(
                    "MEMSTORE_SQLITE_SYNCHRONOUS", DEFAULT_SQLITE_SYNCHRONOUS
                ),
                ltm_max_value_bytes=env_int(
                    env, "MEMSTORE_LTM_MAX_VALUE_BYTES", DEFAULT_LTM_MAX_VALUE_BYTES
                ),
                pending_s=_env_float(env, "MEMSTORE_PENDING_SECONDS", DEFAULT_PENDING_S),
            )
        except ConfigurationError as error:
            raise rename_setting(error, SETTING_VARIABLES) from None


#: Which environment variable feeds each field of :class:`Settings`.
SETTING_VARIABLES = {
    "max_item_bytes": "MEMSTORE_MAX_ITEM_BYTES",
    "busy_timeout_s": "MEMSTORE_BUSY_TIMEOUT",
    "summarizer_timeout_s": "MEMSTORE_SUMMARIZER_TIMEOUT",
    "lease_s": "MEMSTORE_LEASE_SECONDS",
    "sqlite_synchronous": "MEMSTORE_SQLITE_SYNCHRONOUS",
    "ltm_max_value_bytes": "MEMSTORE_LTM_MAX_VALUE_BYTES",
    "pending_s": "MEMSTORE_PENDING_SECONDS",
}


def rename_setting(error: ConfigurationError, variables: Mapping[str, str]) -> ConfigurationError:
    """The same error, naming the environment variable that fed the offending field."""
    variable = variables.get(error.field, error.field)
    return ConfigurationError(variable, str(error).split(": ", 1)[-1])


@dataclass(frozen=True)
class ModelSettings:
    """Where the model side calls a model: the Responses API of OpenAI or a compatible server.

    The API key is held in memory only: memstore never writes it anywhere.

    Attributes:
        api_key: ``OPENAI_API_KEY``.
        base_url: ``OPENAI_BASE_URL`` (``None``: the client's default, api.openai.com).
        model: ``OPENAI_MODEL``, else :data:`DEFAULT_MODEL`.
    """

    api_key: str = field(repr=False)
    base_url: str | None = None
    model: str = DEFAULT_MODEL

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, model: str | None = None
    ) -> ModelSettings:
        """Read ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and ``OPENAI_MODEL``.

        Args:
            env: The environment (``os.environ`` by default).
            model: Overrides ``OPENAI_MODEL`` (a ``--model`` option).

        Raises:
            ModelConfigurationError: ``OPENAI_API_KEY`` is missing or blank.
        """
        env = os.environ if env is None else env
        api_key = (env.get("OPENAI_API_KEY") or "").strip()
        if not api_key:
            raise ModelConfigurationError(
                "OPENAI_API_KEY",
                "is not set; export your key (for another OpenAI-compatible server, set "
                "OPENAI_BASE_URL too)",
            )
        chosen = (model or env.get("OPENAI_MODEL") or "").strip() or DEFAULT_MODEL
        return cls(
            api_key=api_key,
            base_url=(env.get("OPENAI_BASE_URL") or "").strip() or None,
            model=chosen,
        )


def mcp_token(variable: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The bearer token ``memstore mcp --http`` requires, or ``None`` when none is configured.

    Args:
        variable: The environment variable to read (``--token-env``); it must then be set.
            ``None``: :data:`MCP_TOKEN_VARIABLE`, which may be unset (no token).
        env: The environment (``os.environ`` by default).

    Raises:
        ConfigurationError: naming the variable: named but unset, or a token shorter than
            :data:`MIN_MCP_TOKEN_CHARS` or not printable ASCII (it travels in an HTTP header).
    """
    env = os.environ if env is None else env
    name = variable or MCP_TOKEN_VARIABLE
    token = (env.get(name) or "").strip()
    if not token:
        if variable is None:
            return None
        raise ConfigurationError(name, "is not set; export the bearer token clients must send")
    if len(token) < MIN_MCP_TOKEN_CHARS or not (token.isascii() and token.isprintable()):
        raise ConfigurationError(
            name,
            f"must be at least {MIN_MCP_TOKEN_CHARS} printable ASCII characters "
            "(e.g. the output of `openssl rand -hex 32`)",
        )
    return token


def default_database(env: Mapping[str, str] | None = None) -> str:
    """The database the CLI and ``alembic`` use: ``MEMSTORE_DB`` or ``./memstore.db``."""
    env = os.environ if env is None else env
    return env.get("MEMSTORE_DB") or DEFAULT_DB


def fault_point(name: str) -> None:
    """Crash the process here if ``MEMSTORE_FAULT`` names this point (crash-safety tests).

    ``MEMSTORE_FAULT=after-snapshot`` makes a worker die with ``os._exit(137)`` (as kill -9
    would leave it) when it reaches that point. The variable is read once, when memstore is
    imported (the tests set it for a worker process): this sits on the append hot path.
    """
    if name == _FAULT:
        os._exit(137)


_FAULT = os.environ.get("MEMSTORE_FAULT")


def pause_point(name: str) -> None:
    """Stop the process here if ``MEMSTORE_PAUSE`` names this point (race tests).

    A test seam: ``MEMSTORE_PAUSE=purge-read`` makes a worker stop itself with SIGSTOP when it
    reaches that point, inside its transaction and holding whatever locks it took, until the
    test sends SIGCONT. That is how a test forces the interleaving a race needs (another
    process runs while this one sits in the window) every time, not by luck. Read once, at
    import; unset, the point costs one comparison.
    """
    if name == _PAUSE:
        os.kill(os.getpid(), signal.SIGSTOP)


_PAUSE = os.environ.get("MEMSTORE_PAUSE")
