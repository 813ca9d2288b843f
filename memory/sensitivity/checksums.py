"""Checksums and format rules that tell a real number from any run of digits: Luhn (cards),
ISO 13616 mod-97 with each country's length (IBANs), the US Social Security number's area, group
and serial rules, and the UK National Insurance number's prefix and suffix letters.

Our own, a few lines each, rather than python-stdnum's (measured for issue 21): its list of
never-issued SSNs differs from ours (it takes 123-45-6789 as valid), its IBAN check also checks
each country's account layout, which changed verdicts on generated text, it has no National
Insurance number, and importing it costs about 90 ms.

What this module must never do: look at context (whether a number in a fact is a card or an SSN
is for `numbers` to say), or take more than linear time in what it checks.
"""

from __future__ import annotations

import re

_LUHN_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)


def luhn_valid(number: str) -> bool:
    """True when the digits of `number` (separators ignored) pass the Luhn checksum."""
    digits = [ord(c) - 48 for c in number if "0" <= c <= "9"]
    if len(digits) < 2:
        return False
    total = sum(digits[-1::-2]) + sum(_LUHN_DOUBLED[d] for d in digits[-2::-2])
    return total % 10 == 0


# Official IBAN lengths per country (ISO 13616 registry).
_IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
    "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip


def _iban_mod97(compact: str) -> bool:
    rearranged = compact[4:] + compact[:4]
    remainder = 0
    for char in rearranged:
        value = int(char, 36)  # 0-9 → 0-9, A-Z → 10-35
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
    return remainder == 1


def iban_valid(text: str) -> bool:
    """True when `text` (spaces ignored, any case) is an IBAN with a valid mod-97 checksum."""
    compact = "".join(text.split()).upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", compact):
        return False
    expected = _IBAN_LENGTHS.get(compact[:2])
    if expected is not None and len(compact) != expected:
        return False
    return _iban_mod97(compact)


def iban_in(candidate: str) -> bool:
    """An IBAN at the start of a greedy candidate (which may have swallowed a following word)."""
    compact = "".join(candidate.split()).upper()
    expected = _IBAN_LENGTHS.get(compact[:2])
    if expected is not None:
        return len(compact) >= expected and _iban_mod97(compact[:expected])
    return any(_iban_mod97(compact[:n]) for n in range(min(len(compact), 34), 14, -1))


# Numbers never issued, or published as examples and so used by nobody.
_SSN_INVALID = frozenset({"078051120", "219099999", "123456789"})


def ssn_valid(text: str) -> bool:
    """True for a well-formed US Social Security number: area not 000/666/9xx, group not 00,
    serial not 0000 (separators ignored)."""
    digits = "".join(c for c in text if c.isdigit())
    if len(digits) != 9 or digits in _SSN_INVALID:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"


NINO_RE = re.compile(
    r"(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])\s?(\d{2})\s?(\d{2})\s?(\d{2})\s?"
    r"([A-D])(?![A-Za-z0-9])",
    re.IGNORECASE,
)
NINO_BAD_PREFIXES = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})


def nino_valid(text: str) -> bool:
    """True for a well-formed UK National Insurance number (e.g. "AB 12 34 56 C")."""
    match = NINO_RE.fullmatch(text.strip())
    return match is not None and match.group(1).upper() not in NINO_BAD_PREFIXES
