"""Entities without an LLM: capitalised name sequences, classified by cheap cues.

A heuristic rather than an NLP library because the small libraries that tag names (spaCy,
flair, stanza) fetch their models from a hub at run time, which fails offline. It finds proper
names (people, places, organisations) in English text well enough for a bank's entities (listed,
filtered on, shown on each memory, read by reflect); the LLM path (engine/memory/extraction.py) replaces it.
Rules: a run of capitalised words (allowing "of", "the", "de", "&" inside) that is not a lone
sentence-initial common word; "-ing/-ed" words, pronouns, weekdays and months are not names.
Kind: `organization` by suffix (Inc, University, ...), `place` after in/at/from/to or by suffix
(City, Street, ...), else `person` for one or two words that look like given names, else `name`.
"""

from __future__ import annotations

import re

from hindsight.language.chinese_names import Budget, chinese_names
from hindsight.language.cjk import CJK_RUN

# Words of any cased alphabet (Zoë, Émile, São Paulo, Москва), numbers and sentence punctuation.
_TOKEN = re.compile(r"[^\W\d_](?:[^\W\d_]|['’\-])*|[0-9]+|[.!?;:,()\"\n]")
_CONNECTORS = {"of", "the", "de", "del", "da", "van", "von", "&", "and"}
_ORG_SUFFIX = frozenset(
    """
    inc corp corporation ltd llc company co university college school institute bank group
    foundation association society club team agency hospital church museum library center centre
    academy
    """.split()
)
_PLACE_SUFFIX = frozenset(
    """
    city street st avenue road park lake river mountain mountains island islands county state beach
    valley bay country village
    """.split()
)
_PLACE_PREP = {"in", "at", "from", "near", "visited", "visit", "around"}
# pronouns, determiners, auxiliaries and conversational openers that start sentences
_STOP = frozenset(
    """
    i i'm i've i'd i'll im ive you he she it we they me my your his her its our their this that
    these those there here what when where who whom which why how a an the and but or so if then yes
    no not oh wow hey hi hello thanks thank ok okay yeah sure well just also really do does did is
    are was were be been have has had can could would should will shall may might must let let's
    lets as at by for from in into of on to with about after before since until while all any some
    every each both many much more most other such only own same too very again once always never
    sometimes maybe definitely absolutely totally great good nice awesome amazing cool glad sorry
    congrats congratulations haha lol btw anyway plus however though still today tomorrow yesterday
    tonight last next now soon recently monday tuesday wednesday thursday friday saturday sunday
    january february march april june july august september october november december mr mrs ms dr
    one two first speaking talking looking that's it's what's there's here's don't didn't can't
    won't isn't aren't wasn't haven't you're we're they're he's she's you've we've wanna gonna
    please
    """.split()
)


def _given_name_shaped(word: str) -> bool:
    """One capital and 1-14 small letters, of any cased alphabet ("Zoë", "Émile", "Олег")."""
    return 2 <= len(word) <= 15 and word.isalpha() and word[0].isupper() and word[1:].islower()


def canonical(name: str) -> str:
    return re.sub(r"\s+", " ", name.replace("’", "'")).strip().lower()


_KIND_OF_TYPE = {
    "person": "person",
    "per": "person",
    "people": "person",
    "organization": "organization",
    "organisation": "organization",
    "org": "organization",
    "company": "organization",
    "place": "place",
    "location": "place",
    "loc": "place",
    "gpe": "place",
    "city": "place",
    "country": "place",
}


def kind_of_type(entity_type: str | None) -> str:
    """Our kind for a client's entity type (PERSON, ORG, LOCATION, CONCEPT, ...); others are names."""
    return _KIND_OF_TYPE.get((entity_type or "").strip().lower(), "name")


# The longest entity name kept, as for a client's own (models.GivenEntity). A longer run of
# capitalised words is not a name; and names are keys of the unique btree index on entities
# (bank_id, canonical), whose entries PostgreSQL caps at 2,704 bytes (a third of a page), or 8,191
# compressed: an unbounded name (a 1 MB "fact" of capitalised words) failed the whole write.
MAX_ENTITY_CHARS = 200


def merge_entities(*lists: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Several [(name, kind)] lists as one, first spelling of each canonical name kept; names
    longer than MAX_ENTITY_CHARS are dropped."""
    out: dict[str, tuple[str, str]] = {}
    for pairs in lists:
        for name, kind in pairs:
            if name.strip() and len(name.strip()) <= MAX_ENTITY_CHARS:
                out.setdefault(canonical(name), (name.strip(), kind))
    return list(out.values())


def extract_entities(text: str, budget: Budget | None = None) -> list[tuple[str, str]]:
    """[(surface name, kind)] in order of first mention, deduplicated by canonical form:
    capitalised names (English rules, any cased alphabet), and Chinese names (language/chinese_names.py,
    within `budget`, the request's: one for all the texts of a retain)."""
    return merge_entities(_capitalised_names(text), chinese_names(text, budget))


def _capitalised_names(text: str) -> list[tuple[str, str]]:
    # CJK runs are cjk.py's; here a comma: it ends a name (Alice在北京见了Bob is two) but no sentence.
    tokens = _TOKEN.findall(CJK_RUN.sub(" , ", text))
    found: dict[str, tuple[str, str]] = {}
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if not tok[0].isupper():
            i += 1
            continue
        sentence_start = i == 0 or tokens[i - 1] in {".", "!", "?", "\n", ":", '"', "("}
        run = [tok]
        j = i + 1
        while j < n:
            t = tokens[j]
            if t[0].isupper() and t.lower() not in _STOP:
                run.append(t)
                j += 1
            elif (
                t.lower() in _CONNECTORS
                and j + 1 < n
                and tokens[j + 1][0].isupper()
                and tokens[j + 1].lower() not in _STOP
            ):
                run.extend([t, tokens[j + 1]])
                j += 2
            else:
                break
        # drop leading stop words ("The", "My", "Yesterday") from the run
        while run and run[0].lower() in _STOP | _CONNECTORS:
            run.pop(0)
            sentence_start = False
        while run and run[-1].lower() in _CONNECTORS:
            run.pop()
        if run:
            name = " ".join(run).strip("'’-")
            low = name.lower()
            single = len(run) == 1
            if low in _STOP or len(name) < 2 or (single and name.endswith(("ing", "ed")) and sentence_start):
                pass
            elif single and sentence_start and not _given_name_shaped(name):
                pass
            else:
                prev = tokens[i - 1].lower() if i > 0 else ""
                last = run[-1].lower()
                if any(w.lower() in _ORG_SUFFIX for w in run) or (name.isupper() and single):
                    kind = "organization"
                elif last in _PLACE_SUFFIX or prev in _PLACE_PREP:
                    kind = "place"
                elif len(run) <= 2 and all(_given_name_shaped(w) for w in run):
                    kind = "person"
                else:
                    kind = "name"
                key = canonical(name)
                if key not in found:
                    found[key] = (name, kind)
        i = max(j, i + 1)
    return list(found.values())
