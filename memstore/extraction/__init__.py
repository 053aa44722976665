"""Extraction: what a summary and long-term memory keep of the items, read without a model.

The layer above :mod:`memstore.core` (render/ and memory/ use it; core/ does not): the
:class:`~memstore.extraction.protocols.Summarizer` and
:class:`~memstore.extraction.protocols.Extractor` protocols, and the offline heuristics
behind the shipped :class:`~memstore.extraction.summarizer.ExtractiveSummarizer` and
:class:`~memstore.extraction.extractor.OfflineExtractor`: facts (:mod:`.facts`) from
statements (:mod:`.statements`, :mod:`.specifics`, :mod:`.language`), actions
(:mod:`.actions`, :mod:`.logs`) and days (:mod:`.dating`); the summary's layout
(:mod:`.digest`) and fitting (:mod:`.summary_fit`); consolidation's rules (:mod:`.slots`).
"""
