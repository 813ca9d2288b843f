"""The category set (small on purpose: a fact gets exactly one), each category's floor (the
least level a fact of that category can have, whatever the detectors found), the words a model
or a person may use for one of ours, and the categories found by pattern alone (finance, pet,
schedule, preference); when several apply, one fixed order decides.

What this module must never do: give a fact a category outside CATEGORIES (an unknown one is
`general`), or lower a level: a floor only raises.
"""

from __future__ import annotations

from memory.sensitivity.text import Finding, Text, rx
from memory.sensitivity.vocabulary import PET_ALT, PETS
from memory.types import Sensitivity

# The category set: small on purpose. A fact gets exactly one; the floor is the least level a
# fact of that category can have, whatever the detectors found.
CATEGORIES: tuple[str, ...] = (
    "general",  # anything else
    "preference",  # likes, dislikes, how the user wants things done
    "pet",  # the user's animals
    "relationships",  # people the user knows, and how
    "location",  # where the user lives, works or is; addresses
    "contact",  # email, phone, online handles
    "work",  # employer, job, colleagues
    "health",  # conditions, medication, care, genetic data
    "finance",  # money, accounts, cards, salary, debts
    "identity",  # the user's name, birthday, age, nationality, ID numbers, orientation
    "beliefs",  # religion, politics, trade-union membership
    "schedule",  # appointments, meetings, routines
)

CATEGORY_FLOORS: dict[str, Sensitivity] = {
    "general": Sensitivity.LOW,
    "preference": Sensitivity.LOW,
    "pet": Sensitivity.LOW,
    "schedule": Sensitivity.LOW,
    "relationships": Sensitivity.PERSONAL,
    "location": Sensitivity.PERSONAL,
    "contact": Sensitivity.PERSONAL,
    "work": Sensitivity.PERSONAL,
    "identity": Sensitivity.PERSONAL,
    "health": Sensitivity.SECRET,
    "finance": Sensitivity.SECRET,
    "beliefs": Sensitivity.SECRET,
}

# Words a model (or a user's --category) may use for one of ours.
_CATEGORY_ALIASES: dict[str, str] = {
    "person": "relationships",
    "people": "relationships",
    "relationship": "relationships",
    "family": "relationships",
    "medical": "health",
    "money": "finance",
    "financial": "finance",
    "religion": "beliefs",
    "politics": "beliefs",
    "address": "location",
    "place": "location",
    "contacts": "contact",
    "job": "work",
    "preferences": "preference",
    "pets": "pet",
    "calendar": "schedule",
}

# When several categories apply, the first in this order wins.
_CATEGORY_ORDER: tuple[str, ...] = (
    "health",
    "finance",
    "beliefs",
    "identity",
    "contact",
    "location",
    "work",
    "relationships",
    "pet",
    "schedule",
    "preference",
    "general",
)

_FINANCE_RE = rx(
    r"\b(?:my|our|his|her|their)\s+(?:[\w-]+\s+)?(?:bank|bank\s+account|account\s+number|"
    r"credit\s+card|debit\s+card|card\s+number|salary|income|wage|wages|pay|paycheck|"
    r"payslip|mortgage|loan|loans|debt|debts|credit\s+score|pension|savings|investments|"
    r"portfolio|net\s+worth|overdraft|tax\s+return|tax\s+code|bonus|inheritance|"
    r"crypto\s+wallet|bitcoin|isa|401k|401\(k\)|stocks|shares|bank\s+balance|balance)\b|"
    r"\b(?:i|we)\s+(?:bank|banks)\s+(?:with|at)\b|"
    r"\b(?:i|we)\s+(?:earn|make|get\s+paid|take\s+home)\s+(?:about\s+|around\s+|roughly\s+|"
    r"over\s+|under\s+)?[£$€]?\d|"
    r"\b(?:i|we)\s+owe\b|\b(?:iban|sort\s+code|routing\s+number|swift|bic)\b|"
    r"\b(?:i|we)\s+(?:have|'ve\s+got|have\s+got|am\s+in|'m\s+in|are\s+in|took\s+out)\s+"
    r"(?:[^.\n]{0,30}?\s)?(?:debt|debts|overdraft|loan|loans|mortgage|arrears)\b|"
    r"\b(?:i'm|i\s+am|im|we're|we\s+are)\s+(?:bankrupt|in\s+debt|in\s+arrears|overdrawn)\b"
)
_PET_RE = rx(
    rf"\b(?:my|our|the|his|her|their)\s+(?:[\w-]+\s+){{0,2}}?(?:{PET_ALT})\b|"
    rf"\bis\s+(?:my|our)\s+(?:[\w-]+\s+)?(?:{PET_ALT})\b|"
    rf"\b(?:i|we)\s+(?:have|'ve\s+got|got|adopted|own)\s+(?:a|an|two|three|\d)\s+(?:[\w-]+\s+)?"
    rf"(?:{PET_ALT})\b"
)
_SCHEDULE_RE = rx(
    r"\b(?:meeting|meetings|appointment|appointments|deadline|standup|stand-up|interview|"
    r"flight|train|reservation|booking|bin\s+day|bins|due|tomorrow|today|tonight|"
    r"next\s+(?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:on|every|next|this)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"weekday|weekend|morning|evening|day|week|month)s?|"
    r"at\s+\d{1,2}(?::\d{2})?\s*(?:am|pm)|\d{1,2}(?::\d{2})?\s*(?:am|pm)|\d{1,2}:\d{2}|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|"
    r"o'clock|weekly|monthly|daily|anniversary|schedule|calendar|class|lesson|practice|"
    r"rehearsal|gym)\b"
)
_PREFERENCE_RE = rx(
    r"\b(?:i|we)\s+(?:really\s+|quite\s+|absolutely\s+|kind\s+of\s+|kinda\s+|totally\s+|"
    r"much\s+|generally\s+|usually\s+|always\s+|mostly\s+)?(?:like|likes|love|loves|prefer|"
    r"enjoy|hate|dislike|adore|detest|can't\s+stand|cannot\s+stand|don't\s+like|"
    r"do\s+not\s+like|don't\s+eat|don't\s+drink|never\s+eat|never\s+drink|want|wish)\b|"
    r"\b(?:i'm|i\s+am|im)\s+(?:a\s+|an\s+)?(?:big\s+|huge\s+|massive\s+)?(?:fan\s+of|into|"
    r"vegetarian|vegan|pescatarian|teetotal|night\s+owl|morning\s+person|early\s+riser)\b|"
    r"\b(?:my|our)\s+(?:favourite|favorite|fave|fav|preferred|go-to)\b|"
    r"\bi\s+(?:take|drink|have|like)\s+my\s+(?:tea|coffee)\b|"
    r"\b(?:please\s+)?(?:always|never)\s+(?:use|call|reply|answer|write|respond|show|give|"
    r"suggest|recommend|format|say)\b|\bfrom\s+now\s+on\b|"
    r"\b(?:in|with|using)\s+(?:metric|imperial|celsius|fahrenheit|british\s+english|"
    r"american\s+english)\b"
)


def category_of(text: Text, findings: list[Finding]) -> str:
    """The one category of a fact: the first in _CATEGORY_ORDER that a finding implies or a
    pattern finds, else general."""
    found = {f.category for f in findings if f.category is not None}
    raw = text.text
    if "finance" not in found and _FINANCE_RE.search(raw):
        found.add("finance")
    if not PETS.isdisjoint(text.words) and _PET_RE.search(raw):
        found.add("pet")
    if _SCHEDULE_RE.search(raw):
        found.add("schedule")
    if _PREFERENCE_RE.search(raw):
        found.add("preference")
    return next((c for c in _CATEGORY_ORDER if c in found), "general")


def normalise_category(category: str | None) -> str:
    """One of CATEGORIES for a category from anywhere (a model, the CLI); unknown → general."""
    if not isinstance(category, str):
        return "general"
    key = category.strip().casefold()
    key = _CATEGORY_ALIASES.get(key, key)
    return key if key in CATEGORY_FLOORS else "general"
