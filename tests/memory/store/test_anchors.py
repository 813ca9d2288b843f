"""memory/store/anchors.py: the user's pinned notes keep their order, move, unpin, and go into
the prompt in order within a budget (real SQLite files, both modes).
"""

from __future__ import annotations

import pytest

from memory.store.errors import (
    AnchorNotFoundError,
)
from memory.types import Sensitivity

LOW, PERSONAL, SECRET = Sensitivity.LOW, Sensitivity.PERSONAL, Sensitivity.SECRET


def test_anchors_keep_their_order_and_can_be_moved_and_removed(store):
    a = store.add_anchor("Call me Sam.")
    b = store.add_anchor("I use metric units.")
    c = store.add_anchor("Answer briefly.")
    assert [x.id for x in store.anchors()] == [a.id, b.id, c.id]
    assert [x.position for x in store.anchors()] == [0, 1, 2]

    moved = store.move_anchor(c.id, 0)
    assert moved.position == 0
    assert [x.id for x in store.anchors()] == [c.id, a.id, b.id]
    store.move_anchor(c.id, 99)  # clamped to the end
    assert [x.id for x in store.anchors()] == [a.id, b.id, c.id]

    store.remove_anchor(a.id)
    assert [(x.id, x.position) for x in store.anchors()] == [(b.id, 0), (c.id, 1)]
    with pytest.raises(AnchorNotFoundError):
        store.remove_anchor(a.id)
    with pytest.raises(AnchorNotFoundError):
        store.move_anchor("nope", 1)
    # Anchors are not facts: they never come back from recall or list.
    assert store.recall("metric units") == []
    assert store.facts() == []


def test_anchors_prompt_fits_the_budget_in_order(store):
    store.add_anchor("Call me Sam.")  # "- Call me Sam." = 14 chars
    store.add_anchor("I use metric units.")  # 21 chars + newline
    store.add_anchor("Hi")  # would fit, but comes after one that does not

    full = store.anchors_prompt(1000)
    assert full.text == "- Call me Sam.\n- I use metric units.\n- Hi"
    assert full.used_chars == len(full.text)
    assert full.omitted == []

    tight = store.anchors_prompt(20)
    assert tight.text == "- Call me Sam."
    assert (tight.used_chars, tight.budget_chars) == (14, 20)
    assert [a.text for a in tight.omitted] == ["I use metric units.", "Hi"]

    assert store.anchors_prompt(0).text == ""
    assert len(store.anchors_prompt(0).omitted) == 3
