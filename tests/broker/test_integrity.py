"""Chamberlain's own files keep their integrity: saved grants and the audit head carry MACs.

Real sessions on a real home under tmp_path (its install secret in `token.key`, as on a machine
with no keyring), real files edited the way a person or a stray program would edit them, and the
real CLI in a subprocess where the user-facing report is under test. No fakes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from broker.audit.events import AuditEvent
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from broker.keys import load_install_secret
from broker.permissions import DenyPrompter, PermissionRequest, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.support.cli import make_user, run_cli


class AllowAlways(RulePrompter):
    """The user answers every permission prompt with "always"."""

    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=True, mode=GrantMode.ALWAYS)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "plan.txt").write_text("Buy milk\n")
    (folder / "notes.txt").write_text("Call the bank\n")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file no grant was ever given for."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    path = folder / "diary.txt"
    path.write_text("Dear diary\n")
    return path


def open_session(tmp_path: Path, prompter: Any = None) -> Session:
    return Session(
        home=tmp_path / "home",
        settings=Settings(),
        clock=ManualClock(),
        prompter=prompter or DenyPrompter(),
    )


def planted_grant(grant_id: str = "g-planted0001", scope: str = "/") -> dict[str, Any]:
    """An `always` grant written by hand, the way the file held grants before they had MACs."""
    return {
        "id": grant_id,
        "capability": "file_read",
        "scope": scope,
        "mode": "always",
        "issued_at": 1.0,
        "expires_at": None,
        "decided_by": "user",
        "tool_call_id": None,
        "args_digest": None,
        "revoked": False,
    }


# --- grants.json ---------------------------------------------------------------------------------


def test_a_grant_planted_in_grants_json_is_not_honoured(tmp_path, outside):
    home = tmp_path / "home"
    home.mkdir()
    forged = {**planted_grant("g-forged000002"), "mac": "ab" * 32}
    (home / "grants.json").write_text(json.dumps([planted_grant(), forged]))

    session = open_session(tmp_path)
    turn = session.ask(f"read {outside}")

    assert [c.status for c in turn.tool_calls] == ["denied"]
    assert "Dear diary" not in turn.reply
    assert session.permissions.grants.live() == []
    assert session.permissions.grants.problems == [
        "grants.json holds a grant Chamberlain did not write (g-planted0001): it was ignored "
        "(it carries no MAC)",
        "grants.json holds a grant Chamberlain did not write (g-forged000002): it was ignored "
        "(its MAC does not match)",
    ]


def test_editing_the_scope_of_a_saved_grant_makes_it_refused(tmp_path, docs, outside):
    open_session(tmp_path, AllowAlways()).ask(f"read {docs}/plan.txt")
    path = tmp_path / "home" / "grants.json"
    [saved] = json.loads(path.read_text())
    saved["scope"] = "/"
    path.write_text(json.dumps([saved]))

    session = open_session(tmp_path)
    for target in (outside, docs / "notes.txt"):
        turn = session.ask(f"read {target}")
        assert [c.status for c in turn.tool_calls] == ["denied"], target
    assert [u.id for u in session.permissions.grants.untrusted] == [saved["id"]]


def test_a_grant_chamberlain_saved_still_works_in_a_new_session(tmp_path, docs):
    first = open_session(tmp_path, AllowAlways()).ask(f"list files in {docs}")
    assert [c.status for c in first.tool_calls] == ["ok"]

    session = open_session(tmp_path)  # nobody to ask: only the saved grant can allow it
    turn = session.ask(f"read {docs}/notes.txt")
    assert [c.status for c in turn.tool_calls] == ["ok"]
    assert "Call the bank" in turn.reply
    assert session.permissions.grants.problems == []


def test_a_grant_copied_from_another_home_is_refused(tmp_path, docs):
    open_session(tmp_path, AllowAlways()).ask(f"read {docs}/plan.txt")
    other = tmp_path / "other"
    other.mkdir()
    (other / "home").mkdir()
    (other / "home" / "grants.json").write_bytes((tmp_path / "home" / "grants.json").read_bytes())

    session = open_session(other)
    turn = session.ask(f"read {docs}/notes.txt")
    assert [c.status for c in turn.tool_calls] == ["denied"]
    assert len(session.permissions.grants.untrusted) == 1


def test_saving_a_new_grant_keeps_the_refused_entry_in_the_file_as_evidence(tmp_path, docs):
    home = tmp_path / "home"
    home.mkdir()
    planted = planted_grant()
    (home / "grants.json").write_text(json.dumps([planted]))

    open_session(tmp_path, AllowAlways()).ask(f"read {docs}/plan.txt")

    entries = json.loads((home / "grants.json").read_text())
    assert planted in entries
    assert len(entries) == 2
    assert [u.id for u in open_session(tmp_path).permissions.grants.untrusted] == [planted["id"]]


def test_the_cli_names_a_planted_grant_and_removes_it_only_when_asked(tmp_path):
    user = make_user(tmp_path / "user")
    granted = run_cli(
        user, "ask", "list files in ~/Documents", "--approve", "file_read=always", "--llm", "none"
    )
    assert granted.returncode == 0, granted.stderr
    path = user / ".chamberlain" / "grants.json"
    entries = json.loads(path.read_text())
    path.write_text(json.dumps([*entries, planted_grant()]))

    listed = run_cli(user, "grants", "list", "--json")
    assert listed.returncode == 0
    assert [g["id"] for g in json.loads(listed.stdout)] == [entries[0]["id"]]
    assert (
        "grants.json holds a grant Chamberlain did not write (g-planted0001): it was ignored"
        in listed.stderr
    )
    assert "g-planted0001" in path.read_text()  # reporting it did not rewrite the file

    removed = run_cli(user, "grants", "revoke", "g-planted0001")
    assert removed.returncode == 0, removed.stderr
    assert "g-planted0001" not in path.read_text()
    assert run_cli(user, "audit", "verify").returncode == 0  # the removal was audited, signed
    again = run_cli(user, "grants", "list", "--json")
    assert "did not write" not in again.stderr
    assert [g["id"] for g in json.loads(again.stdout)] == [entries[0]["id"]]


# --- the audit head ------------------------------------------------------------------------------


def audit_key(tmp_path: Path) -> bytes:
    return load_install_secret(tmp_path / "home").audit_key


def write_turns(tmp_path: Path, n: int = 3) -> Path:
    session = open_session(tmp_path)
    for _ in range(n):
        session.ask("tell me a joke")
    session.audit.close()
    return session.audit.path


def cut_and_rewrite_head(log: Path, drop: int) -> dict[str, Any]:
    """Drop the last lines and write a head that matches what is left, in the unsigned form."""
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-drop]))
    last = json.loads(lines[-drop - 1])
    head = json.dumps({"hash": last["hash"], "seq": last["seq"]}, separators=(",", ":"))
    log.with_name(log.name + ".head").write_text(head + "\n")
    return dict(last)


def test_a_session_signs_the_head_and_the_log_verifies(tmp_path):
    log = write_turns(tmp_path)
    key = audit_key(tmp_path)
    head = json.loads(log.with_name("audit.jsonl.head").read_text())
    assert set(head) == {"genesis", "hash", "mac", "seq"}
    result = verify(log, key=key)
    assert (result.ok, result.reason) == (True, "ok")
    # Without the key (the MACs cannot be checked) the chain still verifies.
    assert verify(log).ok


def test_cutting_the_log_short_and_rewriting_the_head_fails_verify(tmp_path):
    log = write_turns(tmp_path)
    cut_and_rewrite_head(log, drop=4)
    result = verify(log, key=audit_key(tmp_path))
    assert not result.ok
    assert "head file is not signed" in result.reason


def test_a_rewritten_head_that_keeps_the_old_mac_fails_verify(tmp_path):
    log = write_turns(tmp_path)
    head_path = log.with_name("audit.jsonl.head")
    signed = json.loads(head_path.read_text())
    last = cut_and_rewrite_head(log, drop=4)
    forged = {**signed, "seq": last["seq"], "hash": last["hash"]}
    head_path.write_text(json.dumps(forged, sort_keys=True, separators=(",", ":")) + "\n")
    result = verify(log, key=audit_key(tmp_path))
    assert not result.ok
    assert "MAC does not match" in result.reason


def test_a_head_signed_with_another_install_secret_fails_verify(tmp_path):
    log = write_turns(tmp_path)
    result = verify(log, key=b"x" * 32)
    assert not result.ok
    assert "signed with another install secret" in result.reason


def test_later_turns_do_not_hide_a_rewritten_head(tmp_path):
    log = write_turns(tmp_path)
    cut_and_rewrite_head(log, drop=4)
    write_turns(tmp_path, 2)
    result = verify(log, key=audit_key(tmp_path))
    assert not result.ok
    assert "tampered with" in result.reason
    assert "replaced" in result.reason


def test_deleting_the_log_and_its_head_fails_verify_then_and_after_later_turns(tmp_path):
    log = write_turns(tmp_path)
    log.unlink()
    log.with_name("audit.jsonl.head").unlink()
    key = audit_key(tmp_path)
    result = verify(log, key=key)
    assert not result.ok
    assert "deleted" in result.reason

    write_turns(tmp_path, 1)
    result = verify(log, key=key)
    assert not result.ok
    assert "the log and its head file were gone" in result.reason


def test_deleting_the_anchor_fails_verify(tmp_path):
    log = write_turns(tmp_path)
    log.with_name("audit.jsonl.anchor").unlink()
    result = verify(log, key=audit_key(tmp_path))
    assert not result.ok
    assert "anchor file is missing" in result.reason


def test_the_cli_verify_reports_a_cut_log_with_a_rewritten_head(tmp_path):
    user = make_user(tmp_path / "user")
    for _ in range(2):
        run_cli(
            user, "ask", "list files in ~/Documents", "--approve", "file_read=once", "--llm", "none"
        )
    assert run_cli(user, "audit", "verify").returncode == 0
    log = user / ".chamberlain" / "audit.jsonl"
    head = log.with_name("audit.jsonl.head")
    signed = json.loads(head.read_text())
    last = cut_and_rewrite_head(log, drop=3)
    proc = run_cli(user, "audit", "verify")
    assert proc.returncode == 1
    assert "audit log FAILED: the head file is not signed" in proc.stdout

    forged = {**signed, "seq": last["seq"], "hash": last["hash"]}
    head.write_text(json.dumps(forged, sort_keys=True, separators=(",", ":")) + "\n")
    proc = run_cli(user, "audit", "verify")
    assert proc.returncode == 1
    assert "the head file's MAC does not match" in proc.stdout


def test_a_torn_last_line_is_reported_as_a_cut_write_not_as_tampering(tmp_path):
    log = write_turns(tmp_path)
    with log.open("ab") as f:
        f.write(b'{"data":{},"ev')
    result = verify(log, key=audit_key(tmp_path))
    assert (result.ok, result.torn_tail, result.interrupted) == (False, True, True)
    assert "an append was interrupted (a crash or a full disk)" in result.reason
    assert "tamper" not in result.reason


def test_a_writer_that_died_before_its_head_update_is_repaired_not_flagged(tmp_path):
    log = write_turns(tmp_path, 1)
    head = log.with_name("audit.jsonl.head")
    before = head.read_bytes()
    key = audit_key(tmp_path)
    with AuditLog(log, ManualClock(), key=key) as audit:
        audit.append(AuditEvent.ROUTER_OUTPUT)
    head.write_bytes(before)  # as if the process died between the line and the head
    behind = verify(log, key=key)
    assert behind.ok
    assert "the head file not yet updated" in behind.reason
    write_turns(tmp_path, 1)
    result = verify(log, key=key)
    assert (result.ok, result.reason) == (True, "ok")


def test_a_log_from_before_signed_heads_is_adopted_and_verify_says_so(tmp_path):
    log = tmp_path / "home" / "audit.jsonl"
    with AuditLog(log, ManualClock()) as old:
        for _ in range(3):
            old.append(AuditEvent.ROUTER_OUTPUT)
    key = audit_key(tmp_path)
    before = verify(log, key=key)
    assert not before.ok
    assert "not signed" in before.reason

    with AuditLog(log, ManualClock(), key=key) as audit:
        audit.append(AuditEvent.ROUTER_OUTPUT)
    after = verify(log, key=key)
    assert after.ok
    assert "lines 1-3 were written before the audit head was signed" in after.reason
