"""The one credential detector: where in a text a password, key, token or code sits.

`find_credentials(text)` returns a `Credential` (kind, start, end) for each secret value found:
a password in a sentence ("my password is hunter2"), a door code or PIN, a recovery phrase,
an API key by its vendor's shape, a JWT, a private key block, a password in a web address,
a password typed on a command line (`curl -u user:pw`, `mysql -pX`, `--token X`,
`PGPASSWORD=X`) and a long random-looking run. Two callers share it, so they cannot disagree:
memory refuses to remember a text holding any
(`memory.sensitivity.assessment.refuse_credentials`), and the audit log blanks exactly these
spans (`broker.audit.redaction.redact`). `tests/memory/test_credentials.py` runs one corpus
through both.

A span covers the value, not the words around it: "my password is [redacted]" stays readable.
`kind` comes from a fixed vocabulary ("a password", "an API key or token"…) and is what the
refusal message names; it never carries any piece of the text.

What this module must never do: call a model or the network, log the text it is given, or take
more than linear time (every pattern is either bounded or anchored to a word;
the audit scans every string of every event with it). It imports nothing of ours.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeAlias

_I = re.IGNORECASE


class _LazyPattern:
    """A rule's regex, compiled the first time a text wakes the rule. Most texts the audit scans
    wake few rules (each waits for its trigger words), and compiling them all at import would
    cost every start-up about 10 ms."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        if self._compiled is None:  # a race compiles it twice, harmlessly
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled


def _rx(pattern: str, flags: int = _I) -> _LazyPattern:
    return _LazyPattern(pattern, flags)


def _lazy(pattern: str) -> _LazyPattern:
    return _LazyPattern(pattern, 0)


def _words(text: str) -> frozenset[str]:
    """Whitespace-separated words (a compact way to write long vocabularies)."""
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class Credential:
    """One secret value found in a text: what it looks like, and where (text[start:end])."""

    kind: str
    start: int
    end: int


# ------------------------------------------------------------------------ the text, read once

# Curly quotes and backquotes read as "'": one character for one, so offsets stay the text's.
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'"})
_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def _word_set(text: str) -> frozenset[str]:
    tokens = _WORD_RE.findall(text.lower())
    words = set(tokens)
    words.update(t[:-2] for t in tokens if t.endswith("'s"))
    return frozenset(words)


# ------------------------------------------------------------------ credentials in sentences

# A value after "password is": a word that reads as a statement about it is not a value.
_NOT_A_VALUE = (
    r"(?:in|on|at|under|inside|kept|stored|saved|written|managed|handled|the\s+same|same|too|"
    r"very|not|expired|expiring|changing|changed|reset|wrong|incorrect|weak|strong|long|short|"
    r"case[\s-]sensitive|required|needed|due|about|going|something|somewhere|different|"
    r"also|still|now\s+(?:in|on|stored|saved))\b"
)
# "-" only as a separator ("password - hunter2"), never inside a word ("--password-stdin").
_IS = (
    r"\s*(?:is|was|are|were|=|:|-(?=\s)|'s|will\s+be|is\s+now|has\s+been\s+changed\s+to|"
    r"changed\s+to)\s*"
)
_FOR_SOMETHING = r"(?:\s+(?:for|to|on|of|at)(?:\s+[\w.@'&-]+){1,4}?)?"
_NOT_MANAGER = (
    r"(?![\s-]*(?:managers?|vaults?|apps?|resets?|hints?|polic(?:y|ies)|generators?|strength|"
    r"requirements?|rules?|protected|protection|less|field|box|prompt|screen|page|changes?|"
    r"expiry|recovery|reader|pad|file|stdin|env)\b)"
)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: _LazyPattern
    kind: str  # "a password": used in the refusal message and as the reason
    triggers: frozenset[str] | None = None  # run only when one of these words is present
    # Extra validation of a match; any match that passes counts.
    check: Callable[[re.Match[str]], bool] | None = None
    # Where the value is: the group "value" (or "value2"), else the whole match; with `before`,
    # the word before the match ("hunter2 is my password").
    before: bool = False
    # The value group ends inside its word ("password is h…"): extend it to the end of the word
    # and over following words that hold a digit ("the alarm code is 1 2 3 4").
    extend: bool = True
    # The value is a phrase of words (a seed phrase): it runs on over plain words too.
    phrase: bool = False


# "area code 0161", "error code 404": codes that open nothing.
_PUBLIC_CODES = _words(
    """
    area dial dialling dialing post zip country discount promo promotional voucher coupon gift
    tracking reference booking confirmation order product error status colour color sort tax
    bar qr source dress morse airport flight course class style exit tube bus route activity
    meeting zoom teams webinar conference event room
    referral invite invitation cheat shortcut cpt icd diagnosis billing hs sic naics iata icao
    """
)
_NOT_A_PASSWORD_WORD = (
    r"(?:again|please|too|though|now|today|tomorrow|yesterday|later|soon|ever|once|twice|here|"
    r"there|then|yet|anymore|lol|everywhere|often|regularly|monthly|weekly|first|twice|field|"
    r"box|screen|page|prompt|request|requests|email|emails|link|rules|requirements|manager|"
    r"managers|reset|resets|hint|hints|policy|change|changes|expiry|recovery|strength|"
    r"generator|app|vault|protected|less|list|thing|stuff|issue|issues|problem|problems|"
    r"question|questions|one|ones|details|info|somewhere|safe|secure|secret|private|hidden)\b"
)


_SENTENCE_RULES: tuple[_Rule, ...] = (
    _Rule(
        _rx(
            r"\b(?:pass\s?words?|passwd|pass\s?phrases?|pass\s?codes?|passkey|pwd|pw|"
            r"login\s+details|log-?in\s+credentials|credentials)\b"
            + _NOT_MANAGER
            + _FOR_SOMETHING
            + _IS
            + r"(?!"
            + _NOT_A_VALUE
            + r")(?P<value>\S)"
        ),
        "a password",
        _words(
            "password passwords pass passwd passphrase passphrases passcode passcodes passkey "
            "pwd pw login log credentials"
        ),
    ),
    _Rule(
        # "pw: hunter2", never a "boarding pass: gate 12".
        _rx(r"(?<!boarding )(?<!bus )\b(?:pass|pw|pwd|passwd|pword|p/w)\s*[:=]\s*(?P<value>\S)"),
        "a password",
        _words("pass pw pwd passwd pword p"),
    ),
    _Rule(
        _rx(
            r"\b(?:is|as)\s+(?:my|the|our|his|her|their|a|your)\s+(?:new\s+)?(?:[\w-]+\s+){0,2}?"
            r"(?:pass\s?word|passcode|pass\s?phrase|pin)\b" + _NOT_MANAGER
        ),
        "a password",
        _words("password passcode passphrase pass pin"),
        before=True,
    ),
    _Rule(
        # The password as the last word, or one with a digit or symbol: "password sam1234",
        # "set the password to letmein99", "router admin password admin".
        _rx(
            r"\bpass\s?words?\s+(?:to\s+|as\s+|of\s+)?(?P<value>(?=\S*[\d!@#$%^&*])(?!"
            + _NOT_A_VALUE
            + r")\S{4,}|(?!"
            + _NOT_A_VALUE
            + r"|"
            + _NOT_A_PASSWORD_WORD
            + r")\S+(?=\s*[.!]?\s*$))"
        ),
        "a password",
        _words("password passwords pass"),
    ),
    _Rule(
        # A value after a colon later in the sentence: "my password is in my head: Tulip!2020".
        _rx(r"\bpass\s?words?\b[^\n.]{0,40}?:(?!//)\s*(?P<value>\S)"),
        "a password",
        _words("password passwords pass"),
    ),
    _Rule(
        # "username sam password sam1234", "login: sam pass: hunter2", "sam / hunter2".
        _rx(
            r"\b(?:user\s?(?:name|id)?|login|log-?in|email|account)\s*(?:is\s+|:\s*|=\s*)?"
            # A user name, not the "or" of "a user name or password before '@'".
            r"(?!(?:or|and|nor|and/or|the|a|an|for|of|to|with|without)\s)\S+\s*"
            r"(?:,\s*|/\s*|and\s+|;\s*)?(?:pass(?:word)?|pw|pwd)\b\s*(?:is\s+|:\s*|=\s*)?"
            r"(?P<value>(?!-)\S+)"
        ),
        "login details",
        _words("user username userid login log email account"),
    ),
    _Rule(
        _rx(
            r"\b(?:wifi|wi-fi|wpa2?|wpa3|wep|network|security|router|wireless)\s*(?:key|passkey|pass)\b"
            + _FOR_SOMETHING
            + _IS
            + r"(?!"
            + _NOT_A_VALUE
            + r")(?P<value>\S)"
        ),
        "a password",
        _words("wifi wi fi wpa wpa2 wpa3 wep network security router wireless"),
    ),
    _Rule(
        # An email address then a password: "sam@example.com / hunter2".
        _lazy(
            r"@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,24}\s*(?:/|:|\||,)\s*(?P<value>[^\s@/]{4,})(?:\s|$)"
        ),
        "login details",
        None,
        extend=False,
    ),
    _Rule(
        _rx(r"\bkey\s*[:=]\s*(?P<value>(?=\S*\d)\S{6,})"),
        "a key or token",
        _words("key"),
    ),
    _Rule(
        _rx(
            r"\b(?:security|secret|memorable)\s+(?:questions?|answers?|word|words|phrase)\b"
            r"[^\n]{0,40}?(?:\bis\b|\bare\b|:|=)\s*(?P<value>\S)"
        ),
        "a security answer",
        _words("security secret memorable"),
    ),
    _Rule(
        # "the code to the front door is 2580", "gate code 4455#", "verification code 884421".
        _rx(
            r"(?:\b(?P<pre>[\w-]+)\s+)?\b(?:code|codes|combination|combo)\b"
            + _FOR_SOMETHING
            + r"\s*(?:(?:is|was|=|:|-|'s)\s*)?(?P<value>[#*]?\d[\w#*-]*(?:\s\d[\w#*-]*){0,3})"
        ),
        "a door or security code",
        _words("code codes combination combo"),
        check=lambda m: (
            (m.group("pre") or "").lower() not in _PUBLIC_CODES
            and sum(c.isdigit() for c in m.group("value")) >= 3
        ),
    ),
    _Rule(
        _rx(
            r"\b(?:pin|passcode|pass\s+code)(?:\s*(?:code|number|no\.?))?\b"
            + _FOR_SOMETHING
            + r"\s*(?:is|was|=|:|-|'s)?"
            r"\s*(?P<value>\d{4,8})\b"
        ),
        "a PIN",
        _words("pin passcode pass"),
    ),
    _Rule(
        _rx(
            r"\b(?:(?:door|gate|alarm|safe|lock|garage|entry|access|building|keypad|lockbox|"
            r"key\s*safe|locker|padlock|bike\s*lock|security|verification|otp|one[\s-]time|"
            r"wifi|wi-fi)\s*(?:code|combination|combo|pin)|combination|combo)\b"
            + _FOR_SOMETHING
            + r"\s*(?:is|was|=|:|-|'s)\s*(?P<value>[\w#*-]*\d)"
        ),
        "a door or security code",
        _words(
            "code codes combination combo door gate alarm safe lock keypad lockbox locker "
            "padlock security verification otp wifi"
        ),
    ),
    _Rule(
        _rx(
            r"\b(?:cvv2?|cvc2?|csc|card\s+verification(?:\s+code)?)\b[^\d\n]{0,20}"
            r"(?P<value>\d{3,4})\b"
        ),
        "a card security code",
        _words("cvv cvv2 cvc cvc2 csc card"),
    ),
    _Rule(
        _rx(
            r"\b(?:api|access|auth|authentication|secret|private|client|app|bearer|session|"
            r"refresh|personal\s+access|deploy|service|webhook|signing|encryption|licen[cs]e|"
            r"product|activation|github|openai|aws|stripe|slack|ssh|gpg|pgp)"
            r"[\s_-]*(?:keys?|tokens?|secrets?)\b"
            + _FOR_SOMETHING
            + _IS
            + r"(?!"
            + _NOT_A_VALUE
            + r")(?P<value>\S)"
        ),
        "an API key or token",
        _words("key keys token tokens secret secrets api_key api_token access_token client_secret"),
    ),
    _Rule(
        _rx(r"\b(?:token|secret|api[_-]?key)\s*[:=]\s*(?P<value>\S{6,})"),
        "an API key or token",
        _words("token secret api_key apikey api"),
    ),
    _Rule(
        _lazy(
            r"(?<![A-Za-z0-9_-])(?:"
            r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}|"
            r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
            r"glpat-[A-Za-z0-9_-]{20,}|"
            r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Za-z0-9])|"
            r"xox[abposr]-[A-Za-z0-9-]{10,}|"
            r"AIza[0-9A-Za-z_-]{35}|"
            r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|"
            r"ya29\.[0-9A-Za-z_-]{20,}|"
            r"hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|"
            r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|"
            r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
        ),
        "an API key or token",
        extend=False,
    ),
    _Rule(
        # "Bearer x" as HTTP writes it, any length; in lower case only a token-sized value, so
        # "the bearer of bad news" is no secret.
        _lazy(
            r"\b(?:Bearer|BEARER)\s+[A-Za-z0-9._~+/-]+=*|(?i:\bbearer\s+)[A-Za-z0-9._~+/-]{12,}=*"
        ),
        "an API key or token",
        frozenset({"bearer"}),
        extend=False,
    ),
    _Rule(
        _lazy(r"://(?P<value>[^/\s:@]{1,64}:[^/\s@]{1,64})@"),
        "a password in a web address",
        None,
        extend=False,
    ),
    _Rule(
        # The whole block; one cut short (by a cap) to the end of the text.
        _lazy(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|.*)"
        ),
        "a private key",
        frozenset({"begin"}),
        extend=False,
    ),
    _Rule(
        _lazy(
            r"\b(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d{3}|sk-ssh-ed25519@openssh\.com)"
            r"\s+(?P<value>AAAA[0-9A-Za-z+/]{20,}=*)"
        ),
        "an SSH key",
        frozenset({"ssh", "ecdsa", "sk"}),
        extend=False,
    ),
    _Rule(
        _rx(
            r"\b(?:ssh|private|gpg|pgp|signing)\s+key\b[^\n]{0,40}?\b(?:is|:)\s*(?!"
            + _NOT_A_VALUE
            + r")(?P<value>\S{8,})"
        ),
        "a private key",
        frozenset({"key"}),
    ),
    _Rule(
        _rx(
            r"\b(?:(?:secret\s+)?(?:recovery|backup|back-up|seed|mnemonic|wallet)\s+"
            r"(?:phrase|words|seed|sentence)|mnemonic|seed)\b"
            + _FOR_SOMETHING
            + r"\s*(?:(?:is|are|was|were|=|:|-)\s*(?!"
            + _NOT_A_VALUE
            + r")(?P<value>\S)|(?P<value2>(?:[a-z]+\s+){11}[a-z]+))"
        ),
        "a recovery or seed phrase",
        _words("recovery backup back seed mnemonic wallet"),
        phrase=True,
    ),
    _Rule(
        _rx(
            r"\b(?:recovery|backup|back-up|2fa|two[\s-]factor|mfa|otp|one[\s-]time|authenticator|"
            r"totp|bitlocker|filevault)\s*(?:backup\s+|recovery\s+)?(?:codes?|keys?|secrets?|"
            r"seeds?)\b"
            + _FOR_SOMETHING
            + r"\s*(?:(?:is|are|was|were|=|:|-)\s*(?!"
            + _NOT_A_VALUE
            + r")(?P<value>\S)|(?P<value2>[A-Za-z0-9]*\d[A-Za-z0-9-]{3,}))"
        ),
        "recovery or backup codes",
        _words(
            "recovery backup back 2fa two factor mfa otp one authenticator totp bitlocker filevault"
        ),
    ),
    _Rule(
        # "password=...", "api_key: ...", "Authorization: Bearer ..." in commands and config
        # text: the name stays, the whole value goes ("Bearer x" and quoted values too).
        _lazy(
            r"(?i:(?<![A-Za-z0-9])(?:password|passwd|pwd|passphrase|secret|token|"
            r"authorization|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret)"
            r"[\"']?[ \t]*[=:][ \t]*)"
            r"(?P<value>(?i:bearer|basic|token)[ \t]+\S+|\"[^\"]*\"|'[^']*'|\S+)"
        ),
        "a password or key",
        _words(
            "password passwd pwd passphrase secret token authorization api apikey key access "
            "private client"
        ),
        extend=False,
    ),
)

# The refusal names the first kind found: unmistakable formats before phrasing.
_KIND_PRIORITY = {
    "a private key": 0,
    "an SSH key": 0,
    "a password in a web address": 0,
    "a door or security code": 2,
    "a password or key": 3,
}
_SENTENCE_RULES = tuple(sorted(_SENTENCE_RULES, key=lambda rule: _KIND_PRIORITY.get(rule.kind, 1)))

_WORD_END = re.compile(r"\S{0,256}")
_MORE_WORDS = re.compile(r"(?:[ \t]+[A-Za-z]{1,16}\b[,.]?){0,24}")
# Words that carry on a value: a separator ("sam / Pa55word!") or a word with a digit or a
# symbol ("1 2 3 4", "8f3k-2j9d 7h2k-9d8s"); a plain word ("and", "at") ends it.
_MORE_VALUE = re.compile(
    r"(?:[ \t]+(?:[/|:,&]{1,3}(?=\s)|(?=[^\s\d!@#$%^&*]{0,64}[\d!@#$%^&*])\S{1,64})){0,8}"
)


def _word_start(text: str, pos: int) -> int:
    floor = max(0, pos - 256)
    while pos > floor and not text[pos - 1].isspace():
        pos -= 1
    return pos


def _rule_span(text: str, rule: _Rule, match: re.Match[str]) -> tuple[int, int] | None:
    if rule.before:
        end = match.start()
        while end > 0 and text[end - 1] in " \t":
            end -= 1
        start = _word_start(text, end)
        return (start, end) if start < end else None
    groups = match.re.groupindex
    start, end = match.span()
    for name in ("value", "value2"):
        if name in groups and match.group(name) is not None:
            start, end = match.span(name)
            break
    if rule.extend:
        more = _MORE_WORDS if rule.phrase else _MORE_VALUE
        for pattern in (_WORD_END, more):  # both match, if only the empty string
            found = pattern.match(text, end)
            end = found.end() if found is not None else end
    return start, end


def _sentence_credentials(text: str) -> Iterator[Credential]:
    words = _word_set(text)
    for rule in _SENTENCE_RULES:
        if rule.triggers is not None and rule.triggers.isdisjoint(words):
            continue
        for match in rule.pattern.get().finditer(text):
            if rule.check is not None and not rule.check(match):
                continue
            span = _rule_span(text, rule, match)
            if span is not None:
                yield Credential(rule.kind, *span)


# ---------------------------------------------------------- secrets typed into command lines
#
# A password given on a command line is a secret in plain text wherever the line is audited
# (the router's arguments, a tool call's arguments and targets, a grant's scope). Two passes:
#
# 1. Shapes that mean a secret whatever the program: an option whose name ends in a secret word
#    (`--password X`, `--token=X`, `--api-key X`, `--client-secret X`, `--authToken X`,
#    `-storepass X`), never `--no-password` or `--password-file F`; an environment assignment
#    (`PGPASSWORD=X psql`, `SSHPASS=X`); openssl's `pass:X`.
# 2. Short options that mean a password only for some programs: `-p` is a password for
#    `mysql -pX` (attached only: `mysql -p db` prompts and names a database) and `sshpass -p X`,
#    but a process id for `ps -p 123` and a port for `ssh -p 22`. So these are applied only to
#    the arguments of the program they belong to, up to the end of its command (`|`, `;`, `&`).

COMMAND_LINE = "a password on a command line"

_SECRET_WORDS = (
    r"password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|auth[_-]?key|bearer"
)
_SECRET_OPTION = re.compile(
    # The option: one or two dashes, not a "--no-..." switch; the secret word either is the
    # whole name, or ends it after a "-"/"_" or a camelCase boundary; then "=" or blanks.
    r"(?P<opt>(?<![\w-])--?(?!no-)"
    r"(?:[A-Za-z0-9][\w-]*[_-]|[A-Za-z0-9][\w-]*[a-z](?=[A-Z]))?"
    rf"(?:(?i:{_SECRET_WORDS}|pass)|(?:src|dest)?(?:store|key)pass|pass(?:in|out))"
    r"(?:[ \t]*=[ \t]*|[ \t]+))"
    # The value: quoted, or a word that is not the next option.
    r"(?P<val>\"[^\"]*\"|'[^']*'|(?!-)[^\s\"']\S*)"
    # An environment assignment: NAME=value where NAME ends in a secret word.
    r"|(?P<env>(?<![\w-])[A-Z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|"
    r"SSHPASS|_PASS|_PWD)=)(?P<envval>\"[^\"]*\"|'[^']*'|\S+)"
    # openssl's pass phrase argument: -passin pass:X.
    r"|(?P<pass>(?<![\w:-])pass:)(?P<passval>\S+)"
)

# How an option's value is a secret: all of it, the part after "user:" or after "user%", or
# (attached) all of it, but only when written against the option, as in `-pSECRET`.
_ValueRule: TypeAlias = str
_ALL, _AFTER_COLON, _AFTER_PERCENT, _ATTACHED = "all", "after:", "after%", "attached"


@dataclasses.dataclass(frozen=True)
class _ProgramOptions:
    options: Mapping[str, _ValueRule | None]
    # Short options may be bundled (`curl -su user:pass`): the last letter takes the value.
    bundles: bool = False
    # A wrapper whose first operand starts another command (`sshpass -p X ssh -p 22 host`):
    # its own options end there. Options listed with None take a value that is not secret.
    stops_at_operand: bool = False


_PROGRAM_OPTIONS: dict[str, _ProgramOptions] = {
    "curl": _ProgramOptions(
        dict.fromkeys(("-u", "--user", "-U", "--proxy-user"), _AFTER_COLON), bundles=True
    ),
    **dict.fromkeys(
        [
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlshow",
            "mysqlcheck",
            "mysqlpump",
            "mysqlslap",
            "mysqlbinlog",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
            "mariadb-import",
            "mariadb-show",
            "mariadb-check",
        ],
        _ProgramOptions({"-p": _ATTACHED}),
    ),
    "sshpass": _ProgramOptions(
        {"-p": _ALL, "-f": None, "-d": None, "-P": None}, stops_at_operand=True
    ),
    "redis-cli": _ProgramOptions({"-a": _ALL}),
    **dict.fromkeys(
        ["mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"],
        _ProgramOptions({"-p": _ALL}),
    ),
    "smbclient": _ProgramOptions({"-U": _AFTER_PERCENT, "--user": _AFTER_PERCENT}),
    **dict.fromkeys(("sqlcmd", "bcp"), _ProgramOptions({"-P": _ALL})),
    **dict.fromkeys(
        [
            "ldapsearch",
            "ldapadd",
            "ldapmodify",
            "ldapdelete",
            "ldapwhoami",
            "ldappasswd",
            "ldapcompare",
            "ldapmodrdn",
            "ldapexop",
        ],
        _ProgramOptions({"-w": _ALL}),
    ),
    **dict.fromkeys(("zip", "unzip", "zipcloak"), _ProgramOptions({"-P": _ALL})),
    **dict.fromkeys(("7z", "7za", "7zr"), _ProgramOptions({"-p": _ATTACHED})),
    "ssh-keygen": _ProgramOptions({"-N": _ALL, "-P": _ALL}),
}
_PROGRAM = re.compile(
    r"(?<![\w.\-])(?P<prog>"
    + "|".join(re.escape(name) for name in sorted(_PROGRAM_OPTIONS, key=len, reverse=True))
    + r")(?=\s)"
)
# One shell word, quotes and escapes included; `|`, `;`, `&`, `(`, `)`, a backquote or a line
# break end the command (but not `2>&1`).
_SHELL_WORD = re.compile(r"""[ \t]*((?:"[^"]*"?|'[^']*'?|\\.|[<>]&|[^\s"'\\|;&()`])+)""")


def _value_span(word: str, begin: int, rule: _ValueRule) -> tuple[int, int] | None:
    """Where the secret part of ``word`` (at ``begin``) lies; outer quotes are not part of it."""
    quote = len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'"
    start, end = (begin + 1, begin + len(word) - 1) if quote else (begin, begin + len(word))
    if rule in (_AFTER_COLON, _AFTER_PERCENT):
        inner = word[1:-1] if quote else word
        cut = inner.find(":" if rule == _AFTER_COLON else "%")
        if cut < 0 or cut == len(inner) - 1:
            return None  # only a user name: the program asks for the password itself
        start += cut + 1
    return start, end


def _program_arguments(
    s: str, start: int, spec: _ProgramOptions
) -> tuple[list[tuple[int, int]], int]:
    """The span of each secret among one program's arguments, and where the arguments end."""
    spans: list[tuple[int, int]] = []

    def add(span: tuple[int, int] | None) -> None:
        if span is not None:
            spans.append(span)

    pos = start
    pending: _ValueRule | None = None  # the previous word was an option whose value is next
    takes_value = False
    while (word_match := _SHELL_WORD.match(s, pos)) is not None:
        pos = word_match.end()
        whole, begin = word_match.group(1), word_match.start(1)
        if takes_value:
            takes_value = False
            if pending is not None:
                add(_value_span(whole, begin, pending))
            continue
        # A word quoted as a whole (`'-pS3cret!'`, as shlex.quote writes it) is read inside.
        quoted = len(whole) >= 2 and whole[0] == whole[-1] and whole[0] in "\"'"
        q = 1 if quoted and whole[0] not in whole[1:-1] else 0
        word, begin = whole[q : len(whole) - q], begin + q
        if word == "--":
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in spec.options:
                rule = spec.options[name]
                if eq and rule is not None and rule != _ATTACHED:
                    add(_value_span(value, begin + len(name) + 1, rule))
                elif not eq and rule != _ATTACHED:
                    pending, takes_value = rule, True
            continue
        if word.startswith("-") and len(word) > 1:
            letters = word[1:]
            for i, letter in enumerate(letters if spec.bundles else letters[:1]):
                if f"-{letter}" not in spec.options:
                    continue
                rule = spec.options[f"-{letter}"]
                attached = letters[i + 1 :]
                if attached and rule is not None:
                    add(_value_span(attached, begin + 2 + i, rule))
                elif not attached and rule != _ATTACHED:
                    pending, takes_value = rule, True
                break
            continue
        if spec.stops_at_operand:
            return spans, begin - q
    return spans, pos


def _command_line_credentials(s: str) -> Iterator[Credential]:
    for match in _SECRET_OPTION.finditer(s):
        for group in ("val", "envval", "passval"):
            if match.group(group) is not None:
                yield Credential(COMMAND_LINE, *match.span(group))
                break
    pos = 0
    while (found := _PROGRAM.search(s, pos)) is not None:
        spec = _PROGRAM_OPTIONS[found.group("prog")]
        spans, pos = _program_arguments(s, found.end(), spec)
        for span in spans:
            yield Credential(COMMAND_LINE, *span)
        # The search goes on after the arguments (a wrapper's: at its command), so each word is
        # read once: "curl curl curl ..." costs no more than its length.
        pos = max(pos, found.end())


# -------------------------------------------------------------------- random-looking runs

RANDOM_RUN = "a key or token"

# Two backstops behind the format and context rules, either one enough:
# - a base64/base64url/hex run of 32 characters or more that is not "wordy" (most of its letters
#   pronounceable words, as in paths and identifiers) and has high entropy. Measured on random
#   base64 and on 117k path components: a 32 character random key passes as wordy 0.6% of the
#   time (0.04% at 64), a path component is mistaken for a key 0.7% of the time;
# - a run of 24 or more of mixed case and digits, switching character class often, with few
#   runs of three or more lowercase letters (words and CamelCase have many): on random base62
#   strings it catches 90% at 24 characters and 94% at 32, and no CamelCase identifier or
#   product name tried.
# Over-finding is the safe side of that trade. UUIDs are ids, not keys; a hex run after a word
# naming a hash ("commit 9f86d08…", "sha256:…", git log's output) is a digest, not a key.
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_ALL_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_WORD = re.compile(r"[a-z]{3,}|[A-Z][a-z]{2,}|[A-Z]{5,}")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_HASH_CONTEXT = re.compile(
    r"(?:\b(?:commit|merge|revision|rev|sha|sha-?1|sha-?256|sha-?512|md5|hash|digest|checksum|"
    r"object|tree|parent|blob)\b[\s:=#@]{0,3}|[\s:=@](?:sha-?1|sha-?256|sha-?512|md5):)$",
    _I,
)
_TOKEN_CANDIDATE = re.compile(r"(?<![A-Za-z0-9_+=-])[A-Za-z0-9_+=-]{24,}")
_LOWER_RUN = re.compile(r"[a-z]{3,}")
_TOKEN_SEGMENT_SPLIT = re.compile(r"[-_+=]")


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _is_hash(text: str, start: int, run: str) -> bool:
    return len(run) in (32, 40, 64, 128) and bool(
        _ALL_HEX.fullmatch(run) and _HASH_CONTEXT.search(text, max(0, start - 16), start)
    )


def _high_entropy(run: str) -> bool:
    if _ALL_HEX.fullmatch(run):
        return True
    if _UUID.fullmatch(run):
        return False
    alnum = sum(ch.isalnum() for ch in run) or 1
    wordy = sum(len(w) for w in _WORD.findall(run) if _VOWEL.search(w)) / alnum
    return wordy < 0.6 and _entropy(run) >= 3.0


def _mixed_random(candidate: str) -> bool:
    for segment in _TOKEN_SEGMENT_SPLIT.split(candidate):
        if len(segment) < 24:
            continue
        if not (
            any(c.isupper() for c in segment)
            and any(c.islower() for c in segment)
            and any(c.isdigit() for c in segment)
        ):
            continue
        classes = ["u" if c.isupper() else "l" if c.islower() else "d" for c in segment]
        switches = sum(1 for a, b in itertools.pairwise(classes) if a != b)
        in_words = sum(len(m.group()) for m in _LOWER_RUN.finditer(segment))
        if switches / (len(segment) - 1) >= 0.4 and in_words / len(segment) < 0.35:
            return True
    return False


def _random_runs(text: str) -> Iterator[Credential]:
    for match in _CANDIDATE.finditer(text):
        run = match.group()
        if _high_entropy(run) and not _is_hash(text, match.start(), run):
            yield Credential(RANDOM_RUN, *match.span())
    for match in _TOKEN_CANDIDATE.finditer(text):
        if _mixed_random(match.group()):
            yield Credential(RANDOM_RUN, *match.span())


# ------------------------------------------------------------------------------------ public


def find_credentials(text: str, *, random_runs: bool = True) -> list[Credential]:
    """Every credential value in ``text``, in the order of the rules (the first names the
    text's most telling kind). Spans may overlap; `merged` joins them. With ``random_runs``
    False, long random-looking runs are not reported on their own (the audit's id and digest
    fields hold such runs by design)."""
    text = text.translate(_QUOTES)
    found = list(_sentence_credentials(text))
    found.extend(_command_line_credentials(text))
    if random_runs:
        found.extend(_random_runs(text))
    return found


def credential_kinds(text: str) -> list[str]:
    """The kinds of credential in ``text``, most telling first, each once."""
    return list(dict.fromkeys(c.kind for c in find_credentials(text)))


def merged(found: list[Credential]) -> list[tuple[int, int]]:
    """The (start, end) spans of ``found``, sorted, with overlapping or touching ones joined."""
    spans: list[tuple[int, int]] = []
    for start, end in sorted((c.start, c.end) for c in found if c.end > c.start):
        if spans and start <= spans[-1][1]:
            if end > spans[-1][1]:
                spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def blank_credentials(text: str, replacement: str, *, random_runs: bool = True) -> str:
    """``text`` with every credential value replaced by ``replacement``."""
    spans = merged(find_credentials(text, random_runs=random_runs))
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append(replacement)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
