"""The model input: stored text rendered as Responses API messages, labelled and fenced as data,
within a token budget (the summary, the long-term memories, recalled passages, the items).

Pure functions over values from :mod:`memstore.core`; the session handle gathers what they
render.
"""
