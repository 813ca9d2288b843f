"""The headless command line: `chamberlain ask | chat | route | policy | grants | audit | mcp |
doctor`.

It drives the same Session as the tray app and must run without a display: it never imports Qt.
`chat` and `ask --continue` (a turn within a kept conversation) live in app/chat_cli.py.
Permission prompts are answered from flags (`--approve`), on the terminal when one is attached,
and otherwise denied. Exit codes: 0 ok, 1 the request failed (message on stderr), 2 usage error,
130 cancelled with Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel

from app.mcp_cli import McpUsageError, add_mcp_parser, cmd_mcp, left_out_line
from app.memory_cli import MemoryCommandError, add_memory_parser, cmd_memory, open_store
from app.settings_cli import add_settings_parser, cmd_settings
from app.terminal import json_text, safe_terminal
from core import errors
from core.words import counted

if TYPE_CHECKING:
    from broker.permissions import PermissionQuestion, PermissionRequest, PromptDecision
    from broker.session import Session

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Cancelled with Ctrl-C: 128 + SIGINT, as shells report it.
EXIT_CANCELLED = 130

log = logging.getLogger("chamberlain.app.cli")


class UsageError(errors.UsageError):
    """The command line asks for something this command does not do: exit 2."""


# --- permission answers from flags ------------------------------------------------------------

MODES = ("once", "timed", "session", "always", "deny")


@dataclass(frozen=True)
class ApprovalRule:
    capability: str
    mode: str
    # None: answers only prompts for the scope the user's own message implied.
    scope: str | None = None


def parse_approval(text: str) -> ApprovalRule:
    """`CAP=MODE` or `CAP=MODE:SCOPE`."""
    from tools.manual import Capability

    cap, sep, rest = text.partition("=")
    if not sep:
        raise UsageError(f"--approve {text!r}: expected CAP=MODE or CAP=MODE:SCOPE")
    mode, _, scope = rest.partition(":")
    cap, mode = cap.strip(), mode.strip()
    if cap not in {c.value for c in Capability}:
        known = ", ".join(c.value for c in Capability)
        raise UsageError(f"--approve {text!r}: unknown capability {cap!r} (one of: {known})")
    if mode not in MODES:
        raise UsageError(f"--approve {text!r}: mode must be one of {', '.join(MODES)}")
    return ApprovalRule(cap, mode, scope.strip() or None)


class FlagPrompter:
    """Answers permission prompts from --approve / --approve-all, then the terminal, else denies.

    `present` answers the question before it returns. From the flags that is at once. On the
    terminal it blocks the thread that asked, reading the person's line until a moment before
    the question's deadline: the command has nothing else to do while it waits, so a thread of
    its own would only add a second place where the answer could come from. Ctrl-C reaches
    that read as it reaches the rest of the command.
    """

    def __init__(
        self,
        rules: Sequence[ApprovalRule],
        approve_all: str | None,
        terminal: tuple[IO[str], IO[str]] | None = None,
        timed_s: float | None = None,
        clock: Any = None,
    ) -> None:
        from core.clock import SystemClock

        self.rules = list(rules)
        self.approve_all = approve_all
        self.terminal = terminal
        # How long a `timed` answer lasts (None: what the request says, from the settings).
        self.timed_s = timed_s
        # The broker's clock: the terminal stops waiting at the request's deadline on it.
        self.clock = clock if clock is not None else SystemClock()
        # How long a `session` answer lasts, in the prompt's words (`chat`: the whole chat).
        self.session_lasts = "this command only"

    def present(self, question: PermissionQuestion) -> None:
        """Answer `question` before returning (see the class docstring for why it may block).
        The terminal stops waiting when the question ends otherwise (Stop, in `chat`)."""
        question.answer(self.decide(question.request, ended=lambda: question.done))

    def decide(
        self, request: PermissionRequest, *, ended: Callable[[], bool] | None = None
    ) -> PromptDecision:
        from broker.permissions import PromptDecision
        from broker.types import GrantMode
        from tools.scopes import scope_covers

        for rule in self.rules:
            if rule.capability != request.capability.value:
                continue
            if request.asked_anew and rule.mode != "deny":
                continue  # set before this question existed: only the person may allow it
            if rule.scope is None:
                matches = request.user_scope
            else:
                matches = scope_covers(request.capability, rule.scope, [request.scope]) or (
                    rule.scope == request.scope
                )
            if not matches:
                continue
            if rule.mode == "deny":
                return PromptDecision(allow=False, reason="user")
            mode = GrantMode(rule.mode)
            if mode is GrantMode.ALWAYS and request.always_unavailable:
                # The broker will not save it; say so rather than let "always" quietly shrink.
                from tools.escapes import visible
                from tools.scopes import describe_scope

                where = describe_scope(request.capability, request.scope).replace("`", "")
                sys.stderr.write(
                    f"chamberlain: {request.capability.value} for {where} is allowed for this "
                    f"command only, not saved: {visible(request.always_unavailable)}\n"
                )
            return PromptDecision(
                allow=True,
                mode=mode,
                scope=rule.scope,
                duration_s=(self.timed_s or request.timed_s) if mode is GrantMode.TIMED else None,
                reason="rule",
            )
        if self.approve_all == "once" and not request.asked_anew:
            return PromptDecision(allow=True, mode=GrantMode.ONCE, reason="rule")
        if self.approve_all == "deny":
            return PromptDecision(allow=False, reason="user")
        if self.terminal is not None:
            return ask_on_terminal(
                request,
                *self.terminal,
                timed_s=self.timed_s,
                clock=self.clock,
                ended=ended,
                session_lasts=self.session_lasts,
            )
        return PromptDecision(allow=False, reason="headless")


# What people type at the prompt. "y"/"yes" is the one-time yes a person means by it.
_ANSWERS = {
    "o": "once",
    "once": "once",
    "y": "once",
    "yes": "once",
    "t": "timed",
    "timed": "timed",
    "s": "session",
    "session": "session",
    "a": "always",
    "always": "always",
    "n": "no",
    "no": "no",
    "": "no",
}
# Asked again this many times on an answer that is none of the above, then it is a no.
_TRIES = 3
# The terminal gives up this much before the broker does, so its "no answer" line is printed
# before the denial, and no reader is left behind to swallow the next line typed.
_TIMEOUT_MARGIN_S = 0.5

# The request's risk on the scale the rest of the CLI uses (the router's low/medium/high).
_RISK_WORDS = {"safe": "low", "moderate": "medium", "dangerous": "high"}


class _NoAnswer(Exception):
    """Nobody answered before the deadline."""


class _Ended(Exception):
    """The question ended while the terminal waited (the turn was stopped)."""


# How often a terminal read looks whether its question has ended another way.
_ENDED_POLL_S = 0.1


def _read_answer(
    stdin: IO[str], deadline: float | None, ended: Callable[[], bool] | None = None
) -> str | None:
    """One line typed at the terminal; None at end of input. Raises _NoAnswer at the deadline,
    and _Ended as soon as `ended()` says the question is over.

    With a deadline and a real file, it waits with select() and reads the descriptor itself,
    so nothing is left blocked in readline when the prompt has given up.
    """
    import io
    import select
    import time

    try:
        fd = stdin.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        fd = -1
    if deadline is None or fd < 0:
        line = stdin.readline()
        return line if line else None
    chunks: list[bytes] = []
    while True:
        if ended is not None and ended():
            raise _Ended
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _NoAnswer
        wait = remaining if ended is None else min(remaining, _ENDED_POLL_S)
        if not select.select([fd], [], [], wait)[0]:
            continue
        chunk = os.read(fd, 1024)
        if not chunk:
            return b"".join(chunks).decode(errors="replace") if chunks else None
        chunks.append(chunk)
        if b"\n" in chunk:
            return b"".join(chunks).decode(errors="replace")


def _shown_risk(request: Any) -> str:
    from tools.scopes import READONLY, READONLY_IN

    # A read-only command class changes nothing and never reaches the network, whatever the
    # command tool's own (worst-case) rating says.
    if request.scope == READONLY or request.scope.startswith(READONLY_IN):
        return "low"
    return _RISK_WORDS.get(request.risk, str(request.risk))


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min"


def _terminal_rows(request: Any) -> str:
    """The question's rows from its structure (app.prompt_view), every value whole and escaped;
    a row of several values continues under its first, indented."""
    from app.prompt_view import covers_note, no_always_words, once_only_words, prompt_rows
    from tools.escapes import visible

    out: list[str] = []
    for row in prompt_rows(request):
        head = f"  {row.label}: "
        indent = " " * len(head)
        out.append(head + f"\n{indent}".join(row.lines))
    notes = (request.reason, once_only_words(request), covers_note(request))
    for note in (*notes, no_always_words(request)):
        if note:
            out.append(f"  {visible(note)}")
    return "\n".join(out) + "\n"


def ask_on_terminal(
    request: PermissionRequest,
    stdin: IO[str],
    stderr: IO[str],
    *,
    timed_s: float | None = None,
    clock: Any = None,
    ended: Callable[[], bool] | None = None,
    session_lasts: str = "this command only",
) -> PromptDecision:
    """Ask on the terminal until `request.deadline` on `clock` (the broker's; default the
    system's), or until `ended()` (the question ended another way: Stop). `timed_s`: how long
    a timed grant lasts (None: the request's `timed_s`)."""
    import time

    from broker.permissions import PromptDecision
    from broker.types import GrantMode
    from core.clock import SystemClock

    clock = clock if clock is not None else SystemClock()
    origin = "" if request.user_scope else " (the model asked for this; you did not name it)"
    lasting_s = timed_s if timed_s is not None else request.timed_s
    lasting = _minutes(lasting_s)
    always = not request.always_unavailable
    if request.once_only:
        offered: tuple[str, ...] = ("once", "no")
        choices = "Allow? [o]nce, [N]o"
    else:
        offered = ("once", "timed", "session", *(("always",) if always else ()), "no")
        choices = (
            f"Allow? [o]nce, [t]imed ({lasting}), [s]ession ({session_lasts}), "
            + ("[a]lways, " if always else "")
            + "[N]o"
        )
    limit = f" (no answer within {request.timeout_s:g} s is a no)"
    stderr.write(
        f"\nChamberlain wants {request.capability.value}{origin}\n"
        f"{_terminal_rows(request)}"
        f"  risk: {_shown_risk(request)}, reversibility: {request.reversibility}\n"
        f"{choices}{limit}: "
    )
    stderr.flush()
    # The request's deadline, on a clock this process can wait on; the terminal gives up a
    # moment before the broker, so its own line is printed before the denial.
    left = request.deadline - clock.now()
    deadline = time.monotonic() + max(left - _TIMEOUT_MARGIN_S, 0.0)
    for attempt in range(_TRIES):
        try:
            line = _read_answer(stdin, deadline, ended)
        except _Ended:
            # Stopped: the broker has its answer already; end the prompt's line.
            stderr.write("\n")
            stderr.flush()
            return PromptDecision(allow=False, reason="cancelled")
        except _NoAnswer:
            # The cursor is still on the prompt line: end it before anything else is printed.
            stderr.write(f"\nNo answer within {request.timeout_s:g} s: not allowed.\n")
            stderr.flush()
            return PromptDecision(allow=False, reason="timeout")
        if line is None:  # end of input: nobody there to say yes
            stderr.write("\n")
            stderr.flush()
            return PromptDecision(allow=False, reason="user")
        answer = _ANSWERS.get(line.strip().lower())
        if answer == "no":
            return PromptDecision(allow=False, reason="user")
        if answer is not None and answer in offered:
            mode = GrantMode(answer)
            return PromptDecision(
                allow=True,
                mode=mode,
                duration_s=lasting_s if mode is GrantMode.TIMED else None,
                reason="user",
            )
        if attempt + 1 < _TRIES:
            hint = ", ".join(offered)
            stderr.write(f"Please answer {hint} (or just Enter for no). {choices}: ")
            stderr.flush()
    stderr.write("No recognised answer: not allowed.\n")
    stderr.flush()
    return PromptDecision(allow=False, reason="user")


# --- output helpers -----------------------------------------------------------------------------


def emit(value: Any, as_json: bool, text: str | None = None) -> None:
    if as_json:
        data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        sys.stdout.write(json_text(data, indent=2) + "\n")
    else:
        sys.stdout.write((text if text is not None else str(value)) + "\n")


def home_from(args: argparse.Namespace) -> Path:
    from broker.settings import default_home

    return Path(args.home).expanduser() if args.home else default_home()


def _turn_json(turn: Any, reply: str) -> dict[str, Any]:
    """The turn as `ask --json` prints it: `reply` is the reply with memory's notices under it,
    and each memory event carries its notice."""
    from app.memory_words import memory_json

    data: dict[str, Any] = turn.model_dump(mode="json")
    data["reply"] = reply
    data.pop("remedy", None)  # worded into the reply
    data["memory"] = [memory_json(event) for event in turn.memory]
    for call in data["tool_calls"]:
        call.pop("output_digest", None)
        call.pop("output_len", None)
    return data


def _ask_events(*, debug: bool, name_backend: bool) -> Callable[[object], None] | None:
    """What `ask` shows of a turn as it runs, on stderr: which model answered (the first reply
    a model writes says so) and, with --debug-routing, each stage's output."""
    if not debug and not name_backend:
        return None

    def show(event: object) -> None:
        from broker.events import BackendNamed

        if isinstance(event, BackendNamed):
            if name_backend:
                sys.stderr.write(f"({event.text})\n")
        elif debug:
            _trace_to_stderr(event)

    return show


def _trace_to_stderr(event: object) -> None:
    """--debug-routing: each pipeline stage's output, one JSON line per stage, from the turn's
    events (the same ones the desktop app shows)."""
    from broker.events import PolicyDecided, Routed, ToolFinished

    shown: object
    if isinstance(event, Routed):
        stage, shown = "router", event.router.model_dump(mode="json")
    elif isinstance(event, PolicyDecided):
        stage, shown = "policy", event.policy.model_dump(mode="json")
    elif isinstance(event, ToolFinished):
        stage = "tool_call"
        shown = {
            "tool": event.tool,
            "status": event.status,
            "reason": event.reason,
            "capability": event.capability.value if event.capability else None,
            "call_id": event.call_id,
            "duration_s": round(event.duration_s, 3),
        }
    else:
        return
    sys.stderr.write(f"[{stage}] {json_text(shown, default=str)}\n")


# --- commands -----------------------------------------------------------------------------------


def turn_session(
    args: argparse.Namespace, home: Path, settings: Any, *, memory: Any = None
) -> Session:
    """The Session `ask` and `chat` drive: the model, the permission prompter (the flags, then
    the terminal when one is attached) and memory as the command line opens it. `memory`: a
    store already open (a kept conversation's), which the caller closes; otherwise memory is
    opened the first time a turn needs it."""
    from app.errors import FrontEnd, worded
    from broker.session import MemoryUnavailable, Session, connect_model

    rules = [parse_approval(a) for a in args.approve or []]
    if args.no_refine:
        settings.router.model_refinement = False
    if args.timed_minutes is not None and not 0 < args.timed_minutes <= 24 * 60:
        raise UsageError("--timed-minutes must be between 0 and 1440")
    choice = connect_model(settings, args.llm, args.model, home=home)
    interactive = sys.stdin.isatty() and sys.stderr.isatty() and not args.approve_all
    minutes = args.timed_minutes or settings.permissions.timed_default_minutes
    prompter = FlagPrompter(
        rules,
        args.approve_all,
        (sys.stdin, sys.stderr) if interactive else None,
        timed_s=minutes * 60,
    )

    def open_memory() -> Any:
        # Called by the session only when the turn needs memory (a recall or a write): listing
        # files never asks for the passphrase.
        try:
            return open_store(home, settings)
        except MemoryCommandError as exc:
            sys.stderr.write(
                f"chamberlain: memory was not opened, so this request recalls and remembers "
                f"nothing: {exc}\n"
            )
            raise MemoryUnavailable(str(exc)) from exc

    return Session(
        home=home,
        settings=settings,
        model=choice.model,
        model_problem=(
            worded(choice.problem, choice.remedy, FrontEnd.CLI) if choice.problem else None
        ),
        prompter=prompter,
        events=_ask_events(debug=args.debug_routing, name_backend=not args.json),
        memory=memory,
        memory_opener=None if memory is not None else open_memory,
        temporary=args.temporary,
    )


def cmd_ask(args: argparse.Namespace) -> int:
    from app.errors import FrontEnd, worded
    from app.memory_words import reply_with_notices
    from app.settings_notice import settings_for_reading

    text, continue_id = asked_text(args)
    home = home_from(args)
    settings = settings_for_reading(home)
    # `--continue`: the conversation is read from the store (and the turn kept in it), so
    # memory is opened first; plain `ask` keeps no conversation, as before.
    kept = None
    if continue_id is not None:
        from app.chat_cli import continued

        kept = continued(home, settings, continue_id)
    try:
        session = turn_session(args, home, settings, memory=kept.memory if kept else None)
    except BaseException:
        if kept is not None:
            kept.close()
        raise
    _started()
    # The turn runs on a thread of its own, which Ctrl-C stops as the chat's Stop does: the turn
    # ends as cancelled, audited (and kept, with --continue), before the command exits 130.
    from app.turn_thread import ctrl_c_marked, run_stoppable

    try:
        with ctrl_c_marked() as ctrl_c:
            if kept is None:
                ran = run_stoppable(
                    lambda stop: session.ask(text, stop=stop, remember=args.remember), ctrl_c
                )
            else:
                from app.chat_cli import keep_asked_turn

                ran = keep_asked_turn(session, kept, text, ctrl_c, remember=args.remember)
    finally:
        session.close()
        if kept is not None:
            kept.close()
    turn = ran.value
    if ran.stopped and turn.status == "cancelled":
        return _cancelled()
    # What memory did is said under the reply, in the terminal's words (app.memory_words).
    shown = reply_with_notices(worded(turn.reply, turn.remedy, FrontEnd.CLI), turn.memory)
    if args.json:
        data = _turn_json(turn, shown)
        if kept is not None:
            data["conversation"] = kept.conversation_id
        emit(data, True)
    else:
        emit(turn, False, shown)
        for notice in turn.mcp_left_out:
            sys.stderr.write(f"chamberlain: {left_out_line(notice)}\n")
        from tools.manual import Capability
        from tools.words import capability_action

        for cap in _denied_capabilities(turn):
            # The flag takes the capability's id; the sentence says the action in words.
            sys.stderr.write(
                f"To let Chamberlain {capability_action(Capability(cap))} from the command line, "
                f"re-run with --approve {cap}=once (or answer the prompt in a terminal).\n"
            )
    if turn.failed:
        if args.json:
            sys.stderr.write(shown.splitlines()[0] + "\n")
        return EXIT_FAILED
    return EXIT_OK


def asked_text(args: argparse.Namespace) -> tuple[str, str | None]:
    """The request's text and the conversation `--continue` names ("" for the most recent;
    None without --continue). `ask --continue and its population?` reads "and" as the flag's
    value: a value that is not shaped like a conversation id is the request's first word."""
    words = list(args.text)
    continue_id: str | None = args.continue_id
    if continue_id and not looks_like_conversation_id(continue_id):
        words.insert(0, continue_id)
        continue_id = ""
    text = " ".join(words).strip()
    if not text:
        raise UsageError("ask needs the text of a request")
    if continue_id is not None and args.temporary:
        raise UsageError(
            "--continue goes on with a kept conversation and --temporary keeps nothing: "
            "use one of them"
        )
    return text, continue_id


def looks_like_conversation_id(word: str) -> bool:
    """A conversation's id is hex (16 digits as the store makes them); a word of eight or more
    hex digits is taken for one, so a mistyped id is an error rather than a message."""
    return len(word) >= 8 and all(c in "0123456789abcdefABCDEF" for c in word)


def _denied_capabilities(turn: Any) -> list[str]:
    """The capabilities a turn's calls were denied for (not refused: those no grant allows)."""
    found = [
        call.capability.value
        for call in turn.tool_calls
        if call.status == "denied" and call.capability is not None
    ]
    return list(dict.fromkeys(found))


def cmd_route(args: argparse.Namespace) -> int:
    from broker.router import explain_route, route

    text = " ".join(args.text)
    out = route(text)
    data = out.model_dump(mode="json", exclude={"text"})
    data["explanation"] = explain_route(text)
    emit(data, args.json, "\n".join(f"{k}: {v}" for k, v in data.items()))
    return EXIT_OK


def cmd_policy(args: argparse.Namespace) -> int:
    from app.settings_notice import settings_for_reading
    from broker.policy import decide, load_policy_table
    from broker.types import Intent, RouterOutput
    from tools.registry import builtin_registry

    try:
        intent = Intent(args.intent)
    except ValueError as exc:
        known = ", ".join(i.value for i in Intent)
        raise UsageError(f"unknown intent {args.intent!r} (one of: {known})") from exc
    registry = builtin_registry()
    decision = decide(
        RouterOutput(intent=intent),
        load_policy_table(),
        {t.name: t.capability for t in registry},
        settings_for_reading(home_from(args)).policy,
    )
    data = decision.model_dump(mode="json")
    text = (
        f"intent: {decision.intent.value}\n"
        f"allowed: {', '.join(decision.allowed_tools) or '(none)'}\n"
        f"forbidden: {', '.join(decision.forbidden_tools) or '(none)'}\n"
        f"needs: {', '.join(c.value for c in decision.required_capabilities) or '(nothing)'}"
    )
    emit(data, args.json, text)
    return EXIT_OK


def _open_grants(args: argparse.Namespace) -> Any:
    from broker.audit.writer import AuditLog
    from broker.keys import load_install_secret
    from broker.permissions import DenyPrompter, GrantStore, PermissionBroker, TokenAuthority
    from core.clock import SystemClock

    home = home_from(args)
    clock = SystemClock()
    secret = load_install_secret(home)
    return PermissionBroker(
        grants=GrantStore(home / "grants.json", clock, key=secret.grants_key),
        tokens=TokenAuthority(secret.key, clock),
        prompter=DenyPrompter(),
        audit=AuditLog(home / "audit.jsonl", clock, key=secret.audit_key),
        clock=clock,
    )


def _time_left(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds} s"


def _grant_line(grant: Any, now: float) -> str:
    line = f"{grant.id}  {grant.capability.value:<15} {grant.mode.value:<8} {grant.scope}"
    if grant.expires_at is not None:
        line += f"  ({_time_left(grant.expires_at - now)} left)"
    return line


def _confirm(question: str) -> bool:
    """Ask y/N on the terminal; only "y" or "yes" is a yes."""
    sys.stderr.write(f"{question} [y/N]: ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:
        sys.stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


def cmd_grants(args: argparse.Namespace) -> int:
    broker = _open_grants(args)
    for problem in broker.grants.problems:
        # Said on every grants command, JSON or not: the entry is ignored, and the user should
        # know someone or something wrote it.
        sys.stderr.write(
            f"warning: {problem}. Look at it, then remove it with `chamberlain grants revoke ID`.\n"
        )
    if args.grants_cmd == "list":
        grants = broker.grants.live()
        now = broker.clock.now()
        data = [g.model_dump(mode="json") for g in grants]
        lines = [_grant_line(g, now) for g in grants] or [
            "No saved grants. (once and session grants end with the command; timed and always "
            "grants are kept until they end or you revoke them.)"
        ]
        emit(data, args.json, "\n".join(lines))
        return EXIT_OK
    if args.grants_cmd == "revoke":
        # Ids are shown as `g-…`; the part after the prefix is enough.
        grant_id = args.id
        if not grant_id.startswith("g-") and (
            broker.grants.get("g-" + grant_id) is not None
            or any(u.id == "g-" + grant_id for u in broker.grants.untrusted)
        ):
            grant_id = "g-" + grant_id
        grant = broker.revoke(grant_id, "revoked by the user")
        if grant is None and broker.grants.discard_untrusted(grant_id):
            from broker.audit.events import AuditEvent

            broker.audit.append(
                AuditEvent.PERMISSION_REVOKED,
                grant_id=grant_id,
                why="an entry Chamberlain did not write, removed by the user",
            )
            emit({"removed": grant_id}, args.json, f"Removed {grant_id} from grants.json.")
            return EXIT_OK
        if grant is None:
            sys.stderr.write(f"no live grant with id {args.id!r} (see `chamberlain grants list`)\n")
            return EXIT_FAILED
        emit(grant.model_dump(mode="json"), args.json, f"Revoked {grant.id}.")
        return EXIT_OK
    live = broker.grants.live()
    confirm = live and not args.yes and sys.stdin.isatty()
    if confirm and not _confirm(f"Revoke all {counted(len(live), 'grant')}?"):
        sys.stderr.write("Nothing was revoked.\n")
        return EXIT_FAILED
    revoked = broker.revoke_all("revoke-all by the user")
    emit(
        [g.id for g in revoked],
        args.json,
        f"Revoked {counted(len(revoked), 'grant')}. Once and session grants of a Chamberlain "
        "that is running end too, before its next tool call.",
    )
    return EXIT_OK


# `audit verify` on a log that is not OK only because appends were cut short (a crash or a full
# disk): nothing was edited, and `audit acknowledge` accepts them. The design's exit codes are
# 0, 1 and 2, so this is a failure (1) whose words — "INTERRUPTED", not "FAILED" — tell it apart.
EXIT_AUDIT_INTERRUPTED = EXIT_FAILED


def _verify_report(result: Any, path: Path) -> tuple[dict[str, Any], str, int]:
    """What `audit verify` shows for a VerifyResult: the JSON, the text and the exit code."""
    data = {
        "ok": result.ok,
        "lines": result.lines,
        "first_bad_line": result.first_bad_line,
        "reason": result.reason,
        "torn_tail": result.torn_tail,
        "interrupted": result.interrupted,
        "faults": [
            {
                "line": f.line,
                "recorded_at": f.recorded_at,
                "acknowledged_at": f.acknowledged_at,
            }
            for f in result.faults
        ],
    }
    if result.ok:
        acknowledged = [f.line for f in result.faults if f.acknowledged_at is not None]
        with_faults = ""
        if acknowledged:
            where = ", ".join(str(line) for line in acknowledged)
            plural = "s" if len(acknowledged) > 1 else ""
            count = f"{len(acknowledged)} acknowledged fault{plural}"
            with_faults = f", with {count} at line{plural} {where}"
        note = "" if result.reason == "ok" else f"\n{result.reason.removeprefix('ok; ')}"
        text = f"audit log OK{with_faults}: {result.lines} lines, chain intact ({path}){note}"
        return data, text, EXIT_OK
    where = "" if result.first_bad_line is None else f" at line {result.first_bad_line}"
    if result.interrupted:
        text = (
            f"audit log INTERRUPTED{where}: {result.reason}\n"
            "Nothing was edited: an append was cut short (a crash, or a full disk). If the disk "
            "is full, free some space; then `chamberlain audit acknowledge` accepts it, and the "
            "acknowledgement is recorded in the log."
        )
        return data, text, EXIT_AUDIT_INTERRUPTED
    return data, f"audit log FAILED{where}: {result.reason}", EXIT_FAILED


def _audit_acknowledge(args: argparse.Namespace, path: Path, key: bytes) -> int:
    """Accept the interrupted appends verify reports, with a signed AUDIT_ACK in the chain."""
    from broker.audit.verify import verify
    from broker.audit.writer import AuditLog
    from core.clock import SystemClock

    result = verify(path, key=key)
    if result.torn_tail:
        # No writer has recorded the cut append yet: record it, so there is a fault to name.
        with AuditLog(path, SystemClock(), key=key) as audit:
            audit.repair()
        result = verify(path, key=key)
    if not result.ok and not result.interrupted:
        _, failed, _ = _verify_report(result, path)
        sys.stderr.write(
            f"{failed}\nNothing was acknowledged: only appends cut short by a crash or a full "
            "disk can be, and this is not one.\n"
        )
        return EXIT_FAILED
    pending = result.unacknowledged
    if pending:
        with AuditLog(path, SystemClock(), key=key) as audit:
            audit.acknowledge(pending)
        result = verify(path, key=key)
    data, text, code = _verify_report(result, path)
    lines = ", ".join(str(f.line) for f in pending)
    at = f"line {lines}" if len(pending) == 1 else f"lines {lines}"
    appends = "append" if len(pending) == 1 else "appends"
    said = f"Acknowledged the interrupted {appends} at {at}." if pending else ""
    said = said or "Nothing to acknowledge."
    emit({**data, "acknowledged": [f.line for f in pending]}, args.json, f"{said}\n{text}")
    return code


def cmd_audit(args: argparse.Namespace) -> int:
    from broker.audit.tail import tail
    from broker.audit.verify import verify
    from broker.keys import load_install_secret

    home = home_from(args)
    path = home / "audit.jsonl"
    if args.audit_cmd == "acknowledge":
        return _audit_acknowledge(args, path, load_install_secret(home).audit_key)
    if args.audit_cmd == "verify":
        # The same key the session signs the head with; without it a rewritten head would pass.
        result = verify(path, key=load_install_secret(home).audit_key)
        data, text, code = _verify_report(result, path)
        emit(data, args.json, text)
        if args.json and code != EXIT_OK:
            sys.stderr.write(text + "\n")
        return code
    events = tail(path, args.n)
    emit(events, args.json, "\n".join(_audit_line(e) for e in events) or "The audit log is empty.")
    return EXIT_OK


# --- the audit log, one readable line per stage ---------------------------------------------------


def _audit_summary(event: str, data: dict[str, Any]) -> str:
    """The Activity window's words for a stage (app/activity_words.py), with the tool named."""
    from app.activity_words import summary

    text = summary(event, data)
    tool = data.get("tool")
    if event in ("TOOL_CALL_START", "TOOL_CALL_END") and tool:
        text = f"{tool} {text}"
    return text


def _audit_line(record: dict[str, Any]) -> str:
    ts = str(record.get("ts") or "")
    when = ts[:19].replace("T", " ")
    event = str(record.get("event"))
    data = record.get("data")
    summary = _audit_summary(event, data if isinstance(data, dict) else {})
    turn = record.get("turn") or ""
    return f"{record.get('seq') or '?':>6} {when} {turn:<14} {event.lower():<18} {summary}"


def cmd_models(args: argparse.Namespace) -> int:
    from app.errors import FrontEnd, worded
    from app.settings_notice import settings_for_reading
    from broker.models import ModelChoiceError, catalog, choose
    from broker.settings import load_settings

    home = home_from(args)
    # Choosing a model writes the settings: a broken file stops it (never replaced unseen).
    settings = load_settings(home) if args.models_cmd == "use" else settings_for_reading(home)
    if args.models_cmd == "use":
        try:
            chosen = choose(home, settings, args.name)
        except ModelChoiceError as exc:
            raise UsageError(worded(str(exc), exc.remedy, FrontEnd.CLI, exc.subject)) from exc
        emit(
            {"chosen": chosen, "url": settings.llm.url, "model": settings.llm.model},
            args.json,
            f"From now on: {chosen}.",
        )
        return EXIT_OK
    entries = catalog(settings)
    lines = [
        f"{'*' if e.current else ' '} {e.name}  ({e.backend}"
        + ("" if e.url == "embedded" else f", {e.url}")
        + ")"
        for e in entries
    ]
    if not entries:
        lines = ["No models: no local server answers, and the embedded model is not installed."]
    lines.append(f"(llm.url = {settings.llm.url}; choose with `chamberlain models use NAME`)")
    emit([e.as_dict() for e in entries], args.json, "\n".join(lines))
    return EXIT_OK


def _cmd_chat(args: argparse.Namespace) -> int:
    from app.chat_cli import cmd_chat

    return cmd_chat(args, home_from(args))


def _cmd_mcp(args: argparse.Namespace) -> int:
    try:
        return cmd_mcp(args, home_from(args))
    except McpUsageError as exc:
        raise UsageError(str(exc)) from exc


# Files only Chamberlain writes: a folder holding none of them is not erased (a mistyped --home).
_HOME_MARKS = (
    "settings.json",
    "audit.jsonl",
    "grants.json",
    "memory.db",
    "memory.keying",
    "token.key",
)


def cmd_erase_data(args: argparse.Namespace) -> int:
    """Everything Chamberlain keeps for this home, gone for good: the data folder, its secrets in
    the system keyring, the saved API key of the configured model server and the start-at-login
    entry; and the telemetry folder onnxruntime (the OCR engine) wrote for this user before
    Chamberlain turned its telemetry off. What removing the package leaves, on the user's
    explicit word."""
    import shutil

    from app import autostart
    from broker.keys import delete_api_key, forget_home_secrets
    from broker.settings import SettingsError, load_settings
    from tools import telemetry

    home = home_from(args).resolve()
    # Per user, not per home: left by earlier versions, whichever home they used.
    leftovers = telemetry.onnxruntime_leftovers(Path.home())
    if not home.exists() and not leftovers:
        emit({"removed": []}, args.json, f"Nothing to erase: {home} does not exist.")
        return EXIT_OK
    # Never the user's home nor a folder holding it (a mistyped --home of /home or /).
    if home.exists() and (
        Path.home().resolve().is_relative_to(home)
        or not any((home / mark).exists() for mark in _HOME_MARKS)
    ):
        raise UsageError(
            f"{home} does not look like Chamberlain's data folder (none of "
            f"{', '.join(_HOME_MARKS)} is in it); nothing was erased"
        )
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("erase-data deletes everything for good: add --yes to confirm")
        what = []
        if home.exists():
            what.append(
                f"{home} (memory, conversations, grants, audit log, settings), its keys in the "
                "system keyring and the start-at-login entry"
            )
        what += [f"the OCR engine's telemetry folder {path}" for path in leftovers]
        if not _confirm(f"Erase {' and '.join(what)}, for good?"):
            sys.stderr.write("Nothing was erased.\n")
            return EXIT_FAILED
    removed: list[str] = []
    if home.exists():
        try:
            url = load_settings(home).llm.url
        except SettingsError:
            url = ""
        if url.startswith(("http://", "https://")):
            with contextlib.suppress(Exception):
                if delete_api_key(url):
                    removed.append(f"the API key for {url} in the keyring")
        removed += [f"the {purpose} in the keyring" for purpose in forget_home_secrets(home)]
        if autostart.is_enabled() and autostart.disable():
            removed.append(f"the start-at-login entry {autostart.entry_path()}")
        shutil.rmtree(home)
        removed.append(str(home))
    try:
        gone = telemetry.remove_onnxruntime_leftovers(Path.home())
    except OSError as exc:
        emit({"removed": removed}, args.json, "Erased: " + "; ".join(removed or ["nothing"]) + ".")
        where = exc.filename or ", ".join(map(str, leftovers))
        sys.stderr.write(
            f"chamberlain: the OCR engine's telemetry folder could not be removed ({where}: "
            f"{exc.strerror or exc}); delete it yourself\n"
        )
        return EXIT_FAILED
    removed += [
        f"the OCR engine's telemetry folder {path} (the device id and usage events onnxruntime "
        "wrote before Chamberlain turned its telemetry off)"
        for path in gone
    ]
    emit({"removed": removed}, args.json, "Erased: " + "; ".join(removed) + ".")
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from app.errors import FrontEnd, worded
    from broker.doctor import run_checks

    checks = run_checks(home_from(args), args.llm)
    for c in checks:
        c.detail = worded(c.detail, c.remedy, FrontEnd.CLI)
    data = [{k: v for k, v in c.__dict__.items() if k != "remedy"} for c in checks]
    lines: list[str] = []
    for c in checks:
        lines.append(f"[{'ok' if c.ok else '--'}] {c.name}: {c.detail}")
        if c.fix and not c.ok:
            lines.append(f"     to fix: {c.fix}")
    emit(data, args.json, "\n".join(lines))
    return EXIT_OK if all(c.ok or not c.required for c in checks) else EXIT_FAILED


# --- argument parsing ---------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 on usage errors, as we want
        missing = "the following arguments are required: "
        if message.startswith(missing):
            names = message[len(missing) :].split(", ")
            message = "missing " + ", ".join(self._shown_name(n) for n in names)
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _shown_name(self, name: str) -> str:
        """What to call a missing argument: not argparse's internal `dest` ("grants_cmd")."""
        for action in self._actions:
            if action.option_strings or name not in (action.dest, action.metavar):
                continue
            if isinstance(action.choices, dict):  # a sub-command
                return "a command (one of: " + ", ".join(action.choices) + ")"
            return action.dest.upper()
        return name


def _turn_options(command: argparse.ArgumentParser) -> None:
    """The options of a command that asks turns (`ask`, `chat`)."""
    command.add_argument("--llm", help="model endpoint: a base URL, 'auto', 'embedded' or 'none'")
    command.add_argument("--model", help="model name at the endpoint (default: its first model)")
    command.add_argument(
        "--approve",
        action="append",
        metavar="CAP=MODE[:SCOPE]",
        help="answer permission prompts: MODE is once|timed|session|always|deny; without SCOPE "
        "it answers only prompts for what your message named",
    )
    command.add_argument(
        "--timed-minutes",
        type=float,
        metavar="N",
        help="how long a `timed` approval lasts (default: the setting, 5 minutes)",
    )
    command.add_argument("--approve-all", choices=("once", "deny"), help="answer every prompt")
    command.add_argument(
        "--debug-routing", action="store_true", help="print each pipeline stage to stderr"
    )
    command.add_argument(
        "--no-refine", action="store_true", help="do not ask the model to refine routing"
    )
    command.add_argument(
        "--temporary",
        action="store_true",
        help="a temporary chat: nothing is kept, recalled or remembered (anchors still apply)",
    )
    command.add_argument(
        "--continue",
        dest="continue_id",
        nargs="?",
        const="",
        metavar="ID",
        help="go on with a kept conversation (the most recent one without ID)",
    )


def build_parser() -> argparse.ArgumentParser:
    # The same options before or after the command; the command's copies must not reset the
    # values given before it, hence SUPPRESS.
    top = _Parser(add_help=False)
    top.add_argument(
        "--home", help="where every file Chamberlain writes lives (or CHAMBERLAIN_HOME)"
    )
    top.add_argument("--json", action="store_true", help="print JSON")
    common = _Parser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")

    parser = _Parser(
        prog="chamberlain",
        description="A local desktop assistant that asks before it acts.",
        parents=[top],
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    ask = sub.add_parser("ask", parents=[common], help="run one request through the whole loop")
    # Not "+": `ask --continue TEXT` hands the first word to --continue (see asked_text).
    ask.add_argument("text", nargs="*")
    _turn_options(ask)
    ask.add_argument(
        "--remember",
        action="store_true",
        help="remember TEXT as a fact about you (what a reply offered to keep), not a request",
    )
    ask.set_defaults(func=cmd_ask)

    chat = sub.add_parser(
        "chat",
        parents=[common],
        help="a conversation in the terminal (Ctrl-C stops a turn, Ctrl-D leaves)",
    )
    _turn_options(chat)
    chat.set_defaults(func=_cmd_chat)

    rt = sub.add_parser("route", parents=[common], help="show how a message is routed")
    rt.add_argument("text", nargs="+")
    rt.set_defaults(func=cmd_route)

    pol = sub.add_parser("policy", parents=[common], help="show the policy decision for an intent")
    pol.add_argument("intent")
    pol.set_defaults(func=cmd_policy)

    gr = sub.add_parser("grants", parents=[common], help="list or revoke permissions")
    gsub = gr.add_subparsers(dest="grants_cmd", required=True, parser_class=_Parser)
    gsub.add_parser("list", parents=[common])
    revoke = gsub.add_parser("revoke", parents=[common])
    revoke.add_argument("id")
    revoke_all = gsub.add_parser("revoke-all", parents=[common])
    revoke_all.add_argument("--yes", action="store_true", help="do not ask to confirm")
    gr.set_defaults(func=cmd_grants)

    au = sub.add_parser("audit", parents=[common], help="read or verify the audit log")
    asub = au.add_subparsers(dest="audit_cmd", required=True, parser_class=_Parser)
    tl = asub.add_parser(
        "tail", parents=[common], help="the last events, one line each (--json: the records)"
    )
    tl.add_argument("-n", type=int, default=20)
    asub.add_parser("verify", parents=[common])
    asub.add_parser(
        "acknowledge",
        parents=[common],
        help="accept appends cut short by a crash or a full disk (recorded in the log)",
    )
    au.set_defaults(func=cmd_audit)

    mem = add_memory_parser(sub, common, _Parser)
    mem.set_defaults(func=lambda args: cmd_memory(args, home_from(args)))

    mcp = add_mcp_parser(sub, common, _Parser)
    mcp.set_defaults(func=_cmd_mcp)

    st = add_settings_parser(sub, common, _Parser)
    st.set_defaults(func=lambda args: cmd_settings(args, home_from(args)))

    er = sub.add_parser(
        "erase-data",
        parents=[common],
        help="delete everything Chamberlain keeps (data folder, keyring secrets, autostart)",
    )
    er.add_argument("--yes", action="store_true", help="do not ask to confirm")
    er.set_defaults(func=cmd_erase_data)

    mo = sub.add_parser("models", parents=[common], help="list the models, or choose one")
    msub = mo.add_subparsers(dest="models_cmd", required=True, parser_class=_Parser)
    msub.add_parser("list", parents=[common], help="the embedded model and local servers' models")
    use = msub.add_parser("use", parents=[common], help="answer with NAME from now on")
    use.add_argument("name", help="a model id from `models list`, 'embedded', 'auto' or 'none'")
    mo.set_defaults(func=cmd_models)

    doc = sub.add_parser("doctor", parents=[common], help="what works on this machine")
    doc.add_argument("--llm", help="model endpoint to check instead of the configured one")
    doc.set_defaults(func=cmd_doctor)
    return parser


def _started() -> None:
    """Start-up is over: collect garbage again, from here on ignoring what start-up built.

    `main` turns the collector off first: importing the broker, pydantic and the tools builds
    hundreds of thousands of long-lived objects, and the collector would otherwise run over a
    hundred times walking them (about 0.1 s of an `ask`, measured). Frozen, they are never
    walked again.
    """
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _cancelled() -> int:
    """Ctrl-C is the person cancelling, not a fault: one line, the shell's code for SIGINT."""
    sys.stderr.write("\nchamberlain: cancelled\n")
    sys.stderr.flush()
    return EXIT_CANCELLED


def main(argv: Sequence[str] | None = None) -> int:
    # Everything printed from here on, whoever prints it, reaches the terminal escaped
    # (app.terminal): replies, results, file names and server messages are untrusted text.
    with safe_terminal():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    gc.disable()  # until _started(): see there
    logging.basicConfig(
        level=os.environ.get("CHAMBERLAIN_LOG", "WARNING").upper(),
        format="%(levelname)s %(name)s: %(message)s",
    )
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        sys.stderr.write("\nThe tray app is not part of this build yet; use the commands above.\n")
        return EXIT_OK
    if args.func is not cmd_ask:
        _started()  # only `ask` is measured for start-up; the others collect as usual
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        return _cancelled()
    except errors.UsageError as exc:
        # The base class: a command module raising app.cli's UsageError imports this file
        # anew under its own name when it runs as __main__ (`python -m app.cli`).
        sys.stderr.write(f"chamberlain: {exc}\n")
        return EXIT_USAGE
    except MemoryCommandError as exc:
        sys.stderr.write(f"chamberlain: {exc}\n")
        return EXIT_FAILED
    except Exception as exc:
        from app.errors import user_message

        message = user_message(exc)
        if message is None:
            raise
        sys.stderr.write(f"chamberlain: {message}\n")
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
