"""What a person reads when something fails: the one mapping from an exception to a sentence.

Below app/, a failure Chamberlain expects is a `core.errors.ChamberlainError`: its message says
what happened and its `remedy` (with `subject`) says what the person can do, as data. This module
words that remedy for each front end — the command line names flags and commands, the desktop
app names the place in its windows — so the same failure reads right in both. An `OSError`
(a file of ours that cannot be read or written) is worded from its errno and filename.

Anything else is a bug, never put in words here: `user_message` returns None and the front end
shows it as it always has (the CLI's traceback, the app's "Something went wrong inside
Chamberlain" with the details in the log).

It must never keep a list of "expected" exception classes: the class hierarchy says that, and a
new `ChamberlainError` is worded without an edit here. Every `Remedy` has a wording for each
front end (tests/app/test_errors.py walks the enum).
"""

from __future__ import annotations

import enum

from core.errors import ChamberlainError, Remedy


class FrontEnd(enum.Enum):
    """Who is showing the failure: each words a remedy in its own terms."""

    CLI = "cli"
    APP = "app"


# Each wording is a template: `{message}` is what happened (the exception's message, or a line a
# front end already has), `{subject}` what the remedy is about (a file, a name), when it names one.
# The CLI's are the sentences the broker used to write itself (tests/app/test_cli.py pins some).
_CLI: dict[Remedy, str] = {
    Remedy.START_MODEL: "{message} Start a local server (Ollama, LM Studio, llama.cpp) or pass "
    "--llm URL.",
    Remedy.CHAT_NEEDS_MODEL: "{message} To chat, start a local OpenAI-compatible server (Ollama, "
    "LM Studio, llama.cpp server or vLLM) — Chamberlain finds it on its usual port — or pass "
    "--llm URL.",
    Remedy.RESEARCH_NEEDS_MODEL: "{message} For research, start a local OpenAI-compatible server "
    "with a capable model (Ollama, LM Studio, llama.cpp server or vLLM) — Chamberlain finds it on "
    "its usual port — or pass --llm URL.",
    Remedy.NAME_MODEL: "{message} or name one with --model",
    Remedy.REVIEW_SETTINGS: "{message}; see `chamberlain settings pending`",
    Remedy.FIX_SETTINGS: "{message}; fix it or move it aside (Chamberlain then starts from its "
    "defaults)",
    Remedy.CHECK_HOME_OWNER: "{message} — check the home directory's owner",
    Remedy.FREE_DISK_SPACE: "{message}; free some space and try again",
    Remedy.UNLOCK_MEMORY: "{message}: give a passphrase in CHAMBERLAIN_MEMORY_PASSPHRASE, or run "
    "in a terminal to type one, or start a system keyring (GNOME Keyring, KWallet or KeePassXC's "
    "Secret Service)",
    Remedy.RETYPE_PASSPHRASE: "{message} Run again and type the passphrase chosen when this "
    "memory was created.",
    Remedy.REINSTALL: "{message}. Reinstall Chamberlain",
    Remedy.LIST_MODELS: "{message} (see `chamberlain models list`)",
    Remedy.MODEL_TURNED_OFF: "{message} (--llm none)",
}

_APP: dict[Remedy, str] = {
    Remedy.START_MODEL: "{message} Start a local server (Ollama, LM Studio, llama.cpp) or "
    "choose one in Settings → Model.",
    Remedy.CHAT_NEEDS_MODEL: "{message} To chat, start a local OpenAI-compatible server (Ollama, "
    "LM Studio, llama.cpp server or vLLM) — Chamberlain finds it on its usual port — or set its "
    "address in Settings → Model.",
    Remedy.RESEARCH_NEEDS_MODEL: "{message} For research, start a local OpenAI-compatible server "
    "with a capable model (Ollama, LM Studio, llama.cpp server or vLLM) — Chamberlain finds it on "
    "its usual port — or set its address in Settings → Model.",
    Remedy.NAME_MODEL: "{message} or name one in Settings → Model",
    Remedy.REVIEW_SETTINGS: "{message}; review the changes in Settings",
    Remedy.FIX_SETTINGS: "{message}; fix it in a text editor or move it aside (Chamberlain then "
    "starts from its defaults)",
    Remedy.CHECK_HOME_OWNER: "{message} — check the home directory's owner",
    Remedy.FREE_DISK_SPACE: "{message}; free some space and try again",
    Remedy.UNLOCK_MEMORY: "{message}: quit Chamberlain and start it again to type the memory "
    "passphrase when it asks, or start a system keyring (GNOME Keyring, KWallet or KeePassXC's "
    "Secret Service)",
    Remedy.RETYPE_PASSPHRASE: "{message} Quit Chamberlain and start it again, then type the "
    "passphrase chosen when this memory was created.",
    Remedy.REINSTALL: "{message}. Reinstall Chamberlain",
    Remedy.LIST_MODELS: "{message} (Settings → Model lists them)",
    Remedy.MODEL_TURNED_OFF: "{message} (Settings → Model is set to none)",
}

_WORDINGS = {FrontEnd.CLI: _CLI, FrontEnd.APP: _APP}


def worded(message: str, remedy: Remedy | None, front: FrontEnd, subject: str = "") -> str:
    """`message` with what the person can do about it, in `front`'s terms (unchanged without a
    remedy). A subject-less remedy that names `{subject}` reads "the file" instead."""
    if remedy is None:
        return message
    return _WORDINGS[front][remedy].format(message=message, subject=subject or "the file")


def user_message(exc: BaseException, front: FrontEnd = FrontEnd.CLI) -> str | None:
    """What a person reads for `exc`: what happened and what to do, in one sentence. None for a
    bug (anything that is neither a ChamberlainError nor an OSError): the caller shows it as a
    bug, as it always has."""
    if isinstance(exc, ChamberlainError):
        return worded(str(exc), exc.remedy, front, exc.subject)
    if isinstance(exc, PermissionError):
        return worded(f"permission denied: {exc.filename or exc}", Remedy.CHECK_HOME_OWNER, front)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    return None
