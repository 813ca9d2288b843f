"""What an MCP server costs through Chamberlain: connecting, closing, and one tool call, beside
the `mcp` SDK's own client on the same server.

    python -m bench.mcp [--rounds 11] [--calls 300] [--warmup 30] [--json]

Real parts only, two servers over stdio: the tests' own notes server
(`tests/support/mcp_notes_server.py FOLDER`, run with this Python) and the reference filesystem
server (`@modelcontextprotocol/server-filesystem`, run with node; `scripts/setup.sh --test`
installs it — skipped, and said so, when it is not there). Per server:

- ``connect``: `McpHub(...).ensure()` from its start until the server's tools are registered
  (the hub's loop thread, the program's start, the handshake, the listing); ``close``:
  `McpHub.close()` (the program ended, the thread joined). Beside it, the bare SDK doing the
  same: `stdio_client` + `ClientSession.initialize()` + `list_tools()`, and leaving both
  contexts. Rounds interleaved;
- ``call``: one read of a small file, three ways, interleaved call by call after a warm-up:
  the bare SDK (`await session.call_tool(...)` on a session this benchmark opens with the SDK's
  own `stdio_client`: same program, same arguments, same reply), our hub (`Tool.run`, i.e.
  `McpHub.call`: a hand-off to the hub's loop thread and the result made a ToolResult), and the
  whole enforced path (`ToolRunner.execute` in a `Session`, with a session grant given once:
  argument validation, the policy check, the permission token, the audit lines, the tool thread).
  Medians, p95, and each median over the bare one's, measured in the same run.

Everything runs in a scratch home (HOME and CHAMBERLAIN_HOME, set before anything of ours is
imported); every server program is ended (hub close, the SDK's context exit) and checked gone by
its pid afterwards. A benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bench.machine import machine_details

if TYPE_CHECKING:  # imported for real only once the scratch home is set
    from broker.permissions import PermissionQuestion, PermissionRequest, PromptDecision
    from broker.session import Session

REPO = Path(__file__).resolve().parents[1]
NOTES_SERVER = REPO / "tests" / "support" / "mcp_notes_server.py"
NOTE = "a.txt"
NOTE_TEXT = "Budget: 1200 for travel, 300 for books.\n" * 5


@dataclass(frozen=True)
class Server:
    """One server as both clients start it, and the call both make."""

    name: str  # Chamberlain's name for it; its tools are `name__tool`
    command: str
    args: tuple[str, ...]
    remote_tool: str
    arguments: dict[str, Any]

    @property
    def local_tool(self) -> str:
        return f"{self.name}__{self.remote_tool}"


def servers(folder: Path) -> tuple[list[Server], list[str]]:
    """The servers to measure, and why any was left out."""
    from tests.support import mcp_fs

    found = [
        Server(
            "notes", sys.executable, (str(NOTES_SERVER), str(folder)), "read_note", {"name": NOTE}
        )
    ]
    missing = mcp_fs.node_missing() or mcp_fs.install_problem()
    if missing is not None:
        return found, [f"filesystem server: {missing}"]
    settings = mcp_fs.server_settings(folder)
    found.append(
        Server(
            "fs",
            settings["command"],
            tuple(settings["args"]),
            "read_text_file",
            {"path": str(folder / NOTE)},
        )
    )
    return found, []


def _config(server: Server) -> Any:
    from tools.mcp.config import McpServerConfig

    return McpServerConfig(command=server.command, args=server.args)


@functools.cache
def _quiet() -> TextIO:
    """Where the bare SDK sends a server's stderr: nowhere (the hub keeps it to itself)."""
    return open(os.devnull, "w")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": _ms(statistics.median(ordered)),
        "p95_ms": _ms(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]),
        "min_ms": _ms(ordered[0]),
        "max_ms": _ms(ordered[-1]),
        "n": len(ordered),
    }


class Children:
    """Every process this benchmark started, by pid, to check at the end that none is left."""

    def __init__(self) -> None:
        import psutil

        self._me = psutil.Process()
        self.seen: set[int] = set()

    def note(self) -> None:
        self.seen |= {child.pid for child in self._me.children(recursive=True)}

    def left(self) -> list[int]:
        import psutil

        alive = []
        for pid in sorted(self.seen):
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        return alive


# ---- connect and close ---------------------------------------------------------------------


def hub_connect(server: Server, children: Children) -> tuple[float, float]:
    """One McpHub: ensure() until the tool is registered, then close()."""
    from tools.mcp.hub import McpHub
    from tools.registry import ToolRegistry

    registry = ToolRegistry()
    hub = McpHub({server.name: _config(server)}, registry)
    try:
        started = time.perf_counter()
        hub.ensure()
        connected = time.perf_counter()
        if registry.get(server.local_tool) is None:
            status = hub.server_status(server.name)
            raise RuntimeError(f"{server.name} did not connect: {status.summary()}")
        children.note()
    finally:
        closing = time.perf_counter()
        hub.close()
        closed = time.perf_counter()
    return connected - started, closed - closing


async def bare_connect(server: Server, children: Children) -> tuple[float, float]:
    """The SDK alone: start, initialize, list the tools; then leave its contexts."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    parameters = StdioServerParameters(command=server.command, args=list(server.args))
    started = time.perf_counter()
    async with (
        stdio_client(parameters, errlog=_quiet()) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        connected = time.perf_counter()
        if server.remote_tool not in {tool.name for tool in listed.tools}:
            raise RuntimeError(f"{server.name} does not list {server.remote_tool}")
        children.note()
        closing = time.perf_counter()
    closed = time.perf_counter()
    return connected - started, closed - closing


def connect_rounds(server: Server, rounds: int, children: Children) -> dict[str, Any]:
    hub_connect(server, children)  # warm-up: imports, the page cache for the program
    asyncio.run(bare_connect(server, children))
    ours_in, ours_out, bare_in, bare_out = [], [], [], []
    for _ in range(rounds):
        connect, close = hub_connect(server, children)
        ours_in.append(connect)
        ours_out.append(close)
        connect, close = asyncio.run(bare_connect(server, children))
        bare_in.append(connect)
        bare_out.append(close)
    return {
        "hub_connect": _summary(ours_in),
        "hub_close": _summary(ours_out),
        "sdk_connect": _summary(bare_in),
        "sdk_close": _summary(bare_out),
        "connect_ratio": round(statistics.median(ours_in) / statistics.median(bare_in), 2),
    }


# ---- one call ------------------------------------------------------------------------------


class SessionGrant:
    """The person answers the first question with "for this session", and is never asked again."""

    def __init__(self) -> None:
        self.asked = 0

    def present(self, question: PermissionQuestion) -> None:
        question.answer(self.decide(question.request))

    def decide(self, request: PermissionRequest) -> PromptDecision:
        from broker.permissions import PromptDecision
        from broker.types import GrantMode

        self.asked += 1
        return PromptDecision(allow=True, mode=GrantMode.SESSION)


def open_session(home: Path, measured: list[Server], prompter: SessionGrant) -> Session:
    from broker.session import Session
    from broker.settings import Settings
    from tools.mcp.config import McpSettings

    settings = Settings()
    settings.router.model_refinement = False
    settings.mcp = McpSettings(servers={s.name: _config(s) for s in measured})
    return Session(home=home, settings=settings, model=None, prompter=prompter)


def reply_text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def call_rounds(
    server: Server, session: Session, calls: int, warmup: int, children: Children
) -> dict[str, Any]:
    """Bare SDK, hub and runner, one call each per round, in that order."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from broker.runner import TurnScope

    tool = session.tools.get(server.local_tool)
    if tool is None:
        raise RuntimeError(f"{server.local_tool} is not registered")
    raw = json.dumps(server.arguments)
    turns = iter(range(1_000_000))

    def ours() -> Any:
        return tool.run(dict(server.arguments))

    def enforced() -> Any:
        scope = TurnScope(turn_id=f"bench-{next(turns)}", allowed=[server.local_tool])
        outcome = session.runner.execute(scope, server.local_tool, raw)
        if outcome.record.status != "ok":
            raise RuntimeError(f"{server.local_tool}: {outcome.record.reason}")
        return outcome.result

    parameters = StdioServerParameters(command=server.command, args=list(server.args))
    bare: list[float] = []
    hub: list[float] = []
    runner: list[float] = []
    async with (
        stdio_client(parameters, errlog=_quiet()) as (read, write),
        ClientSession(read, write) as sdk,
    ):
        await sdk.initialize()
        children.note()
        expected = reply_text(await sdk.call_tool(server.remote_tool, server.arguments))
        if ours().text != expected or enforced().text != expected:
            raise RuntimeError(f"{server.name}: the replies differ")
        # Our two are synchronous: they block this loop while the hub's own loop thread
        # does the work, so nothing of the bare session runs during them.
        for index in range(warmup + calls):
            started = time.perf_counter()
            await sdk.call_tool(server.remote_tool, server.arguments)
            between = time.perf_counter()
            ours()
            middle = time.perf_counter()
            enforced()
            ended = time.perf_counter()
            if index >= warmup:
                bare.append(between - started)
                hub.append(middle - between)
                runner.append(ended - middle)
    median_bare = statistics.median(bare)
    return {
        "sdk": _summary(bare),
        "hub": _summary(hub),
        "runner": _summary(runner),
        "hub_ratio": round(statistics.median(hub) / median_bare, 2),
        "runner_ratio": round(statistics.median(runner) / median_bare, 2),
    }


def measure(rounds: int, calls: int, warmup: int, scratch: Path) -> dict[str, Any]:
    folder = scratch / "notes"
    folder.mkdir()
    (folder / NOTE).write_text(NOTE_TEXT, encoding="utf-8")
    measured, skipped = servers(folder)
    children = Children()
    report: dict[str, Any] = {"servers": {}, "skipped": skipped}
    for server in measured:
        report["servers"][server.name] = {"connect": connect_rounds(server, rounds, children)}

    prompter = SessionGrant()
    session = open_session(scratch / "home", measured, prompter)
    try:
        assert session.mcp is not None
        session.mcp.ensure()
        children.note()
        for server in measured:
            report["servers"][server.name]["call"] = asyncio.run(
                call_rounds(server, session, calls, warmup, children)
            )
    finally:
        session.close()
    report["permission_questions"] = prompter.asked
    report["server_processes"] = len(children.seen)
    report["left_running"] = children.left()
    return report


# ---- the report ----------------------------------------------------------------------------


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def print_report(report: dict[str, Any], rounds: int, calls: int) -> None:
    machine = report["machine"]
    print("# What an MCP server costs (stdio)\n")
    print(f"- machine: {machine['uname']}")
    print(
        f"- {machine['cpu']}, {machine['nproc']} cpus, {machine['ram']}, "
        f"{machine['implementation']} {machine['python']}, node {report['node'] or 'absent'}, "
        f"server-filesystem {report['fs_server']}, "
        f"mcp {report['mcp_sdk']}"
    )
    print(f"- load average {machine['load_average']} at the start, {machine['date']}")
    for why in report["skipped"]:
        print(f"- skipped: {why}")
    print(f"\n## Connect and close ({rounds} rounds, interleaved, after one warm-up)\n")
    print(_row(["server", "what", "median ms", "min–max ms"]))
    print(_row(["---", "---", "---:", "---:"]))
    labels = (
        ("hub_connect", "McpHub.ensure() → tools registered"),
        ("sdk_connect", "bare SDK: start + initialize + list_tools"),
        ("hub_close", "McpHub.close()"),
        ("sdk_close", "bare SDK: leave the contexts"),
    )
    for name, figures in report["servers"].items():
        connect = figures["connect"]
        for key, label in labels:
            s = connect[key]
            spread = f"{s['min_ms']:.1f}–{s['max_ms']:.1f}"
            print(_row([name, label, f"{s['median_ms']:.1f}", spread]))
        print(_row([name, "connect: hub / bare SDK", f"{connect['connect_ratio']:.2f}×", ""]))
    print(f"\n## One call ({calls} calls each, interleaved, after warm-up)\n")
    print(_row(["server", "path", "median ms", "p95 ms", "× bare SDK"]))
    print(_row(["---", "---", "---:", "---:", "---:"]))
    for name, figures in report["servers"].items():
        call = figures["call"]
        for key, label, ratio in (
            ("sdk", "bare SDK `call_tool`", "1.00"),
            ("hub", "`Tool.run` → `McpHub.call`", f"{call['hub_ratio']:.2f}"),
            ("runner", "`ToolRunner.execute` (session grant)", f"{call['runner_ratio']:.2f}"),
        ):
            s = call[key]
            print(_row([name, label, f"{s['median_ms']:.3f}", f"{s['p95_ms']:.3f}", ratio]))
    print(
        f"\n- permission questions asked: {report['permission_questions']} "
        f"(one per server, answered 'for this session')"
    )
    left = report["left_running"]
    print(
        f"- server programs started: {report['server_processes']}; still running at the end: "
        + (", ".join(map(str, left)) if left else "none")
    )


def _node_version() -> str | None:
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=11, help="connect/close rounds per server")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per path per server")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls first")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    import importlib.metadata

    from tests.support import mcp_fs

    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-") as name:
        scratch = Path(name)
        # Before anything of ours reads them: the home, and no system keyring for the secret.
        os.environ["HOME"] = str(scratch)
        os.environ["CHAMBERLAIN_HOME"] = str(scratch / "home")
        os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
        os.environ["CHAMBERLAIN_MEMORY__ENCRYPTION"] = "off"
        report: dict[str, Any] = {
            "machine": machine_details(),
            "node": _node_version(),
            "mcp_sdk": importlib.metadata.version("mcp"),
            "fs_server": mcp_fs.VERSION,
        }
        report.update(measure(options.rounds, options.calls, options.warmup, scratch))
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report, options.rounds, options.calls)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
