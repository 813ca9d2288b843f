"""Numbers and addresses that identify or reach a person: card numbers (13-19 digits passing
Luhn, alone or at either end of a longer run of digit groups), IBANs (mod-97), US Social
Security numbers, UK National Insurance numbers, phone numbers (international, national,
US-shaped, or any run after "call me" or "my number") and email addresses.

What this module must never do: call digits a card, an IBAN or an SSN unless they pass
`checksums` (a 16-digit number failing Luhn is not a card), or put a number in a reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memory.sensitivity.checksums import NINO_BAD_PREFIXES, NINO_RE, iban_in, luhn_valid, ssn_valid
from memory.sensitivity.text import Finding, Text, rx
from memory.types import Sensitivity

_DIGIT_RUN_RE = re.compile(r"(?<![\d])\d+(?:[ -]\d+)*(?!\d)")
_SEPARATOR_RE = re.compile(r"[ -]")


def _card_numbers(text: Text) -> bool:
    """A 13-19 digit card number, alone or at either end of a longer run of digit groups
    ("4111 1111 1111 1111 12 27": the run is longer than the card)."""
    for match in _DIGIT_RUN_RE.finditer(text.text):
        groups = _SEPARATOR_RE.split(match.group())
        prefix = ""
        for group in groups:
            prefix += group
            if len(prefix) > 19:
                break
            if len(prefix) >= 13 and luhn_valid(prefix):
                return True
        suffix = ""
        for group in reversed(groups):
            suffix = group + suffix
            if len(suffix) > 19:
                break
            if len(suffix) >= 13 and luhn_valid(suffix):
                return True
    return False


_IBAN_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:\s?[A-Za-z0-9]){11,34}")
_SSN_RE = re.compile(r"(?<![\d-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\d-])")
_SSN_CONTEXT_RE = rx(
    r"\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\b[^\d\n]{0,20}"
    r"(\d{3}[- ]?\d{2}[- ]?\d{4})(?!\d)"
)

# Phone numbers: runs of digit groups (with parentheses and a leading +) judged afterwards.
_PHONE_TOKEN = r"(?:\(\d{1,5}\)\s?\d+|\(\d{1,5}\)|\d+)"
_PHONE_RUN_RE = re.compile(
    rf"(?<![\w+/.-])(?:(?:\+|00)\s?)?{_PHONE_TOKEN}(?:[ .\-/]{{1,2}}{_PHONE_TOKEN}){{0,8}}(?![\w])"
)
_US_PHONE_RE = re.compile(r"(?:\+?1[ .-]?)?\(?[2-9]\d{2}\)?[ .-]?\d{3}[ .-]\d{4}")
_PHONE_CONTEXT_RE = rx(
    r"(?:\b(?:phone|mobile|cell|tel|telephone|landline|whatsapp|fax|text\s+me|call\s+me|"
    r"ring\s+me|reach\s+me|contact\s+me|get\s+me)|\b(?:my|his|her|their|our|[^\W\d_]+'s)\s+"
    r"(?:new\s+|work\s+|home\s+|old\s+)?number)\b[^\n\d]{0,25}$"
)
_DATE_LIKE_RE = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|\d{1,2}:\d{2}"
)


def _phone_numbers(text: Text) -> bool:
    for match in _PHONE_RUN_RE.finditer(text.text):
        run = match.group()
        digits = sum(c.isdigit() for c in run)
        if digits < 7 or digits > 15 or _DATE_LIKE_RE.fullmatch(run):
            continue
        international = run.startswith("+") or run.startswith("00")
        if international and digits >= 8:
            return True
        stripped = run.lstrip("(")
        if stripped.startswith("0") and 10 <= digits <= 11 and not stripped.startswith("00"):
            return True
        if _US_PHONE_RE.fullmatch(run):
            return True
        context = text.text[max(0, match.start() - 40) : match.start()]
        if _PHONE_CONTEXT_RE.search(context):
            return True
    return False


_EMAIL_RE = re.compile(
    r"(?<![\w.%+-])[\w.%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})"
    r"(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![\w-])"
)


def number_findings(text: Text) -> Iterator[Finding]:
    """A finding for each kind of number or address found (each at most once)."""
    raw = text.text
    if "@" in raw and _EMAIL_RE.search(raw):
        yield Finding(Sensitivity.PERSONAL, "email address", "contact")
    if not text.has_digit:
        return
    if _card_numbers(text):
        yield Finding(Sensitivity.SECRET, "card number (passes the Luhn check)", "finance")
    if any(iban_in(m.group()) for m in _IBAN_RE.finditer(raw)):
        yield Finding(Sensitivity.SECRET, "bank account number (IBAN, valid checksum)", "finance")
    if any(ssn_valid(m.group()) for m in _SSN_RE.finditer(raw)) or any(
        ssn_valid(m.group(1)) for m in _SSN_CONTEXT_RE.finditer(raw)
    ):
        yield Finding(Sensitivity.SECRET, "US Social Security number", "identity")
    if any(m.group(1).upper() not in NINO_BAD_PREFIXES for m in NINO_RE.finditer(raw)):
        yield Finding(Sensitivity.SECRET, "UK National Insurance number", "identity")
    if _phone_numbers(text):
        yield Finding(Sensitivity.PERSONAL, "phone number", "contact")
