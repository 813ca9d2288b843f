"""Grants, permission prompts and signed permission tokens.

A grant is a lease: one capability, one scope, one end (or "until revoked"). A token is what the
runner checks before a tool runs: an HMAC over (capability, scope, tool call id, argument digest,
expiry) with the per-install secret, bound to the grant it came from. Tokens never enter the
model's context. Default deny: no grant and no "yes" from the user means no token.

A question to the person is one `PermissionQuestion` (its request, its deadline on the broker's
clock, one future): a front end's `Prompter.present` is handed it and answers it; the broker
waits on it (`pose`). Following a click to the runner: the dialog (app/permission_dialog.py),
its view of the question (app/permission_prompt.py), and the question and the wait here.

This module never executes a tool. It never asks the model anything. It never starts a thread
to ask a question, and an answer that comes after a question ended never grants anything.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import logging
import os
import secrets
import sys
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ValidationError

from broker.audit.events import AuditEvent
from broker.audit.redaction import redact
from broker.audit.writer import AuditLog
from broker.events import PermissionAnswered, PermissionAsked, PermissionOutcome, TurnObserver, emit
from broker.filelock import held, keep_folder_owner
from broker.types import Grant, GrantMode
from core.clock import Clock
from core.errors import StorageError
from core.words import counted
from tools.escapes import visible_path
from tools.manual import PATH_SCOPED, CallPlan, Capability, Reversibility, Risk
from tools.paths import resolve_path
from tools.scopes import (
    ANY,
    READONLY,
    READONLY_IN,
    UNSCOPED_CAPS,
    describe_scope,
    natural_command_scope,
    natural_scope,
    scope_covers,
)
from tools.stop import Stopped, current_stop, stop_hook
from tools.words import capability_action

if TYPE_CHECKING:
    from broker.taint import OutboundAfterPrivate

log = logging.getLogger("chamberlain.broker.permissions")

ANY_SCOPE = ANY
# A command target of this class runs code the line does not show (tools.commands.kinds).
CODE_TARGET = "code:"
ONCE_LIFETIME_S = 300.0
TOKEN_LIFETIME_S = 120.0
# How long an expired token is still recognised (and refused as "expired", not "unknown").
TOKEN_MEMORY_S = 600.0


def args_digest(arguments: dict[str, Any]) -> str:
    """A stable digest of a tool call's arguments (sorted keys, compact JSON)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --- prompts ---------------------------------------------------------------------------------


class PermissionRequest(BaseModel):
    """What the person is asked, as structure: every front end (the dialog, the terminal, the
    tests' recorders) renders these fields and parses nothing back out of prose.

    `plan` is what the call will do (the tool's `Prepared.call_plan`); without one a front end
    shows the tool and every argument. `deadline` is when the question ends unanswered, on the
    broker's clock: the dialog's countdown, the terminal's and the broker's denial all come
    from it, and `timeout_s` is the figure that applied (Settings changes the next question).
    """

    capability: Capability
    scope: str
    tool: str
    arguments: dict[str, Any]
    call_id: str
    # True when the scope is what the user's own message named (or needs no scope at all);
    # False when the model asked mid-turn for something the user did not name.
    user_scope: bool
    asked_at: float
    deadline: float
    timeout_s: float
    plan: CallPlan | None = None
    risk: Risk = "safe"
    reversibility: Reversibility = "easy"
    # A sentence the person must read as it is (why only "once" may be answered this time); a
    # front end shows it whole and never splits it.
    reason: str = ""
    # Only "once" may be offered: the call runs code that cannot be shown (a sed script, a
    # build file, a program's install scripts), so no grant may outlive this one call.
    once_only: bool = False
    # Why "Always" is not offered for this request ("" when it is): a rule is offered only
    # where it will be saved as shown.
    always_unavailable: str = ""
    # How long an "Allow for" answer lasts unless the person picks another duration.
    timed_s: float = 300.0
    # No rule set before this question existed may allow it (private data came in this turn):
    # only a person who sees it can, so a front end with standing rules asks or denies.
    asked_anew: bool = False


# "cancelled": the person stopped the turn while the prompt was open (not a denial).
DecisionReason = Literal["user", "rule", "timeout", "headless", "error", "cancelled"]


class PromptDecision(BaseModel):
    allow: bool
    mode: GrantMode | None = None
    # A scope the user chose instead of the request's (must still cover the call's targets).
    scope: str | None = None
    duration_s: float | None = None
    reason: DecisionReason = "user"


class PermissionQuestion:
    """One permission question in flight: the one state machine every front end shares.

    It holds the request (with its `CallPlan`), the broker's clock and one future. The first of
    an answer (`answer`), the deadline passing, Stop or a front end giving up (`cancel`)
    completes the future; whatever comes after changes nothing. The dialog's countdown and the
    terminal's read `remaining_s()`, and the broker waits on `wait()`, so all of them end at
    `request.deadline` on the same clock. An answer that arrives after the end is kept as `late`
    (and handed to `on_late`), never used: a person who clicks "allow" a second after the
    countdown ended has not granted anything. A front end learns of the end through
    `add_done_callback` (called once, on the thread that ended it). Any thread may answer.
    """

    # How often a wait looks at the clock again: an injected clock moves without waking it.
    POLL_S = 0.1

    def __init__(
        self,
        request: PermissionRequest,
        clock: Clock,
        on_late: Callable[[PromptDecision], None] | None = None,
    ) -> None:
        self.request = request
        self.clock = clock
        self.on_late = on_late
        self._future: Future[PromptDecision] = Future()
        self._lock = threading.Lock()
        # Claimed (under the lock) by the first answer, deadline, Stop or cancel: that one wins.
        self._ended = False
        # True when it ended unanswered (the deadline, Stop, a front end giving up).
        self.cancelled = False
        self.late: PromptDecision | None = None

    @property
    def deadline(self) -> float:
        return self.request.deadline

    def remaining_s(self) -> float:
        """Seconds left before the question ends as a denial (never below 0)."""
        return max(0.0, self.request.deadline - self.clock.now())

    @property
    def done(self) -> bool:
        return self._future.done()

    @property
    def decision(self) -> PromptDecision | None:
        """How it ended; None while it is open."""
        return self._future.result() if self._future.done() else None

    def add_done_callback(self, callback: Callable[[PermissionQuestion], None]) -> None:
        """Call `callback(self)` once the question has ended (at once if it has). A callback
        that raises is logged and changes nothing: the question has ended all the same."""

        def call(_future: Future[PromptDecision]) -> None:
            try:
                callback(self)
            except Exception as exc:  # noqa: BLE001 - a front end's failure must not undo it
                log.error("a permission question's front end failed when it ended: %s", exc)

        self._future.add_done_callback(call)

    def _end(self, decision: PromptDecision, *, cancelled: bool) -> bool:
        with self._lock:
            if self._ended:
                return False
            self._ended = True
            self.cancelled = cancelled
        # Outside the lock: the done callbacks run here, on this thread, and may look back.
        self._future.set_result(decision)
        return True

    def answer(self, decision: PromptDecision) -> bool:
        """Answer the question; False (and kept as `late`) when it had already ended.

        The deadline is checked here, on the question's clock, not only by whoever waits: an
        answer given after it (a click in the moment before the dialog's next tick, a terminal
        read that returned late) finds the question ended as a timeout and grants nothing."""
        if self.remaining_s() <= 0:
            self.cancel("timeout")
        if self._end(decision, cancelled=False):
            return True
        with self._lock:
            # The first late "allow" is what the audit must show (a late deny grants nothing
            # either way, and must not hide an allow that follows it).
            first_late_allow = decision.allow and (self.late is None or not self.late.allow)
            if self.late is None or first_late_allow:
                self.late = decision
        if first_late_allow:
            log.warning("an answer came after the permission prompt had ended; not used")
            if self.on_late is not None:
                try:
                    self.on_late(decision)
                except Exception as exc:  # noqa: BLE001 - a click handler must not see it
                    log.error("a late answer could not be recorded: %s", exc)
        return False

    def cancel(self, reason: DecisionReason = "timeout") -> bool:
        """End the question unanswered (a denial with `reason`); False if it had ended."""
        return self._end(PromptDecision(allow=False, reason=reason), cancelled=True)

    def wait(self) -> PromptDecision:
        """Block until the question ends; at its deadline (on the clock) it ends as a timeout."""
        while True:
            try:
                return self._future.result(timeout=min(self.remaining_s(), self.POLL_S))
            except FutureTimeout:
                if self.remaining_s() <= 0:
                    self.cancel("timeout")


class Prompter(Protocol):
    """A front end that puts permission questions to someone (or answers them from rules).

    `present` is handed each question as the broker asks it and returns at once; the front end
    answers it later with `question.answer(decision)`, or `question.cancel(reason)` when its
    own way of asking goes away, from any thread. The broker waits on the question itself, and
    an answer after the deadline is refused by the question, so no front end can grant late. A
    prompter that decides from rules answers inside `present`; one whose nature is to block (a
    terminal reading a line on the thread that asked, with nothing else to do meanwhile) may
    block in `present` until it has answered, but then Stop and the deadline only end the wait
    once `present` returns: such a prompter must give up by the deadline itself (the terminal's
    does). `present` must never raise for a "no"; if it raises, the question is denied.
    """

    def present(self, question: PermissionQuestion) -> None: ...


class RulePrompter(ABC):
    """A prompter that decides from rules alone: it answers at once, inside `present`."""

    def present(self, question: PermissionQuestion) -> None:
        question.answer(self.decide(question.request))

    @abstractmethod
    def decide(self, request: PermissionRequest) -> PromptDecision:
        """The answer to `request`, now."""


class DenyPrompter(RulePrompter):
    """Headless with nobody to ask: every request is denied."""

    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=False, reason="headless")


def pose(prompter: Prompter, question: PermissionQuestion) -> PromptDecision:
    """Put `question` to `prompter` and wait for its end: the broker's one wait.

    No thread is started: `present` hands the question over (or answers it) and this thread
    waits on the question's future until the answer, its deadline or Stop. A prompter that
    fails denies with reason `error`; Stop (before or while it is open) ends it "cancelled".
    """
    stop = current_stop()
    if stop is not None and stop.stopped:
        question.cancel("cancelled")
        return question.wait()
    with stop_hook(lambda: question.cancel("cancelled")):
        try:
            prompter.present(question)
        except Exception as exc:  # noqa: BLE001 - a broken prompter must deny, not crash
            log.error("permission prompt failed: %s", exc)
            question.cancel("error")
        return question.wait()


# --- grants ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class UntrustedGrant:
    """An entry of `grants.json` that was not honoured: its id (as the file says) and why."""

    id: str
    why: str


class GrantStore:
    """Live grants, shared by every Chamberlain process on one home.

    Two kinds. Saved grants — `always` and `timed`, whose scope holds no password — live in
    `grants.json`, so they last across commands (each `chamberlain ask` is a new process) and
    across the app's restarts; a timed one is kept with its expiry and dropped from the file by
    the first `pop_expired` after it ends, which the broker audits. This process's own grants —
    `once`, `session`, a grant whose scope holds a password, and one that could not be saved (a
    full disk: it lasts the process, and a warning says so) — are never written anywhere.

    Every process on a home (the app, `chamberlain ask`, `chamberlain grants`) sees the same
    saved grants, so a revoke anywhere holds everywhere before the next tool call:
    - Every read (each authorisation, each token check, each listing) first stats
      `grants.json`; when it is another file or has changed, it is read again. A grant revoked
      by another process is gone here, and one saved there is found here. The version read last
      is kept open (POSIX), so its inode number cannot be reused: a new number is a new version.
    - Every change is a read-modify-write under an exclusive flock on `grants.json.lock`: the
      file as it is now is read, the one change applied, and the result written to a temporary
      file, fsynced and renamed over it. A grant another process saved is never written away.
    - `revoke_all` must also end the once and session grants of other processes, which no file
      lists. The lock file holds a revoke-all generation that every revoke-all raises (and
      grants.json is rewritten, so the others notice); a process that reads a higher generation
      drops all its own grants, and `pop_revoked_elsewhere` hands them to the broker to audit.
      The generation carries no MAC: raising it can only revoke, and a process never goes back
      to a lower one than it saw.

    Every saved grant carries a MAC: HMAC-SHA256, under the install secret's grants key
    (`InstallSecret.grants_key`, derived from the secret, never the raw secret), over the grant's
    canonical JSON. An entry whose MAC is missing or wrong is not honoured: it stays out of the
    live grants, is logged, and is listed in `untrusted` (`problems` words it for the front
    ends). The file keeps it: every change writes it back verbatim, so the evidence stays until
    the user removes it (`discard_untrusted`). Files from before grants carried MACs hold only
    unsigned entries, which cannot be told from planted ones: they are ignored and reported the
    same way, and the user grants again. A damaged file grants nothing and is never overwritten:
    found at start it raises PermissionStoreError; found later, its grants stop counting, every
    change raises, and `problems` says so.

    Without a key (`key=None`: tests and tools that have no install secret) nothing in the file
    is honoured, so nothing is saved: every grant lasts the process.

    Limits: the MAC proves an entry was written with this home's secret, so whoever can read the
    secret (the system keyring, or `token.key` when there is none) can forge one. It does not
    stop a rollback: an older copy of `grants.json` brings back grants revoked since. The
    locks are advisory: a Chamberlain from before them can still write the file over.
    """

    # The modes kept in grants.json: the ones that outlive the process that granted them.
    PERSISTED_MODES = frozenset({GrantMode.ALWAYS, GrantMode.TIMED})

    def __init__(self, path: Path | None, clock: Clock, key: bytes | None = None) -> None:
        self._path = path
        self._clock = clock
        self._key = key
        self._lock = threading.Lock()
        # This process's own grants, and the file's honoured ones as read last.
        self._local: dict[str, Grant] = {}
        self._saved: dict[str, Grant] = {}
        # The file's entries as read last, verbatim (None while it is damaged).
        self._entries: list[object] | None = []
        self._untrusted: list[UntrustedGrant] = []
        self._damaged: str | None = None
        # What grants.json was when last read: its identity, or None (no file); _UNREAD before.
        self._seen: tuple[int, ...] | None = _UNREAD
        self._generation = 0
        self._revoked_elsewhere: list[Grant] = []
        self._files = _HeldFile()
        weakref.finalize(self, self._files.close)
        if path is not None:
            with self._lock:
                self._refresh(strict=True)

    # --- reading ---------------------------------------------------------------------------

    @property
    def _lock_path(self) -> Path:
        assert self._path is not None
        return self._path.with_name(self._path.name + ".lock")

    def _identity(self) -> tuple[int, ...] | None:
        assert self._path is not None
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            return None
        except OSError:
            return _UNREAD  # never equal to what was seen: read it, and say why it failed
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    @contextlib.contextmanager
    def _file_lock(self, *, shared: bool) -> Iterator[int | None]:
        """The lock on `grants.json.lock`; its descriptor, or None when a reader cannot open
        it (a read-only home that has none): the file is only ever replaced whole, so reading
        it unlocked is still never torn."""
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            if not shared:
                raise
            try:
                fd = os.open(self._lock_path, os.O_RDONLY)
            except OSError:
                yield None
                return
        try:
            if not shared:
                keep_folder_owner(fd, self._lock_path.parent)
            with held(fd, shared=shared):
                yield fd
        finally:
            os.close(fd)

    def _refresh(self, *, strict: bool = False) -> None:
        """Read grants.json again if it changed since it was read last. Lock held."""
        if self._path is None or (not strict and self._identity() == self._seen):
            return
        with self._file_lock(shared=True) as fd:
            self._read(strict=strict)
            generation = _read_generation(fd)
        self._adopt(generation)

    def _adopt(self, generation: int) -> None:
        """A revoke-all elsewhere (a higher generation) ends this process's own grants."""
        if generation <= self._generation:
            return
        ended = [g for g in self._local.values() if self.is_live(g)]
        if ended:
            log.info("a revoke-all in another Chamberlain process ended %d grant(s)", len(ended))
        self._revoked_elsewhere.extend(ended)
        self._local.clear()
        self._generation = generation

    def _read(self, *, strict: bool) -> None:
        """Read grants.json into the saved grants. A damaged file raises when `strict` (at
        start); later it only stops counting (fail closed) and is reported."""
        assert self._path is not None
        path = self._path
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            self._take([], [], {}, None, None)
            return
        except PermissionError:
            self._broken(
                f"cannot read the saved permissions in {path}: the file belongs to another "
                "user (was Chamberlain run with sudo?); give it back to this user",
                strict,
            )
            self._seen = _UNREAD
            return
        except OSError as exc:
            self._broken(f"cannot read the saved permissions in {path}: {exc.strerror}", strict)
            self._seen = _UNREAD
            return
        try:
            st = os.fstat(fd)
            with os.fdopen(os.dup(fd), "rb") as handle:
                raw = handle.read()
        except OSError as exc:
            os.close(fd)
            self._broken(f"cannot read the saved permissions in {path}: {exc.strerror}", strict)
            self._seen = _UNREAD
            return
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        try:
            entries, untrusted, saved = self._parse(raw)
        except PermissionStoreError as exc:
            self._files.hold(fd)
            self._seen = identity
            self._broken(str(exc), strict)
            return
        self._take(entries, untrusted, saved, identity, fd)

    def _take(
        self,
        entries: list[object],
        untrusted: list[UntrustedGrant],
        saved: dict[str, Grant],
        identity: tuple[int, ...] | None,
        fd: int | None,
    ) -> None:
        for found in untrusted:
            if found not in self._untrusted:
                log.error(
                    "ignored an entry of %s that Chamberlain did not write (%s: %s)",
                    self._path,
                    found.id,
                    found.why,
                )
        self._entries, self._untrusted, self._saved = entries, untrusted, saved
        self._damaged = None
        self._seen = identity
        self._files.hold(fd)

    def _broken(self, why: str, strict: bool) -> None:
        message = f"{why}. Nothing was granted; fix or remove the file to continue"
        if strict:
            raise PermissionStoreError(message)
        if message != self._damaged:
            log.error("%s", message)
        self._entries, self._saved, self._damaged = None, {}, message

    def _parse(self, raw: bytes) -> tuple[list[object], list[UntrustedGrant], dict[str, Grant]]:
        where = f"cannot read the saved permissions in {self._path}"
        try:
            entries = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise PermissionStoreError(f"{where}: {exc}") from exc
        if not isinstance(entries, list):
            raise PermissionStoreError(f"{where}: it should hold a list of grants")
        untrusted: list[UntrustedGrant] = []
        saved: dict[str, Grant] = {}
        for entry in entries:
            why = self._why_untrusted(entry)
            if why is not None:
                untrusted.append(UntrustedGrant(_entry_id(entry), why))
                continue
            assert isinstance(entry, dict)
            try:
                grant = Grant.model_validate({k: v for k, v in entry.items() if k != "mac"})
            except ValidationError as exc:
                raise PermissionStoreError(f"{where}: {exc}") from exc
            if grant.mode in self.PERSISTED_MODES and not grant.revoked:
                saved[grant.id] = grant
        return entries, untrusted, saved

    def _mac(self, entry: dict[str, Any]) -> str:
        assert self._key is not None
        body = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hmac.new(self._key, body.encode("ascii"), hashlib.sha256).hexdigest()

    def _why_untrusted(self, entry: object) -> str | None:
        """None when the entry carries this store's MAC; else why it is not honoured."""
        if not isinstance(entry, dict):
            return "not a grant"
        mac = entry.get("mac")
        if mac is None:
            return "it carries no MAC"
        if self._key is None:
            return "there is no key to check its MAC with"
        unsigned = {k: v for k, v in entry.items() if k != "mac"}
        if not isinstance(mac, str) or not hmac.compare_digest(
            self._mac(unsigned).encode(), mac.encode("utf-8", "surrogatepass")
        ):
            return "its MAC does not match"
        return None

    # --- writing ---------------------------------------------------------------------------

    def _rewrite(
        self, change: Callable[[list[object]], list[object]], *, bump: bool = False
    ) -> None:
        """Apply `change` to the file's entries as they are now, under the exclusive lock, and
        replace the file with the result. `bump` raises the revoke-all generation first. Lock
        held. Raises PermissionStoreError (damaged file) or OSError (cannot write)."""
        assert self._path is not None
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._file_lock(shared=False) as fd:
            assert fd is not None
            self._read(strict=False)  # whatever another process wrote since our last look
            self._adopt(_read_generation(fd))
            if self._damaged is not None or self._entries is None:
                raise PermissionStoreError(self._damaged or "the saved permissions are damaged")
            entries = change(list(self._entries))
            if bump:
                self._generation += 1
                _write_generation(fd, self._generation)
            self._write(entries)
            self._read(strict=False)  # and take the new version as the one seen

    def _write(self, entries: list[object]) -> None:
        assert self._path is not None
        tmp = self._path.with_name(f".{self._path.name}.{secrets.token_hex(6)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            keep_folder_owner(fd, self._path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entries, handle, indent=2)
                handle.flush()
                # A saved grant or a revoke is a decision the person made: it must survive a
                # crash. Changes are rare (a grant, a revoke), so the fsync costs nothing felt.
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _signed(self, grant: Grant) -> dict[str, Any]:
        entry: dict[str, Any] = grant.model_dump(mode="json")
        entry["mac"] = self._mac(entry)
        return entry

    def why_not_saved(self, scope: str) -> str:
        """Why an "always" rule for `scope` would not be saved ("" when it would be): the
        prompt then does not offer one, and says this instead."""
        if self._path is None or self._key is None:
            return "this Chamberlain has nowhere to save permissions, so none can outlast it"
        if redact(scope) != scope:
            return (
                "its name looks like it holds a password, and saved permissions never hold "
                "one; allow it for this session instead"
            )
        return ""

    def _persists(self, grant: Grant) -> bool:
        # A saved grant never holds a password (redact would change its scope); without a key
        # nothing saved would be honoured, so nothing is saved.
        return (
            self._path is not None
            and self._key is not None
            and grant.mode in self.PERSISTED_MODES
            and redact(grant.scope) == grant.scope
        )

    def _trusted_ids(self, entry: object, ids: set[str]) -> bool:
        """Whether `entry` is an honoured grant whose id is in `ids`."""
        return _entry_id(entry) in ids and self._why_untrusted(entry) is None

    def _cannot_change(self, what: str, exc: BaseException) -> PermissionStoreError:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return PermissionStoreError(f"{what}: {self._path} could not be rewritten ({why})")

    # --- the grants ------------------------------------------------------------------------

    @property
    def untrusted(self) -> list[UntrustedGrant]:
        """The entries of grants.json that are not honoured, as the file holds them now."""
        with self._lock:
            self._refresh()
            return list(self._untrusted)

    @property
    def problems(self) -> list[str]:
        """What the front ends tell the user about entries that were not honoured."""
        with self._lock:
            self._refresh()
            name = self._path.name if self._path is not None else "grants.json"
            found = [
                f"{name} holds a grant Chamberlain did not write ({u.id}): it was ignored ({u.why})"
                for u in self._untrusted
            ]
            return [self._damaged, *found] if self._damaged is not None else found

    def discard_untrusted(self, grant_id: str) -> bool:
        """Remove the unhonoured entries with this id from the file (the user looked at them)."""
        with self._lock:
            self._refresh()
            if self._path is None or not any(u.id == grant_id for u in self._untrusted):
                return False
            found: list[object] = []

            def change(entries: list[object]) -> list[object]:
                for entry in entries:
                    if _entry_id(entry) == grant_id and self._why_untrusted(entry) is not None:
                        found.append(entry)
                return [e for e in entries if not any(e is f for f in found)]

            try:
                self._rewrite(change)
            except OSError as exc:
                raise self._cannot_change(f"{grant_id} was not removed", exc) from exc
            return bool(found)

    def add(self, grant: Grant) -> None:
        with self._lock:
            if not self._persists(grant):
                self._local[grant.id] = grant
                return
            entry = self._signed(grant)
            try:
                self._rewrite(lambda entries: [*entries, entry])
            except (OSError, PermissionStoreError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                log.warning(
                    "the %s grant %s lasts only while this Chamberlain runs: it could not be "
                    "saved in %s (%s)",
                    grant.mode.value,
                    grant.id,
                    self._path,
                    why,
                )
                self._local[grant.id] = grant

    def get(self, grant_id: str) -> Grant | None:
        with self._lock:
            self._refresh()
            return self._local.get(grant_id) or self._saved.get(grant_id)

    def is_live(self, grant: Grant) -> bool:
        if grant.revoked:
            return False
        return grant.expires_at is None or self._clock.now() < grant.expires_at

    def live(self) -> list[Grant]:
        # Under the lock: a revoke-all from another thread (the tray) must not change the
        # table while a turn reads it ("dictionary changed size during iteration").
        return [g for g in self.all() if self.is_live(g)]

    def all(self) -> list[Grant]:
        with self._lock:
            self._refresh()
            return [*self._local.values(), *self._saved.values()]

    def find(self, capability: Capability, targets: list[str]) -> Grant | None:
        """A live, reusable (not once) grant whose scope covers every target."""
        for grant in self.live():
            if grant.mode is GrantMode.ONCE or grant.capability is not capability:
                continue
            if scope_covers(capability, grant.scope, targets, resolve_scope=False):
                return grant
        return None

    def revoke(self, grant_id: str) -> Grant | None:
        """End one grant; the grant as it was (marked revoked), or None if there was none (or
        another process revoked it first, and audited it). PermissionStoreError when a saved
        grant could not be removed from the file: it is then still in force."""
        with self._lock:
            self._refresh()
            # Gone, not kept as a tombstone: a long session would otherwise scan every grant it
            # ever issued. A token of a grant that is gone is refused as revoked.
            grant = self._local.pop(grant_id, None)
            if grant is None:
                grant = self._saved.get(grant_id)
                if grant is None:
                    return None
                removed: list[object] = []

                def change(entries: list[object]) -> list[object]:
                    removed.extend(e for e in entries if self._trusted_ids(e, {grant_id}))
                    return [e for e in entries if not self._trusted_ids(e, {grant_id})]

                try:
                    self._rewrite(change)
                except OSError as exc:
                    raise self._cannot_change(
                        f"{grant_id} is still saved and in force; free some space or make the "
                        "folder writable, then revoke it again",
                        exc,
                    ) from exc
                if not removed:
                    return None
            return grant.model_copy(update={"revoked": True})

    def revoke_all(self) -> list[Grant]:
        """End every grant: this process's, the saved ones, and (through the generation) those
        of every other Chamberlain process on this home before its next tool call. Returns the
        live grants this call ended, for the audit."""
        with self._lock:
            self._refresh()
            ended = [g for g in self._local.values() if self.is_live(g)]
            self._local.clear()
            if self._path is not None:
                removed: list[Grant] = []

                def change(entries: list[object]) -> list[object]:
                    kept: list[object] = []
                    for entry in entries:
                        if self._why_untrusted(entry) is not None:
                            kept.append(entry)  # the evidence stays until the user removes it
                            continue
                        assert isinstance(entry, dict)
                        grant = self._saved.get(str(entry.get("id")))
                        if grant is not None and self.is_live(grant):
                            removed.append(grant)
                    return kept

                try:
                    self._rewrite(change, bump=True)
                except OSError as exc:
                    raise self._cannot_change(
                        "revoke-all could not finish, so saved grants and those of other "
                        "running Chamberlain windows may still be in force; free some space or "
                        "make the folder writable, then revoke all again",
                        exc,
                    ) from exc
                ended.extend(removed)
            return [g.model_copy(update={"revoked": True}) for g in ended]

    def pop_revoked_elsewhere(self) -> list[Grant]:
        """This process's grants that a revoke-all in another process ended; the caller audits
        them (the other process could not: it never knew them)."""
        with self._lock:
            self._refresh()
            ended, self._revoked_elsewhere = self._revoked_elsewhere, []
            return [g.model_copy(update={"revoked": True}) for g in ended]

    def __len__(self) -> int:
        return len(self.all())

    def pop_expired(self) -> list[Grant]:
        """Drop grants whose lease ended; the caller audits them. A saved one is reported by
        the process that removes it from the file, so its end is audited once."""
        now = self._clock.now()

        def ended(grant: Grant) -> bool:
            return not grant.revoked and grant.expires_at is not None and now >= grant.expires_at

        with self._lock:
            self._refresh()
            gone = [g for g in self._local.values() if ended(g)]
            for grant in gone:
                del self._local[grant.id]
            saved_ended = {g.id: g for g in self._saved.values() if ended(g)}
            if saved_ended:
                removed: list[Grant] = []

                def change(entries: list[object]) -> list[object]:
                    kept: list[object] = []
                    for entry in entries:
                        grant = saved_ended.get(_entry_id(entry))
                        if grant is not None and self._why_untrusted(entry) is None:
                            removed.append(grant)
                        else:
                            kept.append(entry)
                    return kept

                try:
                    self._rewrite(change)
                except (OSError, PermissionStoreError) as exc:
                    # Ended is ended (is_live says so); the file is tidied on a later try.
                    log.warning(
                        "grants that ended could not be removed from %s: %s", self._path, exc
                    )
                gone.extend(removed)
        return gone


# A value `_seen` never takes from a file: the store has not read grants.json yet.
_UNREAD: tuple[int, ...] = (-1,)


def _entry_id(entry: object) -> str:
    raw = entry.get("id") if isinstance(entry, dict) else None
    return raw if isinstance(raw, str) else "no id"


def _read_generation(fd: int | None) -> int:
    """The revoke-all generation the lock file holds (0 when it holds none)."""
    if fd is None:
        return 0
    try:
        return int(os.pread(fd, 32, 0).strip() or b"0")
    except (OSError, ValueError):
        return 0


def _write_generation(fd: int, generation: int) -> None:
    # Fixed width, written in place under the exclusive lock: a reader under the shared lock
    # never sees it half written.
    data = f"{generation:020d}\n".encode("ascii")
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))


class _HeldFile:
    """The descriptor of the grants.json version read last, kept open so that no later
    version can be given its inode number (POSIX; Windows could not replace an open file)."""

    def __init__(self) -> None:
        self._fd: int | None = None

    def hold(self, fd: int | None) -> None:
        old, self._fd = self._fd, fd
        if fd is not None and sys.platform == "win32":
            os.close(fd)
            self._fd = None
        if old is not None and old != fd:
            with contextlib.suppress(OSError):
                os.close(old)

    def close(self) -> None:
        self.hold(None)


class PermissionStoreError(StorageError):
    pass


# --- tokens ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PermissionToken:
    id: str
    grant_id: str
    capability: Capability
    scope: str
    tool_call_id: str
    args_digest: str
    expires_at: float
    mac: str

    def signed_fields(self) -> bytes:
        payload = [
            self.id,
            self.grant_id,
            self.capability.value,
            self.scope,
            self.tool_call_id,
            self.args_digest,
            repr(self.expires_at),
        ]
        return json.dumps(payload, separators=(",", ":")).encode("utf-8")


TokenProblem = Literal[
    "missing",
    "unknown",
    "forged",
    "revoked",
    "expired",
    "replayed",
    "wrong_capability",
    "wrong_call",
    "out_of_scope",
    "arguments_changed",
]

TOKEN_PROBLEM_TEXT: dict[str, str] = {
    "missing": "no permission token came with the call",
    "unknown": "the permission token was not issued by this session",
    "forged": "the permission token's signature does not match",
    "revoked": "the grant behind the token was revoked",
    "expired": "the permission token has expired",
    "replayed": "the permission token was already used",
    "wrong_capability": "the token grants a different capability",
    "wrong_call": "the token was issued for a different tool call",
    "out_of_scope": "the call reaches outside the granted scope",
    "arguments_changed": "the arguments changed after permission was given",
}


class TokenAuthority:
    """Issues and validates tokens. Single use: a token is spent by the call it was made for."""

    def __init__(self, secret: bytes, clock: Clock) -> None:
        if len(secret) < 16:
            raise ValueError("the token secret is too short")
        self._secret = secret
        self._clock = clock
        # Token id -> its expiry: enough to know a token was issued here and when to forget it.
        # What it grants (capability, scope, call, arguments, expiry) is vouched for by its MAC
        # alone, so a token whose fields were edited is "forged", not matched field by field.
        self._issued: dict[str, float] = {}
        self._spent: set[str] = set()
        self._lock = threading.Lock()
        self._prune_at = 256

    def _sign(self, token: PermissionToken) -> str:
        return hmac.new(self._secret, token.signed_fields(), hashlib.sha256).hexdigest()

    def issue(self, grant: Grant, tool_call_id: str, digest: str) -> PermissionToken:
        now = self._clock.now()
        expires = now + TOKEN_LIFETIME_S
        if grant.expires_at is not None:
            expires = min(expires, grant.expires_at)
        unsigned = PermissionToken(
            id=secrets.token_urlsafe(18),
            grant_id=grant.id,
            capability=grant.capability,
            scope=grant.scope,
            tool_call_id=tool_call_id,
            args_digest=digest,
            expires_at=expires,
            mac="",
        )
        token = PermissionToken(**{**unsigned.__dict__, "mac": self._sign(unsigned)})
        with self._lock:
            self._issued[token.id] = token.expires_at
            if len(self._issued) > self._prune_at:
                self._prune(now)
        return token

    def _prune(self, now: float) -> None:
        """Forget tokens long past their expiry; one shown again is then simply "unknown"."""
        stale = [tid for tid, expires in self._issued.items() if expires < now - TOKEN_MEMORY_S]
        for token_id in stale:
            del self._issued[token_id]
            self._spent.discard(token_id)
        self._prune_at = max(256, 2 * len(self._issued))

    def check(
        self,
        token: PermissionToken | None,
        *,
        capability: Capability,
        targets: list[str],
        tool_call_id: str,
        digest: str,
        grants: GrantStore,
        spend: bool = True,
    ) -> TokenProblem | None:
        """None when the token authorises exactly this call; else what is wrong with it."""
        if token is None:
            return "missing"
        if token.id not in self._issued:
            return "unknown"
        expected = self._sign(token).encode()
        given = token.mac.encode("utf-8", "surrogatepass")
        if not hmac.compare_digest(expected, given):
            return "forged"
        grant = grants.get(token.grant_id)
        if grant is None or grant.revoked:
            return "revoked"
        if self._clock.now() >= token.expires_at or not grants.is_live(grant):
            return "expired"
        if token.capability is not capability or grant.capability is not capability:
            return "wrong_capability"
        if token.tool_call_id != tool_call_id:
            return "wrong_call"
        if token.args_digest != digest:
            return "arguments_changed"
        if grant.mode is GrantMode.ONCE and (
            grant.tool_call_id != tool_call_id or grant.args_digest != digest
        ):
            return "arguments_changed"
        in_scope = scope_covers(capability, token.scope, targets, resolve_scope=False)
        if not in_scope or token.scope != grant.scope:
            return "out_of_scope"
        with self._lock:
            if token.id in self._spent:
                return "replayed"
            if spend:
                self._spent.add(token.id)
        return None


# --- the broker --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Denial:
    status: Literal["denied", "timeout", "refused"]
    reason: str
    capability: Capability
    scope: str


class PermissionBroker:
    """Finds or asks for a grant for one tool call, and issues the token the runner will check."""

    def __init__(
        self,
        *,
        grants: GrantStore,
        tokens: TokenAuthority,
        prompter: Prompter,
        audit: AuditLog,
        clock: Clock,
        prompt_timeout_s: float = 60.0,
        timed_default_s: float = 300.0,
    ) -> None:
        self.grants = grants
        self.tokens = tokens
        self.prompter = prompter
        self.audit = audit
        self.clock = clock
        self.prompt_timeout_s = prompt_timeout_s
        self.timed_default_s = timed_default_s

    def expire(self, turn_id: str | None = None) -> None:
        """Audit the grants that ended since the last look: leases that ran out, and this
        process's own grants that a revoke-all in another process ended."""
        for grant in self.grants.pop_expired():
            self.audit.append(
                AuditEvent.PERMISSION_EXPIRED,
                turn_id=turn_id,
                grant_id=grant.id,
                capability=grant.capability.value,
                scope=grant.scope,
                mode=grant.mode.value,
            )
        for grant in self.grants.pop_revoked_elsewhere():
            self.audit.append(
                AuditEvent.PERMISSION_REVOKED,
                turn_id=turn_id,
                grant_id=grant.id,
                capability=grant.capability.value,
                scope=grant.scope,
                mode=grant.mode.value,
                why="revoke-all in another Chamberlain process",
            )

    def revoke(self, grant_id: str, why: str, turn_id: str | None = None) -> Grant | None:
        grant = self.grants.revoke(grant_id)
        if grant is not None:
            self.audit.append(
                AuditEvent.PERMISSION_REVOKED,
                turn_id=turn_id,
                grant_id=grant.id,
                capability=grant.capability.value,
                scope=grant.scope,
                mode=grant.mode.value,
                why=why,
            )
        return grant

    def revoke_all(self, why: str = "revoke-all") -> list[Grant]:
        """End every grant, here and in every other Chamberlain process on this home (before
        its next tool call), and audit the ones this process could see."""
        revoked = self.grants.revoke_all()
        for grant in revoked:
            self.audit.append(
                AuditEvent.PERMISSION_REVOKED,
                grant_id=grant.id,
                capability=grant.capability.value,
                scope=grant.scope,
                mode=grant.mode.value,
                why=why,
            )
        return revoked

    def proposed_scope(
        self, capability: Capability, targets: list[str], user_scopes: list[str]
    ) -> tuple[str, bool]:
        """The scope to ask about, and whether the user's own message implied it."""
        if capability in UNSCOPED_CAPS or not targets:
            return ANY_SCOPE, True
        if capability is Capability.SYSTEM_EXECUTE:
            # Read-only commands are asked about as the class, in their folder; anything else
            # as exactly that line in exactly that folder. The user's words only say whose it is.
            natural_command = natural_command_scope(targets)
            typed = any(scope_covers(capability, s, targets) for s in user_scopes)
            return natural_command, typed
        natural = sorted({natural_scope(capability, t) for t in targets})
        for scope in user_scopes:
            if scope_covers(capability, scope, targets):
                if capability in PATH_SCOPED:
                    return str(resolve_path(scope)), True
                return scope, True
        # The model asked for something the user did not name: ask about exactly that.
        if capability in PATH_SCOPED:
            return (targets[0] if len(targets) == 1 else os.path.commonpath(targets)), False
        return natural[0], False

    def authorize(
        self,
        *,
        tool: str,
        capability: Capability,
        arguments: dict[str, Any],
        targets: list[str],
        call_id: str,
        user_scopes: list[str],
        risk: Risk = "safe",
        reversibility: Reversibility = "easy",
        turn_id: str | None = None,
        events: TurnObserver | None = None,
        fresh: OutboundAfterPrivate | None = None,
        plan: CallPlan | None = None,
    ) -> PermissionToken | Denial:
        """A token for this call from a live grant, or from the person's answer; else a Denial.
        Raises `Stopped` when the turn is stopped while the question is open.

        `fresh` (broker/taint.py): the call could carry out private data this turn has read, so
        no live grant covers it, only "once" may be answered, a standing rule is no answer, and
        the prompt and any denial say why."""
        self.expire(turn_id)
        digest = args_digest(arguments)

        def answered(scope: str, outcome: PermissionOutcome) -> None:
            emit(
                events,
                PermissionAnswered(turn_id or "", call_id, tool, capability, scope, outcome),
            )

        def record(event: AuditEvent, scope: str, **fields: Any) -> None:
            """One audit line about this call, with the fields every such line carries."""
            self.audit.append(
                event,
                turn_id=turn_id,
                tool=tool,
                call_id=call_id,
                capability=capability.value,
                scope=scope,
                **fields,
            )

        grant = None if fresh is not None else self.grants.find(capability, targets)
        if grant is not None:
            # A live grant covers the call: one line says which, and the token it backs.
            token = self.tokens.issue(grant, call_id, digest)
            record(
                AuditEvent.PERMISSION_CHECK,
                grant.scope,
                outcome="grant",
                grant_id=grant.id,
                token_id=token.id,
            )
            answered(grant.scope, "grant")
            return token
        scope, from_user = self.proposed_scope(capability, targets, user_scopes)
        runs_code = any(t.startswith(CODE_TARGET) for t in targets)
        if runs_code and not from_user:
            startup = plan.startup if plan is not None else ()
            if startup:
                # A place that runs code later (an rc file, a git hook): say which and when.
                # Only a command's plan names code targets (tools/system.py), so "the command"
                # is what the person reads; the tool's id stays in the audit line.
                place, when = startup[0]
                more = (
                    f" and {counted(len(startup) - 1, 'more such place')}"
                    if len(startup) > 1
                    else ""
                )
                why = (
                    f"the command would change {visible_path(place)}, which {when}{more}; "
                    "Chamberlain changes such places only when you type the command yourself"
                )
            else:
                why = (
                    "the command would run code that cannot be shown here "
                    f"({describe_scope(capability, scope)}); Chamberlain runs such commands "
                    "only when you type them yourself"
                )
            record(AuditEvent.PERMISSION_DENIED, scope, why="runs_code")
            answered(scope, "refused")
            return Denial(status="refused", reason=why, capability=capability, scope=scope)
        # The figure that applies is read now: a Settings change reaches the next question.
        timeout_s = self.prompt_timeout_s
        asked_at = self.clock.now()
        once_only = runs_code or fresh is not None
        request = PermissionRequest(
            capability=capability,
            scope=scope,
            tool=tool,
            arguments=arguments,
            call_id=call_id,
            user_scope=from_user,
            asked_at=asked_at,
            deadline=asked_at + timeout_s,
            timeout_s=timeout_s,
            plan=plan,
            risk=risk,
            reversibility=reversibility,
            once_only=once_only,
            reason=fresh.reason if fresh is not None else "",
            always_unavailable=self._why_no_rule(capability, scope, risk, once_only),
            timed_s=self.timed_default_s,
            asked_anew=fresh is not None,
        )
        record(
            AuditEvent.PERMISSION_CHECK,
            scope,
            outcome="ask",
            user_scope=from_user,
            risk=risk,
            reversibility=reversibility,
            timeout_s=timeout_s,
            **(fresh.audit if fresh is not None else {}),
        )

        def late(answer: PromptDecision) -> None:
            record(
                AuditEvent.PERMISSION_LATE_ANSWER,
                scope,
                mode=answer.mode.value if answer.mode else None,
            )

        emit(events, PermissionAsked(turn_id or "", call_id, tool, capability, scope))
        decision = pose(self.prompter, PermissionQuestion(request, self.clock, on_late=late))
        if fresh is not None and decision.reason == "rule" and decision.allow:
            # A rule was set before this request existed; only a person who sees it may allow it.
            decision = PromptDecision(allow=False, reason="headless")
        if decision.reason == "cancelled":
            record(AuditEvent.PERMISSION_DENIED, scope, why="cancelled")
            answered(scope, "cancelled")
            raise Stopped()
        if not decision.allow or decision.mode is None:
            denial = self._deny(decision, request, turn_id)
            if fresh is not None:
                denial = dataclasses.replace(denial, reason=f"{denial.reason}: {fresh.reason}")
            answered(scope, "timeout" if denial.status == "timeout" else "denied")
            return denial
        grant = self._grant_from(decision, request, digest, targets)
        self.grants.add(grant)
        token = self.tokens.issue(grant, call_id, digest)
        self.audit.append(
            AuditEvent.PERMISSION_GRANTED,
            turn_id=turn_id,
            grant_id=grant.id,
            tool=tool,
            call_id=call_id,
            capability=capability.value,
            scope=grant.scope,
            mode=grant.mode.value,
            expires_at=grant.expires_at,
            decided_by=grant.decided_by,
            token_id=token.id,
        )
        answered(grant.scope, grant.mode.value)
        return token

    def _why_no_rule(self, capability: Capability, scope: str, risk: Risk, once_only: bool) -> str:
        """Why "Always" is not offered for this question ("" when it is)."""
        if once_only:
            return "only this one call may be allowed"
        if risk == "dangerous":
            return "it is a high-risk action, so Chamberlain asks every time"
        if capability is Capability.SYSTEM_EXECUTE and not (
            scope == READONLY or scope.startswith(READONLY_IN)
        ):
            return (
                "a saved rule for one exact command line would outlive the reason it was "
                "typed; allow it for this session instead"
            )
        return self.grants.why_not_saved(scope)

    def _deny(
        self, decision: PromptDecision, request: PermissionRequest, turn_id: str | None
    ) -> Denial:
        capability, scope = request.capability, request.scope
        # In words, as the person and the model read it ("permission to read files
        # (/home/ann/Documents)"); the capability's id is in the audit line below.
        what = "permission to " + capability_action(capability)
        if scope != ANY_SCOPE:
            what += f" ({describe_scope(capability, scope)})"
        reason = {
            "timeout": "nobody answered the permission question within "
            f"{request.timeout_s:g} s, so it was denied",
            "headless": f"{what} was not granted: there was no one here to ask",
            "error": "the permission question failed, so it was denied",
        }.get(decision.reason, f"you did not give {what}")
        timed_out = decision.reason == "timeout"
        self.audit.append(
            AuditEvent.PERMISSION_TIMEOUT if timed_out else AuditEvent.PERMISSION_DENIED,
            turn_id=turn_id,
            tool=request.tool,
            call_id=request.call_id,
            capability=capability.value,
            scope=scope,
            why=decision.reason,
            **({"timeout_s": request.timeout_s} if timed_out else {}),
        )
        status: Literal["denied", "timeout"] = "timeout" if timed_out else "denied"
        return Denial(status=status, reason=reason, capability=capability, scope=scope)

    def _grant_from(
        self, decision: PromptDecision, request: PermissionRequest, digest: str, targets: list[str]
    ) -> Grant:
        now = self.clock.now()
        scope = request.scope
        if decision.scope and scope_covers(request.capability, decision.scope, targets):
            scope = decision.scope
        if request.capability in PATH_SCOPED and scope != ANY_SCOPE:
            scope = str(resolve_path(scope))
        mode = decision.mode or GrantMode.ONCE
        if request.once_only:
            mode = GrantMode.ONCE
        if mode is GrantMode.ALWAYS and (
            request.always_unavailable or self.grants.why_not_saved(scope)
        ):
            # No front end offers "always" here (the prompt said why); a rule given in advance
            # (`--approve CAP=always`) lasts the session instead, never on disk. The granted
            # line of the audit says "session": what was given, not what was asked.
            mode = GrantMode.SESSION
        expires: float | None = None
        if mode is GrantMode.ONCE:
            expires = now + ONCE_LIFETIME_S
        elif mode is GrantMode.TIMED:
            expires = now + (decision.duration_s or self.timed_default_s)
        once = mode is GrantMode.ONCE
        return Grant(
            id="g-" + secrets.token_hex(6),
            capability=request.capability,
            scope=scope,
            mode=mode,
            issued_at=now,
            expires_at=expires,
            decided_by="rule" if decision.reason == "rule" else "user",
            tool_call_id=request.call_id if once else None,
            args_digest=digest if once else None,
        )
