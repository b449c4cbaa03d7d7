"""A deterministic OpenAI-compatible chat-completions server, for tests and benchmarks only.

It is not a feature: the server never starts it. Tests and `bench/` run it so that the real
litellm code path (HTTP, JSON-schema response format, usage accounting) is exercised without a
model. It recognises hindsight's prompts by their `TASK:` line and answers them by rule:

- `TASK: extract_facts`: one fact per sentence of each item, pronouns (he/she/they) replaced by
  the last name seen in the item, "yesterday"/"today" turned into dates from the item timestamp.
- `TASK: reflect`: an answer quoting the first memories it was given and citing their ids.
- `TASK: structured_output`: a value built from the JSON Schema in the prompt, its strings
  holding the answer (`[[structured-invalid]]` makes it answer `[]`, which no object schema takes).

Markers in the text steer failures: `[[malformed-once]]` (the first answer for that text is not
JSON), `[[malformed-always]]`, `[[error-once]]` (HTTP 500 once), `[[slow]]` / `[[slow-once]]` (sleep 30 s
before answering), `[[sleep:N]]` (sleep N seconds, e.g. to act while a refresh is in flight),
`[[empty]]` (an empty reflect answer).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter
from datetime import datetime, timedelta

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .testing import free_port

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NAME = re.compile(r"\b[A-Z][a-z]+\b")
_NOT_NAMES = {
    "She",
    "He",
    "They",
    "It",
    "I",
    "The",
    "A",
    "An",
    "We",
    "This",
    "That",
    "My",
    "Our",
    "Yesterday",
    "Today",
    "Tomorrow",
    "Last",
    "Next",
    "In",
    "On",
    "At",
    "And",
    "But",
}
_PRONOUN = re.compile(r"\b(she|he|they|She|He|They)\b")
_SLEEP = re.compile(r"\[\[sleep:(\d+(?:\.\d+)?)\]\]")


class StubLLM:
    def __init__(self):
        self.calls: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.seen: Counter[str] = Counter()
        self.busy_seconds = 0.0
        self.requests: list[dict] = []
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # ---- answers ------------------------------------------------------------------------
    def _once(self, key: str) -> bool:
        self.seen[key] += 1
        return self.seen[key] == 1

    def extract(self, prompt: str) -> str:
        payload = json.loads(prompt[prompt.index("{") : prompt.rindex("}") + 1])
        facts = []
        for item in payload["items"]:
            text = item["text"]
            if "[[malformed-always]]" in text or ("[[malformed-once]]" in text and self._once("m:" + text)):
                return '{"facts": [{"item": 0, "text": "unterminated'
            ts = datetime.fromisoformat(item["timestamp"]) if item.get("timestamp") else None
            last_name = None
            for sentence in _SENTENCE.split(text.strip()):
                names = [n for n in _NAME.findall(sentence) if n not in _NOT_NAMES]
                if last_name:
                    sentence = _PRONOUN.sub(last_name, sentence)
                if names:
                    last_name = last_name or names[0]
                fact = {
                    "item": item["index"],
                    "text": sentence.strip(),
                    "type": "experience" if re.search(r"\b(I|my|me)\b", sentence) else "world",
                    "entities": sorted(set(_NAME.findall(sentence)) - _NOT_NAMES),
                }
                if ts and "yesterday" in sentence.lower():
                    day = (ts - timedelta(days=1)).date().isoformat()
                    fact["occurred_start"], fact["occurred_end"] = day + "T00:00:00Z", day + "T23:59:59Z"
                if fact["text"]:
                    facts.append(fact)
        return json.dumps({"facts": facts})

    def reflect(self, prompt: str) -> str:
        memories = re.findall(r"\[memory ([0-9a-f-]{36})\] (.*)", prompt)
        models = re.findall(r"\[mental_model ([a-z0-9-]+)\]", prompt)
        query = re.search(r"QUESTION: (.*)", prompt)
        q = query.group(1) if query else ""
        if "[[empty]]" in q:
            return json.dumps({"answer": "", "memory_ids": [], "mental_model_ids": []})
        used = memories[:2]
        answer = f"Answer to '{q}': " + " ".join(t for _, t in used) if used else f"Nothing is known about '{q}'."
        return json.dumps({"answer": answer, "memory_ids": [i for i, _ in used], "mental_model_ids": models[:1]})

    def structured(self, prompt: str) -> str:
        if "[[structured-invalid]]" in prompt:
            return "[]"
        found = re.search(r"^SCHEMA: (.*)$", prompt, re.M)
        assert found, "a structured_output prompt carries its SCHEMA line"
        schema = json.loads(found.group(1))
        answer = re.search(r"^ANSWER: (.*)$", prompt, re.M)
        return json.dumps(_example(schema, answer.group(1) if answer else ""))

    # ---- HTTP -----------------------------------------------------------------------------
    async def chat(self, request: Request):
        body = await request.json()
        started = time.perf_counter()
        self.requests.append(body)
        system = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
        prompt = "\n".join(m["content"] for m in body["messages"] if m["role"] != "system")
        found = re.search(r"TASK: (\w+)", system)
        task = found.group(1) if found else "chat"
        self.calls[task] += 1
        if "[[error-once]]" in prompt and self._once("e:" + prompt):
            return JSONResponse({"error": {"message": "stub: injected server error", "type": "server_error"}}, 500)
        if "[[slow]]" in prompt or ("[[slow-once]]" in prompt and self._once("s:" + prompt)):
            await asyncio.sleep(30)
        if sleep := _SLEEP.search(prompt):
            await asyncio.sleep(float(sleep.group(1)))
        if task == "extract_facts":
            out = self.extract(prompt)
        elif task == "reflect":
            out = self.reflect(prompt)
        elif task == "structured_output":
            out = self.structured(prompt)
        else:
            out = "ok"
        pt, ct = max(1, (len(system) + len(prompt)) // 4), max(1, len(out) // 4)
        self.prompt_tokens += pt
        self.completion_tokens += ct
        self.busy_seconds += time.perf_counter() - started
        return JSONResponse(
            {
                "id": f"stub-{sum(self.calls.values())}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "stub"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": out}}],
                "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
            }
        )

    async def stats(self, request: Request):
        return JSONResponse(
            {
                "calls": dict(self.calls),
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            }
        )

    def start(self) -> StubLLM:
        self.port = free_port()
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/chat/completions", self.chat, methods=["POST"]),
                Route("/stats", self.stats),
            ]
        )
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self._server and self._thread:
            self._server.should_exit = True
            self._thread.join(10)


def _example(schema: dict, text: str):
    """A value valid against simple JSON Schemas (types, properties, items, enum, const)."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {k: _example(v, text) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_example(schema.get("items") or {}, text) for _ in range(max(1, schema.get("minItems", 1)))]
    return {"string": text, "integer": 1, "number": 1.0, "boolean": True, "null": None}.get(kind, text)
