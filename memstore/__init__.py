"""memstore: persistent, multi-session working memory for LLM agents.

Public API (SPEC 8); everything not listed in ``__all__`` may change between releases.
"""

from __future__ import annotations

from memstore.config import Settings
from memstore.errors import (
    CompactionConflictError,
    ConfigurationError,
    ConflictError,
    DatabaseMissingError,
    EntryNotFoundError,
    EstimatorMismatchError,
    IdempotencyConflictError,
    KindRoleMismatchError,
    LockTimeoutError,
    MemstoreError,
    ModelCallError,
    ModelConfigurationError,
    ModelError,
    NotADatabaseError,
    NotFoundError,
    ReadOnlyDatabaseError,
    SchemaError,
    SchemaOutdatedError,
    SchemaTooNewError,
    SessionNotFoundError,
    StorageError,
    StorageFullError,
    ToolLoopError,
    ValidationError,
    VersionConflictError,
)
from memstore.ltm import LongTermChange, LongTermEntry, LongTermMemory
from memstore.model import (
    CompactionReport,
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    Priority,
    SessionInfo,
)
from memstore.openai_summarizer import OpenAISummarizer
from memstore.session import SessionMemory
from memstore.store import MemoryStore
from memstore.summarizers import ExtractiveSummarizer
from memstore.tokens import ByteEstimator, TiktokenEstimator, TokenEstimator, WordEstimator

__version__ = "0.1.0"

__all__ = [
    "ByteEstimator",
    "CompactionConflictError",
    "CompactionReport",
    "ConfigurationError",
    "ConflictError",
    "DatabaseMissingError",
    "EntryNotFoundError",
    "EstimatorMismatchError",
    "ExtractiveSummarizer",
    "IdempotencyConflictError",
    "KindRoleMismatchError",
    "LockTimeoutError",
    "LongTermChange",
    "LongTermEntry",
    "LongTermMemory",
    "MemoryItem",
    "MemoryKind",
    "MemoryLimits",
    "MemoryRole",
    "MemoryStore",
    "MemstoreError",
    "ModelCallError",
    "ModelConfigurationError",
    "ModelError",
    "NotADatabaseError",
    "NotFoundError",
    "OpenAISummarizer",
    "Priority",
    "ReadOnlyDatabaseError",
    "SchemaError",
    "SchemaOutdatedError",
    "SchemaTooNewError",
    "SessionInfo",
    "SessionMemory",
    "SessionNotFoundError",
    "Settings",
    "StorageError",
    "StorageFullError",
    "TiktokenEstimator",
    "TokenEstimator",
    "ToolLoopError",
    "ValidationError",
    "VersionConflictError",
    "WordEstimator",
    "__version__",
]
