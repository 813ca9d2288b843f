"""How untrusted text is shown: what is escaped, what is left alone, and that a name shown
escaped leads back to exactly that name."""

from __future__ import annotations

import json
import os

import pytest

from tools.escapes import (
    encodable,
    name_from_visible,
    path_from_visible,
    visible,
    visible_json,
    visible_name,
    visible_path,
)

# Names as Python reads them from a folder: bytes that are not UTF-8 become lone surrogates.
NOT_UTF8 = os.fsdecode(b"report\xff.txt")
HALF_A_CHARACTER = os.fsdecode(b"caf\xc3")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;pwned\x07title", "\\x1b]0;pwned\\x07title"),
        ("\x1b[2J\x1b[Hclean", "\\x1b[2J\\x1b[Hclean"),
        ("\x9b31m", "\\u009b31m"),  # the one-byte CSI of 8-bit terminals
        ("invoice\u202etxt.exe", "invoice\\u202etxt.exe"),
        ("pay\u200bpal", "pay\\u200bpal"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("carriage\rreturn", "carriage\\x0dreturn"),
        (NOT_UTF8, "report\\xff.txt"),
        (HALF_A_CHARACTER, "caf\\xc3"),
    ],
)
def test_what_could_hide_or_rewrite_text_is_escaped(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert visible(text).isprintable()


@pytest.mark.parametrize(
    "text",
    ["plain words", "Café crème", "東京の地図", "👩\u200d🚀 launch", "❤\ufe0f\u200d🔥", "a\\b"],
)
def test_ordinary_text_of_any_script_and_emoji_is_left_as_it_is(text: str) -> None:
    assert visible(text) == text


def test_a_reply_keeps_its_lines_and_tabs_but_not_a_carriage_return() -> None:
    assert visible("one\n\ttwo\rthree", lines=True) == "one\n\ttwo\\x0dthree"
    assert visible("one\ntwo") == "one\\x0atwo"


@pytest.mark.parametrize(
    "name",
    [
        NOT_UTF8,
        HALF_A_CHARACTER,
        "\x1b[31mred",
        "back\\slash\x1b",
        "lit\\xff\udcfe",
        "x\u202eexe.txt",
        "new\nline",
    ],
)
def test_a_name_shown_escaped_leads_back_to_that_name(name: str) -> None:
    shown = visible_name(name)

    assert shown.isprintable()
    assert name_from_visible(shown) == name


def test_a_plain_name_is_shown_as_it_is_and_needs_no_way_back() -> None:
    assert visible_name("notes\\2024.txt") == "notes\\2024.txt"
    assert name_from_visible("notes.txt") is None


def test_a_path_is_escaped_name_by_name_so_a_folder_is_the_start_of_its_entries() -> None:
    folder = "/home/ann/odd\\dir"
    entry = f"{folder}/{NOT_UTF8}"

    assert visible_path(entry).startswith(visible_path(folder) + "/")
    assert path_from_visible(visible_path(entry)) == entry


def test_json_escaping_keeps_the_same_value_and_shows_nothing_hidden() -> None:
    value = {"reply": "a\u202eb\U000e0041\x9b " + NOT_UTF8 + " 東京 👩\u200d🚀", "n": 1}

    text = visible_json(json.dumps(value, ensure_ascii=False))

    assert json.loads(text) == value
    assert "\u202e" not in text
    assert "\x9b" not in text
    assert "東京" in text


def test_only_surrogates_are_changed_to_make_text_encodable() -> None:
    text = "tab\tand\x1b and " + NOT_UTF8

    assert encodable(text) == "tab\tand\x1b and report\\xff.txt"
    encodable(text).encode("utf-8")
