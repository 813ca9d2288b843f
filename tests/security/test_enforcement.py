"""Security corpus: the enforcement point against tools not shown, bad tokens and path escapes.

Every attempt goes through the real runner with the real file tools, a real permission broker
and a real audit log. For each we check that it is refused or denied, that the audit log says
so (TOOL_CALL_END, and no TOOL_CALL_START), and that the secret it went for never came back.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.permissions import (
    ONCE_LIFETIME_S,
    PermissionRequest,
    PromptDecision,
    RulePrompter,
    TokenAuthority,
    args_digest,
)
from broker.runner import CallOutcome, TurnScope
from broker.types import GrantMode
from tests.support.rig import Rig as ToolRig
from tests.support.rig import make_rig
from tools.files import make_file_tools

SECRET_TEXT = "BEGIN-PRIVATE-KEY-canary-7f3a"


class ScopedPrompter(RulePrompter):
    """Says yes to prompts inside the user's own scope and no to anything else.

    This is what `--approve file_read=session` does on the command line.
    """

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        if request.user_scope:
            return PromptDecision(allow=True, mode=GrantMode.SESSION)
        return PromptDecision(allow=False)


@dataclasses.dataclass
class Rig:
    """A home with a private key behind symlinks, and the support rig over its file tools."""

    home: Path
    docs: Path
    stack: ToolRig

    def run(self, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        return self.stack.runner.execute(self.stack.turn, tool, arguments)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    home = tmp_path / "home"
    docs = home / "Documents"
    docs.mkdir(parents=True)
    (docs / "notes.txt").write_text("shopping list\n")
    ssh = home / ".ssh"
    ssh.mkdir()
    (ssh / "id_rsa").write_text(SECRET_TEXT + "\n")
    (docs / "innocent").symlink_to(ssh / "id_rsa")
    (docs / "keys").symlink_to(ssh)
    (home / "Documents2").mkdir()
    (home / "Documents2" / "other.txt").write_text(SECRET_TEXT)
    stack = make_rig(
        tmp_path,
        make_file_tools(home=home),
        prompter=ScopedPrompter(),
        allowed=["file_list", "file_read", "file_search"],
        turn_id="t-sec",
        user_scopes=[str(docs)],
    )
    yield Rig(home, docs, stack)
    stack.close()


def assert_blocked(rig: Rig, outcome, statuses=("refused", "denied", "error")) -> None:
    assert outcome.record.status in statuses, outcome.record
    assert outcome.record.reason
    assert SECRET_TEXT not in outcome.model_text
    ends = rig.stack.events("TOOL_CALL_END")
    assert ends[-1]["data"]["call_id"] == outcome.record.call_id
    assert ends[-1]["data"]["status"] == outcome.record.status
    starts = rig.stack.events("TOOL_CALL_START")
    assert outcome.record.call_id not in {e["data"]["call_id"] for e in starts}


ESCAPES = [
    "~/Documents/../.ssh/id_rsa",
    "~/Documents/./../.ssh/id_rsa",
    "~/Documents/innocent",
    "~/Documents/keys/id_rsa",
    "~/Documents//..//.ssh//id_rsa",
    "~/Documents/notes.txt/../../.ssh/id_rsa",
    "~/Documents2/other.txt",
    "~/.ssh/id_rsa",
    "{home}/.ssh/id_rsa",
    "{home}/Documents/../.ssh/id_rsa",
    "  ~/Documents/../.ssh/id_rsa  ",
    "'~/Documents/../.ssh/id_rsa'",
    "/etc/passwd",
    "/proc/self/environ",
]


@pytest.mark.parametrize("raw", ESCAPES)
def test_path_escapes_from_a_documents_grant_are_denied(rig: Rig, raw: str) -> None:
    path = raw.replace("{home}", str(rig.home))
    outcome = rig.run("file_read", {"path": path})
    assert_blocked(rig, outcome)


@pytest.mark.parametrize("raw", ["~/Documents/../.ssh", "~/Documents/keys", "/"])
def test_listing_outside_the_grant_is_denied(rig: Rig, raw: str) -> None:
    outcome = rig.run("file_list", {"path": raw})
    assert_blocked(rig, outcome)


def test_search_under_the_grant_never_follows_a_symlink_out(rig: Rig) -> None:
    outcome = rig.run("file_search", {"root": "~/Documents", "content": "canary"})
    assert outcome.record.status == "ok"
    assert SECRET_TEXT not in outcome.model_text
    assert outcome.result is not None
    assert outcome.result.data["hits"] == []


@pytest.mark.parametrize(
    "raw",
    ["~/Documents/notes.txt\x00/../../.ssh/id_rsa", "~/Documents/" + "a/" * 3000 + "x"],
)
def test_malformed_paths_are_errors(rig: Rig, raw: str) -> None:
    outcome = rig.run("file_read", {"path": raw})
    assert_blocked(rig, outcome, ("error", "denied"))


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("system_execute", {"command": "cat ~/.ssh/id_rsa"}),
        ("screen_capture", {}),
        ("web_fetch", {"url": "http://169.254.169.254/"}),
        ("memory_write", {"text": "x"}),
        ("file_read ", {"path": "~/Documents/notes.txt"}),
        ("FILE_READ", {"path": "~/Documents/notes.txt"}),
        ("file_read\u200b", {"path": "~/Documents/notes.txt"}),
        ("../file_read", {"path": "~/Documents/notes.txt"}),
    ],
)
def test_tools_the_model_was_not_shown_are_refused(rig: Rig, name: str, arguments: dict) -> None:
    outcome = rig.run(name, arguments)
    assert_blocked(rig, outcome, ("refused",))


def test_a_registered_tool_outside_this_turns_allowed_set_is_refused(rig: Rig) -> None:
    chat = TurnScope("t-chat", [], [str(rig.docs)])
    outcome = rig.stack.runner.execute(chat, "file_read", {"path": "~/Documents/notes.txt"})
    assert_blocked(rig, outcome, ("refused",))


# --- tokens ------------------------------------------------------------------------------------


def _authorised(rig: Rig, path: str, mode: GrantMode = GrantMode.ONCE):
    tool = rig.stack.runner.registry.get("file_read")
    assert tool is not None
    arguments = {"path": path}
    targets = tool.targets(arguments)
    rig.stack.permissions.prompter = _Always(mode)
    token = rig.stack.permissions.authorize(
        tool="file_read",
        capability=tool.capability,
        arguments=arguments,
        targets=targets,
        call_id="call-1",
        user_scopes=[str(rig.docs)],
    )
    return tool, arguments, targets, token


class _Always(RulePrompter):
    def __init__(self, mode: GrantMode) -> None:
        self.mode = mode

    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=True, mode=self.mode)


def _run(rig: Rig, tool, arguments, targets, token, call_id="call-1"):
    return rig.stack.runner.run_with_token(rig.stack.turn, tool, call_id, arguments, targets, token)


def test_expired_token(rig: Rig) -> None:
    tool, arguments, targets, token = _authorised(rig, "~/Documents/notes.txt")
    rig.stack.clock.advance(ONCE_LIFETIME_S + 1)
    assert_blocked(rig, _run(rig, tool, arguments, targets, token), ("denied",))


def test_revoked_token(rig: Rig) -> None:
    tool, arguments, targets, token = _authorised(rig, "~/Documents/notes.txt", GrantMode.SESSION)
    rig.stack.permissions.revoke_all()
    assert_blocked(rig, _run(rig, tool, arguments, targets, token), ("denied",))


def test_forged_token(rig: Rig) -> None:
    tool, arguments, targets, token = _authorised(rig, "~/Documents/notes.txt")
    forged = dataclasses.replace(token, mac="0" * 64)
    assert_blocked(rig, _run(rig, tool, arguments, targets, forged), ("denied",))


def test_token_signed_by_another_install(rig: Rig) -> None:
    tool, arguments, targets, token = _authorised(rig, "~/Documents/notes.txt")
    other = TokenAuthority(b"o" * 32, rig.stack.clock)
    forged = dataclasses.replace(token, mac=other._sign(token))
    assert_blocked(rig, _run(rig, tool, arguments, targets, forged), ("denied",))


def test_replayed_token(rig: Rig) -> None:
    tool, arguments, targets, token = _authorised(rig, "~/Documents/notes.txt")
    first = _run(rig, tool, arguments, targets, token)
    assert first.record.status == "ok"
    again = _run(rig, tool, arguments, targets, token)
    assert again.record.status == "denied"
    assert again.record.reason.startswith("replayed")
    refused = rig.stack.events("TOKEN_REFUSED")
    assert refused[-1]["data"]["problem"] == "replayed"
    starts = rig.stack.events("TOOL_CALL_START")
    assert len(starts) == 1  # only the first, legitimate use ran


def test_arguments_changed_after_a_once_grant(rig: Rig) -> None:
    tool, _arguments, _targets, token = _authorised(rig, "~/Documents/notes.txt")
    swapped = {"path": str(rig.home / "Documents2" / "other.txt")}
    outcome = _run(rig, tool, swapped, tool.targets(swapped), token)
    assert_blocked(rig, outcome, ("denied",))


def test_token_moved_to_another_call(rig: Rig) -> None:
    tool, arguments, targets, token = _authorised(rig, "~/Documents/notes.txt")
    outcome = _run(rig, tool, arguments, targets, token, call_id="call-2")
    assert_blocked(rig, outcome, ("denied",))


def test_token_scope_widened_by_hand(rig: Rig) -> None:
    tool, arguments, targets, token = _authorised(rig, "~/Documents/notes.txt", GrantMode.SESSION)
    widened = dataclasses.replace(token, scope=str(rig.home))
    assert_blocked(rig, _run(rig, tool, arguments, targets, widened), ("denied",))


def test_missing_token(rig: Rig) -> None:
    tool = rig.stack.runner.registry.get("file_read")
    arguments = {"path": "~/Documents/notes.txt"}
    outcome = _run(rig, tool, arguments, tool.targets(arguments), None)
    assert_blocked(rig, outcome, ("denied",))


def test_digest_is_over_the_exact_arguments() -> None:
    assert args_digest({"path": "a", "max_bytes": 1}) == args_digest({"max_bytes": 1, "path": "a"})
    assert args_digest({"path": "a"}) != args_digest({"path": "a "})


def test_nothing_here_read_the_secret(rig: Rig) -> None:
    """The canary file's access time is not reliable on every mount, so check content flow:
    the audit log never holds the secret, whatever ran."""
    for raw in ESCAPES:
        rig.run("file_read", {"path": raw.replace("{home}", str(rig.home))})
    assert SECRET_TEXT not in rig.stack.audit_path.read_text()
    assert os.path.exists(rig.home / ".ssh" / "id_rsa")
