"""Who says a memory (language/speakers.py): the name a chat line opens with, and nothing else."""

from __future__ import annotations

import pytest

from hindsight.language.speakers import speaker_of


@pytest.mark.parametrize(
    "text, speaker",
    [
        ("Caroline: I went to a LGBTQ support group yesterday.", "Caroline"),
        ("Li Wei: By the way, I work as a nurse.", "Li Wei"),
        ("李伟：顺便说一下，我是一名护士。", "李伟"),
        ("  Jean-Luc:  bonjour", "Jean-Luc"),
        ("Zoë: ça va ?", "Zoë"),
        ("Mary Anne O'Brien: hello", "Mary Anne O'Brien"),
        ("Caroline went to a support group.", None),  # no colon: not a chat line
        ("note: buy milk", None),  # lower case: a label
        ("Note: buy milk", None),
        ("TODO: call Ann", None),
        ("User: what is the weather?", None),  # a role, not a name
        ("Error 42: disk full", None),
        ("The meeting: Tuesday at noon, with Ann and Bob and Carl", None),  # too many words for a name
        ("Caroline:", None),  # a name and nothing said
        ("Time: 10:30", None),
    ],
)
def test_the_speaker_is_the_name_a_chat_line_opens_with(text, speaker):
    assert speaker_of(text) == speaker
