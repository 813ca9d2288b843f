"""The MCP hub against real servers: the tests' own notes server (tests/support/mcp_notes_server.py)
over stdio and over streamable HTTP, and programs that are not MCP servers at all."""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.mcp_notes import NOTES_SERVER, NOTES_TOOLS, notes_config, write_notes
from tools.manual import Capability, ToolError, ToolTimedOut
from tools.mcp.config import McpServerConfig
from tools.mcp.hub import McpHub, McpToolManual
from tools.mcp.transport import server_environment
from tools.registry import ToolRegistry

ALL_TOOLS = NOTES_TOOLS


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "notes")


HubFactory = Callable[..., tuple[McpHub, ToolRegistry]]


@pytest.fixture
def hub_for() -> Iterator[HubFactory]:
    hubs: list[McpHub] = []

    def make(**servers: McpServerConfig) -> tuple[McpHub, ToolRegistry]:
        registry = ToolRegistry()
        hub = McpHub(servers, registry)
        hubs.append(hub)
        return hub, registry

    yield make
    for hub in hubs:
        hub.close()


def notes_server(folder: Path, **options: Any) -> McpServerConfig:
    options.setdefault("timeout_s", 5.0)
    options.setdefault("connect_timeout_s", 20.0)
    return notes_config(folder, **options)


def server_pid(hub: McpHub, name: str) -> int:
    link = hub._links[name]
    assert link.stdio is not None
    assert link.stdio.pid is not None
    return link.stdio.pid


def gone(pid: int, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_server_is_connected_and_its_tools_registered_classified(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes))
    hub.ensure()

    status = hub.server_status("notes")
    assert status.state == "connected", status.last_error
    assert status.summary() == "connected, 9 tools"
    assert status.server_info == "notes-test 1.0"
    assert set(registry.names()) == ALL_TOOLS
    classes = {m.name: (m.category, m.capability, m.risk) for m in registry.manuals()}
    assert classes["notes__list_notes"] == ("read", Capability.MCP_READ, "safe")
    assert classes["notes__read_note"] == ("read", Capability.MCP_READ, "safe")
    # Its annotations say read-only and harmless; its name says it writes: it is a write.
    assert classes["notes__write_note"] == ("write", Capability.MCP_WRITE, "moderate")
    assert classes["notes__weather"] == ("execute", Capability.MCP_EXECUTE, "dangerous")
    manual = registry.get("notes__read_note").manual  # type: ignore[union-attr]
    assert isinstance(manual, McpToolManual)
    assert (manual.source, manual.server, manual.extra_remote) == ("mcp", "notes", "read_note")
    assert manual.parameters["required"] == ["name"]
    assert manual.description.startswith("(MCP server 'notes', tool read_note) Read one note")


def test_a_call_returns_the_servers_answer(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes))
    hub.ensure()

    listed = registry.get("notes__list_notes").run({})  # type: ignore[union-attr]
    assert listed.text == "groceries.txt\nideas.md"
    read = registry.get("notes__read_note").run({"name": "groceries.txt"})  # type: ignore[union-attr]
    assert read.data == {
        "server": "notes",
        "tool": "read_note",
        "content": "milk, eggs\n",
        "truncated": False,
    }


def test_allow_and_deny_lists_keep_tools_out_and_say_why(notes, hub_for):
    hub, registry = hub_for(
        only=notes_server(notes, allow_tools=("list_notes", "read_note")),
        most=notes_server(notes, deny_tools=("write_note", "crash")),
    )
    hub.ensure()

    assert {n for n in registry.names() if n.startswith("only__")} == {
        "only__list_notes",
        "only__read_note",
    }
    assert "crash: not in this server's allow_tools" in hub.server_status("only").skipped
    most = {n for n in registry.names() if n.startswith("most__")}
    assert most == {n.replace("notes__", "most__") for n in ALL_TOOLS} - {
        "most__write_note",
        "most__crash",
    }
    assert "write_note: denied in this server's settings" in hub.server_status("most").skipped


def test_a_server_crashing_mid_call_is_reported_and_connected_again_later(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes))
    hub.ensure()
    pid = server_pid(hub, "notes")

    with pytest.raises(ToolError) as failure:
        registry.get("notes__crash").run({})  # type: ignore[union-attr]

    message = str(failure.value)
    assert "the MCP server 'notes' stopped during crash" in message
    assert "exit code 3" in message
    assert "notes server: giving up now" in message
    assert gone(pid)
    status = hub.server_status("notes")
    assert status.state == "failed"
    assert "exit code 3" in (status.last_error or "")
    assert registry.names() == []  # its tools left with it

    assert hub.test("notes").state == "connected"
    assert set(registry.names()) == ALL_TOOLS


def test_a_server_that_hangs_is_timed_out_and_stays_usable(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes, timeout_s=1.0))
    hub.ensure()

    started = time.monotonic()
    with pytest.raises(ToolTimedOut, match="did not answer hang within 1 s"):
        registry.get("notes__hang").run({})  # type: ignore[union-attr]
    assert time.monotonic() - started < 4.0

    assert registry.get("notes__list_notes").run({}).text  # type: ignore[union-attr]


def test_a_server_that_floods_is_cut_off(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes, output_cap=16 * 1024))
    hub.ensure()
    pid = server_pid(hub, "notes")

    with pytest.raises(ToolError, match=r"sent a message over \d+ bytes, so it was stopped"):
        registry.get("notes__flood").run({})  # type: ignore[union-attr]

    assert gone(pid)
    assert "sent a message over" in (hub.server_status("notes").last_error or "")


def test_a_long_answer_is_capped(notes, hub_for):
    (notes / "long.txt").write_text("y" * 5000)
    hub, registry = hub_for(notes=notes_server(notes, output_cap=1024))
    hub.ensure()

    result = registry.get("notes__read_note").run({"name": "long.txt"})  # type: ignore[union-attr]
    assert result.truncated
    assert result.text.startswith("y" * 1024)
    assert result.text.endswith("[cut at 1024 characters]")


def test_a_tool_that_fails_says_so_in_the_servers_words(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes))
    hub.ensure()
    with pytest.raises(ToolError, match="says shout failed"):
        registry.get("notes__shout").run({})  # type: ignore[union-attr]


def test_a_changed_tool_list_is_read_again(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes))
    hub.ensure()

    registry.get("notes__add_reminders").run({})  # type: ignore[union-attr]

    end = time.monotonic() + 5
    while "notes__list_reminders" not in registry and time.monotonic() < end:
        time.sleep(0.02)
    assert "notes__list_reminders" in registry
    assert registry.get("notes__list_reminders").run({}).text == "buy milk"  # type: ignore[union-attr]


def test_closing_the_hub_ends_every_server_program(notes, hub_for):
    hub, registry = hub_for(one=notes_server(notes), two=notes_server(notes))
    hub.ensure()
    pids = [server_pid(hub, "one"), server_pid(hub, "two")]

    hub.close()

    assert all(gone(pid) for pid in pids)
    assert registry.names() == []
    with pytest.raises(ToolError, match="not available"):
        hub.call("one", "list_notes", {})


def test_a_disabled_server_is_never_started(notes, hub_for):
    hub, registry = hub_for(notes=notes_server(notes, enabled=False))
    hub.ensure()
    assert hub.server_status("notes").state == "disabled"
    assert registry.names() == []


@pytest.mark.parametrize(
    ("command", "args", "words"),
    [
        ("no-such-mcp-server-program", (), "is not installed"),
        (
            sys.executable,
            ("-c", "import sys; print('bad config', file=sys.stderr); sys.exit(2)"),
            "exit code 2",
        ),
    ],
)
def test_a_server_that_cannot_start_says_why(hub_for, command, args, words):
    config = McpServerConfig(command=command, args=args, connect_timeout_s=10)
    hub, registry = hub_for(broken=config)
    hub.ensure()
    status = hub.server_status("broken")
    assert status.state == "failed"
    assert words in (status.last_error or "")
    assert registry.names() == []


def test_a_program_that_is_not_an_mcp_server_fails_within_its_connect_timeout(hub_for):
    chatter = "import time\nprint('hello, I am not JSON', flush=True)\ntime.sleep(60)"
    config = McpServerConfig(command=sys.executable, args=("-c", chatter), connect_timeout_s=1.5)
    hub, _ = hub_for(odd=config)
    started = time.monotonic()
    hub.ensure()
    assert time.monotonic() - started < 8
    status = hub.server_status("odd")
    assert status.state == "failed"
    assert "did not answer within 1.5 s" in (status.last_error or "")


def test_a_server_gets_a_small_environment_and_never_chamberlains_keys(monkeypatch):
    monkeypatch.setenv("CHAMBERLAIN_API_KEY", "sk-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    monkeypatch.setenv("NOTES_TOKEN", "from-the-environment")
    env = server_environment(
        {"PLAIN": "abc", "TOKEN": "${env:NOTES_TOKEN}", "MISSING": "${env:NOT_SET_HERE}"}
    )
    assert "CHAMBERLAIN_API_KEY" not in env
    assert "OPENAI_API_KEY" not in env
    assert "NOTES_TOKEN" not in env  # only where the settings name it
    assert env["PLAIN"] == "abc"
    assert env["TOKEN"] == "from-the-environment"
    assert env["MISSING"] == ""
    assert env["PATH"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_notes_server(notes: Path) -> Iterator[str]:
    import subprocess

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(NOTES_SERVER), str(notes), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 20
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_a_server_on_loopback_http_works_the_same(http_notes_server, hub_for):
    hub, registry = hub_for(web=McpServerConfig(url=http_notes_server, timeout_s=5))
    hub.ensure()
    status = hub.server_status("web")
    assert status.state == "connected", status.last_error
    assert "web__list_notes" in registry
    assert registry.get("web__list_notes").run({}).text == "groceries.txt\nideas.md"  # type: ignore[union-attr]


def test_closing_while_a_server_is_still_connecting_ends_its_program(hub_for):
    """Quitting the app (or Ctrl-C) while a slow server starts: the program must not outlive
    Chamberlain, and closing must not wait out the connect timeout."""
    silent = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(120)"
    config = McpServerConfig(command=sys.executable, args=("-c", silent), connect_timeout_s=60)
    hub, _ = hub_for(slow=config)
    hub.start()
    end = time.monotonic() + 10
    while hub._links["slow"].stdio is None or hub._links["slow"].stdio.pid is None:  # type: ignore[union-attr]
        assert time.monotonic() < end
        time.sleep(0.02)
    pid = server_pid(hub, "slow")

    started = time.monotonic()
    hub.close()

    assert time.monotonic() - started < 10
    assert gone(pid)
    assert hub.server_status("slow").state == "idle"


def test_applying_new_settings_reconnects_only_what_changed(notes, hub_for):
    hub, registry = hub_for(
        keep=notes_server(notes), change=notes_server(notes), drop=notes_server(notes)
    )
    hub.ensure()
    kept, changed, dropped = (server_pid(hub, n) for n in ("keep", "change", "drop"))

    hub.apply(
        {
            "keep": notes_server(notes),
            "change": notes_server(notes, deny_tools=("write_note",)),
            "new": notes_server(notes),
        },
        connect=True,
    )
    hub.ensure()

    assert hub.names == ["change", "keep", "new"]
    assert server_pid(hub, "keep") == kept
    assert server_pid(hub, "change") != changed
    assert gone(changed)
    assert gone(dropped)
    assert "change__write_note" not in registry
    assert "change__read_note" in registry
    assert "new__read_note" in registry
    assert not any(name.startswith("drop__") for name in registry.names())


@pytest.fixture
def flooding_http_server() -> Iterator[str]:
    """A loopback HTTP server that answers every POST with a 4 MiB JSON body."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Flood(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            body = b'{"jsonrpc": "2.0", "id": 0, "result": {"x": "' + b"y" * (4 << 20) + b'"}}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Flood)
    thread = Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_loopback_http_server_that_floods_is_cut_off(flooding_http_server, hub_for):
    config = McpServerConfig(url=flooding_http_server, output_cap=16 * 1024, connect_timeout_s=10)
    hub, registry = hub_for(flood=config)
    started = time.monotonic()
    hub.ensure()
    status = hub.server_status("flood")
    assert status.state == "failed"
    assert "sent a response over" in (status.last_error or "")
    assert time.monotonic() - started < 9
    assert registry.names() == []


def test_a_server_that_keeps_failing_is_tried_again_less_and_less_often(hub_for):
    """Each turn that could use a broken server would otherwise wait for it again: after the
    n-th failure in a row the next try waits RETRY_AFTER_S × 2^(n-1)."""
    from tools.mcp.failures import RETRY_AFTER_S

    hub, _ = hub_for(broken=McpServerConfig(command="no-such-mcp-server-program"))
    link = hub._links["broken"]

    def tried_after(seconds_ago: float) -> bool:
        link.last_attempt = time.monotonic() - seconds_ago
        before = link.last_attempt
        hub.ensure()
        return link.last_attempt != before

    hub.ensure()
    assert link.failures == 1
    assert not tried_after(0.5 * RETRY_AFTER_S)
    assert tried_after(1.5 * RETRY_AFTER_S)
    assert link.failures == 2
    assert not tried_after(1.5 * RETRY_AFTER_S)  # now twice as long
    assert tried_after(2.5 * RETRY_AFTER_S)
    assert link.failures == 3
    assert not tried_after(3.5 * RETRY_AFTER_S)
    assert hub.test("broken").state == "failed"  # asking for it by hand always tries
    assert link.failures == 4
