"""tools/scopes.py: how a scope is put in words for a prompt."""

from __future__ import annotations

import os

from tools.manual import Capability
from tools.scopes import describe_scope


def test_a_scope_with_a_hidden_or_undecodable_character_is_described_escaped() -> None:
    folder = "/home/ann/" + os.fsdecode(b"\x1b[2Jold\xff") + "\u202etxt"

    described = describe_scope(Capability.FILE_READ, folder)

    assert described == "/home/ann/\\x1b[2Jold\\xff\\u202etxt"
    described.encode("utf-8")


def test_an_ordinary_scope_is_described_as_it_is() -> None:
    assert describe_scope(Capability.FILE_READ, "/home/ann/Café notes") == "/home/ann/Café notes"
    assert describe_scope(Capability.WEB_ACCESS, "domain:example.org") == "example.org"
