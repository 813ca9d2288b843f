"""What an event's data becomes before it is written (broker/audit/redaction.py).

Secret-looking keys and values are blanked, bytes digested, long or deep data capped, and a
password typed into a command line never reaches the audit log while the rest stays readable.
`redact()` is checked on a corpus of command-line shapes and of ordinary commands that must come
through unchanged; then typed commands go through a real Session (and once through the real CLI
in a subprocess) and every byte under the Chamberlain home is searched for the secret.
"""

from __future__ import annotations

import hashlib
import random
import string
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from broker.audit.events import AuditEvent
from broker.audit.redaction import MAX_STRING, REDACTED, digest, redact
from broker.audit.verify import verify
from broker.audit.writer import AuditLog
from broker.permissions import PermissionRequest, PromptDecision, RulePrompter
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.support.audit_log import (
    lines_of,
)
from tests.support.cli import make_user, run_cli

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MkQx\n"
    "-----END RSA PRIVATE KEY-----"
)


SECRET_VALUES = {
    "openai": "sk-proj-4fT9qLm2ZxV8cR1bN7hK3sD6",
    "bearer": "Bearer xyz",
    "pem": PEM,
    "hex": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "base64": "dGhpcyBpcyBub3QgYSByZWFsIGtleSBidXQgbG9va3MgbGlrZSBvbmU9PQ==",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
}


def test_secret_looking_keys_are_redacted_at_any_depth() -> None:
    data = {
        "password": "hunter2",
        "DB_Passwd": 1234,
        "X-Api-Key": "k",
        "apiKey": "k",
        "Authorization": "Basic abc",
        "cookie": {"a": 1},
        "ssh_private_key": "k",
        "credentials": ["a"],
        "client_secret": "s",
        "session_token": "t",
        "nested": [{"auth_token": "t", "ok": "fine"}],
    }
    out = redact(data)
    assert isinstance(out, dict)
    for key in data:
        if key != "nested":
            assert out[key] == REDACTED, key
    assert out["nested"] == [{"auth_token": REDACTED, "ok": "fine"}]


def test_token_id_is_kept_but_only_under_that_exact_key() -> None:
    token_id = "3f2a9c4e8b7d6a5f4e3d2c1b0a998877"  # 32 hex: would look random anywhere else
    out = redact({"token_id": token_id, "tokenId": token_id, "token": token_id})
    assert out == {"token_id": token_id, "tokenId": REDACTED, "token": REDACTED}


@pytest.mark.parametrize("name", sorted(SECRET_VALUES))
def test_secret_looking_values_are_redacted(name: str) -> None:
    secret = SECRET_VALUES[name]
    out = redact({"note": secret, "inside": f"before {secret} after", "list": [secret]})
    assert out == {
        "note": REDACTED,
        "inside": f"before {REDACTED} after",
        "list": [REDACTED],
    }


def test_secrets_inside_commands_and_urls_are_redacted_around_the_rest() -> None:
    out = redact(
        {
            "command": "mysql --password=hunter2 -h db",
            "url": "https://alice:s3cret@example.org/x",
        }
    )
    assert out == {
        "command": f"mysql --password={REDACTED} -h db",
        "url": f"https://{REDACTED}@example.org/x",
    }


def test_random_base64_keys_are_redacted() -> None:
    rng = random.Random(20270115)
    alphabet = string.ascii_letters + string.digits + "-_"
    keys = ["".join(rng.choice(alphabet) for _ in range(43)) for _ in range(300)]
    kept = [k for k in keys if redact(k) != REDACTED]
    assert len(kept) <= 3, kept  # a heuristic: measured miss rate about 0.2% at this length


@pytest.mark.parametrize(
    "value",
    [
        "/home/alice/Documents/Projects/Chamberlain/broker/audit.py",
        "C:/Users/Alice/AppData/Local/Programs/Python/Python311/Lib",
        "ThisIsAVeryLongCamelCaseIdentifierName",
        "123e4567-e89b-12d3-a456-426614174000",
        "--------------------------------------------",
        "please summarise the file in my downloads folder",
    ],
)
def test_ordinary_values_are_not_redacted(value: str) -> None:
    assert redact(value) == value


def test_digests_survive_redaction() -> None:
    d = digest("some file contents")
    assert redact({"content": d, "args_digest": d["sha256"]}) == {
        "content": d,
        "args_digest": d["sha256"],
    }


def test_secrets_never_reach_the_file(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.TOOL_CALL_START, "t", api_key="hunter2-key", **SECRET_VALUES)
    raw = log_path.read_text()
    assert "hunter2-key" not in raw
    for secret in SECRET_VALUES.values():
        assert secret not in raw
    assert "MIIEowIBAAKCAQEA" not in raw
    assert verify(log_path).ok


def test_digest() -> None:
    assert digest("hello") == {
        "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        "len": 5,
    }
    assert digest("é") == {"sha256": hashlib.sha256("é".encode()).hexdigest(), "len": 1}
    assert digest(b"\x00\x01") == {"sha256": hashlib.sha256(b"\x00\x01").hexdigest(), "len": 2}


def test_bytes_are_digested_not_written() -> None:
    assert redact({"out": b"file body"}) == {"out": digest(b"file body")}


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_non_json_values_become_strings(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        record = audit.append(
            AuditEvent.EXECUTOR_RESPONSE,
            path=Path("/tmp/x"),
            when=datetime(2027, 1, 1, tzinfo=UTC),
            tags={"b", "a"},
            pair=(1, 2),
            ratio=float("nan"),
            event=AuditEvent.POSTHOOK_SUMMARY,
            odd=_Unprintable(),
        )
    assert record["data"] == {
        "path": "/tmp/x",
        "when": "2027-01-01 00:00:00+00:00",
        "tags": ["a", "b"],
        "pair": [1, 2],
        "ratio": "nan",
        "event": "POSTHOOK_SUMMARY",
        "odd": "<unprintable _Unprintable>",
    }
    assert verify(log_path).ok


def test_long_values_are_capped(log_path: Path, clock: ManualClock) -> None:
    with AuditLog(log_path, clock) as audit:
        record = audit.append(
            AuditEvent.POSTHOOK_SUMMARY,
            summary="word " * 10_000,
            many=list(range(1_000)),
            wide={f"k{i}": i for i in range(1_000)},
        )
    data = record["data"]
    assert len(data["summary"]) < MAX_STRING + 50
    assert data["summary"].endswith("...[truncated, 50000 chars]")
    assert len(data["many"]) == 101
    assert data["many"][-1] == "[... 900 more items]"
    assert len(data["wide"]) == 101
    assert max(len(raw) for raw in lines_of(log_path)) < 10_000


def test_deep_or_huge_data_cannot_bloat_one_event(log_path: Path, clock: ManualClock) -> None:
    deep: Any = "bottom"
    for _ in range(50):
        deep = [deep]
    huge = {f"k{i}": "x" * 1_999 for i in range(100)}
    with AuditLog(log_path, clock) as audit:
        audit.append(AuditEvent.POLICY_DECISION, deep=deep)
        record = audit.append(AuditEvent.POLICY_DECISION, huge=huge)
    assert "[too deeply nested]" in log_path.read_text()
    assert record["data"]["oversize"] is True
    assert max(len(raw) for raw in lines_of(log_path)) < 70_000
    assert verify(log_path).ok


SECRET = "Hunter2Secret"


R = REDACTED


COMMANDS_WITH_SECRETS = [
    # (typed, as the audit must show it)
    (f"curl -u admin:{SECRET} https://x", f"curl -u admin:{R} https://x"),
    (f"curl -sSu admin:{SECRET} https://x", f"curl -sSu admin:{R} https://x"),
    (f"curl --user=admin:{SECRET} https://x", f"curl --user=admin:{R} https://x"),
    (f"curl --user 'admin:{SECRET} 2' https://x", f"curl --user 'admin:{R}' https://x"),
    (f"curl --proxy-user bob:{SECRET} https://x", f"curl --proxy-user bob:{R} https://x"),
    (f"mysql -u root -p{SECRET} shop", f"mysql -u root -p{R} shop"),
    (f"mysqldump -p{SECRET} shop", f"mysqldump -p{R} shop"),
    (f"mysql --password={SECRET} -h db", f"mysql --password={R} -h db"),
    (f"sshpass -p {SECRET} ssh host", f"sshpass -p {R} ssh host"),
    (f"sshpass -p{SECRET} ssh -p 2222 host", f"sshpass -p{R} ssh -p 2222 host"),
    (f"git clone https://user:{SECRET}@host/r", f"git clone https://{R}@host/r"),
    (f"gh auth login --token {SECRET}", f"gh auth login --token {R}"),
    (f"tool --api-key {SECRET} --verbose", f"tool --api-key {R} --verbose"),
    (f"tool --api_key={SECRET}", f"tool --api_key={R}"),
    (f"tool --client-secret '{SECRET} x'", f"tool --client-secret {R}"),
    (f"npm publish --authToken {SECRET}", f"npm publish --authToken {R}"),
    (f"wget --http-password {SECRET} https://x", f"wget --http-password {R} https://x"),
    (f"docker login --password {SECRET} reg", f"docker login --password {R} reg"),
    (
        f"curl -H 'Authorization: Bearer {SECRET}' https://x",
        f"curl -H 'Authorization: {R} https://x",
    ),
    (f"PGPASSWORD={SECRET} psql -h db", f"PGPASSWORD={R} psql -h db"),
    (f"MYSQL_PWD={SECRET} mysql", f"MYSQL_PWD={R} mysql"),
    (f"openssl enc -d -in f -passin pass:{SECRET}", f"openssl enc -d -in f -passin {R}"),
    (f"redis-cli -a {SECRET} ping", f"redis-cli -a {R} ping"),
    (f"ldapsearch -x -D cn=admin -w {SECRET}", f"ldapsearch -x -D cn=admin -w {R}"),
    (f"smbclient //nas/share -U alice%{SECRET}", f"smbclient //nas/share -U alice%{R}"),
    (f"unzip -P {SECRET} a.zip", f"unzip -P {R} a.zip"),
    (f"7z x -p{SECRET} a.7z", f"7z x -p{R} a.7z"),
    (f"keytool -list -storepass {SECRET}", f"keytool -list -storepass {R}"),
    # As a permission scope or target shows it: a prefix, and shlex quoting.
    (f"command:curl -u admin:{SECRET} https://x", f"command:curl -u admin:{R} https://x"),
    (f"command:mysql '-p{SECRET}!' shop", f"command:mysql '-p{R}' shop"),
    # After a pipe, the next program's options are its own.
    (f"ps -p 1 | sshpass -p {SECRET} ssh h", f"ps -p 1 | sshpass -p {R} ssh h"),
]


ORDINARY_COMMANDS = [
    "ls -la ~/Documents",
    "ps -p 123",
    "ps -u root -p 1,2",
    "cut -d: -f1 /etc/passwd",
    "grep -u pattern file",
    "sort -u names.txt",
    "ssh -p 2222 host",
    "docker run -p 8080:80 -u 1000:1000 nginx",
    "mysql -p shop",  # -p alone: mysql asks for the password; `shop` is the database
    "mysql -u root -p",
    "curl -u admin https://x",  # a user name only: curl asks for the password
    "curl -o out.html https://example.org/page",
    "psql --no-password -h db",
    "docker login --password-stdin reg",
    "tool --token-file ~/token.txt",
    "git log --pretty=format:%H -n 3",
    "find . -name '*.py' | xargs grep -n password",
    "echo boarding pass: gate 12",
    "ls /var/lib/mysql -la",
    "tar --exclude=secrets -czf a.tgz dir",
]


@pytest.mark.parametrize(("typed", "shown"), COMMANDS_WITH_SECRETS)
def test_a_secret_in_a_command_line_is_blanked_and_the_rest_kept(typed: str, shown: str) -> None:
    assert redact(typed) == shown
    assert redact({"command": typed, "targets": [typed]}) == {
        "command": shown,
        "targets": [shown],
    }


@pytest.mark.parametrize("command", ORDINARY_COMMANDS)
def test_an_ordinary_command_line_is_left_as_it_is(command: str) -> None:
    assert redact(command) == command


class AllowOnce(RulePrompter):
    def decide(self, request: PermissionRequest) -> PromptDecision:
        return PromptDecision(allow=True, mode=GrantMode.ONCE)


def files_holding(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]


TYPED = [
    f"curl -u admin:{SECRET} https://example.invalid",
    f"mysql -u root -p{SECRET} shop",
    f"mysql --password={SECRET} shop",
    f"sshpass -p {SECRET} ssh host",
    f"git clone https://user:{SECRET}@example.invalid/r",
    f"gh auth login --token {SECRET}",
    f"tool --api-key {SECRET}",
    f"curl -H 'Authorization: Bearer {SECRET}' https://example.invalid",
]


def test_a_secret_typed_in_a_command_is_in_no_file_of_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = Session(home=home, settings=Settings(), clock=ManualClock(), prompter=AllowOnce())
    for command in TYPED:
        session.ask(f"run `{command}`")
    session.audit.close()

    assert files_holding(home, SECRET.encode()) == []
    text = session.audit.path.read_text()
    assert f"curl -u admin:{R} https://example.invalid" in text
    assert f"mysql -u root -p{R} shop" in text
    assert verify(session.audit.path, key=session.secret.audit_key).ok


def test_through_the_cli_the_secret_reaches_no_file_and_every_audited_copy_is_blanked(
    tmp_path: Path,
) -> None:
    user = make_user(tmp_path / "user")
    typed = f"curl -u admin:{SECRET} https://example.invalid"
    run_cli(user, "ask", f"run `{typed}`", "--approve", "system_execute=once", "--llm", "none")

    home = user / ".chamberlain"
    assert files_holding(home, SECRET.encode()) == []
    text = (home / "audit.jsonl").read_text()
    # The router's arguments, and (where the command got as far as a permission) the scope.
    assert text.count(f"curl -u admin:{R} https://example.invalid") >= 1
