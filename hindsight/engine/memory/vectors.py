"""The vector a memory is stored with: its text's embedding, leaned toward its speaker's name when
it is a chat line ("Caroline: ...", language/speakers.py).

The lean adds SPEAKER_LEAN times the name's own embedding and normalises: a question about a person
is then nearest that person's own turns, long or short, and it is the name that does it, not the
normalisation (bench/README.md, "Recall that finds what matters"). Every path that stores a
memory's vector goes through memory_vectors, so the memories of a bank compare alike.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from hindsight.language.cjk import HAN_RUN
from hindsight.language.gloss import GLOSS_VERSION, gloss
from hindsight.language.speakers import speaker_of

SPEAKER_LEAN = 1.5
# Name vectors kept (the speakers of a conversation recur in every retain of it): at most ~1.5 MB.
_KEPT = 1_024
_lock = threading.Lock()
_names: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()


def gloss_chinese(embedder) -> None:
    """Have `embedder` (a model that reads English only) read Chinese through its English gloss
    (language/gloss.py), stored texts and queries alike. The recorded model's name says so: the
    vectors of texts holding Chinese differ, and a change of it re-embeds those
    (engine/memory/reembedding.py)."""
    embedder.prepare = gloss
    embedder.reads_han = True
    embedder.name = f"{embedder.name}{GLOSS_VERSION}"


_GLOSS_NAME = re.compile(r"\+zh-gloss-\d+$")


def gloss_changed_only(recorded: str, loaded: str) -> bool:
    """Whether two recorded model names differ in their Chinese gloss alone (on, off, or its
    version): then only the vectors of texts it glosses differ."""
    return recorded != loaded and _GLOSS_NAME.sub("", recorded) == _GLOSS_NAME.sub("", loaded)


def glosses(text: str) -> bool:
    """Whether the gloss may change the stored vector of a text: it holds Han characters (in
    itself or in its speaker's name, whose vector leans it even when the line is Japanese)."""
    return HAN_RUN.search(text) is not None


def memory_vectors(embedder, texts: Sequence[str], spread: bool = True) -> np.ndarray:
    """The stored vectors of memories with these texts, in order (float32 rows, unit length)."""
    speakers = [speaker_of(t) for t in texts]
    named = _name_vectors(embedder, {s for s in speakers if s}, spread)
    vectors = embedder.embed(list(texts), spread=spread)
    for i, s in enumerate(speakers):
        if s:
            v = vectors[i] + SPEAKER_LEAN * named[s]
            vectors[i] = v / np.linalg.norm(v)
    return vectors


def _name_vectors(embedder, names: set[str], spread: bool) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with _lock:
        for n in names:
            hit = _names.get((embedder.name, n))
            if hit is not None:
                _names.move_to_end((embedder.name, n))
                out[n] = hit
    missing = sorted(names - out.keys())
    if missing:
        for n, v in zip(missing, embedder.embed(missing, spread=spread)):
            out[n] = v
        with _lock:
            for n in missing:
                _names[(embedder.name, n)] = out[n]
            while len(_names) > _KEPT:
                _names.popitem(last=False)
    return out
