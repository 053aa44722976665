"""Test and build logs: what a run said, in a line (its summary, what failed, what was expected).

A pytest, jest, go test, cargo, unittest or Maven run printed as a tool output is hundreds of
lines; what a later question needs is its outcome: ``1 failed, 211 passed``, which test
failed (``tests/test_api.py::test_refund``) and what it expected (``assert 3 == 4``). A log
is recognised by its shape, not by the tool that printed it:

* a **summary line** counts outcomes: a number before an outcome word, or an outcome word
  before a number (``1 failed, 211 passed``, ``Tests run: 5, Failures: 1``,
  ``test result: FAILED. 3 passed; 1 failed``, ``FAILED (failures=1)``);
* a **failure line** opens with a failure marker (``FAILED``, ``FAIL``, ``ERROR``,
  ``--- FAIL:``, ``not ok``, ``✕``) and names what failed;
* an **expectation line** says what was expected or asserted (``assert``, ``Expected:``,
  ``Received:``, ``expected ... got ...``);
* an **error line** is an error's message (``error[E0308]: ...``, ``ValueError: ...``).

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
)
_EXPECTATION = re.compile(
    r"^\s*(?:E\s+)?(?:assert\b|AssertionError|Expected\b|Received\b|expected\b.*\b(?:got|but)\b"
    r"|Actual\b|actual\b)",
)
_ERROR = re.compile(
    r"^\s*(?:error(?:\[\w+\])?:|[A-Z]\w*(?:Error|Exception):|npm ERR!|BUILD FAILED)"
)
#: A log says at most this many failures and expectations in its line: the first ones.
MAX_FAILURES = 5
#: Two outcome counts on a line make it a summary; a log needs one such line or a failure.
_MIN_COUNTS = 2


def _clean(line: str) -> str:
    return " ".join(line.strip().strip("=-_ ").split())


def is_log(text: str) -> bool:
    """Whether ``text`` reads like a test or build log (module docstring)."""
    lines = text.splitlines()
    if len(lines) < 2:
        return False
    return any(_summary(line) for line in lines) or (
        sum(1 for line in lines if _FAILURE.match(line) or _ERROR.match(line)) >= 1
        and any(_COUNT.search(line) for line in lines)
    )


def _summary(line: str) -> bool:
    return len(_COUNT.findall(line)) >= _MIN_COUNTS or (
        bool(_COUNT.search(line)) and bool(re.search(r"\b(FAILED|PASSED|OK)\b", line))
    )


def log_values(text: str) -> list[str]:
    """What a log says, each part once, in this order: its summary lines (the last first:
    a runner prints its totals at the end), the failures, the first expectations and
    errors."""
    lines = text.splitlines()
    summaries = [_clean(line) for line in lines if _summary(line)]
    failures: list[str] = []
    expectations: list[str] = []
    for line in lines:
        failure = _FAILURE.match(line)
        if failure and len(failures) < MAX_FAILURES:
            failures.append(_clean(line))
        elif (_EXPECTATION.match(line) or _ERROR.match(line)) and len(expectations) < MAX_FAILURES:
            expectations.append(_clean(line.lstrip().removeprefix("E ").strip()))
    ordered = [*reversed(summaries), *failures, *expectations]
    return list(dict.fromkeys(part for part in ordered if part))
