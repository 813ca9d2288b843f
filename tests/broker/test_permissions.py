"""Grants, prompts and tokens: default deny, leases that end, tokens bound to one call."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.audit import AuditLog
from broker.clock import ManualClock
from broker.permissions import (
    ONCE_LIFETIME_S,
    Denial,
    DenyPrompter,
    GrantStore,
    PermissionBroker,
    PermissionRequest,
    PermissionStoreError,
    PermissionToken,
    PromptDecision,
    TokenAuthority,
    args_digest,
    ask_within,
)
from broker.types import GrantMode
from tools.manual import Capability

SECRET = b"k" * 32
GRANTS_KEY = b"g" * 32


class ScriptedPrompter:
    """Answers every prompt with the same decision and records what it was asked."""

    def __init__(self, decision: PromptDecision) -> None:
        self.decision = decision
        self.asked: list[PermissionRequest] = []

    def ask(self, request: PermissionRequest) -> PromptDecision:
        self.asked.append(request)
        return self.decision


def make_broker(tmp_path: Path, prompter, clock=None, timeout=5.0):
    clock = clock or ManualClock()
    audit = AuditLog(tmp_path / "audit.jsonl", clock)
    broker = PermissionBroker(
        grants=GrantStore(tmp_path / "grants.json", clock, key=GRANTS_KEY),
        tokens=TokenAuthority(SECRET, clock),
        prompter=prompter,
        audit=audit,
        clock=clock,
        prompt_timeout_s=timeout,
    )
    return broker, clock


def events(tmp_path: Path) -> list[str]:
    import json

    path = tmp_path / "audit.jsonl"
    return [json.loads(line)["event"] for line in path.read_text().splitlines()]


def authorize(broker, docs: Path, target: Path, call_id="c1", args=None, user_scopes=None):
    args = args if args is not None else {"path": str(target)}
    return broker.authorize(
        tool="file_read",
        capability=Capability.FILE_READ,
        arguments=args,
        targets=[str(target)],
        call_id=call_id,
        user_scopes=[str(docs)] if user_scopes is None else user_scopes,
    )


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    return folder


def test_headless_with_no_decision_denies_and_audits(tmp_path, docs):
    broker, _ = make_broker(tmp_path, DenyPrompter())
    outcome = authorize(broker, docs, docs / "a.txt")
    assert isinstance(outcome, Denial)
    assert outcome.status == "denied"
    assert "not granted" in outcome.reason
    assert "PERMISSION_DENIED" in events(tmp_path)


def test_prompt_timeout_is_a_deny_recorded_as_timeout(tmp_path, docs):
    release = threading.Event()

    class Silent:
        def ask(self, request):
            release.wait(5)
            return PromptDecision(allow=True, mode=GrantMode.SESSION)

    broker, _ = make_broker(tmp_path, Silent(), timeout=0.05)
    outcome = authorize(broker, docs, docs / "a.txt")
    release.set()
    assert isinstance(outcome, Denial)
    assert outcome.status == "timeout"
    assert "within" in outcome.reason


def test_crashing_prompter_denies(tmp_path, docs):
    class Broken:
        def ask(self, request):
            raise RuntimeError("dialog exploded")

    decision = ask_within(Broken(), _request(), 1.0)
    assert decision.allow is False
    assert decision.reason == "error"


def _request(**overrides) -> PermissionRequest:
    base = {
        "capability": Capability.FILE_READ,
        "scope": "/tmp",
        "tool": "file_read",
        "arguments": {},
        "call_id": "c",
        "user_scope": True,
    }
    return PermissionRequest(**{**base, **overrides})


def test_user_scope_is_what_the_first_prompt_asks_about(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ONCE))
    broker, _ = make_broker(tmp_path, prompter)
    token = authorize(broker, docs, docs / "a.txt")
    assert isinstance(token, PermissionToken)
    asked = prompter.asked[0]
    assert asked.user_scope is True
    assert asked.scope == str(docs)


def test_scope_the_model_asks_for_is_a_separate_prompt_not_the_users(tmp_path, docs):
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    prompter = ScriptedPrompter(PromptDecision(allow=False))
    broker, _ = make_broker(tmp_path, prompter)
    authorize(broker, docs, ssh / "id_rsa")
    asked = prompter.asked[0]
    assert asked.user_scope is False
    assert asked.scope == str(ssh / "id_rsa")


def test_once_token_validates_only_its_own_call_and_arguments(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ONCE))
    broker, _ = make_broker(tmp_path, prompter)
    target = str(docs / "a.txt")
    args = {"path": target}
    token = authorize(broker, docs, docs / "a.txt", call_id="c1", args=args)
    check = broker.tokens.check
    kwargs = {"capability": Capability.FILE_READ, "targets": [target], "grants": broker.grants}
    assert check(token, tool_call_id="c1", digest=args_digest({"path": "/etc"}), **kwargs) == (
        "arguments_changed"
    )
    assert check(token, tool_call_id="c2", digest=args_digest(args), **kwargs) == "wrong_call"
    assert check(token, tool_call_id="c1", digest=args_digest(args), **kwargs) is None
    # A token is spent by its call: using it again is a replay.
    assert check(token, tool_call_id="c1", digest=args_digest(args), **kwargs) == "replayed"


def test_once_grant_needs_a_new_prompt_for_the_next_call(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ONCE))
    broker, _ = make_broker(tmp_path, prompter)
    authorize(broker, docs, docs / "a.txt", call_id="c1")
    authorize(broker, docs, docs / "a.txt", call_id="c2")
    assert len(prompter.asked) == 2


def test_session_grant_is_reused_within_scope_only(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.SESSION))
    broker, _ = make_broker(tmp_path, prompter)
    authorize(broker, docs, docs / "a.txt", call_id="c1")
    authorize(broker, docs, docs / "b.txt", call_id="c2")
    assert len(prompter.asked) == 1
    authorize(broker, docs, tmp_path / "elsewhere.txt", call_id="c3", user_scopes=[])
    assert len(prompter.asked) == 2


def test_timed_grant_expires_when_the_clock_moves(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.TIMED))
    broker, clock = make_broker(tmp_path, prompter)
    token = authorize(broker, docs, docs / "a.txt", call_id="c1")
    assert isinstance(token, PermissionToken)
    grant = broker.grants.get(token.grant_id)
    assert grant.expires_at == pytest.approx(clock.now() + 300)
    clock.advance(299)
    authorize(broker, docs, docs / "a.txt", call_id="c2")
    assert len(prompter.asked) == 1
    clock.advance(2)
    authorize(broker, docs, docs / "a.txt", call_id="c3")
    assert len(prompter.asked) == 2
    assert "PERMISSION_EXPIRED" in events(tmp_path)


def test_expired_token_is_refused(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ONCE))
    broker, clock = make_broker(tmp_path, prompter)
    args = {"path": str(docs / "a.txt")}
    token = authorize(broker, docs, docs / "a.txt", args=args)
    clock.advance(ONCE_LIFETIME_S + 1)
    problem = broker.tokens.check(
        token,
        capability=Capability.FILE_READ,
        targets=args["path"].split(),
        tool_call_id="c1",
        digest=args_digest(args),
        grants=broker.grants,
    )
    assert problem == "expired"


def test_revoke_all_takes_effect_before_the_next_call(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.SESSION))
    broker, _ = make_broker(tmp_path, prompter)
    args = {"path": str(docs / "a.txt")}
    token = authorize(broker, docs, docs / "a.txt", args=args)
    broker.revoke_all()
    problem = broker.tokens.check(
        token,
        capability=Capability.FILE_READ,
        targets=[args["path"]],
        tool_call_id="c1",
        digest=args_digest(args),
        grants=broker.grants,
    )
    assert problem == "revoked"
    authorize(broker, docs, docs / "a.txt", call_id="c2")
    assert len(prompter.asked) == 2
    assert "PERMISSION_REVOKED" in events(tmp_path)


def test_always_grant_persists_and_is_revocable(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ALWAYS))
    broker, clock = make_broker(tmp_path, prompter)
    token = authorize(broker, docs, docs / "a.txt")
    reopened = GrantStore(tmp_path / "grants.json", clock, key=GRANTS_KEY)
    assert [g.id for g in reopened.live()] == [token.grant_id]
    assert reopened.find(Capability.FILE_READ, [str(docs / "x.txt")]) is not None
    assert reopened.find(Capability.FILE_READ, [str(tmp_path / "x.txt")]) is None
    reopened.revoke(token.grant_id)
    assert GrantStore(tmp_path / "grants.json", clock, key=GRANTS_KEY).live() == []
    assert reopened.problems == []


def test_saved_grants_are_not_honoured_without_the_key_they_were_signed_with(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ALWAYS))
    broker, clock = make_broker(tmp_path, prompter)
    token = authorize(broker, docs, docs / "a.txt")
    for other in (b"o" * 32, None):
        store = GrantStore(tmp_path / "grants.json", clock, key=other)
        assert store.live() == []
        assert [u.id for u in store.untrusted] == [token.grant_id]


def test_damaged_grants_file_grants_nothing_and_is_kept(tmp_path):
    path = tmp_path / "grants.json"
    path.write_text("{ not json")
    with pytest.raises(PermissionStoreError, match="Nothing was granted"):
        GrantStore(path, ManualClock())
    assert path.read_text() == "{ not json"


def test_decision_scope_must_cover_the_call(tmp_path, docs):
    # The user widened the scope to the whole Documents folder: later calls inside reuse it.
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.SESSION, scope=str(docs)))
    broker, _ = make_broker(tmp_path, prompter)
    token = authorize(broker, docs, docs / "a.txt", user_scopes=[])
    assert token.scope == str(docs)
    # A scope that does not cover the call is ignored in favour of the request's own.
    prompter.decision = PromptDecision(allow=True, mode=GrantMode.SESSION, scope=str(docs))
    other = tmp_path / "other"
    other.mkdir()
    token2 = authorize(broker, docs, other / "x", call_id="c9", user_scopes=[])
    assert token2.scope == str(other / "x")


# --- token validation, property-based ----------------------------------------------------------

CLOCK = ManualClock()
AUTHORITY = TokenAuthority(SECRET, CLOCK)


def _fresh_grant_and_token(tmp: Path):
    store = GrantStore(None, CLOCK)
    from broker.types import Grant

    grant = Grant(
        id="g-1",
        capability=Capability.FILE_READ,
        scope=str(tmp),
        mode=GrantMode.SESSION,
        issued_at=CLOCK.now(),
    )
    store.add(grant)
    token = AUTHORITY.issue(grant, "call-1", args_digest({"path": str(tmp / "f")}))
    return store, token


@settings(max_examples=60, deadline=None)
@given(
    field=st.sampled_from(
        ["id", "grant_id", "scope", "tool_call_id", "args_digest", "expires_at", "mac"]
    ),
    junk=st.text(min_size=1, max_size=20),
)
def test_any_change_to_a_token_is_caught(tmp_path_factory, field, junk):
    tmp = tmp_path_factory.mktemp("tok")
    store, token = _fresh_grant_and_token(tmp)
    value = getattr(token, field)
    changed = value + 1.0 if isinstance(value, float) else value + junk
    tampered = dataclasses.replace(token, **{field: changed})
    problem = AUTHORITY.check(
        tampered,
        capability=Capability.FILE_READ,
        targets=[str(tmp / "f")],
        tool_call_id="call-1",
        digest=args_digest({"path": str(tmp / "f")}),
        grants=store,
    )
    assert problem is not None


@settings(max_examples=40, deadline=None)
@given(secret=st.binary(min_size=16, max_size=64))
def test_a_token_signed_with_another_secret_is_forged(tmp_path_factory, secret):
    tmp = tmp_path_factory.mktemp("tok")
    store, token = _fresh_grant_and_token(tmp)
    other = TokenAuthority(secret if secret != SECRET else secret + b"x", CLOCK)
    forged = dataclasses.replace(token, mac=other._sign(token))
    problem = AUTHORITY.check(
        forged,
        capability=Capability.FILE_READ,
        targets=[str(tmp / "f")],
        tool_call_id="call-1",
        digest=args_digest({"path": str(tmp / "f")}),
        grants=store,
    )
    assert problem == "forged"


def test_a_token_edited_to_cover_other_arguments_is_forged_by_its_mac(tmp_path):
    """Under a session grant the token's own fields are all that bind it to one call's
    arguments: only the MAC tells an edited digest (and so an edited call) from a real one."""
    store, token = _fresh_grant_and_token(tmp_path)
    other_args = {"path": str(tmp_path / "g")}
    moved = dataclasses.replace(token, args_digest=args_digest(other_args))
    problem = AUTHORITY.check(
        moved,
        capability=Capability.FILE_READ,
        targets=[str(tmp_path / "g")],
        tool_call_id="call-1",
        digest=args_digest(other_args),
        grants=store,
    )
    assert problem == "forged"


def test_missing_unknown_and_wrong_capability(tmp_path):
    store, token = _fresh_grant_and_token(tmp_path)
    common = {
        "targets": [str(tmp_path / "f")],
        "tool_call_id": "call-1",
        "digest": args_digest({"path": str(tmp_path / "f")}),
        "grants": store,
    }
    assert AUTHORITY.check(None, capability=Capability.FILE_READ, **common) == "missing"
    stranger = TokenAuthority(SECRET, CLOCK)
    assert stranger.check(token, capability=Capability.FILE_READ, **common) == "unknown"
    assert AUTHORITY.check(token, capability=Capability.FILE_WRITE, **common) == "wrong_capability"
    outside = {**common, "targets": [str(tmp_path.parent / "x")]}
    assert AUTHORITY.check(token, capability=Capability.FILE_READ, **outside) == "out_of_scope"


def test_an_always_grant_whose_scope_holds_a_password_is_never_written_to_disk(tmp_path):
    """An exact command line with `curl -u user:pw` as the scope: kept for the session only."""
    from broker.audit import AuditLog
    from broker.clock import ManualClock
    from broker.permissions import (
        GrantStore,
        PermissionBroker,
        PromptDecision,
        TokenAuthority,
    )
    from broker.types import GrantMode
    from tools.manual import Capability

    class Always:
        answers_instantly = True

        def ask(self, request: PermissionRequest) -> PromptDecision:
            return PromptDecision(allow=True, mode=GrantMode.ALWAYS)

    clock = ManualClock()
    path = tmp_path / "grants.json"
    line = "curl -u admin:Hunter2Secret https://example.invalid"
    broker = PermissionBroker(
        grants=GrantStore(path, clock, key=b"g" * 32),
        tokens=TokenAuthority(b"k" * 32, clock),
        prompter=Always(),
        audit=AuditLog(tmp_path / "audit.jsonl", clock),
        clock=clock,
    )
    token = broker.authorize(
        tool="system_execute",
        capability=Capability.SYSTEM_EXECUTE,
        arguments={"command": line},
        targets=[f"command:{line}", f"cwd:{tmp_path}", "net:"],
        call_id="c1",
        user_scopes=[f"command:{line}\nin {tmp_path}"],
    )
    assert not hasattr(token, "status")  # allowed
    (grant,) = broker.grants.live()
    assert grant.mode is GrantMode.SESSION
    assert not path.exists() or "Hunter2Secret" not in path.read_text()


def test_live_grants_can_be_read_while_another_thread_revokes_them(tmp_path):
    """The tray's revoke-all runs on another thread than the turn that reads the grants."""
    import threading

    from broker.clock import ManualClock
    from broker.permissions import GrantStore
    from broker.types import Grant, GrantMode
    from tools.manual import Capability

    clock = ManualClock()
    store = GrantStore(None, clock)
    failures: list[BaseException] = []
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            for _ in range(200):
                n += 1
                store.add(
                    Grant(
                        id=f"g-{n}",
                        capability=Capability.SYSTEM_READ,
                        scope="*",
                        mode=GrantMode.SESSION,
                        issued_at=clock.now(),
                    )
                )
            store.revoke_all()

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(3000):
            try:
                store.live()
                store.all()
            except RuntimeError as exc:  # "dictionary changed size during iteration"
                failures.append(exc)
                break
    finally:
        stop.set()
        worker.join()
    assert failures == []


def test_a_prompt_that_times_out_is_cancelled_and_a_late_allow_is_recorded_never_used(tmp_path):
    import json
    import threading

    from broker.audit import AuditLog
    from broker.clock import ManualClock
    from broker.permissions import (
        Denial,
        GrantStore,
        PendingPrompt,
        PermissionBroker,
        PromptDecision,
        TokenAuthority,
    )
    from broker.types import GrantMode
    from tools.manual import Capability

    release = threading.Event()
    answered = threading.Event()

    class SlowPerson:
        """Answers "allow" only after the prompt's time is up; learns when it was closed."""

        def __init__(self) -> None:
            self.cancelled: list[PendingPrompt] = []

        def ask(self, request: object) -> PromptDecision:
            release.wait(10)
            answered.set()
            return PromptDecision(allow=True, mode=GrantMode.SESSION)

        def cancel(self, pending: PendingPrompt) -> None:
            self.cancelled.append(pending)

    clock = ManualClock()
    audit_path = tmp_path / "audit.jsonl"
    person = SlowPerson()
    broker = PermissionBroker(
        grants=GrantStore(None, clock),
        tokens=TokenAuthority(b"k" * 32, clock),
        prompter=person,
        audit=AuditLog(audit_path, clock),
        clock=clock,
        prompt_timeout_s=0.2,
    )
    outcome = broker.authorize(
        tool="system_info",
        capability=Capability.SYSTEM_READ,
        arguments={},
        targets=[],
        call_id="c1",
        user_scopes=[],
    )
    assert isinstance(outcome, Denial)
    assert outcome.status == "timeout"
    assert [p.request.call_id for p in person.cancelled] == ["c1"]

    release.set()  # the person clicks "allow" after the countdown ended
    assert answered.wait(5)
    for _ in range(100):
        events = [json.loads(line)["event"] for line in audit_path.read_text().splitlines()]
        if "PERMISSION_LATE_ANSWER" in events:
            break
        threading.Event().wait(0.02)
    assert "PERMISSION_LATE_ANSWER" in events
    assert broker.grants.live() == []  # the late "allow" granted nothing
