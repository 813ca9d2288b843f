"""Chamberlain's one error root, the kinds of failure under it, and what a person can do about one.

Every failure Chamberlain expects derives from `ChamberlainError`; the classes below it say what
happened, not where. A front end (the CLI, the desktop app) turns one into a sentence at one
boundary (`app/errors.py`): the message says what happened, and `remedy` (with `subject`) says
what the person can do, as data that each front end words in its own terms. So no part below the
front ends ever names a command-line flag, a CLI command or a window.

An exception that is not a `ChamberlainError` reaching a front end is a bug: it shows as
"Something went wrong inside Chamberlain" with its traceback in the log.

    ChamberlainError
    ├── ConfigError          a setting, policy, profile, model choice or endpoint is not usable
    ├── StorageError         a file of ours could not be read or written (memory, audit, grants)
    ├── SecretUnavailable    a key, the keyring or a passphrase is not there or not answering
    ├── ModelError           the language model could not be reached or did not answer
    ├── ToolError            a tool call failed, was refused or ran out of time
    ├── InstallationError    Chamberlain's own code or data is damaged or does not match
    └── UsageError           what the person typed to a front end is not a command it knows

It must never import anything of Chamberlain's own (an import contract holds it to that).
"""

from __future__ import annotations

import enum


class Remedy(enum.Enum):
    """What a person can do about a failure; each front end words it (and `subject` fills it in)."""

    # No language model answers: start a local server or name one (the CLI's --llm, the app's
    # Settings → Model).
    START_MODEL = "start_model"
    # A reply that says what Chamberlain can do without a model: to chat, start a local server
    # (found on its usual port) or name one. Worded after the reply, as its last sentence.
    CHAT_NEEDS_MODEL = "chat_needs_model"
    # A research task answered without a capable model (none, or only the embedded one): start a
    # local server with a capable model, or name one. Worded after the reply.
    RESEARCH_NEEDS_MODEL = "research_needs_model"
    # The model server answers but lists no model: load one into it, or name the model to use
    # (the CLI's --model, the app's Settings → Model).
    NAME_MODEL = "name_model"
    # Settings changed outside Chamberlain wait for the person's confirmation.
    REVIEW_SETTINGS = "review_settings"
    # A settings file does not parse or holds a value out of range: fix or reset it.
    FIX_SETTINGS = "fix_settings"
    # Files in Chamberlain's home belong to another user (root's `sudo`, a copied home).
    CHECK_HOME_OWNER = "check_home_owner"
    # The disk holding Chamberlain's home is full.
    FREE_DISK_SPACE = "free_disk_space"
    # Memory is encrypted and no passphrase or keyring was there to open it: give a passphrase
    # (how depends on the front end) or start a system keyring.
    UNLOCK_MEMORY = "unlock_memory"
    # The passphrase typed did not open memory: start again and type the one it was created with.
    RETYPE_PASSPHRASE = "retype_passphrase"
    # Reinstall Chamberlain: its own files do not match.
    REINSTALL = "reinstall"
    # A model was asked for by a name that names none (or several): the front end says where the
    # names to choose from are listed.
    LIST_MODELS = "list_models"
    # No model answers because the person turned the model off (the setting `llm.url` is
    # "none"): the front end says where that was set, so it can be set back.
    MODEL_TURNED_OFF = "model_turned_off"


class ChamberlainError(Exception):
    """The root of every failure Chamberlain expects and can put in words.

    `str(error)` is the message (what happened); `remedy` and `subject` are the structured hint a
    front end turns into what to do. A subclass may set a class-wide `remedy`.
    """

    remedy: Remedy | None = None
    subject: str = ""

    def __init__(self, *args: object, remedy: Remedy | None = None, subject: str = "") -> None:
        super().__init__(*args)
        if remedy is not None:
            self.remedy = remedy
        if subject:
            self.subject = subject


class ConfigError(ChamberlainError):
    """A setting, the policy table, a profile, a model choice or an endpoint is not usable."""


class StorageError(ChamberlainError):
    """A file of Chamberlain's (memory, audit log, grants, keys) could not be read or written."""


class SecretUnavailable(ChamberlainError):
    """A key, the system keyring or a passphrase is not there or does not answer."""


class ModelError(ChamberlainError):
    """The language model could not be reached, or its answer could not be used."""


class ToolError(ChamberlainError):
    """A tool call failed, was refused, or ran out of time."""


class InstallationError(ChamberlainError):
    """Chamberlain's own code or data is damaged or does not match (a self test, a weight file)."""

    remedy: Remedy | None = Remedy.REINSTALL


class UsageError(ChamberlainError):
    """What the person typed to a front end is not a command or option it knows."""
