"""A password typed into a command line never reaches the audit log; the rest stays readable.

`redact()` is checked on a corpus of command-line shapes and of ordinary commands that must come
through unchanged; then typed commands go through a real Session (and once through the real CLI
in a subprocess) and every byte under the Chamberlain home is searched for the secret.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.audit.redaction import REDACTED, redact
from broker.audit.verify import verify
from broker.permissions import PermissionRequest, PromptDecision
from broker.session import Session
from broker.settings import Settings
from broker.types import GrantMode
from core.clock import ManualClock
from tests.support.cli import make_user, run_cli

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


class AllowOnce:
    def ask(self, request: PermissionRequest) -> PromptDecision:
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
