"""``memstore.pydantic_ai``: pydantic-ai's conversation store on memstore's database (the public
import path; the code lives in :mod:`memstore.adapters.pydantic_ai`)."""

from memstore.adapters.pydantic_ai import MemstoreConversationStore

__all__ = ["MemstoreConversationStore"]
