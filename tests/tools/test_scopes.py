"""tools/scopes.py: how a scope is put in words for a prompt."""

from __future__ import annotations

import os

from tools.manual import Capability
from tools.scopes import describe_scope, natural_command_scope, scope_covers


def test_a_scope_with_a_hidden_or_undecodable_character_is_described_escaped() -> None:
    folder = "/home/ann/" + os.fsdecode(b"\x1b[2Jold\xff") + "\u202etxt"

    described = describe_scope(Capability.FILE_READ, folder)

    assert described == "/home/ann/\\x1b[2Jold\\xff\\u202etxt"
    described.encode("utf-8")


def test_an_ordinary_scope_is_described_as_it_is() -> None:
    assert describe_scope(Capability.FILE_READ, "/home/ann/Café notes") == "/home/ann/Café notes"
    assert describe_scope(Capability.WEB_ACCESS, "domain:example.org") == "example.org"


def test_a_read_only_grant_for_a_call_that_named_no_folder_covers_no_folder_of_the_home() -> None:
    """A command run in the empty scratch folder (`cwd:`) asks for `readonly-in:` alone: that
    grant covers the next such command and none that sees a folder of the person's."""
    scope = natural_command_scope(["readonly:zcat -rf .", "cwd:"])
    assert scope == "readonly-in:"
    assert describe_scope(Capability.SYSTEM_EXECUTE, scope) == (
        "read-only commands that see none of your folders"
    )
    system = Capability.SYSTEM_EXECUTE
    assert scope_covers(system, scope, ["readonly:df -h", "cwd:"])
    assert not scope_covers(system, scope, ["readonly:zcat -rf /home/me", "cwd:", "dir:/home/me"])
    assert not scope_covers(system, scope, ["readonly:ls", "cwd:/home/me"])
    # A folder's grant still covers a call that sees none; an exact line in a folder does not
    # cover the same line run nowhere, nor the other way round.
    assert scope_covers(system, "readonly-in:/home/me", ["readonly:df -h", "cwd:"])
    assert not scope_covers(system, "command:ls\nin /home/me", ["readonly:ls", "cwd:"])
    assert scope_covers(system, "command:ls\nin ", ["readonly:ls", "cwd:"])
    assert not scope_covers(system, "command:ls\nin ", ["readonly:ls", "cwd:/home/me"])
    assert natural_command_scope(["readonly:cat /home/me/a", "cwd:", "dir:/home/me/a"]) == (
        "readonly-in:/home/me/a"
    )


def test_a_command_that_sees_the_whole_home_is_covered_only_by_its_exact_line() -> None:
    system = Capability.SYSTEM_EXECUTE
    targets = ["readonly:zcat -rf .", "cwd:/home/me", "home:"]
    assert natural_command_scope(targets) == "command:zcat -rf .\nin /home/me"
    assert not scope_covers(system, "readonly-in:/home/me", targets)
    assert not scope_covers(system, "readonly", targets)
    assert scope_covers(system, "command:zcat -rf .\nin /home/me", targets)
    assert not scope_covers(system, "command:ls -la\nin /home/me", targets)
