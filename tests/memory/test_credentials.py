"""One credential detector, one corpus: what memory refuses to remember, the audit blanks.

`memory/credentials.py` finds credential values in text; memory refuses a fact holding any
(`refuse_credentials`) and the audit log blanks each one (`broker.audit.redaction.redact`).
Every example below goes through both real callers, and they must agree: a positive is refused
and its secret is in no byte of what the audit would write; a negative is remembered and
audited unchanged. The older corpora (memory's facts, the audit's command lines) are held to the
same agreement.
"""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.audit.redaction import REDACTED, redact
from memory.credentials import blank_credentials, credential_kinds, find_credentials
from memory.sensitivity.assessment import refuse_credentials
from tests.broker.audit.test_redaction import COMMANDS_WITH_SECRETS, ORDINARY_COMMANDS
from tests.memory.sensitivity_corpus import CORPUS, HOLDOUT

_rng = random.Random(20261124)
_B64 = string.ascii_letters + string.digits + "-_"
RANDOM_43 = "".join(_rng.choice(_B64) for _ in range(43))
PEM_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"

# (text, the secret in it: absent from what the audit writes)
POSITIVES: list[tuple[str, str]] = [
    # passwords in sentences
    ("my password is hunter2", "hunter2"),
    ("remember that the wifi password is BlueSky2024!", "BlueSky2024!"),
    ("hunter2 is my netflix password", "hunter2"),
    ("use Tr0ub4dor&3 as the password for the router", "Tr0ub4dor&3"),
    ("pw: correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("username sam password sam1234", "sam1234"),
    ("sam@example.com / Pa55word!", "Pa55word!"),
    ("my login credentials are sam / Pa55word!", "Pa55word!"),
    ("my password is hunter2 and the pin is 1234", "1234"),
    ("password=hunter2", "hunter2"),
    # codes
    ("the door code is 4821", "4821"),
    ("the alarm code is 1 2 3 4", "1 2 3 4"),
    ("my PIN is 1234", "1234"),
    ("cvv 123", "123"),
    ("my recovery codes are 8f3k-2j9d 7h2k-9d8s", "7h2k-9d8s"),
    ("2FA backup codes: 12345678 87654321 11223344", "11223344"),
    (
        "my seed phrase is abandon ability able about above absent absorb abstract absurd "
        "abuse access accident",
        "accident",
    ),
    # API keys by vendor shape
    ("my openai key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv"),
    ("sk-ant-api03-AbCdEf123456GhIjKl", "sk-ant-api03-AbCdEf123456GhIjKl"),
    ("github token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_16C7e42F292c6912E7710c838"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG0123456789"),
    ("glpat-Ab12Cd34Ef56Gh78Ij90", "glpat-Ab12Cd34Ef56Gh78Ij90"),
    ("AWS key AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("slack bot token xoxb-123456789012-abcdefghijkl", "xoxb-123456789012"),
    ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("stripe secret key sk_live_51Hc7e2F292c6912E7710c838", "sk_live_51Hc7e2F292c6912E7710c838"),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    # tokens, JWTs, private keys
    ("Authorization: Bearer abc.def", "abc.def"),
    ("Bearer xyz", "xyz"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def456ghi789",
        "eyJzdWIiOiIxMjM0In0",
    ),
    (
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----",
        PEM_BODY,
    ),
    (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJxb8fz1v4Y0mQp3Yz7 sam@laptop",
        "AAAAC3NzaC1lZDI1NTE5AAAAIJxb8fz1v4Y0mQp3Yz7",
    ),
    # web addresses with a password
    ("postgres://admin:s3cr3tpass@db.example.com:5432/app", "s3cr3tpass"),
    ("git clone https://user:Hunter2Secret@example.org/r", "Hunter2Secret"),
    # command-line password options
    ("curl -u admin:Hunter2Secret https://x", "Hunter2Secret"),
    ("mysql -u root -pHunter2Secret shop", "Hunter2Secret"),
    ("gh auth login --token Hunter2Secret", "Hunter2Secret"),
    ("PGPASSWORD=Hunter2Secret psql -h db", "Hunter2Secret"),
    ("sshpass -p Hunter2Secret ssh host", "Hunter2Secret"),
    ("redis-cli -a Hunter2Secret ping", "Hunter2Secret"),
    ("openssl enc -d -in f -passin pass:Hunter2Secret", "Hunter2Secret"),
    # high-entropy tokens
    (f"the key {RANDOM_43} works", RANDOM_43),
    ("here it is: aB3dE5gH7jK9mN1pQ3sT5vW7", "aB3dE5gH7jK9mN1pQ3sT5vW7"),
    ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"),
]

NEGATIVES: list[str] = [
    # ordinary words, passwords mentioned without a value
    "please summarise the file in my downloads folder",
    "remind me to change my password on Friday",
    "Bitwarden is my password manager",
    "the password reset email went to spam",
    "the area code is 0161",
    "error code 404 means not found",
    "I use 2FA on everything",
    "pin the tab",
    "the bearer of bad news",
    "The address has a user name or password before '@'; it is never sent",
    "echo boarding pass: gate 12",
    "ThisIsAVeryLongCamelCaseIdentifierName",
    "iPhone15ProMaxSpaceBlack256GB",
    # hashes as git and docker show them
    "commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b\nAuthor: Sam <sam@example.com>",
    "git log --oneline shows a1b2c3d fix typo",
    "Merge: 1a2b3c4 5d6e7f8",
    "image@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    # UUIDs are ids, not keys
    "123e4567-e89b-12d3-a456-426614174000",
    # file paths
    "/home/alice/Documents/Projects/Chamberlain/broker/audit.py",
    "C:/Users/Alice/AppData/Local/Programs/Python/Python311/Lib",
    # command lines whose options are not passwords
    "ps -p 123",
    "ssh -p 2222 host",
    "mysql -p shop",
    "curl -u admin https://x",
    "docker login --password-stdin reg",
    "psql --no-password -h db",
    "tool --token-file ~/token.txt",
    "git log --pretty=format:%H -n 3",
]


def audit_blanks(text: str) -> bool:
    return redact(text) != text


@pytest.mark.parametrize(("text", "secret"), POSITIVES)
def test_a_credential_is_refused_by_memory_and_blanked_by_the_audit(text: str, secret: str) -> None:
    assert refuse_credentials(text) is not None
    audited = redact({"note": text, "list": [text]})
    assert secret not in str(audited)
    assert REDACTED in str(audited)


@pytest.mark.parametrize("text", NEGATIVES)
def test_no_credential_means_remembered_and_audited_as_it_is(text: str) -> None:
    assert refuse_credentials(text) is None
    assert redact(text) == text
    assert find_credentials(text) == []


_EVERY_TEXT = sorted(
    {t for t, _ in POSITIVES}
    | set(NEGATIVES)
    | {e.text for e in CORPUS}
    | {e.text for e in HOLDOUT}
    | {typed for typed, _ in COMMANDS_WITH_SECRETS}
    | set(ORDINARY_COMMANDS)
)


@pytest.mark.parametrize("text", _EVERY_TEXT)
def test_memory_refuses_exactly_what_the_audit_blanks(text: str) -> None:
    assert (refuse_credentials(text) is not None) == audit_blanks(text)


def test_the_refusal_names_the_most_telling_kind() -> None:
    assert credential_kinds("postgres://admin:s3cr3tpass@db")[0] == "a password in a web address"
    assert credential_kinds("mysql -pHunter2Secret shop") == ["a password on a command line"]
    assert credential_kinds(f"x {RANDOM_43}") == ["a key or token"]


def test_a_span_covers_the_value_and_keeps_the_words_around_it() -> None:
    assert blank_credentials("my password is hunter2, ok", "#") == "my password is # ok"
    assert blank_credentials("the alarm code is 1 2 3 4 at night", "#") == (
        "the alarm code is # at night"
    )
    assert blank_credentials("https://u:pw@host/x", "#") == "https://#@host/x"


def test_random_runs_can_be_left_to_the_caller() -> None:
    assert blank_credentials(RANDOM_43, "#", random_runs=False) == RANDOM_43
    assert blank_credentials(RANDOM_43, "#") == "#"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(
            [*"aAzZ09 _-:=/@.'\"\n", "password ", " is ", "pin ", "code ", "-p", "key", "mysql "]
        ),
        max_size=30,
    ).map("".join)
)
def test_any_text_is_refused_exactly_when_the_audit_blanks_it(text: str) -> None:
    assert (refuse_credentials(text) is not None) == audit_blanks(text)
