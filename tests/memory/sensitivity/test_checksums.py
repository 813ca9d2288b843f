"""Tests for memory/sensitivity/checksums.py: Luhn, IBAN, US SSN and UK National Insurance
number validity, on textbook and edge-case numbers.
"""

from __future__ import annotations

import pytest

from memory.sensitivity.checksums import iban_valid, luhn_valid, nino_valid, ssn_valid


@pytest.mark.parametrize(
    ("number", "valid"),
    [
        ("4111 1111 1111 1111", True),
        ("4111 1111 1111 1112", False),
        ("5555-5555-5555-4444", True),
        ("378282246310005", True),  # Amex, 15 digits
        ("79927398713", True),  # the textbook example
        ("79927398710", False),
        ("1", False),
        ("", False),
    ],
)
def test_luhn(number: str, valid: bool) -> None:
    assert luhn_valid(number) is valid


@pytest.mark.parametrize(
    ("iban", "valid"),
    [
        ("GB82 WEST 1234 5698 7654 32", True),
        ("gb82west12345698765432", True),
        ("DE89 3704 0044 0532 0130 00", True),
        ("FR14 2004 1010 0505 0001 3M02 606", True),
        ("NO93 8601 1117 947", True),
        ("GB82 WEST 1234 5698 7654 33", False),  # checksum
        ("GB82 WEST 1234 5698 7654 3", False),  # GB IBANs are 22 characters
        ("not an iban", False),
    ],
)
def test_iban(iban: str, valid: bool) -> None:
    assert iban_valid(iban) is valid


@pytest.mark.parametrize(
    ("ssn", "valid"),
    [
        ("536-22-8726", True),
        ("536228726", True),
        ("000-12-3456", False),  # area 000
        ("666-12-3456", False),  # area 666
        ("912-12-3456", False),  # area 9xx
        ("536-00-8726", False),  # group 00
        ("536-22-0000", False),  # serial 0000
        ("078-05-1120", False),  # the Woolworth wallet card, never anyone's
        ("53622872", False),
    ],
)
def test_ssn(ssn: str, valid: bool) -> None:
    assert ssn_valid(ssn) is valid


@pytest.mark.parametrize(
    ("nino", "valid"),
    [
        ("AB 12 34 56 C", True),
        ("ab123456c", True),
        ("JG103759A", True),
        ("AB 12 34 56 E", False),  # suffix A-D only
        ("QQ 12 34 56 C", False),  # Q never starts one
        ("GB 12 34 56 A", False),  # excluded prefix
    ],
)
def test_nino(nino: str, valid: bool) -> None:
    assert nino_valid(nino) is valid
