"""Grants, prompts and tokens: default deny, leases that end, tokens bound to one call."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.audit.writer import AuditLog
from broker.permissions import (
    ONCE_LIFETIME_S,
    Denial,
    DenyPrompter,
    GrantStore,
    PermissionBroker,
    PermissionQuestion,
    PermissionRequest,
    PermissionStoreError,
    PermissionToken,
    PromptDecision,
    RulePrompter,
    TokenAuthority,
    args_digest,
    pose,
)
from broker.types import GrantMode
from core.clock import ManualClock
from tools.manual import CallPlan, Capability

SECRET = b"k" * 32
GRANTS_KEY = b"g" * 32


class ScriptedPrompter(RulePrompter):
    """Answers every prompt with the same decision and records what it was asked."""

    def __init__(self, decision: PromptDecision) -> None:
        self.decision = decision
        self.asked: list[PermissionRequest] = []

    def decide(self, request: PermissionRequest) -> PromptDecision:
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


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (PromptDecision(allow=False), "you did not give permission to read files ({docs})"),
        (
            PromptDecision(allow=False, reason="headless"),
            "permission to read files ({docs}) was not granted: there was no one here to ask",
        ),
        (
            PromptDecision(allow=False, reason="error"),
            "the permission question failed, so it was denied",
        ),
    ],
    ids=["denied", "headless", "error"],
)
def test_a_denial_says_what_was_not_allowed_in_words_and_the_audit_keeps_the_ids(
    tmp_path, docs, decision, said
):
    """The reason is read on the call's card, in the reply and by the model: the capability in
    words ("read files"), never its id; the audit line has the tool's and capability's ids."""
    broker, _ = make_broker(tmp_path, ScriptedPrompter(decision))
    outcome = authorize(broker, docs, docs / "a.txt")
    assert isinstance(outcome, Denial)
    assert outcome.reason == said.format(docs=docs)
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    denied = next(line for line in lines if line["event"] == "PERMISSION_DENIED")
    assert (denied["data"]["tool"], denied["data"]["capability"]) == ("file_read", "file_read")


@pytest.mark.parametrize(
    ("places", "said"),
    [
        (1, "which runs when you next open a terminal; Chamberlain"),
        (2, "which runs when you next open a terminal and 1 more such place; Chamberlain"),
        (3, "which runs when you next open a terminal and 2 more such places; Chamberlain"),
    ],
)
def test_a_command_that_would_change_a_startup_place_is_refused_in_words_counting_the_others(
    tmp_path, places, said
):
    """A command the model asked for that would change a place that runs code later is refused
    without a question; the reason names the first place, counts the rest with a real plural,
    and names no tool or capability id (the audit line does)."""
    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ONCE))
    broker, _ = make_broker(tmp_path, prompter)
    startup = (
        ("/home/ann/.bashrc", "runs when you next open a terminal"),
        ("/home/ann/.profile", "runs when your desktop session starts"),
        ("/home/ann/.config/autostart", "runs when your desktop session starts"),
    )[:places]
    outcome = broker.authorize(
        tool="system_execute",
        capability=Capability.SYSTEM_EXECUTE,
        arguments={"command": "patch -p0 -i fix.diff"},
        targets=["code:patch -p0 -i fix.diff"],
        call_id="c1",
        user_scopes=[],
        plan=CallPlan(startup=startup),
    )
    assert isinstance(outcome, Denial)
    assert outcome.status == "refused"
    assert outcome.reason.startswith("the command would change /home/ann/.bashrc, " + said)
    assert "system_execute" not in outcome.reason
    assert "(s)" not in outcome.reason
    assert prompter.asked == []
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    refused = next(line for line in lines if line["event"] == "PERMISSION_DENIED")
    assert refused["data"]["tool"] == "system_execute"
    assert refused["data"]["capability"] == "system_execute"


def test_prompt_timeout_is_a_deny_recorded_as_timeout(tmp_path, docs):
    """Nobody answers; the broker's clock passes the request's deadline: a timeout, audited
    with the figure that applied. The late "yes" is never used."""
    clock = ManualClock()

    class Silent:
        def __init__(self) -> None:
            self.questions: list[PermissionQuestion] = []

        def present(self, question: PermissionQuestion) -> None:
            self.questions.append(question)
            clock.advance(question.request.timeout_s + 0.1)  # the person looks away past it

    silent = Silent()
    broker, _ = make_broker(tmp_path, silent, clock=clock, timeout=7.0)
    outcome = authorize(broker, docs, docs / "a.txt")
    (question,) = silent.questions
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.SESSION)) is False
    assert isinstance(outcome, Denial)
    assert outcome.status == "timeout"
    assert outcome.reason == "nobody answered the permission question within 7 s, so it was denied"
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    timeout = next(line for line in lines if line["event"] == "PERMISSION_TIMEOUT")
    assert timeout["data"]["timeout_s"] == 7.0
    assert broker.grants.live() == []


def test_crashing_prompter_denies(tmp_path, docs):
    class Broken:
        def present(self, question: PermissionQuestion) -> None:
            raise RuntimeError("dialog exploded")

    clock = ManualClock()
    decision = pose(Broken(), PermissionQuestion(_request(), clock))
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
        "asked_at": ManualClock().now(),
        "deadline": ManualClock().now() + 60.0,
        "timeout_s": 60.0,
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
    from broker.audit.writer import AuditLog
    from broker.permissions import (
        GrantStore,
        PermissionBroker,
        PromptDecision,
        TokenAuthority,
    )
    from broker.types import GrantMode
    from core.clock import ManualClock
    from tools.manual import Capability

    class Always(RulePrompter):
        def decide(self, request: PermissionRequest) -> PromptDecision:
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

    from broker.permissions import GrantStore
    from broker.types import Grant, GrantMode
    from core.clock import ManualClock
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

    from broker.audit.writer import AuditLog
    from broker.permissions import (
        Denial,
        GrantStore,
        PermissionBroker,
        PromptDecision,
        TokenAuthority,
    )
    from broker.types import GrantMode
    from core.clock import ManualClock
    from tools.manual import Capability

    release = threading.Event()
    answered = threading.Event()

    class SlowPerson:
        """A front end that shows the prompt (`present`), learns when it ended, and answers
        "allow" only after the prompt's time is up on the broker's clock."""

        def __init__(self) -> None:
            self.ended: list[PermissionQuestion] = []

        def present(self, question: PermissionQuestion) -> None:
            question.add_done_callback(self.ended.append)

            def answer_late() -> None:
                clock.advance(question.request.timeout_s + 1)
                release.wait(10)
                question.answer(PromptDecision(allow=True, mode=GrantMode.SESSION))
                answered.set()

            threading.Thread(target=answer_late, daemon=True).start()

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
    assert [(p.request.call_id, p.decision.reason) for p in person.ended] == [("c1", "timeout")]

    release.set()  # the person clicks "allow" after the countdown ended
    assert answered.wait(5)
    for _ in range(100):
        events = [json.loads(line)["event"] for line in audit_path.read_text().splitlines()]
        if "PERMISSION_LATE_ANSWER" in events:
            break
        threading.Event().wait(0.02)
    assert "PERMISSION_LATE_ANSWER" in events
    assert broker.grants.live() == []  # the late "allow" granted nothing


# --- the question: one future, the first end wins ----------------------------------------------
#
# The broker asks through one PermissionQuestion and waits on it; these drive it the way a front
# end does, with the broker's ManualClock moved instead of any sleeping.


def _asking_in_background(broker: PermissionBroker, docs: Path, calls: int = 1, stop=None):
    """`calls` authorisations of distinct calls on one worker thread (as the session's worker
    asks); their outcomes in a list, and the thread (already started)."""
    from tools.stop import stopping

    outcomes: list[object] = []

    def run() -> None:
        with stopping(stop):
            for n in range(calls):
                try:
                    outcomes.append(authorize(broker, docs, docs / "a.txt", call_id=f"c{n}"))
                except Exception as exc:
                    outcomes.append(exc)

    worker = threading.Thread(target=run, name="session-worker", daemon=True)
    worker.start()
    return outcomes, worker


def test_a_click_before_the_deadline_wins_and_the_deadline_passing_later_changes_nothing():
    clock = ManualClock()
    question = PermissionQuestion(_request(), clock)
    clock.advance(59.0)
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.ONCE)) is True
    clock.advance(5.0)  # the countdown would have ended here
    decision = question.wait()
    assert (decision.allow, decision.mode, decision.reason) == (True, GrantMode.ONCE, "user")
    assert question.cancel("timeout") is False
    assert question.decision == decision


def test_the_deadline_before_a_click_wins_and_the_click_is_kept_as_late_but_not_used():
    clock = ManualClock()
    late: list[PromptDecision] = []
    question = PermissionQuestion(_request(), clock, on_late=late.append)
    clock.advance(60.0)
    assert question.wait().reason == "timeout"
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.ALWAYS)) is False
    assert question.decision is not None
    assert question.decision.allow is False
    assert question.late is not None
    assert question.late.mode is GrantMode.ALWAYS
    assert [d.mode for d in late] == [GrantMode.ALWAYS]


def test_an_allow_given_after_the_deadline_with_nobody_waiting_yet_grants_nothing():
    # Nobody has looked at the clock since the deadline passed (no tick, no wait): the answer
    # itself must find the question over.
    clock = ManualClock()
    late: list[PromptDecision] = []
    question = PermissionQuestion(_request(), clock, on_late=late.append)
    clock.advance(60.5)
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.SESSION)) is False
    decision = question.wait()
    assert (decision.allow, decision.reason) == (False, "timeout")
    assert [d.mode for d in late] == [GrantMode.SESSION]


def test_a_late_deny_does_not_hide_a_late_allow_from_the_record():
    clock = ManualClock()
    late: list[PromptDecision] = []
    question = PermissionQuestion(_request(), clock, on_late=late.append)
    clock.advance(61.0)
    assert question.wait().reason == "timeout"
    question.answer(PromptDecision(allow=False))
    question.answer(PromptDecision(allow=True, mode=GrantMode.ONCE))
    assert [d.allow for d in late] == [True]
    assert question.late is not None
    assert question.late.allow


def test_a_late_answer_that_cannot_be_recorded_does_not_reach_the_front_end():
    def broken(_decision: PromptDecision) -> None:
        raise OSError(28, "No space left on device")

    clock = ManualClock()
    question = PermissionQuestion(_request(), clock, on_late=broken)
    clock.advance(61.0)
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.ONCE)) is False
    assert question.decision is not None
    assert not question.decision.allow


def test_a_click_after_the_countdown_grants_nothing_and_is_audited_as_late(tmp_path, docs):
    from tests.support.prompts import HeldQuestions

    held = HeldQuestions()
    broker, clock = make_broker(tmp_path, held, timeout=30.0)
    outcomes, worker = _asking_in_background(broker, docs)
    question = held.question(0)
    clock.advance(30.0)  # nobody clicked in time
    worker.join(10)
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.SESSION)) is False
    (outcome,) = outcomes
    assert isinstance(outcome, Denial)
    assert outcome.status == "timeout"
    assert broker.grants.live() == []
    assert "PERMISSION_LATE_ANSWER" in events(tmp_path)
    # The next call is asked about again: the late "session" left nothing behind.
    outcomes, worker = _asking_in_background(broker, docs)
    held.question(1).answer(PromptDecision(allow=False))
    worker.join(10)
    assert isinstance(outcomes[0], Denial)


def test_stop_ends_an_open_question_and_the_turn(tmp_path, docs):
    from tests.support.prompts import HeldQuestions
    from tools.stop import Stopped, StopSignal

    held = HeldQuestions()
    broker, _ = make_broker(tmp_path, held)
    stop = StopSignal()
    outcomes, worker = _asking_in_background(broker, docs, stop=stop)
    question = held.question(0)
    stop.stop()
    worker.join(10)
    assert [type(o) for o in outcomes] == [Stopped]
    assert question.decision is not None
    assert question.decision.reason == "cancelled"
    assert question.answer(PromptDecision(allow=True, mode=GrantMode.ONCE)) is False
    assert broker.grants.live() == []


def test_a_question_answered_from_another_thread_completes_the_brokers_wait(tmp_path, docs):
    from tests.support.prompts import HeldQuestions

    held = HeldQuestions()
    broker, _ = make_broker(tmp_path, held)

    def person() -> None:
        held.question(0).answer(PromptDecision(allow=True, mode=GrantMode.ONCE))

    answering = threading.Thread(target=person, name="front-end", daemon=True)
    answering.start()
    outcome = authorize(broker, docs, docs / "a.txt")  # waits here, on this thread
    answering.join(10)
    assert isinstance(outcome, PermissionToken)
    assert [g.mode for g in broker.grants.live()] == [GrantMode.ONCE]


def test_no_thread_is_started_for_a_question_answered_by_rules(tmp_path, docs):
    seen: list[int] = []

    class Counting(RulePrompter):
        def decide(self, request: PermissionRequest) -> PromptDecision:
            seen.append(threading.active_count())
            return PromptDecision(allow=True, mode=GrantMode.ONCE, reason="rule")

    broker, _ = make_broker(tmp_path, Counting())
    before = threading.active_count()
    for n in range(20):
        assert isinstance(authorize(broker, docs, docs / "a.txt", call_id=f"c{n}"), PermissionToken)
    assert seen == [before] * 20
    assert threading.active_count() == before


def test_no_thread_is_started_for_a_question_a_front_end_answers_later(tmp_path, docs):
    from tests.support.prompts import HeldQuestions

    held = HeldQuestions()
    broker, _ = make_broker(tmp_path, held)
    before = threading.active_count()
    outcomes, worker = _asking_in_background(broker, docs, calls=20)
    counts = []
    for n in range(20):
        question = held.question(n)
        counts.append(threading.active_count())  # while the broker waits on it
        question.answer(PromptDecision(allow=True, mode=GrantMode.ONCE))
    worker.join(10)
    assert len(outcomes) == 20
    assert all(isinstance(o, PermissionToken) for o in outcomes)
    # The one worker that asks (the session's), and no thread of any question's own.
    assert counts == [before + 1] * 20


# --- grants shared between processes ----------------------------------------------------------
#
# The app, `chamberlain ask` and `chamberlain grants` run at the same time on one home. Each test
# here has the real CLI (or a second Python process) change grants.json while a store or a whole
# Session in this test process holds grants of its own.


class CountingPrompter(RulePrompter):
    """The person: answers every prompt with `mode` (None: "deny") and counts the questions."""

    def __init__(self, mode: GrantMode | None) -> None:
        self.mode = mode
        self.asked = 0

    def decide(self, request: PermissionRequest) -> PromptDecision:
        self.asked += 1
        if self.mode is None:
            return PromptDecision(allow=False)
        return PromptDecision(allow=True, mode=self.mode)


def _session_in(user: Path, prompter: CountingPrompter):
    from broker.session import Session
    from broker.settings import Settings

    return Session(home=user / ".chamberlain", settings=Settings(), prompter=prompter)


def _read_plan(session, user: Path):
    turn = session.ask(f"read {user}/Documents/plan.txt")
    (call,) = turn.tool_calls
    return call.status, turn.reply


def _audit_lines(user: Path) -> list[dict]:
    import json

    path = user / ".chamberlain" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_revoke_all_from_the_cli_ends_the_apps_session_grant_before_its_next_tool_call(
    tmp_path,
):
    from tests.support.cli import make_user, run_cli

    user = make_user(tmp_path / "user")
    person = CountingPrompter(GrantMode.SESSION)
    session = _session_in(user, person)
    try:
        assert _read_plan(session, user)[0] == "ok"
        assert _read_plan(session, user)[0] == "ok"
        assert person.asked == 1  # the session grant covered the second read

        revoked = run_cli(user, "grants", "revoke-all", "--yes")
        assert revoked.returncode == 0, revoked.stderr

        person.mode = None  # asked again now, the person says no
        status, reply = _read_plan(session, user)
        assert person.asked == 2
        assert status == "denied"
        assert "Buy milk" not in reply
    finally:
        session.close()
    ended = [
        e for e in _audit_lines(user) if e["event"] == "PERMISSION_REVOKED" and e["data"]["why"]
    ]
    assert [e["data"]["why"] for e in ended] == ["revoke-all in another Chamberlain process"]
    assert ended[0]["data"]["mode"] == "session"


def test_a_grant_revoked_by_the_cli_is_neither_used_nor_written_back_by_the_running_app(tmp_path):
    import json

    from tests.support.cli import make_user, run_cli

    user = make_user(tmp_path / "user")
    person = CountingPrompter(GrantMode.ALWAYS)
    session = _session_in(user, person)
    try:
        assert _read_plan(session, user)[0] == "ok"
        path = user / ".chamberlain" / "grants.json"
        (saved,) = json.loads(path.read_text())

        revoked = run_cli(user, "grants", "revoke", saved["id"])
        assert revoked.returncode == 0, revoked.stderr
        assert json.loads(path.read_text()) == []

        person.mode = None
        assert _read_plan(session, user)[0] == "denied"
        assert person.asked == 2
        # The app saves another grant: the revoked one does not come back with it.
        person.mode = GrantMode.ALWAYS
        session.ask(f"list files in {user}/Documents")
        assert saved["id"] not in {e["id"] for e in json.loads(path.read_text())}
        assert saved["id"] not in {g.id for g in session.permissions.grants.live()}
    finally:
        session.close()


def test_a_grant_the_cli_saved_while_the_app_runs_is_kept_when_the_app_saves_its_own(tmp_path):
    """Before grants were shared, the app wrote the table it loaded at start over the file,
    erasing what `chamberlain ask --approve …=always` had saved meanwhile."""
    import json

    from tests.support.cli import make_user, run_cli

    user = make_user(tmp_path / "user")
    (user / "Projects").mkdir()
    (user / "Projects" / "todo.txt").write_text("ship it\n")
    person = CountingPrompter(GrantMode.ALWAYS)
    session = _session_in(user, person)
    try:
        session.ask("hello")  # the app is up, its grants read
        cli = run_cli(
            user,
            "ask",
            f"list files in {user}/Projects",
            "--approve",
            "file_read=always",
            "--llm",
            "none",
        )
        assert cli.returncode == 0, cli.stderr
        # The app sees the CLI's grant without a restart: no question for ~/Projects.
        turn = session.ask(f"read {user}/Projects/todo.txt")
        assert [c.status for c in turn.tool_calls] == ["ok"]
        assert person.asked == 0
        assert _read_plan(session, user)[0] == "ok"
        assert person.asked == 1
    finally:
        session.close()
    saved = json.loads((user / ".chamberlain" / "grants.json").read_text())
    assert {e["scope"] for e in saved} == {
        str(user / "Projects"),
        str(user / "Documents" / "plan.txt"),
    }


_SAVE_MANY = """
import sys
from pathlib import Path
from core.clock import SystemClock
from broker.permissions import GrantStore
from broker.types import Grant, GrantMode
from tools.manual import Capability

path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = GrantStore(path, SystemClock(), key=b"g" * 32)
sys.stdout.write("ready\\n")
sys.stdout.flush()
sys.stdin.readline()  # both start writing together
for i in range(count):
    store.add(Grant(id=f"g-{name}-{i}", capability=Capability.FILE_READ, scope=f"/{name}/{i}",
                    mode=GrantMode.ALWAYS, issued_at=0.0))
"""


def test_two_processes_saving_grants_at_once_lose_none_of_them(tmp_path):
    """Every save is a read-modify-write under the lock: the last writer never erases what the
    other saved between its read and its write."""
    import json
    import subprocess
    import sys

    from tests.support.cli import REPO

    path = tmp_path / "grants.json"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _SAVE_MANY, str(path), name, "40"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("app", "cli")
    ]
    try:
        for writer in writers:
            assert writer.stdout is not None
            assert writer.stdout.readline() == "ready\n"
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.close()
        assert [w.wait(timeout=60) for w in writers] == [0, 0]
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    ids = {e["id"] for e in json.loads(path.read_text())}
    assert ids == {f"g-{name}-{i}" for name in ("app", "cli") for i in range(40)}
    reader = GrantStore(path, ManualClock(), key=GRANTS_KEY)
    assert len(reader.live()) == 80
    assert reader.problems == []


def test_a_revoke_all_in_another_process_ends_this_ones_session_grants_and_says_so_once(tmp_path):
    from broker.types import Grant

    clock = ManualClock()
    here = GrantStore(tmp_path / "grants.json", clock, key=GRANTS_KEY)
    grant = Grant(
        id="g-here",
        capability=Capability.FILE_READ,
        scope=str(tmp_path),
        mode=GrantMode.SESSION,
        issued_at=clock.now(),
    )
    here.add(grant)
    GrantStore(tmp_path / "grants.json", clock, key=GRANTS_KEY).revoke_all()  # "elsewhere"
    assert here.find(Capability.FILE_READ, [str(tmp_path / "a.txt")]) is None
    assert [g.id for g in here.pop_revoked_elsewhere()] == ["g-here"]
    assert here.pop_revoked_elsewhere() == []
    # A grant given after the revoke-all is not ended by it.
    here.add(grant.model_copy(update={"id": "g-after"}))
    assert [g.id for g in here.live()] == ["g-after"]


def test_a_grants_file_damaged_while_running_grants_nothing_and_is_never_overwritten(tmp_path):
    from broker.types import Grant

    clock = ManualClock()
    path = tmp_path / "grants.json"
    store = GrantStore(path, clock, key=GRANTS_KEY)
    saved = Grant(
        id="g-saved",
        capability=Capability.FILE_READ,
        scope=str(tmp_path),
        mode=GrantMode.ALWAYS,
        issued_at=clock.now(),
    )
    store.add(saved)
    path.write_text('[{"id": "g-saved", "cut sho')
    assert store.find(Capability.FILE_READ, [str(tmp_path / "a.txt")]) is None
    assert "cannot read the saved permissions" in store.problems[0]
    # A new "always" grant lasts this process, and the damaged file stays as it was.
    store.add(saved.model_copy(update={"id": "g-new"}))
    assert [g.id for g in store.live()] == ["g-new"]
    assert path.read_text() == '[{"id": "g-saved", "cut sho'
    with pytest.raises(PermissionStoreError, match="fix or remove the file"):
        store.revoke_all()
    assert path.read_text() == '[{"id": "g-saved", "cut sho'


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can write as another user"
)
def test_root_changing_grants_in_a_users_home_leaves_the_files_to_that_user(tmp_path):
    """`sudo chamberlain grants revoke-all` on a person's home: a root-owned 0600 grants.json
    would refuse that person every saved grant from then on."""
    from broker.types import Grant

    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    store = GrantStore(home / "grants.json", ManualClock(), key=GRANTS_KEY)
    store.add(
        Grant(
            id="g-1",
            capability=Capability.FILE_READ,
            scope=str(tmp_path),
            mode=GrantMode.ALWAYS,
            issued_at=0.0,
        )
    )
    store.revoke_all()
    for name in ("grants.json", "grants.json.lock"):
        st = (home / name).stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o600), name


# --- what the request carries: the plan, one deadline, whether "always" is offered -----------


def test_a_request_carries_the_calls_plan_and_a_deadline_on_the_brokers_clock_that_settings_move(
    tmp_path, docs
):
    from tools.manual import CallPlan

    prompter = ScriptedPrompter(PromptDecision(allow=True, mode=GrantMode.ONCE))
    clock = ManualClock(1_900_000_000.0)
    broker, _ = make_broker(tmp_path, prompter, clock=clock, timeout=60.0)
    plan = CallPlan(files=(str(docs / "a.txt"),))
    broker.authorize(
        tool="file_read",
        capability=Capability.FILE_READ,
        arguments={"path": str(docs / "a.txt")},
        targets=[str(docs / "a.txt")],
        call_id="c1",
        user_scopes=[],
        plan=plan,
    )
    broker.prompt_timeout_s = 20.0  # what the Settings window does on save
    clock.advance(5)
    authorize(broker, docs, docs / "a.txt", call_id="c2", user_scopes=[])
    first, second = prompter.asked
    assert first.plan == plan
    assert (first.asked_at, first.deadline, first.timeout_s) == (
        1_900_000_000.0,
        1_900_000_060.0,
        60.0,
    )
    assert (second.asked_at, second.deadline, second.timeout_s) == (
        1_900_000_005.0,
        1_900_000_025.0,
        20.0,
    )
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    asked = [x["data"]["timeout_s"] for x in lines if x["data"].get("outcome") == "ask"]
    assert asked == [60.0, 20.0]


def test_always_is_not_offered_for_a_secret_looking_path_and_an_always_rule_lasts_the_session(
    tmp_path, docs
):
    notes = docs / "notes"
    notes.mkdir()
    secret = notes / "Password ideas.md"
    secret.write_text("x")
    rule = PromptDecision(allow=True, mode=GrantMode.ALWAYS, reason="rule")
    prompter = ScriptedPrompter(rule)
    broker, _ = make_broker(tmp_path, prompter)
    token = authorize(broker, docs, secret, user_scopes=[])
    assert not isinstance(token, Denial)
    (request,) = prompter.asked
    assert "looks like it holds a password" in request.always_unavailable
    (grant,) = broker.grants.live()
    assert grant.mode is GrantMode.SESSION
    saved = tmp_path / "grants.json"
    assert not saved.exists() or "Password" not in saved.read_text()


def test_always_is_offered_for_an_ordinary_file_and_not_for_the_highest_risk(tmp_path, docs):
    prompter = ScriptedPrompter(PromptDecision(allow=False))
    broker, _ = make_broker(tmp_path, prompter)
    authorize(broker, docs, docs / "a.txt", user_scopes=[])
    broker.authorize(
        tool="file_write",
        capability=Capability.FILE_WRITE,
        arguments={"path": str(docs / "a.txt")},
        targets=[str(docs / "a.txt")],
        call_id="c2",
        user_scopes=[],
        risk="dangerous",
    )
    ordinary, risky = prompter.asked
    assert ordinary.always_unavailable == ""
    assert "high-risk" in risky.always_unavailable
