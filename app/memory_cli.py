"""`chamberlain memory …`: the user's view and control of everything Chamberlain remembers.

List, search, add, edit, approve or reject pending facts, forget (one, a category, everything),
export, import, anchors and the event history. Headless like the rest of the CLI: no Qt here.
Adding from here is the user writing memory by hand, so it needs no further approval; the
credential rule still holds (passwords, keys and recovery codes are never stored).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.terminal import json_text
from core.errors import StorageError
from core.words import counted

EXIT_OK, EXIT_FAILED = 0, 1


class MemoryCommandError(StorageError):
    """A memory command could not be carried out; the message says why."""


def passphrase_prompt() -> Callable[[str], str | None] | None:
    """Ask for the memory passphrase on the terminal, when there is one."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def ask(prompt: str) -> str | None:
        # Not getpass: within a turn this runs on the turn's thread, where only the turn's
        # Stop (Ctrl-C) can end the wait (app.turn_thread).
        from app.turn_thread import hidden_line

        return hidden_line(prompt, sys.stderr) or None

    return ask


def open_store(home: Path, settings: Any) -> Any:
    """Open the memory store or raise MemoryCommandError with what to do."""
    from app.errors import FrontEnd, user_message
    from broker.keys import MemoryKeyUnavailable
    from broker.memory_hooks import open_memory
    from core.clock import SystemClock
    from memory.db import MemoryStoreError

    try:
        store = open_memory(
            home, settings.memory, SystemClock(), ask_passphrase=passphrase_prompt()
        )
    except (MemoryKeyUnavailable, MemoryStoreError) as exc:
        # Worded here, with what to do in the command line's terms (the session shows it as is).
        raise MemoryCommandError(user_message(exc, FrontEnd.CLI) or str(exc)) from exc
    store.expire()
    return store


def _fact_line(fact: Any) -> str:
    flags = [fact.status.value, fact.sensitivity.value, fact.category]
    if fact.slot:
        flags.append(fact.slot)
    return f"{fact.id}  [{', '.join(flags)}]  {fact.text}"


def _emit(data: Any, as_json: bool, text: str) -> None:
    if as_json:
        sys.stdout.write(json_text(data, indent=2, default=str) + "\n")
    else:
        sys.stdout.write(text + "\n")


def _dump(facts: list[Any]) -> list[dict[str, Any]]:
    return [fact.model_dump(mode="json") for fact in facts]


def cmd_memory(args: argparse.Namespace, home: Path) -> int:
    from app.settings_notice import settings_for_reading

    settings = settings_for_reading(home)
    store = open_store(home, settings)
    try:
        handler = _HANDLERS[args.memory_cmd]
        return handler(store, args, settings)
    finally:
        store.close()


def _list(store: Any, args: argparse.Namespace, settings: Any) -> int:
    page = store.listing(
        status=args.status,
        category=args.category,
        sensitivity=args.sensitivity,
        include_superseded=args.all,
    )
    text = "\n".join(_fact_line(f) for f in page.facts) or "Memory is empty."
    if page.more:
        note = (
            f"… and {page.total - len(page.facts)} more (showing the newest {len(page.facts)} "
            f"of {page.total}); narrow it with --status, --category or --sensitivity, or use "
            "`chamberlain memory export`"
        )
        if args.json:
            sys.stderr.write(note + "\n")
        else:
            text += "\n" + note
    _emit(_dump(page.facts), args.json, text)
    return EXIT_OK


def _search(store: Any, args: argparse.Namespace, settings: Any) -> int:
    facts = store.search(" ".join(args.text))
    _emit(_dump(facts), args.json, "\n".join(_fact_line(f) for f in facts) or "No match.")
    return EXIT_OK


def _add(store: Any, args: argparse.Namespace, settings: Any) -> int:
    from memory.sensitivity.assessment import assess, combine
    from memory.sensitivity.categories import normalise_category
    from memory.slots import detect_slot
    from memory.store.errors import InvalidInputError
    from memory.store.rows import check_text
    from memory.types import FactSource, FactStatus

    try:
        # Length and encoding first: a megabyte is refused before any detector reads it.
        text = check_text(" ".join(args.text))
    except InvalidInputError as exc:
        raise MemoryCommandError(str(exc)) from exc
    found = assess(text)
    if found.refused:
        raise MemoryCommandError(found.refused)
    expires = None
    if args.expires_days is not None:
        from core.clock import SystemClock

        expires = SystemClock().now() + args.expires_days * 86400
    category = normalise_category(args.category) if args.category else found.category
    outcome = store.add(
        text,
        sensitivity=combine(found.level, None, category),
        category=category,
        reasons=found.reasons,
        source=FactSource.USER_EXPLICIT,
        evidence=text,
        slot=detect_slot(text),
        status=FactStatus.ACTIVE,
        expires_at=expires,
    )
    fact = outcome.fact
    _emit(fact.model_dump(mode="json"), args.json, f"{outcome.action}: {_fact_line(fact)}")
    return EXIT_OK


def _edit(store: Any, args: argparse.Namespace, settings: Any) -> int:
    fact = store.edit(args.id, " ".join(args.text).strip())
    _emit(fact.model_dump(mode="json"), args.json, f"edited: {_fact_line(fact)}")
    return EXIT_OK


def _forget(store: Any, args: argparse.Namespace, settings: Any) -> int:
    chosen = [bool(args.id), bool(args.category), args.everything]
    if sum(chosen) != 1:
        raise MemoryCommandError("forget needs exactly one of: an ID, --category C, --all")
    if args.everything:
        if not args.yes:
            raise MemoryCommandError("forgetting everything cannot be undone: add --yes")
        count = store.forget_all()
    elif args.category:
        count = store.forget_category(args.category)
    else:
        count = store.forget(args.id)
        if not count:
            raise MemoryCommandError(f"no fact with id {args.id!r}")
    _emit(
        {"forgotten": count},
        args.json,
        f"Forgot {counted(count, 'fact')}; {'its' if count == 1 else 'their'} text is gone.",
    )
    return EXIT_OK


def _pending(store: Any, args: argparse.Namespace, settings: Any) -> int:
    from memory.types import FactStatus

    facts = store.facts(status=FactStatus.PENDING)
    lines = [f"{_fact_line(f)}\n    why: {', '.join(f.reasons) or '-'}" for f in facts]
    _emit(_dump(facts), args.json, "\n".join(lines) or "Nothing is waiting for approval.")
    return EXIT_OK


def _approve(store: Any, args: argparse.Namespace, settings: Any) -> int:
    fact = store.approve(args.id)
    _emit(fact.model_dump(mode="json"), args.json, f"approved: {_fact_line(fact)}")
    return EXIT_OK


def _reject(store: Any, args: argparse.Namespace, settings: Any) -> int:
    store.reject(args.id)
    _emit({"rejected": args.id}, args.json, f"Rejected {args.id}; nothing of it is kept.")
    return EXIT_OK


def _history(store: Any, args: argparse.Namespace, settings: Any) -> int:
    facts = store.history(args.id)
    _emit(_dump(facts), args.json, "\n".join(_fact_line(f) for f in facts) or "No such fact.")
    return EXIT_OK


def _export(store: Any, args: argparse.Namespace, settings: Any) -> int:
    if args.format == "markdown":
        body = store.export_markdown()
    elif args.output:
        body = json.dumps(store.export_json(), indent=2, ensure_ascii=False)
    else:
        # On the terminal, hidden characters JSON-escaped: the same JSON, safe to show.
        body = json_text(store.export_json(), indent=2)
    if args.output:
        out = Path(args.output).expanduser()
        out.write_text(body + "\n", "utf-8")
        sys.stderr.write(f"Exported to {out}\n")
    else:
        sys.stdout.write(body + "\n")
    return EXIT_OK


def _import(store: Any, args: argparse.Namespace, settings: Any) -> int:
    from memory.store.errors import ImportFormatError
    from memory.store.export import read_import

    path = Path(args.file).expanduser()
    try:
        data = read_import(path)
    except (OSError, ImportFormatError) as exc:
        raise MemoryCommandError(str(exc)) from exc
    facts = store.import_json(data)
    _emit(
        _dump(facts),
        args.json,
        f"Imported {counted(len(facts), 'fact')}, "
        f"{'waiting' if len(facts) == 1 else 'each waiting'} for approval "
        "(`chamberlain memory pending`).",
    )
    return EXIT_OK


def _anchors(store: Any, args: argparse.Namespace, settings: Any) -> int:
    action = args.anchor_cmd or "list"
    if action == "add":
        anchor = store.add_anchor(" ".join(args.text).strip())
        _emit(anchor.model_dump(mode="json"), args.json, f"pinned {anchor.id}: {anchor.text}")
        return EXIT_OK
    if action == "remove":
        store.remove_anchor(args.id)
        _emit({"removed": args.id}, args.json, f"Unpinned {args.id}.")
        return EXIT_OK
    if action == "move":
        store.move_anchor(args.id, args.position)
    anchors = store.anchors()
    prompt = store.anchors_prompt(settings.memory.anchor_budget_chars)
    lines = [f"{a.position:>3}. {a.id}  {a.text}" for a in anchors] or ["No anchors."]
    lines.append(
        f"(uses {prompt.used_chars} of {prompt.budget_chars} characters of every prompt"
        + (f"; {len(prompt.omitted)} left out for lack of room)" if prompt.omitted else ")")
    )
    data = {
        "anchors": [a.model_dump(mode="json") for a in anchors],
        "used_chars": prompt.used_chars,
        "budget_chars": prompt.budget_chars,
        "omitted": [a.id for a in prompt.omitted],
    }
    _emit(data, args.json, "\n".join(lines))
    return EXIT_OK


def _events(store: Any, args: argparse.Namespace, settings: Any) -> int:
    events = store.events(limit=args.n)
    lines = [f"{e.id:>6} {e.kind.value:<13} {e.fact_id or '-'}  {e.detail}" for e in events]
    _emit([e.model_dump(mode="json") for e in events], args.json, "\n".join(lines) or "No events.")
    return EXIT_OK


_HANDLERS: dict[str, Callable[[Any, argparse.Namespace, Any], int]] = {
    "list": _list,
    "search": _search,
    "add": _add,
    "edit": _edit,
    "forget": _forget,
    "pending": _pending,
    "approve": _approve,
    "reject": _reject,
    "history": _history,
    "export": _export,
    "import": _import,
    "anchors": _anchors,
    "events": _events,
}


def add_memory_parser(sub: Any, common: argparse.ArgumentParser, parser_class: type) -> Any:
    mem = sub.add_parser("memory", parents=[common], help="see and control what is remembered")
    msub = mem.add_subparsers(dest="memory_cmd", required=True, parser_class=parser_class)

    ls = msub.add_parser("list", parents=[common], help="facts, newest first")
    ls.add_argument("--status", choices=("pending", "active", "superseded"))
    ls.add_argument("--category")
    ls.add_argument("--sensitivity", choices=("low", "personal", "secret"))
    ls.add_argument("--all", action="store_true", help="include superseded versions")
    se = msub.add_parser("search", parents=[common])
    se.add_argument("text", nargs="+")
    add = msub.add_parser("add", parents=[common], help="remember something (you are the author)")
    add.add_argument("text", nargs="+")
    add.add_argument("--category")
    add.add_argument("--expires-days", type=float, metavar="N")
    ed = msub.add_parser("edit", parents=[common], help="replace a fact's text (keeps history)")
    ed.add_argument("id")
    ed.add_argument("text", nargs="+")
    fo = msub.add_parser("forget", parents=[common], help="delete for good")
    fo.add_argument("id", nargs="?")
    fo.add_argument("--category")
    fo.add_argument("--all", dest="everything", action="store_true")
    fo.add_argument("--yes", action="store_true")
    msub.add_parser("pending", parents=[common], help="facts waiting for your approval")
    ap = msub.add_parser("approve", parents=[common])
    ap.add_argument("id")
    rj = msub.add_parser("reject", parents=[common])
    rj.add_argument("id")
    hi = msub.add_parser("history", parents=[common], help="a fact's versions")
    hi.add_argument("id")
    ex = msub.add_parser("export", parents=[common])
    ex.add_argument("--format", choices=("json", "markdown"), default="json")
    ex.add_argument("-o", "--output")
    im = msub.add_parser("import", parents=[common], help="import a JSON export (as pending)")
    im.add_argument("file")
    an = msub.add_parser("anchors", parents=[common], help="pinned facts in every prompt")
    asub = an.add_subparsers(dest="anchor_cmd", parser_class=parser_class)
    asub.add_parser("list", parents=[common])
    aa = asub.add_parser("add", parents=[common])
    aa.add_argument("text", nargs="+")
    ar = asub.add_parser("remove", parents=[common])
    ar.add_argument("id")
    am = asub.add_parser("move", parents=[common])
    am.add_argument("id")
    am.add_argument("position", type=int)
    ev = msub.add_parser("events", parents=[common], help="what changed, without any text")
    ev.add_argument("-n", type=int, default=50)
    return mem
