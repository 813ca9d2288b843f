"""What the pipeline itself costs per turn, with the model's and the tools' time taken out.

    python -m bench.pipeline_overhead [--turns 500] [--warmup 50] [--json] [--dir DIR]
                                      [--shape NAME ...] [--profile SHAPE] [--aging TURNS]

Drives real `Session.ask` turns — router heuristics, policy gate, permission check and token,
runner (schema check, worker thread, output cap), post-hooks, and every audit append to a real
``audit.jsonl`` — against an instant scripted model that answers from a fixed script in
microseconds. Each shape gets its own fresh home in a temporary directory (removed afterwards;
``--dir`` chooses where it is made, since the audit file's disk matters):

- ``chat``: chat turn, no tools; one model call.
- ``direct_list_once``: "list files in <dir>", a direct action; a ``once`` grant, so the user is
  prompted (by a prompter that says yes at once) on every turn; then one model call to phrase it.
- ``direct_list_session``: the same with a ``session`` grant: prompted once in warm-up, then
  the live grant is reused (shows what the prompt itself costs).
- ``loop_file_read``: the model's tool loop: the model asks for ``file_read`` (session grant),
  then answers in text; two model calls.
- ``direct_system_info``: "how much memory is free", a direct ``system_info`` action on the
  ``memory`` topic only (no CPU sampling, which sleeps 0.1 s inside the tool); session grant.

Overhead = wall time of ``ask()`` minus the time spent inside tool ``run`` callables and inside
the model's ``chat``/``chat_json``, both timed separately and reported. Thread start/join for
the tool worker and the permission prompt is pipeline cost and stays in. The garbage collector
stays on, as in the app. Inside each turn, the time spent in the audit log, the permission
check and the runner is also summed (by wrapping those methods on the session's own objects).
Stage timings (router, policy, one audit append, a permission check on a live grant, a bare
thread) are measured on their own afterwards. ``--profile SHAPE`` prints a cProfile of that
shape's turns instead; ``--aging TURNS`` shows whether one long session gets slower. A
benchmark reports figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.machine import machine_details
from broker.audit.events import AuditEvent
from broker.audit.redaction import digest
from broker.audit.writer import AuditLog
from broker.llm.base import AssistantMessage, ModelToolCall
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.router import route_heuristic
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from tools.manual import Tool, ToolResult
from tools.paths import resolve_path
from tools.registry import ToolRegistry, builtin_registry

TARGET_P50_MS = 1.0
TARGET_P99_MS = 5.0


# --- the instant scripted model ----------------------------------------------------------------


class InstantModel:
    """A `ChatModel` that answers from a script at once, so model time is ~0.

    When it is offered tools and the conversation has no tool result yet, it asks for
    ``tool_call`` (if that tool was offered); otherwise it answers ``reply``. It keeps the time
    spent in its own methods, so the benchmark can subtract even that.
    """

    def __init__(self, reply: str, tool_call: tuple[str, dict[str, Any]] | None = None) -> None:
        self.reply = reply
        self.tool_call = tool_call
        self.calls = 0
        self.spent_ns = 0

    @property
    def name(self) -> str:
        return "instant-scripted"

    @property
    def is_loopback(self) -> bool:
        return True

    @property
    def is_embedded(self) -> bool:
        return False

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> AssistantMessage:
        start = time.perf_counter_ns()
        self.calls += 1
        answer = AssistantMessage(content=self.reply, finish_reason="stop")
        if self.tool_call is not None and tools and messages[-1].get("role") != "tool":
            name, arguments = self.tool_call
            if any(t["function"]["name"] == name for t in tools):
                call = ModelToolCall(id="call_1", name=name, arguments=json.dumps(arguments))
                answer = AssistantMessage(tool_calls=[call], finish_reason="tool_calls")
        self.spent_ns += time.perf_counter_ns() - start
        return answer

    def chat_json(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], schema_name: str
    ) -> str:
        # Not reached by these shapes (their heuristic confidence is high enough that the
        # session skips refinement), but a valid answer keeps the protocol honest.
        start = time.perf_counter_ns()
        self.calls += 1
        verdict = json.dumps({"intent": "chat_only", "risk_level": "low", "confidence": 0.9})
        self.spent_ns += time.perf_counter_ns() - start
        return verdict


class GrantingPrompter(RulePrompter):
    """Says yes at once, with the given mode, for the scope that was asked about."""

    def __init__(self, mode: GrantMode) -> None:
        self.mode = mode
        self.prompts = 0

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.prompts += 1
        return PromptDecision(allow=True, mode=self.mode, reason="user")


def timed_registry(spent: list[int]) -> ToolRegistry:
    """The builtin tools, each `run` wrapped to add its wall time (ns) to ``spent[0]``."""

    def wrap(run: Callable[[dict[str, Any]], ToolResult]) -> Callable[[dict[str, Any]], ToolResult]:
        def timed(args: dict[str, Any]) -> ToolResult:
            start = time.perf_counter_ns()
            try:
                return run(args)
            finally:
                spent[0] += time.perf_counter_ns() - start

        return timed

    return ToolRegistry(
        Tool(manual=t.manual, run=wrap(t.run), targets=t.targets) for t in builtin_registry()
    )


# --- shapes -------------------------------------------------------------------------------------


@dataclass
class Shape:
    name: str
    text: str
    model: InstantModel
    mode: GrantMode
    description: str


def make_shapes(data: Path) -> list[Shape]:
    notes = data / "notes.txt"
    return [
        Shape("chat", "tell me a joke about cats", InstantModel("Why did the cat..."),
              GrantMode.ONCE, "chat turn, no tools, 1 model call"),
        Shape("direct_list_once", f"list files in {data}", InstantModel("Six files."),
              GrantMode.ONCE, "direct file_list, once grant (prompt every turn), 1 model call"),
        Shape("direct_list_session", f"list files in {data}", InstantModel("Six files."),
              GrantMode.SESSION, "direct file_list, live session grant, 1 model call"),
        Shape("loop_file_read", f"summarise the notes file in {data}",
              InstantModel("The notes are about the budget.", ("file_read", {"path": str(notes)})),
              GrantMode.SESSION, "model loop: file_read call then text, session grant, 2 calls"),
        Shape("direct_system_info", "how much memory is free", InstantModel("4 GiB free."),
              GrantMode.SESSION, "direct system_info (memory topic), session grant, 1 model call"),
    ]  # fmt: skip


def make_data(data: Path) -> None:
    """A small folder of real files for file_list and file_read."""
    data.mkdir(parents=True, exist_ok=True)
    (data / "notes.txt").write_text("Budget: 1200 for travel, 300 for books.\n" * 20, "utf-8")
    for i in range(5):
        (data / f"report-{i}.txt").write_text(f"report {i}\n" * 50, "utf-8")
    (data / "archive").mkdir(exist_ok=True)


@contextlib.contextmanager
def no_system_keyring() -> Iterator[None]:
    """Keep the benchmark's token secret in its temp home, never in the user's keyring."""
    name = "PYTHON_KEYRING_BACKEND"
    old = os.environ.get(name)
    os.environ[name] = "keyring.backends.fail.Keyring"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def open_session(home: Path, shape: Shape, tool_ns: list[int]) -> Session:
    with no_system_keyring():
        return Session(
            home=home,
            settings=Settings(),
            model=shape.model,
            prompter=GrantingPrompter(shape.mode),
            registry=timed_registry(tool_ns),
        )


def time_calls(owner: object, method: str) -> list[int]:
    """Wrap ``owner.method`` (on that instance only) to add its wall time (ns) to a counter.

    The stages share their objects (one AuditLog, one PermissionBroker, one ToolRunner), so an
    instance attribute catches every call a turn makes through them.
    """
    spent = [0]
    original = getattr(owner, method)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter_ns() - start

    setattr(owner, method, timed)
    return spent


# Parts of a turn timed inside it: (report key, object, method). They nest: the runner's time
# includes its permission check and audit lines; all three include their own audit lines.
def turn_parts(session: Session) -> dict[str, list[int]]:
    return {
        "audit_ms": time_calls(session.audit, "append"),
        "authorize_ms": time_calls(session.permissions, "authorize"),
        "runner_ms": time_calls(session.runner, "execute"),
    }


def audit_lines(home: Path) -> int:
    path = home / "audit.jsonl"
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


# --- statistics ---------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); fine for small samples too."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summary_ms(ns: list[int]) -> dict[str, float]:
    ms = [v / 1e6 for v in ns]
    return {
        "p50": round(percentile(ms, 50), 4),
        "p99": round(percentile(ms, 99), 4),
        "mean": round(sum(ms) / len(ms), 4) if ms else 0.0,
        "max": round(max(ms), 4) if ms else 0.0,
    }


# --- measurement --------------------------------------------------------------------------------


def measure_shape(shape: Shape, home: Path, turns: int, warmup: int) -> dict[str, Any]:
    tool_ns = [0]
    session = open_session(home, shape, tool_ns)
    parts = turn_parts(session)
    prompter = session.prompter
    assert isinstance(prompter, GrantingPrompter)
    for _ in range(warmup):
        session.ask(shape.text)
    lines_before = audit_lines(home)
    prompts_before = prompter.prompts
    calls_before = shape.model.calls
    totals: list[int] = []
    overheads: list[int] = []
    tools: list[int] = []
    models: list[int] = []
    part_times: dict[str, list[int]] = {key: [] for key in parts}
    statuses: set[str] = set()
    for _ in range(turns):
        tool_ns[0] = 0
        for counter in parts.values():
            counter[0] = 0
        model_before = shape.model.spent_ns
        start = time.perf_counter_ns()
        result = session.ask(shape.text)
        total = time.perf_counter_ns() - start
        model = shape.model.spent_ns - model_before
        statuses.update(c.status for c in result.tool_calls)
        totals.append(total)
        tools.append(tool_ns[0])
        models.append(model)
        for key, counter in parts.items():
            part_times[key].append(counter[0])
        overheads.append(total - tool_ns[0] - model)
    session.audit.close()
    if statuses - {"ok"} or result.failed:
        raise SystemExit(f"shape {shape.name}: a turn did not succeed ({sorted(statuses)})")
    quarter = max(1, turns // 4)
    return {
        "description": shape.description,
        "turns": turns,
        "overhead_ms": summary_ms(overheads),
        "total_ms": summary_ms(totals),
        "tool_ms": summary_ms(tools),
        "model_ms": summary_ms(models),
        # Parts of the overhead, each summed over the turn: AuditLog.append (every event),
        # PermissionBroker.authorize (grant lookup or prompt, token) and ToolRunner.execute
        # (the whole call, tool time and worker thread included). They overlap.
        **{key: summary_ms(times) for key, times in part_times.items()},
        "audit_lines_per_turn": round((audit_lines(home) - lines_before) / turns, 2),
        "prompts_per_turn": round((prompter.prompts - prompts_before) / turns, 2),
        "model_calls_per_turn": round((shape.model.calls - calls_before) / turns, 2),
        # Mean overhead of the last quarter of turns over the first: >1 means turns get slower
        # as the session ages (state that grows turn after turn).
        "drift": round(
            (sum(overheads[-quarter:]) / quarter) / max(1, sum(overheads[:quarter]) / quarter), 3
        ),
        "tool_calls": [c.tool for c in result.tool_calls],
    }


def measure_aging(root: Path, turns: int, block: int) -> dict[str, list[dict[str, Any]]]:
    """Overhead p50 per block of turns over one long session: does a turn get slower with age?

    Once-grants are the case to watch: each turn makes one and revokes it.
    """
    data = root / "data"
    make_data(data)
    out: dict[str, list[dict[str, Any]]] = {}
    for shape in make_shapes(data):
        if shape.name not in ("direct_list_once", "direct_list_session"):
            continue
        tool_ns = [0]
        session = open_session(root / f"aging-{shape.name}", shape, tool_ns)
        rows: list[dict[str, Any]] = []
        overheads: list[int] = []
        for done in range(1, turns + 1):
            tool_ns[0] = 0
            model_before = shape.model.spent_ns
            start = time.perf_counter_ns()
            session.ask(shape.text)
            total = time.perf_counter_ns() - start
            overheads.append(total - tool_ns[0] - (shape.model.spent_ns - model_before))
            if done % block == 0 or done == turns:
                rows.append(
                    {
                        "turns_done": done,
                        "overhead_p50_ms": summary_ms(overheads)["p50"],
                        "grants_held": len(session.permissions.grants.all()),
                    }
                )
                overheads = []
        session.audit.close()
        out[shape.name] = rows
    return out


def _repeat(fn: Callable[[], object], n: int, warmup: int) -> list[int]:
    for _ in range(warmup):
        fn()
    out: list[int] = []
    for _ in range(n):
        start = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - start)
    return out


def measure_stages(root: Path, data: Path, n: int, warmup: int) -> dict[str, dict[str, float]]:
    """Each stage on its own, outside a turn."""
    tool_ns = [0]
    shape = Shape("stages", f"list files in {data}", InstantModel("ok"), GrantMode.SESSION, "")
    session = open_session(root / "stages-home", shape, tool_ns)
    texts = [s.text for s in make_shapes(data)]
    routers = [route_heuristic(t) for t in texts]
    stages: dict[str, dict[str, float]] = {}

    i = [0]

    def route_next() -> None:
        route_heuristic(texts[i[0] % len(texts)])
        i[0] += 1

    stages["router_heuristics"] = summary_ms(_repeat(route_next, n, warmup))

    def decide_next() -> None:
        session.decide(routers[i[0] % len(routers)])
        i[0] += 1

    stages["policy_decide"] = summary_ms(_repeat(decide_next, n, warmup))

    audit = AuditLog(root / "stage-audit.jsonl")
    router = routers[1]
    record = router.model_dump(mode="json", exclude={"text", "arguments"})

    def append() -> None:
        audit.append(AuditEvent.ROUTER_OUTPUT, turn_id="t-0123456789ab", **record)

    stages["audit_append_router_output"] = summary_ms(_repeat(append, n, warmup))

    def append_small() -> None:
        audit.append(AuditEvent.POSTHOOK_SUMMARY, turn_id="t-0123456789ab")

    stages["audit_append_small"] = summary_ms(_repeat(append_small, n, warmup))
    audit.close()

    # A permission check that finds a live session grant (no prompt): the grant is made once.
    session.ask(shape.text)
    targets = [str(data.resolve())]
    arguments = {"path": str(data)}

    def authorize() -> None:
        session.permissions.authorize(
            tool="file_list",
            capability=session.tools.get("file_list").capability,  # type: ignore[union-attr]
            arguments=arguments,
            targets=targets,
            call_id="call-0123456789ab",
            user_scopes=[str(data)],
            turn_id="t-0123456789ab",
        )

    stages["permission_authorize_live_grant"] = summary_ms(_repeat(authorize, n, warmup))

    folder = str(data)
    stages["resolve_path"] = summary_ms(_repeat(lambda: resolve_path(folder), n, warmup))

    def worker_thread() -> None:
        # What the runner (and a permission prompt) pays for its worker, with no work in it.
        worker = threading.Thread(target=lambda: None, daemon=True)
        worker.start()
        worker.join(15.0)

    stages["thread_start_join_noop"] = summary_ms(_repeat(worker_thread, n, warmup))

    def digest_reply() -> None:
        digest("The notes are about the budget.")

    stages["digest_short_text"] = summary_ms(_repeat(digest_reply, n, warmup))
    session.audit.close()
    return stages


def run(root: Path, turns: int, warmup: int, shapes: list[str] | None = None) -> dict[str, Any]:
    data = root / "data"
    make_data(data)
    results: dict[str, Any] = {}
    for shape in make_shapes(data):
        if shapes and shape.name not in shapes:
            continue
        results[shape.name] = measure_shape(shape, root / f"home-{shape.name}", turns, warmup)
    stage_n = max(turns, 10)
    return {
        "machine": machine_details(),
        "directory": str(root),
        "turns": turns,
        "warmup": warmup,
        "targets_ms": {"p50": TARGET_P50_MS, "p99": TARGET_P99_MS},
        "shapes": results,
        "stages": measure_stages(root, data, stage_n, min(warmup, stage_n)),
    }


def profile(root: Path, shape_name: str, turns: int, warmup: int, top: int = 30) -> str:
    data = root / "data"
    make_data(data)
    by_name = {s.name: s for s in make_shapes(data)}
    if shape_name not in by_name:
        raise SystemExit(f"unknown shape {shape_name!r}; one of {', '.join(by_name)}")
    shape = by_name[shape_name]
    session = open_session(root / "profile-home", shape, [0])
    for _ in range(warmup):
        session.ask(shape.text)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        session.ask(shape.text)
    profiler.disable()
    session.audit.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"machine: {m['cpu']}, {m['nproc']} CPUs, {m['ram']} RAM; {m['uname']}",
        f"python {m['python']} ({m['implementation']}); load {m['load_average']}; {m['date']}",
        f"homes under {report['directory']}; {report['turns']} turns per shape after "
        f"{report['warmup']} warm-up turns",
        "",
        "pipeline overhead per turn (ms) = ask() wall time - tool run time - model time;",
        "audit p50 = the part of it spent in AuditLog.append (lines = appends per turn)",
        f"{'shape':<22}{'p50':>8}{'p99':>8}{'mean':>8}{'max':>8}"
        f"{'audit p50':>10}{'lines':>6}{'tool p50':>10}{'total p50':>10}{'drift':>7}",
    ]
    for name, r in report["shapes"].items():
        o = r["overhead_ms"]
        lines.append(
            f"{name:<22}{o['p50']:>8.3f}{o['p99']:>8.3f}{o['mean']:>8.3f}{o['max']:>8.2f}"
            f"{r['audit_ms']['p50']:>10.3f}{r['audit_lines_per_turn']:>6g}"
            f"{r['tool_ms']['p50']:>10.3f}{r['total_ms']['p50']:>10.3f}{r['drift']:>7.2f}"
        )
    lines += [
        "",
        "parts of the overhead, summed per turn (ms; they overlap: runner includes authorize,",
        "all include their own audit lines; runner also includes the tool's run time)",
        f"{'shape':<22}{'audit p50':>10}{'p99':>8}{'auth p50':>10}{'p99':>8}"
        f"{'runner p50':>12}{'p99':>8}",
    ]
    for name, r in report["shapes"].items():
        a, p, x = r["audit_ms"], r["authorize_ms"], r["runner_ms"]
        lines.append(
            f"{name:<22}{a['p50']:>10.3f}{a['p99']:>8.3f}{p['p50']:>10.3f}{p['p99']:>8.3f}"
            f"{x['p50']:>12.3f}{x['p99']:>8.3f}"
        )
    t = report["targets_ms"]
    lines += ["", f"targets: overhead p50 <= {t['p50']:g} ms, p99 <= {t['p99']:g} ms"]
    for name, r in report["shapes"].items():
        o = r["overhead_ms"]
        p50 = "met" if o["p50"] <= t["p50"] else "NOT met"
        p99 = "met" if o["p99"] <= t["p99"] else "NOT met"
        lines.append(f"  {name:<22} p50 {p50}, p99 {p99}")
    lines += ["", "stages on their own (ms)", f"{'stage':<34}{'p50':>8}{'p99':>8}{'mean':>8}"]
    for name, s in report["stages"].items():
        lines.append(f"{name:<34}{s['p50']:>8.4f}{s['p99']:>8.4f}{s['mean']:>8.4f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.pipeline_overhead",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=500, help="measured turns per shape")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up turns per shape")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temp dir")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--shape", action="append", help="only this shape (repeatable)")
    parser.add_argument("--profile", metavar="SHAPE", help="print a cProfile of SHAPE's turns")
    parser.add_argument(
        "--aging",
        type=int,
        metavar="TURNS",
        help="instead: overhead p50 per 1000 turns over TURNS turns of one session",
    )
    args = parser.parse_args(argv)
    if args.turns < 1 or args.warmup < 0:
        parser.error("--turns must be at least 1 and --warmup at least 0")

    with tempfile.TemporaryDirectory(prefix="chamberlain-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        if args.profile:
            print(profile(root, args.profile, args.turns, args.warmup))
            return 0
        if args.aging:
            aging = measure_aging(root, args.aging, min(1000, args.aging))
            if args.json:
                print(json.dumps(aging, indent=2))
                return 0
            print(f"{'shape':<22}{'turns done':>11}{'p50 ms':>9}{'grants held':>13}")
            for name, rows in aging.items():
                for row in rows:
                    print(
                        f"{name:<22}{row['turns_done']:>11}{row['overhead_p50_ms']:>9.3f}"
                        f"{row['grants_held']:>13}"
                    )
            return 0
        report = run(root, args.turns, args.warmup, args.shape)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
