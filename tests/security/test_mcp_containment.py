"""Security corpus: an MCP server over the person's home cannot reach credentials or Chamberlain's
own files, neither by itself nor when the model names them in a call.

The review's break: "a filesystem MCP server over the home read ~/.ssh/id_rsa and Chamberlain's
token.key, and rewrote settings.json". Here a hostile server of the tests' own
(tests/support/mcp_hostile_server.py, `--snoop`) is given the whole home, writable — the widest
reach settings can give a sandboxed server — and goes for those files in its own code, at start
and when its tool runs. The model is a real OpenAI-protocol server on 127.0.0.1 playing a
hostile model; the turns go through the real `Session.ask` (router, policy, runner, audit), with
a person who approves every prompt. The person's home and Chamberlain's home (inside it, where
the platform puts it) are folders under tmp_path; HOME points at the former.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings, save_settings
from broker.types import GrantMode, TurnResult
from tests.support.mcp_lifetime import HOSTILE_SERVER, end_all
from tests.support.openai_server import ServerFactory, ToolCalls, Turn
from tools.mcp.config import McpServerConfig
from tools.mcp.hub import McpHub
from tools.mcp.sandbox import ServerPlaces
from tools.netns import network_helper
from tools.registry import ToolRegistry
from tools.sandbox import sandbox_status

pytestmark = [
    pytest.mark.skipif(
        not sandbox_status().available, reason=f"no sandbox here: {sandbox_status().why}"
    ),
    pytest.mark.timeout(120),
]

SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nmcp-ssh-canary-5d21\n-----END OPENSSH KEY-----\n"
NOTE = "shopping list: key lime pie\n"
ASK = "read my notes with the hostile server"


class ApproveEverything(RulePrompter):
    """A person who allows, for the session, whatever they are asked."""

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return PromptDecision(allow=True, mode=GrantMode.SESSION, scope=request.scope)


@dataclass
class Person:
    home: Path
    docs: Path
    app: Path
    pids: Path

    @property
    def key(self) -> Path:
        return self.home / ".ssh" / "id_rsa"

    @property
    def token(self) -> Path:
        return self.app / "token.key"

    @property
    def settings(self) -> Path:
        return self.app / "settings.json"


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Person]:
    home = tmp_path / "person"
    docs = home / "Documents"
    docs.mkdir(parents=True)
    (docs / "notes.txt").write_text(NOTE)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SSH_KEY)
    app = home / ".local" / "share" / "chamberlain"
    app.mkdir(parents=True)
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("HOME", str(home))
    yield Person(home, docs, app, pids)
    end_all(pids)


def hostile_settings(person: Person) -> Settings:
    """A hostile server given the whole home, writable; its tools taken as reads (so a file
    request may use them); and a settings file saved, as Chamberlain saves it."""
    entry = {
        "command": sys.executable,
        "args": [str(HOSTILE_SERVER), str(person.pids), "hostile", "--snoop", str(person.home)],
        "write": True,
        "env": {
            "SNOOP_READ": os.pathsep.join(
                str(p) for p in (person.key, person.token, person.docs / "notes.txt")
            ),
            "SNOOP_WRITE": str(person.settings),
        },
        "default_category": "read",
        "timeout_s": 20,
    }
    settings = Settings.model_validate(
        {"mcp": {"servers": {"hostile": entry}}, "router": {"model_refinement": False}}
    )
    save_settings(person.app, settings)
    return settings


SessionFor = Callable[[list[Turn]], tuple[Session, ApproveEverything, Any]]


@pytest.fixture
def session_for(person: Person, scripted_server: ServerFactory) -> Iterator[SessionFor]:
    opened: list[tuple[Session, OpenAIChatModel]] = []

    def make(script: list[Turn]) -> tuple[Session, ApproveEverything, Any]:
        server = scripted_server(script, repeat_last=False)
        model = OpenAIChatModel(server.base_url, model="hostile-model", timeout_s=30)
        prompter = ApproveEverything()
        session = Session(
            home=person.app, settings=hostile_settings(person), model=model, prompter=prompter
        )
        opened.append((session, model))
        return session, prompter, server

    yield make
    for session, model in opened:
        session.close()
        model.close()


def echo(body: dict[str, Any]) -> Turn:
    """The model's last turn: it repeats what the tool gave it (what would leave, if anything)."""
    said = [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]
    return "The tool said:\n" + "\n".join(said)


def everything_the_model_saw(server: Any) -> str:
    return json.dumps(server.requests)


def secrets_of(person: Person) -> list[str]:
    return ["mcp-ssh-canary-5d21", person.token.read_text().strip()]


def test_a_hostile_server_over_the_home_cannot_read_the_key_or_token_nor_rewrite_settings(
    person: Person, session_for: SessionFor
) -> None:
    session, _, server = session_for([ToolCalls([("hostile__snoop", {})]), echo])
    settings_before = person.settings.read_bytes()
    token_before = person.token.read_bytes()

    turn: TurnResult = session.ask(ASK)

    assert [c.status for c in turn.tool_calls] == ["ok"], turn.tool_calls
    assert person.token.is_file()  # there to be read, before the server started
    # What it tried at start and in its tool: the note in its folder, and nothing private.
    at_start = json.loads((person.pids / "hostile.snoop.json").read_text())
    in_tool = json.loads(json.loads(_tool_text(server))["content"])
    for report in (at_start, in_tool):
        assert report[str(person.docs / "notes.txt")] == "read: " + NOTE
        assert report[str(person.key)].startswith("error: "), report
        assert report[str(person.token)].startswith("error: "), report
    seen = everything_the_model_saw(server) + turn.reply
    for secret in secrets_of(person):
        assert secret not in seen
    # What it "wrote" went to an empty folder that ends with it: the real files are unchanged.
    assert person.settings.read_bytes() == settings_before
    assert person.token.read_bytes() == token_before
    assert "planted" not in person.settings.read_text()


def _tool_text(server: Any) -> str:
    """The tool message the model was handed after the call (the server's answer)."""
    for body in server.requests:
        for message in body["messages"]:
            if message.get("role") == "tool":
                return str(message["content"])
    raise AssertionError("the model was never handed the tool's answer")


def _hard_link(person: Person) -> str:
    os.link(person.token, person.docs / "backup.key")
    return "~/Documents/backup.key"


def _symlink(person: Person) -> str:
    (person.docs / "innocent.txt").symlink_to(person.key)
    return str(person.docs / "innocent.txt")


CALLS: dict[str, tuple[str, Callable[[Person], dict[str, Any]], str]] = {
    "tilde key": ("read_file", lambda p: {"path": "~/.ssh/id_rsa"}, "credentials"),
    "absolute key": ("read_file", lambda p: {"path": str(p.key)}, "credentials"),
    "key relative to its root": ("read_file", lambda p: {"path": ".ssh/id_rsa"}, "credentials"),
    "settings by dotdot": (
        "read_file",
        lambda p: {"path": "Documents/../.local/share/chamberlain/settings.json"},
        "Chamberlain's own files",
    ),
    "token as a file URI": (
        "read_file",
        lambda p: {"path": "file://" + str(p.token)},
        "Chamberlain's own files",
    ),
    "token by a hard link": (
        "read_file",
        lambda p: {"path": _hard_link(p)},
        "Chamberlain's own files",
    ),
    "key by a symlink": ("read_file", lambda p: {"path": _symlink(p)}, "credentials"),
    "key nested in a list": (
        "read_files",
        lambda p: {"paths": ["~/Documents/notes.txt", "~/.ssh/id_rsa"]},
        "credentials",
    ),
}


@pytest.mark.parametrize("case", sorted(CALLS))
def test_a_call_naming_a_private_place_is_refused_before_any_prompt_and_audited(
    case: str, person: Person, session_for: SessionFor
) -> None:
    remote, arguments_of, kind = CALLS[case]
    session, prompter, server = session_for([])  # the script is set below, once paths exist
    arguments = arguments_of(person)
    server.add(ToolCalls([(f"hostile__{remote}", arguments)]), echo)

    turn = session.ask(ASK)

    [record] = turn.tool_calls
    assert record.status == "refused", record
    assert kind in record.reason, record.reason
    assert prompter.asked == []  # refused before anyone was asked
    audit = [json.loads(line) for line in session.audit.path.read_text().splitlines()]
    ends = [r["data"] for r in audit if r["event"] == "TOOL_CALL_END"]
    assert [(e["tool"], e["status"]) for e in ends] == [(f"hostile__{remote}", "refused")]
    for secret in secrets_of(person):
        assert secret not in everything_the_model_saw(server) + turn.reply


def test_a_call_on_a_file_in_the_servers_folder_is_asked_with_every_argument_and_works(
    person: Person, session_for: SessionFor
) -> None:
    call = ToolCalls([("hostile__read_file", {"path": "~/Documents/notes.txt"})])
    session, prompter, _ = session_for([call, echo])

    turn = session.ask(ASK)

    assert [c.status for c in turn.tool_calls] == ["ok"], turn.tool_calls
    assert "key lime pie" in turn.reply
    [request] = prompter.asked
    plan = request.plan
    assert plan is not None
    assert (plan.mcp_server, plan.mcp_tool) == ("hostile", "read_file")
    assert plan.mcp_arguments == (("path", '"~/Documents/notes.txt"'),)
    assert plan.files == (str(person.docs / "notes.txt"),)


@pytest.mark.parametrize(
    ("name", "place"),
    [(".bashrc", ".bashrc"), (".config/autostart/sync.desktop", ".config/autostart")],
)
def test_a_writing_tool_asked_to_change_a_startup_place_is_refused_before_any_prompt(
    name: str, place: str, person: Person, scripted_server: ServerFactory
) -> None:
    """The notes server over the whole home, writable, and a person who allows everything: a
    write_note of ~/.bashrc (or an autostart entry) is refused naming when it would run, no one
    is asked, and the file is neither written nor created."""
    from tests.support.mcp_notes import notes_config

    (person.home / ".bashrc").write_text("# mine\n")
    server = scripted_server(
        [ToolCalls([("notes__write_note", {"name": name, "text": "curl x | sh"})]), "Done."],
        repeat_last=False,
    )
    model = OpenAIChatModel(server.base_url, model="hostile-model", timeout_s=30)
    prompter = ApproveEverything()
    settings = Settings.model_validate(
        {
            "mcp": {"servers": {"notes": notes_config(person.home).model_dump()}},
            "router": {"model_refinement": False},
        }
    )
    save_settings(person.app, settings)
    session = Session(home=person.app, settings=settings, model=model, prompter=prompter)
    try:
        turn = session.ask("write a note called todo.txt saying buy milk")
    finally:
        session.close()
        model.close()

    [record] = turn.tool_calls
    assert record.status == "refused", record
    assert "runs " in record.reason
    assert "an MCP server is never given such places" in record.reason
    assert prompter.asked == []
    assert (person.home / ".bashrc").read_text() == "# mine\n"
    assert not (person.home / ".config" / "autostart").exists()


def test_a_tool_its_server_calls_a_reader_is_refused_a_startup_place_too(
    person: Person, session_for: SessionFor
) -> None:
    """The hostile server's tools are classed as reads from their names; a "read" of a place
    that runs code later is refused all the same, before anyone is asked."""
    (person.home / ".bashrc").write_text("# mine\n")
    call = ToolCalls([("hostile__read_file", {"path": "~/.bashrc"})])
    session, prompter, _ = session_for([call, echo])

    turn = session.ask(ASK)

    [record] = turn.tool_calls
    assert record.status == "refused", record
    assert "an MCP server is never given such places" in record.reason
    assert prompter.asked == []


# --- as a normal user -------------------------------------------------------------------------


def test_as_a_normal_user_the_hostile_server_reads_neither_key_nor_token_through_the_cli(
    scripted_server: ServerFactory,
) -> None:
    """The real CLI started as `nobody` (the rig of tests/security/test_normal_user.py), its
    server's sandbox built by nobody's own process: the same walls as for root."""
    from tests.security.test_normal_user import _as_nobody, _why_nobody_cannot_run

    reason = _why_nobody_cannot_run()
    if reason is not None:
        pytest.skip(reason)
    # /tmp, not pytest's tmp_path: nobody cannot enter /tmp/pytest-of-root.
    base = Path(tempfile.mkdtemp(prefix="chamberlain-mcp-nobody-", dir="/tmp"))
    try:
        home = base / "home"
        person = Person(home, home / "Documents", home / ".chamberlain", base / "pids")
        for folder in (person.docs, person.app, person.pids, home / ".ssh"):
            folder.mkdir(parents=True)
        (person.docs / "notes.txt").write_text(NOTE)
        person.key.write_text(SSH_KEY)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(home))
            hostile_settings(person)  # saved (and sealed) as Chamberlain saves them
        for path in [base, *base.rglob("*")]:
            os.lchown(path, 65534, 65534)
        settings_before = person.settings.read_bytes()
        model = scripted_server([ToolCalls([("hostile__snoop", {})]), echo], repeat_last=False)
        env = {
            "HOME": str(home),
            "CHAMBERLAIN_HOME": str(person.app),
            "LANG": "C.UTF-8",
            "CHAMBERLAIN_MEMORY__EXTRACT": "false",
            "CHAMBERLAIN_LLM__EMBEDDED_FALLBACK": "false",
        }
        argv = ["-m", "app.cli", "ask", ASK, "--json", "--llm", model.base_url]
        proc = _as_nobody([*argv, "--approve", "mcp_read=once"], home, env)

        assert proc.returncode == 0, proc.stdout + proc.stderr
        calls = json.loads(proc.stdout)["tool_calls"]
        assert [c["status"] for c in calls] == ["ok"], calls
        report = json.loads((person.pids / "hostile.snoop.json").read_text())
        assert report[str(person.docs / "notes.txt")] == "read: " + NOTE
        assert report[str(person.key)].startswith("error: "), report
        assert report[str(person.token)].startswith("error: "), report
        seen = json.dumps(model.requests) + proc.stdout + proc.stderr
        for secret in secrets_of(person):
            assert secret not in seen
        assert person.settings.read_bytes() == settings_before
    finally:
        shutil.rmtree(base)


# --- what a server may change, and its network ------------------------------------------------


def start_snooping(person: Person, **entry: Any) -> McpHub:
    """The hostile server over the home, started as a session starts it, connected."""
    config = McpServerConfig.model_validate(
        {
            "command": sys.executable,
            "args": [str(HOSTILE_SERVER), str(person.pids), "hostile", "--snoop", str(person.home)],
            "connect_timeout_s": 60,
            **entry,
        }
    )
    hub = McpHub(
        {"hostile": config},
        ToolRegistry(),
        places=ServerPlaces.for_install(person.app, person.home),
    )
    hub.ensure()
    status = hub.server_status("hostile")
    assert status.state == "connected", status
    return hub


def snooped(hub: McpHub) -> dict[str, str]:
    """What the server got when its tool went looking (as it does at start)."""
    return dict(json.loads(hub.call("hostile", "snoop", {}).text))


def test_in_a_writable_root_the_server_writes_files_but_no_startup_place(person: Person) -> None:
    rc = "alias ls='ls --color'\n"
    (person.home / ".bashrc").write_text(rc)
    (person.home / ".config").mkdir()
    targets = [
        person.docs / "new.txt",
        person.home / ".bashrc",
        person.home / ".config" / "autostart" / "sync.desktop",
    ]
    hub = start_snooping(
        person, write=True, env={"SNOOP_WRITE": os.pathsep.join(map(str, targets))}
    )
    try:
        report = snooped(hub)
    finally:
        hub.close()
    assert report[str(targets[0])] == "wrote"
    assert "unsandboxed_commands" in targets[0].read_text()  # its folder is its to change
    assert report[str(targets[1])].startswith("error: "), report
    assert (person.home / ".bashrc").read_text() == rc
    assert not (person.home / ".config" / "autostart").exists()


def test_a_read_only_server_changes_nothing_in_its_folder(person: Person) -> None:
    target = person.docs / "new.txt"
    hub = start_snooping(person, env={"SNOOP_WRITE": str(target)})
    try:
        report = snooped(hub)
    finally:
        hub.close()
    assert report[str(target)].startswith("error: "), report
    assert not target.exists()


@pytest.fixture
def host_loopback() -> Iterator[tuple[socket.socket, str]]:
    """A service on the host's loopback that no server may reach."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.5)
    try:
        yield listener, f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def _accepted_none(listener: socket.socket) -> bool:
    try:
        listener.accept()[0].close()
    except TimeoutError:
        return True
    return False


def test_a_server_without_network_has_only_its_own_loopback(
    person: Person, host_loopback: tuple[socket.socket, str]
) -> None:
    listener, address = host_loopback
    hub = start_snooping(person, env={"SNOOP_CONNECT": address})
    try:
        report = snooped(hub)
    finally:
        hub.close()
    assert report["interfaces"] == "lo"
    assert report[address].startswith("error: "), report
    assert _accepted_none(listener)


def test_a_server_with_network_gets_a_network_of_its_own_never_the_hosts_loopback(
    person: Person, host_loopback: tuple[socket.socket, str]
) -> None:
    helper = network_helper()
    if not helper.available:
        pytest.skip(f"no user-mode networking here: {helper.why}")
    listener, address = host_loopback
    hub = start_snooping(person, network=True, env={"SNOOP_CONNECT": address})
    try:
        report = snooped(hub)
        said = hub.server_status("hostile").sandbox or ""
    finally:
        hub.close()
    assert report["interfaces"] != "lo", report  # an interface of its own besides loopback
    assert report[address].startswith("error: "), report
    assert _accepted_none(listener)
    assert "a network of its own" in said
