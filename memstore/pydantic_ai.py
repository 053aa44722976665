"""``memstore.pydantic_ai``: pydantic-ai's conversation store on memstore's database, and a
history processor that bounds what the model is sent with memstore's compaction (the public
import path; the code lives in :mod:`memstore.adapters.pydantic_ai` and
:mod:`memstore.adapters.pydantic_ai_history`)."""

from memstore.adapters.pydantic_ai import MemstoreConversationStore
from memstore.adapters.pydantic_ai_history import MemstoreHistory

__all__ = ["MemstoreConversationStore", "MemstoreHistory"]
