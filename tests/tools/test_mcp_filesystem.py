"""The reference filesystem MCP server as a tool source, end to end.

Real parts only: the `@modelcontextprotocol/server-filesystem` package pinned in
tests/support/npm (run with node over stdio by Chamberlain's own hub), a real OpenAI-protocol
HTTP server on 127.0.0.1 playing the model from a script, real files in a scratch home, the
session's real policy table, permission broker, runner and audit log. The only stand-in is the
person answering the permission question (a prompter that records and answers it).

Containment for an MCP server is the server's own: Chamberlain grants a tool (scope
`mcp:notes__read_text_file`), not a path, so what keeps a call inside the notes folder is the
server's allowed-directories check, which the hostile-path tests hold it to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from broker.llm.openai_client import OpenAIChatModel
from broker.permissions import (
    DenyPrompter,
    PermissionRequest,
    PromptDecision,
    Prompter,
    RulePrompter,
)
from broker.router import route_heuristic
from broker.session import Session
from broker.settings import load_settings
from broker.types import GrantMode, Intent, ToolCallRecord, TurnResult
from tests.support import mcp_fs
from tests.support.mcp_lifetime import write_settings
from tests.support.mcp_notes import running_with
from tests.support.openai_server import ServerFactory, ToolCalls, Turn
from tools.manual import Capability
from tools.mcp.config import McpServerConfig
from tools.mcp.hub import McpHub
from tools.registry import ToolRegistry

_missing = mcp_fs.node_missing()
pytestmark = [
    pytest.mark.skipif(_missing is not None, reason=_missing or ""),
    pytest.mark.timeout(120),
]

# What the pinned version lists, and the class a person would expect of each.
READ_TOOLS = {
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
}
WRITE_TOOLS = {"write_file", "edit_file", "create_directory", "move_file"}

LIST_REQUEST = "list the files in my notes folder"
WRITE_REQUEST = "write a file shopping.txt in my notes folder"
READ_REQUEST = "read my shopping note from my notes folder"
CANARY = "CANARY-private-7f3a9c"


@pytest.fixture(autouse=True)
def _installed() -> None:
    """Node is here (else the module is skipped), so a missing install is a setup failure."""
    problem = mcp_fs.install_problem()
    if problem is not None:
        pytest.fail(problem)


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch user's home (HOME for this test, inherited by the server): a notes folder with
    two notes, and a private file beside it that no call may read."""
    root = tmp_path / "user"
    notes = root / "notes"
    notes.mkdir(parents=True)
    (notes / "groceries.md").write_text("milk\neggs\n")
    (notes / "ideas.txt").write_text("a tray icon that blinks\n")
    (root / "private.txt").write_text(f"{CANARY}\n")
    monkeypatch.setenv("HOME", str(root))
    return root


@pytest.fixture
def notes(user: Path) -> Path:
    return user / "notes"


class Answering(RulePrompter):
    """The person at the permission dialog: records each question and answers it the same way
    ("allow once", or deny)."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        if self.allow:
            return PromptDecision(allow=True, mode=GrantMode.ONCE)
        return PromptDecision(allow=False)


def echo_tool_result(body: dict[str, Any]) -> Turn:
    """The model's second turn: it reports what the tool message in front of it says."""
    said = [m.get("content") for m in body["messages"] if m.get("role") == "tool"]
    return "The tool said:\n" + "\n".join(str(text) for text in said)


def notes_processes(notes: Path) -> list[psutil.Process]:
    """The live processes whose command line names the notes folder: the server's."""
    return running_with(str(notes))


def end_leftovers(notes: Path) -> list[psutil.Process]:
    """End, by PID, any server this test started that outlived its session or hub (so none
    outlives the test either), and return them: a caller asserts there were none."""
    procs = notes_processes(notes)
    for proc in procs:
        proc.kill()
    psutil.wait_procs(procs, timeout=5)
    return procs


SessionFactory = Callable[[list[Turn], Prompter], Session]


@pytest.fixture
def open_session(
    tmp_path: Path, notes: Path, scripted_server: ServerFactory
) -> Iterator[SessionFactory]:
    """A session whose settings.json names the filesystem server as `notes`, allowed the notes
    folder only, and whose model is a scripted server; closed (server ended) at teardown."""
    opened: list[tuple[Session, OpenAIChatModel]] = []

    def start(script: list[Turn], prompter: Prompter) -> Session:
        home = tmp_path / f"home{len(opened)}"
        home.mkdir()
        settings = {
            "mcp": {"servers": {"notes": mcp_fs.server_settings(notes)}},
            # Not under test: every message here routes by the heuristics alone.
            "router": {"model_refinement": False},
        }
        write_settings(home, settings)  # saved as Chamberlain saves them: confirmed
        server = scripted_server(script, repeat_last=False)
        model = OpenAIChatModel(server.base_url, model="scripted", timeout_s=30)
        session = Session(home=home, settings=load_settings(home), model=model, prompter=prompter)
        opened.append((session, model))
        return session

    yield start
    for session, model in opened:
        session.close()
        model.close()
    assert end_leftovers(notes) == [], "a session left the filesystem server running"


def only_call(turn: TurnResult) -> ToolCallRecord:
    assert len(turn.tool_calls) == 1, turn.tool_calls
    return turn.tool_calls[0]


# ---- discovery ------------------------------------------------------------------------------


def test_the_hub_connects_to_the_filesystem_server_and_lists_its_tools_in_the_expected_classes(
    notes: Path,
) -> None:
    registry = ToolRegistry()
    config = McpServerConfig.model_validate(mcp_fs.server_settings(notes))
    hub = McpHub({"notes": config}, registry)
    try:
        hub.ensure()
        status = hub.server_status("notes")
        manuals = {t.name: t.manual for t in registry if t.manual.source == "mcp"}
    finally:
        hub.close()
        left = end_leftovers(notes)

    assert left == [], "the hub left the filesystem server running"

    assert status.state == "connected", status.last_error
    assert status.server_info is not None
    assert status.server_info.startswith(mcp_fs.SERVER_NAME)
    assert status.skipped == ()
    assert set(status.tools) == {f"notes__{t}" for t in READ_TOOLS | WRITE_TOOLS}
    assert set(manuals) == set(status.tools)
    for tool in READ_TOOLS:
        manual = manuals[f"notes__{tool}"]
        assert (manual.category, manual.capability, manual.risk, manual.mutating) == (
            "read",
            Capability.MCP_READ,
            "safe",
            False,
        ), tool
    for tool in WRITE_TOOLS:
        manual = manuals[f"notes__{tool}"]
        assert (manual.category, manual.capability, manual.mutating) == (
            "write",
            Capability.MCP_WRITE,
            True,
        ), tool
        assert manual.risk in ("moderate", "dangerous"), tool
    # The server says these three may destroy data (an existing file overwritten or moved
    # away): that only ever raises the risk a person is shown.
    for tool in ("write_file", "edit_file", "move_file"):
        assert manuals[f"notes__{tool}"].risk == "dangerous", tool
    # Every tool is the server's: the person sees which server and which of its tools.
    assert all(m.server == "notes" for m in manuals.values())
    assert "list_directory" in manuals["notes__list_directory"].description


def test_the_requests_used_here_route_to_the_file_task_which_shows_mcp_reads_and_writes() -> None:
    for text in (LIST_REQUEST, WRITE_REQUEST, READ_REQUEST):
        routed = route_heuristic(text)
        assert routed.intent == Intent.FILE_TASK, text
        # Not a direct action: the model's tool loop runs, and so the MCP tools can be used.
        assert routed.arguments.action is None, text


# ---- the done-when: through Session.ask ----------------------------------------------


def test_listing_my_notes_asks_once_for_that_tool_and_the_reply_lists_the_files(
    open_session: SessionFactory, notes: Path
) -> None:
    prompter = Answering(allow=True)
    session = open_session(
        [ToolCalls([("notes__list_directory", {"path": str(notes)})]), echo_tool_result],
        prompter,
    )

    turn = session.ask(LIST_REQUEST)

    assert turn.status == "done", turn.reply
    assert turn.router.intent == Intent.FILE_TASK
    assert "notes__list_directory" in turn.policy.allowed_tools
    [request] = prompter.asked
    assert request.capability == Capability.MCP_READ
    assert request.tool == "notes__list_directory"
    assert request.scope == "mcp:notes__list_directory"
    call = only_call(turn)
    assert (call.tool, call.status, call.capability) == (
        "notes__list_directory",
        "ok",
        Capability.MCP_READ,
    )
    assert "groceries.md" in turn.reply
    assert "ideas.txt" in turn.reply


def test_the_servers_write_file_is_refused_without_a_grant_and_nothing_is_written(
    open_session: SessionFactory, notes: Path
) -> None:
    target = notes / "shopping.txt"
    call = ("notes__write_file", {"path": str(target), "content": "bread\n"})
    prompter = Answering(allow=False)
    session = open_session([ToolCalls([call]), echo_tool_result], prompter)

    turn = session.ask(WRITE_REQUEST)

    # The tool was offered: only the missing grant stopped it.
    assert "notes__write_file" in turn.policy.allowed_tools
    [request] = prompter.asked
    assert (request.capability, request.scope) == (
        Capability.MCP_WRITE,
        "mcp:notes__write_file",
    )
    record = only_call(turn)
    assert (record.tool, record.status) == ("notes__write_file", "denied")
    assert not target.exists()
    assert sorted(p.name for p in notes.iterdir()) == ["groceries.md", "ideas.txt"]


def test_with_nobody_to_ask_the_servers_write_file_is_denied(
    open_session: SessionFactory, notes: Path
) -> None:
    target = notes / "shopping.txt"
    call = ("notes__write_file", {"path": str(target), "content": "bread\n"})
    session = open_session([ToolCalls([call]), echo_tool_result], DenyPrompter())

    turn = session.ask(WRITE_REQUEST)

    record = only_call(turn)
    assert (record.tool, record.status) == ("notes__write_file", "denied")
    assert not target.exists()


def test_once_granted_the_servers_write_file_writes_the_note(
    open_session: SessionFactory, notes: Path
) -> None:
    target = notes / "shopping.txt"
    call = ("notes__write_file", {"path": str(target), "content": "bread\nbutter\n"})
    prompter = Answering(allow=True)
    session = open_session([ToolCalls([call]), echo_tool_result], prompter)

    turn = session.ask(WRITE_REQUEST)

    [request] = prompter.asked
    assert request.capability == Capability.MCP_WRITE
    assert request.risk == "dangerous"
    record = only_call(turn)
    assert (record.tool, record.status) == ("notes__write_file", "ok")
    assert target.read_text() == "bread\nbutter\n"


# ---- containment is the server's -------------------------------------------------------------


@pytest.mark.parametrize(
    ("path_of", "secret"),
    [
        pytest.param(lambda user: "/etc/passwd", "root:", id="etc-passwd"),
        pytest.param(lambda user: str(user / "private.txt"), CANARY, id="absolute-in-home"),
        pytest.param(lambda user: "~/private.txt", CANARY, id="tilde"),
        pytest.param(lambda user: str(user / "notes" / ".." / "private.txt"), CANARY, id="dotdot"),
        pytest.param(lambda user: str(user / "notes" / "link.txt"), CANARY, id="symlink-out"),
    ],
)
def test_a_granted_read_outside_the_notes_folder_is_refused_by_the_server(
    open_session: SessionFactory,
    user: Path,
    path_of: Callable[[Path], str],
    secret: str,
) -> None:
    # A link inside the notes folder to the private file beside it.
    (user / "notes" / "link.txt").symlink_to(user / "private.txt")
    path = path_of(user)
    prompter = Answering(allow=True)
    session = open_session(
        [ToolCalls([("notes__read_text_file", {"path": path})]), echo_tool_result], prompter
    )

    turn = session.ask(READ_REQUEST)

    # Chamberlain granted the tool (its scope names no path): the refusal is the server's.
    [request] = prompter.asked
    assert request.scope == "mcp:notes__read_text_file"
    record = only_call(turn)
    assert record.status == "error", record
    # The server refuses, or (a link out of the folder) finds nothing there: its sandbox shows
    # it the notes folder only.
    said = record.reason.lower()
    assert "access denied" in said or "does not exist" in said, record.reason
    assert "access denied" in turn.reply.lower() or "does not exist" in turn.reply.lower()
    assert secret not in turn.reply
    assert secret not in record.reason


# ---- the server's lifetime -------------------------------------------------------------------


def test_the_server_process_ends_when_the_session_closes(
    open_session: SessionFactory, notes: Path
) -> None:
    session = open_session(
        [ToolCalls([("notes__list_directory", {"path": str(notes)})]), echo_tool_result],
        Answering(allow=True),
    )
    assert notes_processes(notes) == [], "the server starts only when a turn can use it"

    session.ask(LIST_REQUEST)
    running = notes_processes(notes)
    assert running, "the filesystem server is not running after a turn that used it"

    session.close()

    _gone, alive = psutil.wait_procs(running, timeout=5)
    assert alive == []
    assert notes_processes(notes) == []
