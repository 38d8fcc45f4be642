"""A counting fake chat model for benchmarks: it answers synthesis prompts from their text.

It stands in for a real LLM on the local NetWiki: it picks the next state in declared
order, a URL and an element check among the candidates, and the element whose listing
matches the instruction's words. Every call is counted with token estimates (4
characters a token) in ``usage_metadata``, as a provider would report them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class OracleChatModel(BaseChatModel):
    """Answers SELECT_STATE, DEFINE_TRIGGERS and ACTION prompts; counts calls."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def _llm_type(self) -> str:
        return "oracle"

    @property
    def model_name(self) -> str:
        return "oracle-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt = str(messages[0].content)
        feedback = str(messages[-1].content) if len(messages) > 1 else ""
        text = json.dumps(answer(prompt, feedback))
        usage = {
            "input_tokens": len(prompt) // 4,
            "output_tokens": len(text) // 4,
            "total_tokens": (len(prompt) + len(text)) // 4,
        }
        self.calls += 1
        self.input_tokens += usage["input_tokens"]
        self.output_tokens += usage["output_tokens"]
        message = AIMessage(content=text, usage_metadata=usage)  # type: ignore[arg-type]
        return ChatResult(generations=[ChatGeneration(message=message)])


def _named(text: str, said: str) -> bool:
    """The triggers ``said`` quote ``text``, or name the one word it is (a title
    "Dashboard - Components" for "the dashboard")."""
    if f"'{text}'" in said:
        return True
    words = re.findall(r"\w+", text)
    return any(re.search(rf"\b{re.escape(w)}\b", said) for w in words if len(w) > 3)


def _stems(text: str) -> set[str]:
    """The first five letters of each longer word of ``text``, camelCase split
    ("#firstHeading": first, heading)."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", text)
    return {w.lower()[:5] for w in words if len(w) > 3}


def _section(prompt: str, title: str) -> list[str]:
    part = prompt.split(f"# {title}", 1)[1].split("\n# ", 1)[0]
    return [line for line in part.splitlines()[1:] if line.strip()]


def answer(prompt: str, feedback: str = "") -> dict[str, Any]:
    """The reply to one synthesis prompt; ``feedback``, the product's word on the last
    answer when it was refused, is heeded as a careful model would."""
    if "Choose the one state that" in prompt:
        names = [re.match(r"- (.+?):", line) for line in _section(prompt, "States (")]
        order = [m.group(1) for m in names if m]
        ran = [line[2:] for line in _section(prompt, "States that already ran") if line[:2] == "- "]
        later = order[order.index(ran[-1]) + 1 :] if ran and ran[-1] in order else order
        return {"state": (later or order)[0], "reasoning": "next in order"}
    if "candidate checks" in prompt.lower():
        candidates = re.findall(r"^(c\d+): (\w+) (.*)$", prompt, re.M)
        urls = [c for c in candidates if c[1] == "url"]
        query = [c for c in urls if c[2].startswith("prefix") and "?" in c[2]]
        chosen = [(query or urls)[0][0]]  # the exact URL, or its path for a query page
        # the texts and the title the triggers name, word for word
        said = " ".join(_section(prompt, "State:")).lower()
        for key, kind, what in candidates:
            quoted = re.findall(r"'([^']+)'", what)
            if kind in ("text", "title") and quoted and _named(quoted[0].lower(), said):
                chosen.append(key)
        chrome = ("search-input", "search-button", "login-link", "'header", "'nav")
        elements = [c for c in candidates if c[1] == "element"]
        # the element whose name a trigger says ("The Message field": <input> 'Message')
        named = [c for c in elements if (n := re.search(r"\] <\w+> '([^']+)'", c[2]))
                 and _named(n[1].lower(), said)]  # fmt: skip
        distinct = [c for c in elements if "'#" in c[2] and not any(x in c[2] for x in chrome)]
        # refused for words no chosen check stands for: a careful model looks again for
        # the checks that say what the trigger counts or names ("at least one search
        # result": the result links' selector), before the page's other elements
        if "no check stands for" in feedback:
            stems = _stems(said)
            chosen += [key for key, _, what in elements if not any(x in what for x in chrome)
                       and stems & _stems(what)]  # fmt: skip
        if named or distinct or elements:
            chosen.append((named or distinct or elements)[0][0])
        chosen = list(dict.fromkeys(chosen))[:4]
        return {"checks": chosen, "reasoning": "URL, the texts named and an element"}
    decided = _action(prompt)
    decided["reasoning"] = f"the page's matching element for: {_instruction(prompt)}"
    return decided


def _elements(prompt: str) -> list[tuple[int, str]]:
    return [(int(n), rest) for n, rest in re.findall(r"^\s+\[(\d+)\] (.*)$", prompt, re.M)]


SAME = {"log in": "sign in", "username": "user", "like": "favourite"}


def _find(prompt: str, words: list[str], tag: str = "") -> int:
    """The first listed element whose line has ``words`` (or what they mean elsewhere)."""
    for attempt in (words, [SAME.get(w.lower(), w) for w in words]):
        for mmid, line in _elements(prompt):
            low = line.lower()
            if (not tag or f"<{tag}>" in low) and all(w.lower() in low for w in attempt):
                return mmid
    raise LookupError(f"no element with {words} {tag} on the page")


def _instruction(prompt: str) -> str:
    found = re.search(r"# Instruction: (.*)", prompt)
    return found.group(1).strip() if found else ""


def _values(prompt: str) -> dict[str, str]:
    """The placeholders the prompt lists with their values (``{name} = value``)."""
    return dict(re.findall(r"^(\{\w+\}) = (.+)$", prompt, re.M))


def _words(text: str, values: dict[str, str]) -> list[str]:
    for name, value in values.items():
        text = text.replace(name, value)
    return [w for w in re.findall(r"[\w:]+", text) if w.lower() not in ("the", "first")]


def _first_in_main(prompt: str, words: list[str], tag: str) -> int:
    """The first element of the page's main list (``item 1 of``) with ``words``."""
    for mmid, line in _elements(prompt):
        low = line.lower()
        if "in main" in low and f"<{tag}>" in low and all(w.lower() in low for w in words):
            return mmid
    return _find(prompt, words, tag)


def _action(prompt: str) -> dict[str, Any]:
    text = _instruction(prompt)
    values = _values(prompt)
    if m := re.match(r"Type (\{\w+\}) into the (first )?(.+?) (?:field|box)$", text):
        name = _words(m.group(3), values)
        name = [{"username": "user"}.get(w.lower(), w) for w in name]
        try:
            mmid = _find(prompt, name, "input")
        except LookupError:
            mmid = _find(prompt, name, "textarea")
        return {"action": "type", "mmid": mmid, "params": {"text": m.group(1)}, "done": True}
    if m := re.match(r"Press (\w+)", text):
        return {"action": "press_key", "params": {"key": m.group(1)}, "done": True}
    if m := re.match(r"Scroll down (\d+) times", text):
        return {
            "action": "scroll",
            "params": {"direction": "down", "times": int(m.group(1))},
            "done": True,
        }
    if m := re.match(r"Wait (\S+) seconds", text):
        seconds = m.group(1)
        value: Any = float(seconds) if re.fullmatch(r"[\d.]+", seconds) else seconds
        return {"action": "wait", "params": {"seconds": value}, "done": True}
    if re.match(r"Start sampling video quality", text):
        return {"action": "start_video_sampling", "params": {}, "done": True}
    if "first result" in text:
        first = next(
            n for n, line in _elements(prompt) if "item 1 of" in line and "in main" in line
        )
        return {"action": "click", "mmid": first, "done": True}
    if m := re.match(r"Select '?(.+?)'? from the (.+?) (?:list|menu)$", text):
        option = m.group(1)
        return {
            "action": "select",
            "mmid": _find(prompt, _words(m.group(2), values), "select"),
            "params": {"text": values.get(option, option)},
            "done": True,
        }
    if m := re.match(r"Click the first '?(.+?)'? (button|link)$", text):
        tag = "button" if m.group(2) == "button" else "a"
        words = [w for w in _words(m.group(1), values) if w.lower() != "product"]
        return {"action": "click", "mmid": _first_in_main(prompt, words, tag), "done": True}
    quoted = re.search(r"'([^']+)'", text)
    name = quoted.group(1) if quoted else text.split()[-2]
    for placeholder, value in values.items():
        name = name.replace(placeholder, value)
    tag = "button" if "button" in text else "a" if "link" in text else ""
    return {"action": "click", "mmid": _find(prompt, [name], tag), "done": True}
