"""Test and build logs: what a run said, in a line (its summary, what failed, what was expected).

A pytest, jest, go test, cargo, unittest or Maven run printed as a tool output is hundreds of
lines; what a later question needs is its outcome: ``1 failed, 211 passed``, which test
failed (``tests/test_api.py::test_refund``) and what it expected (``assert 3 == 4``). A log
is recognised by its shape, not by the tool that printed it:

* a **summary line** counts outcomes: a number before an outcome word, or an outcome word
  before a number (``1 failed, 211 passed``, ``Tests run: 5, Failures: 1``,
  ``test result: FAILED. 3 passed; 1 failed``, ``FAILED (failures=1)``);
* a **failure line** opens with a failure marker (``FAILED``, ``FAIL``, ``ERROR``,
  ``--- FAIL:``, ``not ok``, ``✕``) and names what failed, or names it and ends with one
  (``test a::b ... FAILED``, ``Suite.case  Time elapsed: 0.02 s  <<< FAILURE!``);
* an **expectation line** says what was expected or asserted (``assert``, ``Expected:``,
  ``Received:``, ``expected ... got ...``, ``expected: <1> but was: <2>``);
* an **error line** is an error's message (``error[E0308]: ...``, ``ValueError: ...``).

A log level in brackets opening a line (``[ERROR]``, ``[INFO]``) is the logger's, not the
run's: it is read past. A log is a text with a summary line, or with two failure or error
lines (``go test`` prints no counts), or with one and an outcome count.

The outcome words are the closed vocabulary test runners print, in English, as they do.

Pure: no I/O.
"""

from __future__ import annotations

import re

#: What test runners call their outcomes.
_OUTCOMES = (
    r"passed|failed|failures?|errors?|skipped|xfailed|xpassed|warnings?|deselected|"
    r"ignored|pending|todo|total|tests?|succeeded|broken|flaky|ok"
)
_COUNT = re.compile(rf"\b\d+\s+(?:{_OUTCOMES})\b|\b(?:{_OUTCOMES})\s*[:=]\s*\d+\b", re.I)
_FAILURE = re.compile(
    r"^\s*(?:FAILED|FAIL|ERROR|--- FAIL:|not ok\b|[✕✗×✖])\s*[:\s]\s*(?P<what>\S.*)$"
    r"|^\s*(?P<named>\S.*?)\s*(?:\.\.\.|<<<)\s*(?:FAILED|FAIL|FAILURE|ERROR)!?\s*$"
)
_EXPECTATION = re.compile(
    r"^\s*(?:E\s+)?(?:assert\b|AssertionError|Expected\b|Received\b|Actual\b|actual\b)"
    r"|\bexpected\b.*\b(?:got|but)\b",
)
_ERROR = re.compile(
    r"^\s*(?:error(?:\[\w+\])?:|[A-Z]\w*(?:Error|Exception):|npm ERR!|BUILD FAILED)"
    r"|\bpanicked at\b"
)
#: A logger's level opening a line (``[ERROR]``, ``[INFO]``): read past.
_LEVEL = re.compile(r"^\s*\[[A-Z]+\]\s*")
#: A log says at most this many failures and expectations in its line: the first ones.
MAX_FAILURES = 5
#: Two outcome counts on a line make it a summary; a log needs one such line or a failure.
_MIN_COUNTS = 2
#: Failure or error lines that make a log without a summary line: one could be any text's
#: ``Error: ...``; a run that printed no counts (``go test``) still fails a test and itself.
_MIN_FAILURES = 2


def _clean(line: str) -> str:
    return " ".join(line.strip().strip("=-_ ").split())


def _lines(text: str) -> list[str]:
    """The lines of ``text``, each past its logger's level (:data:`_LEVEL`)."""
    return [_LEVEL.sub("", line) for line in text.splitlines()]


def _failed(line: str) -> bool:
    return _FAILURE.match(line) is not None and not _summary(line)


def is_log(text: str) -> bool:
    """Whether ``text`` reads like a test or build log (module docstring)."""
    lines = _lines(text)
    if len(lines) < 2:
        return False
    if any(_summary(line) for line in lines):
        return True
    failures = sum(1 for line in lines if _failed(line) or _ERROR.search(line))
    return failures >= _MIN_FAILURES or (
        failures >= 1 and any(_COUNT.search(line) for line in lines)
    )


def _summary(line: str) -> bool:
    return len(_COUNT.findall(line)) >= _MIN_COUNTS or (
        bool(_COUNT.search(line)) and bool(re.search(r"\b(FAILED|PASSED|OK)\b", line))
    )


def log_values(text: str) -> list[str]:
    """What a log says, each part once, in this order: its summary lines (the last first:
    a runner prints its totals at the end), the failures, the first expectations and
    errors."""
    lines = _lines(text)
    summaries = [_clean(line) for line in lines if _summary(line)]
    failures: list[str] = []
    expectations: list[str] = []
    for line in lines:
        if _failed(line):
            failures.append(_clean(line))
        elif _EXPECTATION.search(line) or _ERROR.search(line):
            expectations.append(_clean(line.lstrip().removeprefix("E ").strip()))
    ordered = [*reversed(summaries), *failures[:MAX_FAILURES], *expectations[:MAX_FAILURES]]
    return list(dict.fromkeys(part for part in ordered if part))
