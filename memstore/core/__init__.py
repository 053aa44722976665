"""The pure core: values, the compaction policy, units, token estimators, carried-item parsing,
search terms, the ledger audit and replay.

Nothing here opens a file, a socket or a transaction (the one exception is loading a tokenizer's
vocabulary, which the estimator does once, off the event loop), and nothing imports
SQLAlchemy, openai or click: every rule that decides what a session forgets can be tested in
microseconds and re-run offline by ``memstore replay``.
"""
