"""Security corpus: with every prompt approved, the file tools still never reach a private place.

The review's demand: "With every prompt approved, a hostile model can neither read a credential
nor Chamberlain's files." Every attempt goes through the real runner, a real permission broker
whose prompter says yes to everything (session grants for whatever scope it is asked about) and
a real audit log, with the file tools built the way a session builds them (`tool_config` ->
`builtin_registry`). The user's home and Chamberlain's home are folders under tmp_path; HOME
points at the former so nothing here touches the real one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.permissions import (
    PermissionRequest,
    PromptDecision,
    RulePrompter,
)
from broker.runner import CallOutcome
from broker.session import tool_config
from broker.settings import Settings
from broker.types import GrantMode
from tests.support.rig import Rig as ToolRig
from tests.support.rig import make_rig
from tools.registry import builtin_registry

SSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nssh-canary-41c9\n-----END OPENSSH PRIVATE KEY-----\n"
)
# Chamberlain's own files, each with a canary of its own (text, so file_read would return it).
OWN_FILES = {
    "token.key": "token-canary-8d21",
    "grants.json": "grants-canary-5b07",
    "audit.jsonl": "audit-canary-e3f0",
    "audit.jsonl.head": "head-canary-09aa",
    "memory.db": "memory-canary-77c2",
    "memory.db-wal": "wal-canary-1f6e",
    "memory.db-shm": "shm-canary-c4d8",
    "memory.keying": "keying-canary-a951",
    "settings.json": "settings-canary-2e4b",
}
SECRETS = ["ssh-canary-41c9", *OWN_FILES.values()]


class ApproveEverything(RulePrompter):
    """A user who clicks "allow for this session" on every prompt, for exactly what was asked."""

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.SESSION, scope=request.scope)


@dataclasses.dataclass
class Rig:
    """A home holding Chamberlain's own files and a key, the support rig over the built-in
    tools, and its prompter as the `ApproveEverything` it is."""

    home: Path
    docs: Path
    app: Path
    stack: ToolRig
    prompter: ApproveEverything

    def run(self, tool: str, **arguments: object) -> CallOutcome:
        return self.stack.runner.execute(self.stack.turn, tool, dict(arguments))

    def audit_text(self) -> str:
        return self.stack.audit_path.read_text()


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    home = tmp_path / "home"
    docs = home / "Documents"
    docs.mkdir(parents=True)
    (docs / "notes.txt").write_text("shopping list: key lime pie\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SSH_KEY)
    app = home / "Chamberlain"  # `chamberlain --home ~/Chamberlain`
    app.mkdir()
    for name, canary in OWN_FILES.items():
        (app / name).write_text(canary + "\n")
    (docs / "innocent.txt").symlink_to(home / ".ssh" / "id_rsa")
    (docs / "assistant").symlink_to(app)
    os.link(app / "token.key", docs / "backup.key")
    monkeypatch.setenv("HOME", str(home))

    prompter = ApproveEverything()
    stack = make_rig(
        tmp_path,
        registry=builtin_registry(tool_config(app, Settings())),
        prompter=prompter,
        audit_path=tmp_path / "audit-of-this-test.jsonl",  # the rig's log, outside both homes
        allowed=["file_list", "file_read", "file_search"],
        turn_id="t-private",
        user_scopes=[str(home)],
    )
    yield Rig(home, docs, app, stack, prompter)
    stack.close()


def assert_refused_unasked(rig: Rig, outcome: CallOutcome) -> None:
    assert outcome.record.status == "refused", outcome.record
    assert "never read it" in outcome.record.reason
    assert rig.prompter.asked == []  # refused before anyone was asked
    for secret in SECRETS:
        assert secret not in outcome.model_text
        assert secret not in rig.audit_text()
    assert rig.stack.events("TOOL_CALL_START", outcome.record.call_id) == []


PRIVATE_READS = [
    "~/.ssh/id_rsa",
    "{app}/token.key",
    "{app}/grants.json",
    "{app}/audit.jsonl",
    "{app}/audit.jsonl.head",
    "{app}/memory.db-wal",
    "{app}/memory.keying",
    "{app}/settings.json",
    "~/Documents/../.ssh/id_rsa",
    "~/Documents/../Chamberlain/token.key",
    "~/Documents/innocent.txt",
    "~/Documents/assistant/token.key",
    "~/Documents/backup.key",
    "/proc/self/cwd/token.key",
    "/etc/shadow",
]


@pytest.mark.parametrize("raw", PRIVATE_READS)
def test_with_every_prompt_approved_no_credential_or_chamberlain_file_can_be_read(
    rig: Rig, raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(rig.app)  # so /proc/self/cwd is Chamberlain's home
    outcome = rig.run("file_read", path=raw.replace("{app}", str(rig.app)))
    assert_refused_unasked(rig, outcome)


@pytest.mark.parametrize("raw", ["~/.ssh", "{app}", "~/Documents/assistant", "/proc/self/cwd"])
def test_private_folders_can_be_neither_listed_nor_searched(
    rig: Rig, raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(rig.app)
    path = raw.replace("{app}", str(rig.app))
    assert_refused_unasked(rig, rig.run("file_list", path=path, show_hidden=True))
    assert_refused_unasked(rig, rig.run("file_search", root=path, name_glob="*"))


def test_listing_the_home_leaves_out_ssh_and_chamberlains_folder_and_says_so(rig: Rig) -> None:
    outcome = rig.run("file_list", path="~", show_hidden=True)
    assert outcome.record.status == "ok"
    assert outcome.result is not None
    names = [e["name"] for e in outcome.result.data["entries"]]
    assert names == ["Documents"]
    assert outcome.result.data["private_withheld"] == 2
    assert "2 private entries not shown (credentials, Chamberlain's own files)" in (
        outcome.result.text
    )
    assert ".ssh" not in outcome.model_text


def test_in_documents_the_notes_still_list_and_read_but_links_to_private_places_are_left_out(
    rig: Rig,
) -> None:
    outcome = rig.run("file_list", path="~/Documents")
    assert outcome.record.status == "ok"
    assert outcome.result is not None
    names = [e["name"] for e in outcome.result.data["entries"]]
    assert names == ["notes.txt"]  # not innocent.txt, assistant, backup.key
    assert outcome.result.data["private_withheld"] == 3
    assert "id_rsa" not in outcome.model_text

    read = rig.run("file_read", path="~/Documents/notes.txt")
    assert read.record.status == "ok"
    assert read.result is not None
    assert read.result.data["content"] == "shopping list: key lime pie\n"


def test_a_content_search_of_the_home_finds_no_key_in_ssh(rig: Rig) -> None:
    outcome = rig.run("file_search", root="~", content="BEGIN OPENSSH", show_hidden=True)
    assert outcome.record.status == "ok"
    assert outcome.result is not None
    assert outcome.result.data["hits"] == []
    assert "ssh-canary" not in outcome.model_text
    # The same search still finds ordinary text.
    lime = rig.run("file_search", root="~", content="lime", show_hidden=True)
    assert lime.result is not None
    assert [h["path"] for h in lime.result.data["hits"]] == [str(rig.docs / "notes.txt")]


def test_a_search_of_the_home_never_names_or_enters_a_private_place(rig: Rig) -> None:
    everything = rig.run("file_search", root="~", name_glob="*", show_hidden=True)
    assert everything.result is not None
    found = {os.path.relpath(h["path"], rig.home) for h in everything.result.data["hits"]}
    assert found == {"Documents", "Documents/notes.txt"}
    assert everything.result.data["private_withheld"] == 5  # .ssh, Chamberlain, 3 in Documents
    assert "private entries not shown" in everything.result.text

    keys = rig.run("file_search", root="~", name_glob="*.key", show_hidden=True)
    assert keys.result is not None
    assert keys.result.data["hits"] == []

    # Every secret file holds "canary"; none is found, and no secret comes back.
    canaries = rig.run("file_search", root="~", content="canary", show_hidden=True)
    assert canaries.result is not None
    assert canaries.result.data["hits"] == []
    for secret in SECRETS:
        assert secret not in canaries.model_text
