"""Public methods that belong to a part the owner holds.

The store and the session handle are each a few parts (the store's history actions and
search, the handle's consolidation), held as attributes rather than inherited as bases: a
part receives what it needs when it is made, and declares nothing of its owner's. The owner
still shows the part's methods as its own (``store.prune``, ``memory.consolidate``), with
their signatures and docstrings, through :class:`delegate`::

    class MemoryStore:
        prune = delegate("_history", StoreHistory.prune)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")


class delegate(Generic[P, R]):  # lower case, as `property`: it declares a method
    """``owner.name(...)`` calls ``getattr(owner, part).name(...)``.

    Args:
        part: The owner's attribute that holds the part.
        method: The part's method (its class's function): its name, signature and
            docstring are the owner's method's.
    """

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self._part = part
        self._name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method  # inspect.signature and help() show the part's

    @overload
    def __get__(self, owner: None, kind: type[Any]) -> delegate[P, R]: ...

    @overload
    def __get__(self, owner: object, kind: type[Any]) -> Callable[P, R]: ...

    def __get__(self, owner: object | None, kind: type[Any]) -> Any:
        if owner is None:
            return self
        bound: Callable[P, R] = getattr(getattr(owner, self._part), self._name)
        return bound
