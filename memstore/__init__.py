"""memstore: persistent, multi-session working memory for LLM agents.

Public API; everything not listed in ``__all__`` may change between releases.

Names are loaded on first use (PEP 562): ``import memstore`` alone costs nothing, and a
program (or a CLI command) pays only for the parts it touches; the OpenAI client, for one,
is never imported by a program that does not summarize with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memstore.version import __version__

if TYPE_CHECKING:
    from memstore.config import Settings
    from memstore.core.consolidation_report import ConsolidationReport
    from memstore.core.embedder import Embedder
    from memstore.core.records import CompactionReport, SessionHistory, SessionInfo
    from memstore.core.search_terms import SearchHit
    from memstore.core.tokens import ByteEstimator, TiktokenEstimator, TokenEstimator, WordEstimator
    from memstore.core.values import MemoryItem, MemoryKind, MemoryLimits, MemoryRole, Priority
    from memstore.db.connection import register_functions
    from memstore.db.lease import LeaseHolder
    from memstore.db.vectors import EmbeddingStatus
    from memstore.errors import (
        CompactionConflictError,
        ConfigurationError,
        ConflictError,
        ConnectionFailedError,
        ConversationConflictError,
        CorruptDatabaseError,
        DatabaseMissingError,
        EmbedderMismatchError,
        EmbeddingError,
        EntryNotFoundError,
        EstimatorMismatchError,
        ForkedHistoryError,
        IdempotencyConflictError,
        KindRoleMismatchError,
        LeaseHeldError,
        LeaseLostError,
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
        SessionExistsError,
        SessionNotFoundError,
        SessionSettingsError,
        StorageError,
        StorageFullError,
        ToolLoopError,
        ValidationError,
        VersionConflictError,
    )
    from memstore.extraction.extractor import OfflineExtractor
    from memstore.extraction.fact_list import Fact
    from memstore.extraction.protocols import Extractor, Summarizer, SummaryText
    from memstore.extraction.summarizer import ExtractiveSummarizer
    from memstore.memory.conversations import Conversations
    from memstore.memory.long_term import LongTermChange, LongTermEntry, LongTermMemory
    from memstore.memory.options import SessionOptions
    from memstore.memory.schema import SchemaStatus
    from memstore.memory.session import SessionMemory
    from memstore.memory.store import MemoryStore
    from memstore.model_side.embedders import (
        OpenAIEmbedder,
        WordLlamaEmbedder,
        embedder_from_spec,
    )
    from memstore.model_side.openai_extractor import OpenAIExtractor
    from memstore.model_side.openai_summarizer import OpenAISummarizer

_EXPORTS = {
    "ByteEstimator": "memstore.core.tokens",
    "CompactionConflictError": "memstore.errors",
    "CompactionReport": "memstore.core.records",
    "ConfigurationError": "memstore.errors",
    "ConflictError": "memstore.errors",
    "ConnectionFailedError": "memstore.errors",
    "ConsolidationReport": "memstore.core.consolidation_report",
    "ConversationConflictError": "memstore.errors",
    "Conversations": "memstore.memory.conversations",
    "CorruptDatabaseError": "memstore.errors",
    "DatabaseMissingError": "memstore.errors",
    "Embedder": "memstore.core.embedder",
    "EmbedderMismatchError": "memstore.errors",
    "EmbeddingError": "memstore.errors",
    "EmbeddingStatus": "memstore.db.vectors",
    "EntryNotFoundError": "memstore.errors",
    "EstimatorMismatchError": "memstore.errors",
    "ExtractiveSummarizer": "memstore.extraction.summarizer",
    "Extractor": "memstore.extraction.protocols",
    "Fact": "memstore.extraction.fact_list",
    "ForkedHistoryError": "memstore.errors",
    "IdempotencyConflictError": "memstore.errors",
    "KindRoleMismatchError": "memstore.errors",
    "LeaseHeldError": "memstore.errors",
    "LeaseHolder": "memstore.db.lease",
    "LeaseLostError": "memstore.errors",
    "LockTimeoutError": "memstore.errors",
    "LongTermChange": "memstore.memory.long_term",
    "LongTermEntry": "memstore.memory.long_term",
    "LongTermMemory": "memstore.memory.long_term",
    "MemoryItem": "memstore.core.values",
    "MemoryKind": "memstore.core.values",
    "MemoryLimits": "memstore.core.values",
    "MemoryRole": "memstore.core.values",
    "MemoryStore": "memstore.memory.store",
    "MemstoreError": "memstore.errors",
    "ModelCallError": "memstore.errors",
    "ModelConfigurationError": "memstore.errors",
    "ModelError": "memstore.errors",
    "NotADatabaseError": "memstore.errors",
    "NotFoundError": "memstore.errors",
    "OfflineExtractor": "memstore.extraction.extractor",
    "OpenAIEmbedder": "memstore.model_side.embedders",
    "OpenAIExtractor": "memstore.model_side.openai_extractor",
    "OpenAISummarizer": "memstore.model_side.openai_summarizer",
    "Priority": "memstore.core.values",
    "ReadOnlyDatabaseError": "memstore.errors",
    "SchemaError": "memstore.errors",
    "SchemaOutdatedError": "memstore.errors",
    "SchemaStatus": "memstore.memory.schema",
    "SchemaTooNewError": "memstore.errors",
    "SearchHit": "memstore.core.search_terms",
    "SessionExistsError": "memstore.errors",
    "SessionHistory": "memstore.core.records",
    "SessionInfo": "memstore.core.records",
    "SessionMemory": "memstore.memory.session",
    "SessionNotFoundError": "memstore.errors",
    "SessionOptions": "memstore.memory.options",
    "SessionSettingsError": "memstore.errors",
    "Settings": "memstore.config",
    "StorageError": "memstore.errors",
    "StorageFullError": "memstore.errors",
    "Summarizer": "memstore.extraction.protocols",
    "SummaryText": "memstore.extraction.protocols",
    "TiktokenEstimator": "memstore.core.tokens",
    "TokenEstimator": "memstore.core.tokens",
    "ToolLoopError": "memstore.errors",
    "ValidationError": "memstore.errors",
    "VersionConflictError": "memstore.errors",
    "WordEstimator": "memstore.core.tokens",
    "WordLlamaEmbedder": "memstore.model_side.embedders",
    "embedder_from_spec": "memstore.model_side.embedders",
    "register_functions": "memstore.db.connection",
}


if not TYPE_CHECKING:  # type checkers see the imports above, so a misspelt name is an error

    def __getattr__(name: str) -> Any:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'memstore' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # once: later lookups are plain attribute reads
        return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ByteEstimator",
    "CompactionConflictError",
    "CompactionReport",
    "ConfigurationError",
    "ConflictError",
    "ConnectionFailedError",
    "ConsolidationReport",
    "ConversationConflictError",
    "Conversations",
    "CorruptDatabaseError",
    "DatabaseMissingError",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "EmbeddingStatus",
    "EntryNotFoundError",
    "EstimatorMismatchError",
    "ExtractiveSummarizer",
    "Extractor",
    "Fact",
    "ForkedHistoryError",
    "IdempotencyConflictError",
    "KindRoleMismatchError",
    "LeaseHeldError",
    "LeaseHolder",
    "LeaseLostError",
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
    "OfflineExtractor",
    "OpenAIEmbedder",
    "OpenAIExtractor",
    "OpenAISummarizer",
    "Priority",
    "ReadOnlyDatabaseError",
    "SchemaError",
    "SchemaOutdatedError",
    "SchemaStatus",
    "SchemaTooNewError",
    "SearchHit",
    "SessionExistsError",
    "SessionHistory",
    "SessionInfo",
    "SessionMemory",
    "SessionNotFoundError",
    "SessionOptions",
    "SessionSettingsError",
    "Settings",
    "StorageError",
    "StorageFullError",
    "Summarizer",
    "SummaryText",
    "TiktokenEstimator",
    "TokenEstimator",
    "ToolLoopError",
    "ValidationError",
    "VersionConflictError",
    "WordEstimator",
    "WordLlamaEmbedder",
    "__version__",
    "embedder_from_spec",
    "register_functions",
]
