"""The memory services: the store, one session's handle, a compaction run, long-term memory.

This layer orchestrates: it validates and counts before any transaction, calls :mod:`memstore.db`
for every read and write, the summarizer with no transaction open, and :mod:`memstore.core` for
every decision.
"""
