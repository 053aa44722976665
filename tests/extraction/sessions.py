"""Hand-written sessions for the extraction tests: items of every kind, in several languages.

Nothing here is copied from a benchmark: each session is written for the behaviour it tests.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memstore import ExtractiveSummarizer, MemoryItem, MemoryKind, MemoryRole, Priority
from memstore.core.tokens import WordEstimator

DAY_ONE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_KINDS = {
    "user": MemoryKind.USER_MESSAGE,
    "assistant": MemoryKind.ASSISTANT_MESSAGE,
    "tool": MemoryKind.TOOL_OBSERVATION,
    "developer": MemoryKind.DECISION,
}


class Items:
    """Builds a session's items in order: ``say``, ``call`` and ``note`` append one each."""

    def __init__(self, start: datetime = DAY_ONE) -> None:
        self.items: list[MemoryItem] = []
        self.start = start

    def _add(
        self,
        role: str,
        content: str,
        *,
        day: int = 0,
        payload: dict[str, Any] | None = None,
        call_id: str | None = None,
        priority: Priority = Priority.NORMAL,
        kind: MemoryKind | None = None,
    ) -> MemoryItem:
        seq = len(self.items) + 1
        item = MemoryItem(
            id=str(uuid.uuid4()),
            session_id="s",
            seq=seq,
            role=MemoryRole(role),
            kind=kind or _KINDS[role],
            priority=priority,
            content=content,
            timestamp=self.start + timedelta(days=day, minutes=seq),
            estimated_tokens=len(content.split()),
            payload=payload,
            call_id=call_id,
        )
        self.items.append(item)
        return item

    def say(self, role: str, text: str, *, day: int = 0) -> Items:
        self._add(role, text, day=day)
        return self

    def note(self, text: str, *, day: int = 0, priority: Priority = Priority.NORMAL) -> Items:
        """A tool observation without a call (a plain tool message)."""
        self._add("tool", text, day=day, priority=priority)
        return self

    def call(self, name: str, arguments: dict[str, Any], output: Any, *, day: int = 0) -> Items:
        """A function call and its output, as Responses items."""
        call_id = f"call-{len(self.items) + 1}"
        text = output if isinstance(output, str) else json.dumps(output)
        call = {"type": "function_call", "call_id": call_id, "name": name,
                "arguments": json.dumps(arguments)}  # fmt: skip
        self._add("assistant", f"{name}({json.dumps(arguments)})", day=day, payload=call,
                  call_id=call_id)  # fmt: skip
        result = {"type": "function_call_output", "call_id": call_id, "output": text}
        self._add("tool", text, day=day, payload=result, call_id=call_id)
        return self


def summarize(items: Sequence[MemoryItem], previous: str | None = None, room: int = 400) -> str:
    """The extractive summary of ``items`` within ``room`` words."""
    return ExtractiveSummarizer().summarize(
        previous, items, max_tokens=room, count_tokens=WordEstimator().count
    )


PYTEST_LOG = "\n".join(
    [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
        "collected 212 items",
        "",
        *(f"tests/test_billing.py::test_case_{n} PASSED" for n in range(12)),
        "tests/test_refunds.py::test_partial_refund FAILED",
        "",
        "=================================== FAILURES ===================================",
        "__________________________ test_partial_refund ___________________________",
        "    def test_partial_refund():",
        ">       assert refund(order, 40) == 12.5",
        "E       assert 10.0 == 12.5",
        "tests/test_refunds.py:31: AssertionError",
        "=========================== short test summary info ============================",
        "FAILED tests/test_refunds.py::test_partial_refund - assert 10.0 == 12.5",
        "======================== 1 failed, 211 passed in 4.02s =========================",
    ]
)

#: One planning conversation in three languages: the facts a later question needs are the
#: same in each (a name, a booking reference, a city, a sister's name, a daughter's name and
#: allergy), and so is the chatter around them.
TRIP = {
    "en": [
        ("user", "Hi! I'm planning a family trip for the spring holidays."),
        ("assistant", "Happy to help. Where would you like to go?"),
        ("user", "My booking reference is QX-4471 and we fly to Lisbon on 14 April."),
        ("user", "My sister Irina will meet us there; she lives in Porto."),
        ("user", "My daughter is called Mila and she is allergic to peanuts."),
        ("assistant", "Noted. I will look for restaurants without peanuts near the hotel."),
        ("user", "Thanks, that sounds good."),
    ],
    "ru": [
        ("user", "Привет! Я планирую семейную поездку на весенние каникулы."),
        ("assistant", "С удовольствием помогу. Куда вы хотите поехать?"),
        ("user", "Номер моей брони QX-4471, и мы летим в Лиссабон 14 апреля."),
        ("user", "Моя сестра Ирина встретит нас там, она живёт в Порту."),
        ("user", "Мою дочь зовут Мила, у неё аллергия на арахис."),
        ("assistant", "Записал. Я поищу рестораны без арахиса рядом с отелем."),
        ("user", "Спасибо, звучит хорошо."),
    ],
    "zh": [
        ("user", "你好！我在计划春假的家庭旅行。"),
        ("assistant", "很乐意帮忙。你们想去哪里？"),
        ("user", "我的预订号是QX-4471，我们4月14日飞往里斯本。"),
        ("user", "我姐姐伊琳娜会在那里接我们，她住在波尔图。"),
        ("user", "我女儿叫米拉，她对花生过敏。"),
        ("assistant", "记下了。我会在酒店附近找不含花生的餐厅。"),
        ("user", "谢谢，听起来不错。"),
    ],
}
#: What each language's trip must keep (the same facts, as that language writes them).
TRIP_FACTS = {
    "en": ["QX-4471", "Lisbon", "14 April", "Irina", "Porto", "Mila", "peanuts"],
    "ru": ["QX-4471", "Лиссабон", "14 апреля", "Ирина", "Порту", "Мила", "арахис"],
    "zh": ["QX-4471", "里斯本", "4月14日", "伊琳娜", "波尔图", "米拉", "花生"],
}
#: Later turns of each language that push the trip out of working memory.
TRIP_LATER = {
    "en": "Could you also suggest a museum for a rainy afternoon?",
    "ru": "Можешь ещё посоветовать музей на дождливый день?",
    "zh": "你还能推荐一个下雨天可以去的博物馆吗？",
}


def trip(language: str) -> Items:
    """The trip conversation in ``language``."""
    built = Items()
    for role, text in TRIP[language]:
        built.say(role, text)
    return built
