"""Grants, permission prompts and signed permission tokens.

A grant is a lease: one capability, one scope, one end (or "until revoked"). A token is what the
runner checks before a tool runs: an HMAC over (capability, scope, tool call id, argument digest,
expiry) with the per-install secret, bound to the grant it came from. Tokens never enter the
model's context. Default deny: no grant and no "yes" from the user means no token.

This module never executes a tool. It never asks the model anything.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ValidationError

from broker.audit import AuditEvent, AuditLog, redact
from broker.clock import Clock
from broker.events import PermissionAnswered, PermissionAsked, PermissionOutcome, TurnObserver, emit
from broker.types import Grant, GrantMode
from tools.manual import PATH_SCOPED, Capability, Reversibility, Risk
from tools.paths import resolve_path
from tools.scopes import (
    ANY,
    UNSCOPED_CAPS,
    describe_command_call,
    describe_scope,
    natural_command_scope,
    natural_scope,
    scope_covers,
)
from tools.stop import Stopped, current_stop, stop_hook

log = logging.getLogger("chamberlain.broker.permissions")

ANY_SCOPE = ANY
# A command target of this class runs code the line does not show (tools.command_kinds).
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
    """What the user is asked. The GUI renders it; the CLI answers it from flags."""

    capability: Capability
    scope: str
    tool: str
    arguments: dict[str, Any]
    call_id: str
    # True when the scope is what the user's own message named (or needs no scope at all);
    # False when the model asked mid-turn for something the user did not name.
    user_scope: bool
    risk: Risk = "safe"
    reversibility: Reversibility = "easy"
    reason: str = ""
    # Only "once" may be offered: the call runs code that cannot be shown (a sed script, a
    # build file, a program's install scripts), so no grant may outlive this one call.
    once_only: bool = False


# "cancelled": the person stopped the turn while the prompt was open (not a denial).
DecisionReason = Literal["user", "rule", "timeout", "headless", "error", "cancelled"]


class PromptDecision(BaseModel):
    allow: bool
    mode: GrantMode | None = None
    # A scope the user chose instead of the request's (must still cover the call's targets).
    scope: str | None = None
    duration_s: float | None = None
    reason: DecisionReason = "user"


class Prompter(Protocol):
    def ask(self, request: PermissionRequest) -> PromptDecision:
        """Block until the user decides. Implementations must never raise for a "no"."""
        ...


class DenyPrompter:
    """Headless with nobody to ask: every request is denied."""

    answers_instantly = True

    def ask(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=False, reason="headless")


class PendingPrompt:
    """One permission question in flight: an answer resolves it; the timeout cancels it.

    Whichever comes first wins. An answer that arrives after the prompt was cancelled is kept as
    `late` (and reported by the caller), never used: a person who clicks "allow" a second after
    the countdown ended has not granted anything.
    """

    def __init__(self, request: PermissionRequest) -> None:
        self.request = request
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._decision: PromptDecision | None = None
        self.cancelled = False
        self.late: PromptDecision | None = None

    def resolve(self, decision: PromptDecision) -> bool:
        """Answer the prompt; False (and kept as `late`) when it had already ended."""
        with self._lock:
            if self._done.is_set():
                self.late = decision
                return False
            self._decision = decision
            self._done.set()
            return True

    def cancel(self, reason: DecisionReason = "timeout") -> bool:
        """End the prompt unanswered (a denial with `reason`); False if it was answered."""
        with self._lock:
            if self._done.is_set():
                return False
            self._decision = PromptDecision(allow=False, reason=reason)
            self.cancelled = True
            self._done.set()
            return True

    def wait(self, timeout_s: float) -> PromptDecision | None:
        self._done.wait(timeout_s)
        with self._lock:
            return self._decision


def ask_within(
    prompter: Prompter,
    request: PermissionRequest,
    timeout_s: float,
    on_late: Callable[[PromptDecision], None] | None = None,
) -> PromptDecision:
    """Ask, but give up after `timeout_s`: no answer in time is a deny with reason `timeout`.

    A prompter that answers from rules alone (`answers_instantly`) is asked directly: it cannot
    hang, and a thread per call would only add latency. Otherwise the question is a
    `PendingPrompt` the timeout cancels; a prompter with a `cancel(pending)` method is told, so
    it can close its dialog or stop reading the terminal. An answer that comes too late is
    handed to `on_late` and never used.
    """
    if getattr(prompter, "answers_instantly", False):
        try:
            return prompter.ask(request)
        except Exception as exc:  # noqa: BLE001 - a broken prompter must deny, not crash
            log.error("permission prompt failed: %s", exc)
            return PromptDecision(allow=False, reason="error")
    pending = PendingPrompt(request)
    stop = current_stop()
    if stop is not None and stop.stopped:
        return PromptDecision(allow=False, reason="cancelled")

    def target() -> None:
        try:
            decision = prompter.ask(request)
        except Exception as exc:  # noqa: BLE001 - a broken prompter must deny, not crash
            log.error("permission prompt failed: %s", exc)
            decision = PromptDecision(allow=False, reason="error")
        if not pending.resolve(decision) and decision.allow:
            log.warning("an answer came after the permission prompt had ended; it was not used")
            if on_late is not None:
                on_late(decision)

    worker = threading.Thread(target=target, name="permission-prompt", daemon=True)
    worker.start()
    with stop_hook(lambda: pending.cancel("cancelled")):
        decision = pending.wait(timeout_s)
    if decision is not None and not pending.cancelled:
        return decision
    pending.cancel("timeout")  # no-op when Stop already ended it as cancelled
    cancel = getattr(prompter, "cancel", None)
    if callable(cancel):
        try:
            cancel(pending)
        except Exception as exc:  # noqa: BLE001 - a failed close must not undo the denial
            log.error("closing a timed-out permission prompt failed: %s", exc)
    decision = pending.wait(0)
    if decision is None:
        return PromptDecision(allow=False, reason="timeout")
    return decision


# --- grants ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class UntrustedGrant:
    """An entry of `grants.json` that was not honoured: its id (as the file says) and why."""

    id: str
    why: str


class GrantStore:
    """Live grants. `always` and `timed` grants persist in `grants.json` (apart from settings).

    A timed grant is kept with its expiry, so it lasts its minutes across commands (each
    `chamberlain ask` is a new process); once it has ended it is dropped from the file by the
    next `pop_expired`, which the broker audits. One whose scope holds a password is never
    written: it lasts the process only, like a session grant.

    Every saved grant carries a MAC: HMAC-SHA256, under the install secret's grants key
    (`InstallSecret.grants_key`, derived from the secret, never the raw secret), over the grant's
    canonical JSON. On load an entry whose MAC is missing or wrong is not honoured: it stays out
    of the live grants, is logged, and is listed in `untrusted` (`problems` words it for the
    front ends). The file keeps it: every later save writes it back verbatim, so the evidence
    stays until the user removes it (`discard_untrusted`). Files from before grants carried MACs
    hold only unsigned entries, which cannot be told from planted ones: they are ignored and
    reported the same way, and the user grants again.

    Without a key (`key=None`: tests and tools that have no install secret) nothing in the file
    is honoured and what is saved carries no MAC.

    Limits: the MAC proves an entry was written with this home's secret, so whoever can read the
    secret (the system keyring, or `token.key` when there is none) can forge one. It does not
    stop a rollback: an older copy of `grants.json` brings back grants revoked since.
    """

    # The modes kept in grants.json: the ones that outlive the process that granted them.
    PERSISTED_MODES = frozenset({GrantMode.ALWAYS, GrantMode.TIMED})

    def __init__(self, path: Path | None, clock: Clock, key: bytes | None = None) -> None:
        self._path = path
        self._clock = clock
        self._key = key
        self._lock = threading.Lock()
        self._grants: dict[str, Grant] = {}
        # Entries that were not honoured, exactly as the file held them; saved back unchanged.
        self._untrusted_raw: list[object] = []
        self.untrusted: list[UntrustedGrant] = []
        if path is not None and path.exists():
            self._load(path)

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

    def _load(self, path: Path) -> None:
        try:
            entries = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError) as exc:
            # A damaged rules file must not grant anything, and must not be overwritten.
            raise PermissionStoreError(
                f"cannot read the saved permissions in {path}: {exc}. Nothing was granted; "
                "fix or remove the file to continue"
            ) from exc
        if not isinstance(entries, list):
            raise PermissionStoreError(
                f"cannot read the saved permissions in {path}: it should hold a list of "
                "grants. Nothing was granted; fix or remove the file to continue"
            )
        for entry in entries:
            why = self._why_untrusted(entry)
            if why is not None:
                raw_id = entry.get("id") if isinstance(entry, dict) else None
                found = UntrustedGrant(raw_id if isinstance(raw_id, str) else "no id", why)
                log.error(
                    "ignored an entry of %s that Chamberlain did not write (%s: %s)",
                    path,
                    found.id,
                    why,
                )
                self.untrusted.append(found)
                self._untrusted_raw.append(entry)
                continue
            assert isinstance(entry, dict)
            try:
                grant = Grant.model_validate({k: v for k, v in entry.items() if k != "mac"})
            except ValidationError as exc:
                raise PermissionStoreError(
                    f"cannot read the saved permissions in {path}: {exc}. Nothing was granted; "
                    "fix or remove the file to continue"
                ) from exc
            if grant.mode in self.PERSISTED_MODES and not grant.revoked:
                self._grants[grant.id] = grant

    @property
    def problems(self) -> list[str]:
        """What the front ends tell the user about entries that were not honoured."""
        name = self._path.name if self._path is not None else "grants.json"
        return [
            f"{name} holds a grant Chamberlain did not write ({u.id}): it was ignored ({u.why})"
            for u in self.untrusted
        ]

    def discard_untrusted(self, grant_id: str) -> bool:
        """Remove the unhonoured entries with this id from the file (the user looked at them)."""
        with self._lock:
            keep = [
                (u, raw)
                for u, raw in zip(self.untrusted, self._untrusted_raw, strict=True)
                if u.id != grant_id
            ]
            if len(keep) == len(self.untrusted):
                return False
            self.untrusted = [u for u, _ in keep]
            self._untrusted_raw = [raw for _, raw in keep]
            self._save()
            return True

    def _save(self) -> None:
        if self._path is None:
            return
        kept = [g for g in self._grants.values() if self._persists(g) and self.is_live(g)]
        entries: list[object] = []
        for grant in kept:
            entry: dict[str, Any] = grant.model_dump(mode="json")
            if self._key is not None:
                entry["mac"] = self._mac(entry)
            entries.append(entry)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump([*entries, *self._untrusted_raw], handle, indent=2)
        os.replace(tmp, self._path)

    def _persists(self, grant: Grant) -> bool:
        # A saved grant never holds a password (redact would change its scope).
        return grant.mode in self.PERSISTED_MODES and redact(grant.scope) == grant.scope

    def add(self, grant: Grant) -> None:
        with self._lock:
            self._grants[grant.id] = grant
            if self._persists(grant):
                self._save()

    def get(self, grant_id: str) -> Grant | None:
        return self._grants.get(grant_id)

    def is_live(self, grant: Grant) -> bool:
        if grant.revoked:
            return False
        return grant.expires_at is None or self._clock.now() < grant.expires_at

    def live(self) -> list[Grant]:
        # Under the lock: a revoke-all from another thread (the tray) must not change the
        # table while a turn reads it ("dictionary changed size during iteration").
        with self._lock:
            grants = list(self._grants.values())
        return [g for g in grants if self.is_live(g)]

    def all(self) -> list[Grant]:
        with self._lock:
            return list(self._grants.values())

    def find(self, capability: Capability, targets: list[str]) -> Grant | None:
        """A live, reusable (not once) grant whose scope covers every target."""
        for grant in self.live():
            if grant.mode is GrantMode.ONCE or grant.capability is not capability:
                continue
            if scope_covers(capability, grant.scope, targets, resolve_scope=False):
                return grant
        return None

    def revoke(self, grant_id: str) -> Grant | None:
        with self._lock:
            grant = self._grants.get(grant_id)
            if grant is None or grant.revoked:
                return None
            # Gone, not kept as a tombstone: a long session would otherwise scan every grant it
            # ever issued. A token of a grant that is gone is refused as revoked.
            del self._grants[grant_id]
            if self._persists(grant):
                self._save()
            return grant.model_copy(update={"revoked": True})

    def revoke_all(self) -> list[Grant]:
        return [g for g in (self.revoke(gid) for gid in list(self._grants)) if g is not None]

    def __len__(self) -> int:
        return len(self._grants)

    def pop_expired(self) -> list[Grant]:
        """Drop grants whose lease ended; the caller audits them."""
        now = self._clock.now()
        with self._lock:
            ended = [
                g
                for g in self._grants.values()
                if not g.revoked and g.expires_at is not None and now >= g.expires_at
            ]
            for grant in ended:
                del self._grants[grant.id]
            if any(self._persists(g) for g in ended):
                self._save()
        return ended


class PermissionStoreError(Exception):
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
        for grant in self.grants.pop_expired():
            self.audit.append(
                AuditEvent.PERMISSION_EXPIRED,
                turn_id=turn_id,
                grant_id=grant.id,
                capability=grant.capability.value,
                scope=grant.scope,
                mode=grant.mode.value,
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
        return [g for g in (self.revoke(gid.id, why) for gid in self.grants.live()) if g]

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
    ) -> PermissionToken | Denial:
        """A token for this call from a live grant, or from the person's answer; else a Denial.
        Raises `Stopped` when the turn is stopped while the question is open."""
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

        grant = self.grants.find(capability, targets)
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
            why = (
                f"{tool} would run code that cannot be shown here "
                f"({describe_scope(capability, scope)}); Chamberlain runs such commands only "
                "when you type them yourself"
            )
            record(AuditEvent.PERMISSION_DENIED, scope, why="runs_code")
            answered(scope, "refused")
            return Denial(status="refused", reason=why, capability=capability, scope=scope)
        request = PermissionRequest(
            capability=capability,
            scope=scope,
            tool=tool,
            arguments=arguments,
            call_id=call_id,
            user_scope=from_user,
            risk=risk,
            reversibility=reversibility,
            once_only=runs_code,
            reason=(
                describe_command_call(targets) if capability is Capability.SYSTEM_EXECUTE else ""
            ),
        )
        record(
            AuditEvent.PERMISSION_CHECK,
            scope,
            outcome="ask",
            user_scope=from_user,
            risk=risk,
            reversibility=reversibility,
        )

        def late(answer: PromptDecision) -> None:
            record(
                AuditEvent.PERMISSION_LATE_ANSWER,
                scope,
                mode=answer.mode.value if answer.mode else None,
            )

        emit(events, PermissionAsked(turn_id or "", call_id, tool, capability, scope))
        decision = ask_within(self.prompter, request, self.prompt_timeout_s, on_late=late)
        if decision.reason == "cancelled":
            record(AuditEvent.PERMISSION_DENIED, scope, why="cancelled")
            answered(scope, "cancelled")
            raise Stopped()
        if not decision.allow or decision.mode is None:
            denial = self._deny(decision, capability, scope, tool, call_id, turn_id)
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

    def _deny(
        self,
        decision: PromptDecision,
        capability: Capability,
        scope: str,
        tool: str,
        call_id: str,
        turn_id: str | None,
    ) -> Denial:
        what = capability.value
        if scope != ANY_SCOPE:
            what += " for " + describe_scope(capability, scope)
        reason = {
            "timeout": f"nobody answered the {capability.value} prompt within "
            f"{self.prompt_timeout_s:g} s, so it was denied",
            "headless": f"{what} was not granted (no one to ask here)",
            "error": f"the {capability.value} prompt failed, so it was denied",
        }.get(decision.reason, f"you denied {what}")
        self.audit.append(
            AuditEvent.PERMISSION_TIMEOUT
            if decision.reason == "timeout"
            else AuditEvent.PERMISSION_DENIED,
            turn_id=turn_id,
            tool=tool,
            call_id=call_id,
            capability=capability.value,
            scope=scope,
            why=decision.reason,
        )
        status: Literal["denied", "timeout"] = (
            "timeout" if decision.reason == "timeout" else "denied"
        )
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
        if mode is GrantMode.ALWAYS and redact(scope) != scope:
            # A saved grant keeps its scope in grants.json; one that holds a password (an exact
            # command line with `curl -u user:pw`) lasts the session instead, never on disk.
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
