"""``MemoryStore.open(...)``: what it was asked for, and the value that is both awaitable and
an async context manager (closing the store on exit)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from memstore.config import Settings
    from memstore.core.embedder import Embedder
    from memstore.db.engine import AsyncEngine


class _Closable(Protocol):  # what the opened value must offer (a store)
    async def close(self) -> None: ...


S = TypeVar("S", bound=_Closable)


@dataclass(frozen=True)
class OpenOptions:
    """What :meth:`MemoryStore.open <memstore.MemoryStore.open>` was asked for (documented
    there), kept together until the store is awaited."""

    url_or_path: str | os.PathLike[str] | None
    engine: AsyncEngine | None
    upgrade: bool
    create: bool
    verify: bool
    read_only: bool
    settings: Settings | None
    embedder: Embedder | None = None


class Opening(Generic[S]):
    """``MemoryStore.open(...)``: await it, or use it as ``async with``.

    Args:
        open_store: Opens the store (called once per ``await`` or ``async with``).
    """

    def __init__(self, open_store: Callable[[], Awaitable[S]]) -> None:
        self._open_store = open_store
        self._store: S | None = None

    def __await__(self) -> Generator[Any, None, S]:
        return self._open_store().__await__()

    async def __aenter__(self) -> S:
        self._store = await self._open_store()
        return self._store

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._store is not None:
            await self._store.close()
