"""Timelines benchmark: people whose city, job and favourite food change over the years, retained
turn by turn, then asked what is true now and what was true at a past time.

Written for this (seeded, no downloads): 40 people, each with three facts ("slots") that change
two or three times between 2015 and 2025, plus unrelated turns, in date order. Three ways to
retain the same turns, each into its own bank:

- `plain`: as before this feature: nothing is ever superseded;
- `explicit`: the client names the memory a new turn replaces (`supersedes`);
- `llm`: through the LLM path (the deterministic stub, whose rule says a fact updates a known
  fact when both name the same person first and speak of the same slot); extraction shows each
  turn its nearest known facts, and the answer's `updates` supersede them.

Questions: for every person and slot, "now" (the latest value) and, for every earlier value, "as
of" the middle of the time it held (`as_of`). Scored by whether that value ranks first, and
whether it is in the top 5 with no other value of the same fact beside it (what an agent reading
the top 5 needs: one answer, the right one). Costs: retain time per turn in each mode, and in `llm`
mode the LLM calls and prompt tokens per turn, with the share of the prompt spent on showing
known facts (the stub counts four characters a token).

    .venv/bin/python bench/timelines.py
    .venv/bin/python bench/timelines.py --people 80 --seed 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from locomo import latency, save  # noqa: E402  (sets up sys.path)

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.stub_llm import StubLLM  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

NAMES = (
    "Alice Bruno Chen Dara Emeka Farah Goran Hana Ivan Jia Kofi Lena Mateo Nia Omar Priya Quinn Rosa "
    "Sven Tariq Uma Viktor Wen Ximena Yusuf Zara Aiko Bjorn Chloe Dmitri Elif Femi Greta Hugo Ines "
    "Jonas Kira Luca Maya Nikos Olga Pablo Rania Soren Tomas Ulla Vera Wanda Yara Zeno"
).split()
CITIES = (
    "Lisbon Porto Madrid Berlin Munich Vienna Prague Warsaw Oslo Dublin Leeds Lyon Turin Naples Seville "
    "Valencia Bergen Gdansk Krakow Zurich Geneva Basel Antwerp Ghent Utrecht Bremen Leipzig Dresden"
).split()
ORGS = (
    "Acme Globex Initech Umbrella Hooli Vandelay Wonka Stark Wayne Tyrell Cyberdyne Soylent Aperture "
    "Monarch Oscorp Gringotts Dunder Sirius Virtucon Massive"
).split()
ROLES = "nurse teacher designer engineer chef pilot lawyer baker editor architect".split()
FOODS = "sushi ramen paella pierogi risotto tacos curry falafel goulash dumplings lasagne pho".split()

QUESTIONS = {
    "home": "Where does {name} live?",
    "work": "Where does {name} work?",
    "taste": "What is {name}'s favourite food?",
}


def say(slot: str, name: str, value: tuple[str, ...], first: bool) -> str:
    if slot == "home":
        return f"{name} lives in {value[0]}." if first else f"{name} moved to {value[0]}."
    if slot == "work":
        return f"{name} works at {value[0]} as a {value[1]}." if first else f"{name} joined {value[0]} as a {value[1]}."
    return f"{name}'s favourite food is {value[0]}." if first else f"{name} loves {value[0]} now, more than anything."


def timelines(people: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Turns in date order ({id, text, at, person, slot, value}), and the questions."""
    rng = random.Random(seed)
    start, span = datetime(2015, 1, 1, tzinfo=UTC), 10 * 365
    turns: list[dict] = []
    questions: list[dict] = []
    for name in NAMES[:people]:
        for slot in QUESTIONS:
            pool = {
                "home": [(c,) for c in CITIES],
                "work": [(o, r) for o in ORGS for r in ROLES],
                "taste": [(f,) for f in FOODS],
            }[slot]
            values = rng.sample(pool, rng.choice((3, 3, 4)))
            days = sorted(rng.sample(range(span), len(values)))
            held = []
            for i, (value, day) in enumerate(zip(values, days)):
                at = start + timedelta(days=day, hours=rng.randrange(8, 20))
                turns.append(
                    {"text": say(slot, name, value, i == 0), "at": at, "person": name, "slot": slot, "value": value[0]}
                )
                held.append((value[0], at))
            q = QUESTIONS[slot].format(name=name)
            every = [v for v, _ in held]
            questions.append({"kind": "now", "query": q, "expect": held[-1][0], "others": every[:-1]})
            for (value, since), (_, until) in zip(held, held[1:]):
                others = [v for v in every if v != value]
                questions.append(
                    {
                        "kind": "as_of",
                        "query": q,
                        "expect": value,
                        "others": others,
                        "as_of": since + (until - since) / 2,
                    }
                )
        for _ in range(3):  # unrelated turns that name the person
            at = start + timedelta(days=rng.randrange(span), hours=12)
            what = rng.choice(
                ["went hiking on Sunday", "read a long novel", "visited an old friend", "fixed a bicycle"]
            )
            turns.append({"text": f"{name} {what}.", "at": at, "person": name, "slot": None, "value": None})
    turns.sort(key=lambda t: t["at"])
    return turns, questions


async def retain_all(client: httpx.AsyncClient, bank: str, turns: list[dict], mode: str) -> float:
    """Retain the turns in date order, one call per turn; returns the seconds it took."""
    latest: dict[tuple[str, str], str] = {}
    t0 = time.perf_counter()
    for t in turns:
        item: dict = {"content": t["text"], "timestamp": t["at"].isoformat()}
        key = (t["person"], t["slot"])
        if mode == "explicit" and t["slot"] and key in latest:
            item["supersedes"] = [latest[key]]
        r = await client.post(f"/v1/banks/{bank}/memories", json=item, params={"wait": mode == "llm"})
        r.raise_for_status()
        body = r.json()
        if mode == "llm" and body["extraction"] != "succeeded":
            raise RuntimeError(f"extraction {body['extraction']} for {t['text']!r}")
        if t["slot"]:
            latest[key] = body["memory_ids"][0]
    return time.perf_counter() - t0


async def ask(client: httpx.AsyncClient, bank: str, questions: list[dict]) -> dict:
    """Per kind of question: how often the value true then ranks first (`at_1`), and how often
    it is in the top 5 with no other value of the same fact beside it (`clean_5`: an agent reading
    the top 5 sees one answer, the right one); for "now", how often an outdated value is in the
    top 5."""
    tally = {k: {"n": 0, "at_1": 0, "clean_5": 0} for k in ("now", "as_of")}
    outdated, times = 0, []
    for q in questions:
        body: dict = {"query": q["query"], "top_k": 5}
        if q["kind"] == "as_of":
            body["as_of"] = q["as_of"].isoformat()
        t = time.perf_counter()
        r = await client.post(f"/v1/banks/{bank}/recall", json=body)
        times.append(time.perf_counter() - t)
        r.raise_for_status()
        texts = [m["text"] for m in r.json()["results"]]
        other = any(v in text for v in q["others"] for text in texts)
        k = tally[q["kind"]]
        k["n"] += 1
        k["at_1"] += bool(texts) and q["expect"] in texts[0]
        k["clean_5"] += any(q["expect"] in text for text in texts) and not other
        outdated += q["kind"] == "now" and other
    return {
        "now_at_1": round(tally["now"]["at_1"] / tally["now"]["n"], 3),
        "now_clean_5": round(tally["now"]["clean_5"] / tally["now"]["n"], 3),
        "now_with_outdated_in_top5": round(outdated / tally["now"]["n"], 3),
        "as_of_at_1": round(tally["as_of"]["at_1"] / tally["as_of"]["n"], 3),
        "as_of_clean_5": round(tally["as_of"]["clean_5"] / tally["as_of"]["n"], 3),
        "questions": {k: v["n"] for k, v in tally.items()},
        **latency(times, "_recall"),
    }


async def main(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-timelines-"))
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    pg_url = pg.start()
    stub = StubLLM().start()
    env = {"HINDSIGHT_API_DATABASE_URL": pg_url, "HINDSIGHT_API_LOG_LEVEL": "warning"}
    llm_env = {
        **env,
        "HINDSIGHT_API_LLM_MODEL": "openai/stub-model",
        "HINDSIGHT_API_LLM_BASE_URL": stub.base_url,
        "HINDSIGHT_API_LLM_API_KEY": "stub",
    }
    turns, questions = timelines(args.people, args.seed)
    out: dict = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "people": args.people,
        "turns": len(turns),
        "changes": sum(1 for q in questions if q["kind"] == "as_of"),
        "llm": "stub (deterministic rule; not a model's judgement)",
        "modes": {},
    }
    offline, with_llm = Server(env).start(), Server(llm_env).start()
    try:
        for mode, server in (("plain", offline), ("explicit", offline), ("llm", with_llm)):
            bank = f"timelines_{mode}"
            async with httpx.AsyncClient(base_url=server.url, timeout=600) as client:
                before = len(stub.requests)
                seconds = await retain_all(client, bank, turns, mode)
                result = {
                    "retain_ms_per_turn": round(seconds / len(turns) * 1000, 2),
                    **await ask(client, bank, questions),
                }
                if mode == "llm":
                    usage = (await client.get(f"/v1/banks/{bank}/usage")).json()["by_operation"]
                    retained = next(r for r in usage if r["operation"] == "retain")
                    known_chars = 0
                    for req in stub.requests[before:]:
                        prompt = req["messages"][-1]["content"]
                        items = json.loads(prompt[prompt.index("{") :])["items"]
                        known_chars += sum(len(json.dumps(i.get("known", []), ensure_ascii=False)) for i in items)
                    result |= {
                        "llm_calls_per_turn": round(retained["calls"] / len(turns), 3),
                        "prompt_tokens_per_turn": round(retained["prompt_tokens"] / len(turns), 1),
                        "known_fact_tokens_per_turn": round(known_chars / 4 / len(turns), 1),
                        "completion_tokens_per_turn": round(retained["completion_tokens"] / len(turns), 1),
                    }
                out["modes"][mode] = result
                print(mode, json.dumps(result), flush=True)
    finally:
        offline.stop()
        with_llm.stop()
        stub.stop()
        pg.stop()
    save(out, "timelines")
    return out


def report(out: dict) -> None:
    print(f"\n== Timelines == {out['machine']}, {out['date']}")
    print(f"{out['people']} people, {out['turns']} turns, {out['changes']} changes; LLM: {out['llm']}")
    head = ("mode", "now@1", "now clean@5", "outdated@5", "as_of@1", "as_of clean@5", "retain ms/turn", "recall p50")
    print("".join(f"{h:>15}" for h in head))
    for mode, r in out["modes"].items():
        cells = (mode, r["now_at_1"], r["now_clean_5"], r["now_with_outdated_in_top5"], r["as_of_at_1"])
        cells += (r["as_of_clean_5"], r["retain_ms_per_turn"], r["ms_p50_recall"])
        print("".join(f"{c:>15}" for c in cells))
    if llm := out["modes"].get("llm"):
        print(
            f"llm: {llm['llm_calls_per_turn']} calls, {llm['prompt_tokens_per_turn']} prompt tokens "
            f"({llm['known_fact_tokens_per_turn']} of them known facts), "
            f"{llm['completion_tokens_per_turn']} completion tokens per turn"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--people", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    result = asyncio.run(main(ap.parse_args()))
    report(result)
