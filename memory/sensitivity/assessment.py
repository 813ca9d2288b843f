"""How sensitive a fact is, and whether it may be stored at all — decided in code, not by a model.

`assess(text)` runs deterministic detectors over a candidate fact and returns an `Assessment`:
a level (`low | personal | secret`), short reasons a person can read ("health condition
(diabetes)", "email address", "card number (passes the Luhn check)"), a category, and — for
credentials — a refusal message. `combine()` folds in a language model's label and the
category's floor: the model may raise a level, never lower it. `refuse_credentials(text)` is
the store's defence-in-depth hook.

What this module (and every detector it runs) must never do: call a model or the network,
write or log the text it is given (nor any piece of it: reasons come from a fixed vocabulary,
so they never carry a name, a number or a password), or take more than linear time (every
pattern is precompiled and either bounded or anchored so that a run of characters is scanned
from its start only; a 100 KB paste returns in milliseconds). The package imports nothing of
ours but `memory.types` and `memory.credentials`, the credential detector it shares with the
audit's redaction.

Levels
- personal: people's names and relationships, where the user lives / works / is, postal
  addresses and postcodes, email addresses, phone numbers, dates of birth and age, employer
  and job, nationality, relationship status, medical appointments and providers.
- secret: health and the other special categories (religion, political opinions and
  membership, sexual orientation and sex life, gender identity, racial or ethnic origin,
  trade-union membership, biometric and genetic data), government ID numbers (US SSN with
  area/group/serial validation, UK National Insurance numbers, passport / national ID /
  tax / driving-licence numbers in context), card numbers (Luhn-validated), IBANs (mod-97
  validated), bank account numbers and sort codes in context, and anything the finance
  category covers (salary, debts, bank, cards).
- refused: passwords, PINs, door and lock codes, login details, security answers, API keys
  and tokens, private keys, recovery / backup codes and seed phrases. The level is `secret`
  and `refused` is set; the caller stores nothing.

Borderline choices (each has a corpus example)
- Allergies and intolerances are health data, so `secret`: an allergy is a medical fact
  (GDPR's "data concerning health" covers it) and one that can be life-threatening; being
  wrong the other way would put it in front of a remote model without consent. It costs the
  user one approval, and "allergy peanut" still recalls it once approved.
- A health term with no person attached to it — "I read a book about diabetes", "the cancer
  research fun run is on Sunday" — is `personal` ("mentions a health topic"), not `secret`:
  it states an interest, not a condition, but interests hint at conditions, so it still waits
  for consent. A health term with a person ("I have diabetes", "my son's inhaler") or with no
  subject at all ("allergic to peanuts": facts are about the user by default) is `secret`.
  An animal's health ("my dog is on insulin") is not personal data: the pet rules apply.
- Religion, politics, orientation and ethnicity are only found in statements about a person
  ("I'm Catholic", "my wife votes Green"): "the meeting is at the church hall" is `low`.
- Nationality ("I'm French") is `personal`; an explicit racial or ethnic origin ("I'm of
  Pakistani descent", "I'm mixed race") is `secret`. Gender identity (trans, non-binary) is
  treated like sexual orientation: `secret`. Pronouns alone are `personal`.
- Doctor / dentist / GP appointments are `personal` (medical, but no condition); a therapist,
  psychiatrist or oncologist is `secret` (it reveals one).
- Pets are not people: "my dog is called Rex" is `low`. Names are only taken as people's names
  in a person context ("call Anna", "Tom from accounts", "Anna is my sister"), so "I love Harry
  Potter" and "my favourite band is Queen" stay `low`.
- SSH public keys and long random-looking tokens are refused with the credentials: they are
  key material, the assistant gains nothing from remembering them, and a pasted key is easy to
  mistake for its private half.
- A password *mentioned* without a value ("remind me to change my password on Friday",
  "Bitwarden is my password manager") is not refused; anything that reads as a value is.
  Codes that open nothing ("area code 0161", "error code 404") are not refused; a code of
  three or more digits for anything else ("the code to the front door is 2580") is.
- "My mother's maiden name is Smith" is `personal`, not refused: it is family history as often
  as a security answer. An explicit "security answer: …" is refused.
"""

from __future__ import annotations

import logging

from memory.credentials import credential_kinds
from memory.sensitivity.categories import CATEGORY_FLOORS, category_of, normalise_category
from memory.sensitivity.health import health_findings
from memory.sensitivity.numbers import number_findings
from memory.sensitivity.people import name_findings
from memory.sensitivity.rules import rule_findings
from memory.sensitivity.text import Finding, Text
from memory.types import Assessment, Sensitivity, highest

log = logging.getLogger("chamberlain.memory.sensitivity")

REFUSAL_MESSAGE = (
    "Chamberlain never stores passwords, keys or recovery codes; keep them in a password manager."
)


def _refusal(kinds: list[str]) -> str:
    return f"Not remembered: that looks like {kinds[0]}. {REFUSAL_MESSAGE}"


def refuse_credentials(text: str) -> str | None:
    """The refusal message when `text` holds a credential, else None (the store's hook)."""
    kinds = credential_kinds(text)
    return _refusal(kinds) if kinds else None


def _findings(text: Text) -> list[Finding]:
    findings = list(health_findings(text))
    findings.extend(rule_findings(text))
    findings.extend(name_findings(text))
    findings.extend(number_findings(text))
    return findings


def assess(text: str) -> Assessment:
    """What the detectors find in a candidate fact: level, reasons, category, refusal."""
    parsed = Text(text)
    kinds = credential_kinds(text)
    findings = _findings(parsed)
    category = category_of(parsed, findings)
    level = highest(*(f.level for f in findings), CATEGORY_FLOORS[category])
    reasons: list[str] = []
    for reason in [*kinds, *(f.reason for f in findings)]:
        if reason not in reasons:
            reasons.append(reason)
    if kinds:
        return Assessment(
            level=Sensitivity.SECRET, reasons=reasons, category=category, refused=_refusal(kinds)
        )
    return Assessment(level=level, reasons=reasons, category=category)


def categorize(text: str) -> str:
    """The one category (from CATEGORIES) a fact belongs to."""
    parsed = Text(text)
    return category_of(parsed, _findings(parsed))


def parse_level(label: object) -> Sensitivity | None:
    """A sensitivity level from untrusted input (a model's label), or None when it is not one."""
    if isinstance(label, Sensitivity):
        return label
    if isinstance(label, str):
        try:
            return Sensitivity(label.strip().casefold())
        except ValueError:
            pass
    # Never log the label itself: a model may have echoed the fact (or a secret) into it.
    log.debug("ignored a model sensitivity label that is not a level (%s)", type(label).__name__)
    return None


def combine(
    detected: Sensitivity, model_label: Sensitivity | str | None, category: str
) -> Sensitivity:
    """The stored level: max(detectors, the model's label when valid, the category's floor).

    The model is untrusted: its label may raise the level, never lower it, and a label that is
    not a level is ignored. An unknown category has the `general` floor.
    """
    levels = [detected, CATEGORY_FLOORS[normalise_category(category)]]
    if model_label is not None:
        label = parse_level(model_label)
        if label is not None:
            levels.append(label)
    return highest(*levels)
