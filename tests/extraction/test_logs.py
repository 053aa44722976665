"""Test and build logs (:mod:`memstore.extraction.logs`): a run's outcome in a line, whatever
runner printed it. Each log here is written for this test in its runner's layout."""

from __future__ import annotations

import pytest

from memstore.extraction.actions import result_values
from memstore.extraction.logs import MAX_FAILURES, is_log, log_values

PYTEST = """\
============================= test session starts ==============================
collected 48 items

tests/test_cart.py ..........F.....
tests/test_tax.py ................

=================================== FAILURES ===================================
___________________________ test_discount_rounding ____________________________
    def test_discount_rounding():
>       assert total(cart) == 19.99
E       assert 19.98 == 19.99
tests/test_cart.py:88: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_discount_rounding - assert 19.98 == 19.99
==================== 1 failed, 47 passed, 2 skipped in 1.31s ====================
"""

UNITTEST = """\
..F.
======================================================================
FAIL: test_reply_to (test_mail.HeaderTests.test_reply_to)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/src/test_mail.py", line 40, in test_reply_to
    self.assertEqual(parsed["reply-to"], "ops@example.org")
AssertionError: 'dev@example.org' != 'ops@example.org'

----------------------------------------------------------------------
Ran 4 tests in 0.012s

FAILED (failures=1)
"""

JEST = """\
 PASS  src/utils/format.test.js
 FAIL  src/cart/voucher.test.js
  ● voucher › applies the spring code

    expect(received).toBe(expected) // Object.is equality

    Expected: 45
    Received: 50

      at Object.<anonymous> (src/cart/voucher.test.js:21:30)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 11 passed, 12 total
Snapshots:   0 total
Time:        2.114 s
"""

GO = """\
=== RUN   TestParseDuration
    duration_test.go:27: expected 90s, got 1m30s
--- FAIL: TestParseDuration (0.00s)
=== RUN   TestFormatDuration
--- PASS: TestFormatDuration (0.00s)
=== RUN   TestRoundDuration
--- PASS: TestRoundDuration (0.00s)
FAIL
exit status 1
FAIL	example.com/timekit	0.004s
"""

CARGO = """\
running 3 tests
test parser::tests::reads_header ... ok
test parser::tests::rejects_empty ... FAILED
test parser::tests::reads_body ... ok

failures:

---- parser::tests::rejects_empty stdout ----
thread 'parser::tests::rejects_empty' panicked at src/parser.rs:58:9:
assertion `left == right` failed
  left: 0
 right: 1

failures:
    parser::tests::rejects_empty

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""

MAVEN = """\
[INFO] -------------------------------------------------------
[INFO]  T E S T S
[INFO] -------------------------------------------------------
[INFO] Running com.shop.InvoiceTest
[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.21 s <<< FAILURE!
[ERROR] com.shop.InvoiceTest.roundsTax  Time elapsed: 0.02 s  <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <12.60> but was: <12.59>
[INFO]
[INFO] Results:
[INFO]
[ERROR] Failures:
[ERROR]   InvoiceTest.roundsTax:44 expected: <12.60> but was: <12.59>
[INFO]
[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0
[INFO] BUILD FAILURE
"""


def said(values: list[str], part: str) -> bool:
    return any(part in value for value in values)


def test_a_pytest_run_keeps_its_summary_failure_and_expected_value() -> None:
    assert is_log(PYTEST)
    values = log_values(PYTEST)
    assert values[0] == "1 failed, 47 passed, 2 skipped in 1.31s"  # the totals first
    assert said(values, "tests/test_cart.py::test_discount_rounding")
    assert said(values, "assert 19.98 == 19.99")
    assert not said(values, "test session starts") and not said(values, "collected")


def test_a_unittest_run() -> None:
    assert is_log(UNITTEST)
    values = log_values(UNITTEST)
    assert values[0] == "FAILED (failures=1)"
    assert said(values, "test_reply_to")
    assert said(values, "AssertionError: 'dev@example.org' != 'ops@example.org'")


def test_a_jest_run() -> None:
    assert is_log(JEST)
    values = log_values(JEST)
    assert said(values, "Tests: 1 failed, 11 passed, 12 total")
    assert said(values, "src/cart/voucher.test.js")
    assert "Expected: 45" in values and "Received: 50" in values
    assert not said(values, "src/utils/format.test.js")  # it passed


def test_a_go_test_run() -> None:
    assert is_log(GO)
    values = log_values(GO)
    assert said(values, "TestParseDuration")
    assert said(values, "expected 90s, got 1m30s")
    assert not said(values, "TestFormatDuration")


def test_a_cargo_test_run() -> None:
    assert is_log(CARGO)
    values = log_values(CARGO)
    assert said(values, "test result: FAILED. 2 passed; 1 failed")
    assert said(values, "parser::tests::rejects_empty")  # which test failed
    assert not said(values, "reads_header")


def test_a_maven_run() -> None:
    assert is_log(MAVEN)
    values = log_values(MAVEN)
    assert said(values, "Tests run: 5, Failures: 1, Errors: 0, Skipped: 0")
    assert said(values, "InvoiceTest.roundsTax")  # which test failed
    assert said(values, "expected: <12.60> but was: <12.59>")


@pytest.mark.parametrize(
    "text",
    [
        "We walked along the river for an hour.\nThen lunch at a small place by the bridge.",
        "Meeting notes\n- 3 people attended\n- we agreed on 2 milestones for June",
        "Status: escalated\nAssignee: Priya Raman\nQueue: billing",
        "error: one line is no log",
        "",
    ],
    ids=["prose", "notes", "record", "one-line", "empty"],
)
def test_a_text_that_is_not_a_log(text: str) -> None:
    assert not is_log(text)


def test_a_log_says_at_most_its_first_failures() -> None:
    failing = [f"FAILED tests/test_bulk.py::test_case_{n} - assert {n} == 0" for n in range(9)]
    log = "\n".join([*failing, "========== 9 failed, 3 passed in 0.40s =========="])
    values = log_values(log)
    assert values[0] == "9 failed, 3 passed in 0.40s"
    listed = [value for value in values if value.startswith("FAILED")]
    assert len(listed) == MAX_FAILURES
    assert said(listed, "test_case_0") and not said(listed, "test_case_8")


def test_a_logs_values_are_what_a_tool_output_of_it_says() -> None:
    assert result_values(PYTEST) == log_values(PYTEST)
    assert result_values(CARGO) == log_values(CARGO)
