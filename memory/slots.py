"""Single-valued facts about the user (slots), the dedupe form of a fact, and the fact inside a
"remember that …" request.

A slot ("user.home_city") marks a fact that can only have one current value: the store lets a
new fact in the same slot supersede the old one. That makes a wrong slot costly — it retires a
fact the user still holds true — so `detect_slot` is deliberately narrow: the fact must be a
plain statement of that one value ("I live in Leeds", "my wife is called Anna"), anchored at
its start, with a short tail and no second clause ("my name is Sam and I live in Leeds" has no
slot). Pets, other people and anything multi-valued have none.

What this module must never do: call a model, the network or the store, or log the text it is
given. It imports nothing of ours but `memory.sensitivity.vocabulary`'s word lists.
"""

from __future__ import annotations

import logging
import re
import unicodedata

from memory.sensitivity.vocabulary import FIRST_NAMES, JOB_WORDS

log = logging.getLogger("chamberlain.memory.slots")

SLOTS: tuple[str, ...] = (
    "user.name",
    "user.home_city",
    "user.address",
    "user.employer",
    "user.job_title",
    "user.birthday",
    "user.partner",
    "user.email",
    "user.phone",
    "user.work_email",
    "user.work_phone",
    "user.timezone",
)

_I = re.IGNORECASE
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'"})

# What people put before the fact itself: "fyi", "actually", "remember that", "just so you know".
_LEAD = (
    r"^\W*(?:(?:please|pls|ok|okay|oh|so|also|actually|btw|fyi|by\s+the\s+way|"
    r"just\s+so\s+you\s+know|note|remember|don't\s+forget|for\s+the\s+record|"
    r"for\s+future\s+reference|update|correction|now|and)\b[\s,:;-]*)*(?:that\s+)?"
)
_JOB_ALT = "|".join(sorted(JOB_WORDS, key=len, reverse=True))
_PARTNER = r"(?:wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|spouse)"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NOT_A_NAME = _words(
    """
    a an the is was are not also very so really just now still always never pregnant
    allergic vegan vegetarian from in at on with and but who which that this my our his her
    """
)

# (slot, the statement after the lead). Order matters where two could match the same words.
_SLOT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (slot, re.compile(_LEAD + "(?:" + pattern + ")", _I))
    for slot, pattern in (
        ("user.name", r"my\s+(?:full\s+|first\s+)?name\s+is\s+|my\s+name's\s+"),
        (
            "user.name",
            r"(?:(?:you\s+can\s+|please\s+)?call\s+me|i'm\s+called|i\s+am\s+called|i\s+go\s+by|"
            r"(?:people|everyone|my\s+friends|friends)\s+calls?\s+me)\s+"
            r"(?!(?:on|at|back|later|tomorrow|tonight|when|if|after|before|in|asap|now|soon|"
            r"sometime|maybe|a|an|the|crazy|old|out|up|over|whenever)\b)",
        ),
        (
            "user.work_email",
            r"my\s+(?:work|office|business|company)\s+e-?mail(?:\s+address)?\s*(?:is|:)\s*",
        ),
        (
            "user.email",
            r"(?:my\s+(?:personal\s+|main\s+|new\s+)?e-?mail(?:\s+address)?\s*(?:is|:)|"
            r"(?:e-?mail|mail)\s+me\s+at)\s*",
        ),
        (
            "user.work_phone",
            r"my\s+(?:work|office|business|desk)\s+(?:phone|mobile|cell|number|line)"
            r"(?:\s+number)?\s*(?:is|:)\s*",
        ),
        (
            "user.phone",
            r"(?:my\s+(?:personal\s+|new\s+)?(?:mobile|cell|phone|telephone)(?:\s+phone)?"
            r"(?:\s+(?:number|no\.?))?\s*(?:is|:)|my\s+(?:new\s+)?number\s+is|"
            r"(?:call|text|ring|reach|contact|whatsapp)\s+me\s+(?:on|at))\s*(?=\+?\(?\d)",
        ),
        (
            "user.address",
            r"(?:i|we)\s+(?:now\s+|currently\s+)?live\s+at\s+|"
            r"my\s+(?:home\s+|postal\s+|mailing\s+|current\s+|new\s+)?address\s*(?:is|:)\s*"
            r"(?!\s*[^@\s]+@)",
        ),
        (
            "user.home_city",
            r"(?:(?:i|we)\s+(?:now\s+|currently\s+)?(?:live|am\s+living|are\s+living)\s+in|"
            r"(?:i'm|im|i\s+am|we're|we\s+are)\s+(?:now\s+|currently\s+)?(?:living|based)\s+in|"
            r"(?:i|we)\s+(?:just\s+|recently\s+|have\s+)?moved\s+to)\s+"
            r"(?!(?:a|an|my|our|hope|fear|denial|the\s+(?:same|middle|country|countryside|"
            r"suburbs|centre|center|city|moment|past|future))\b)",
        ),
        (
            "user.job_title",
            r"(?:i\s+work\s+as|i'm\s+employed\s+as|i\s+am\s+employed\s+as|"
            r"my\s+(?:job\s+title|title|occupation|profession)\s+is|"
            r"my\s+(?:job|role)\s+is(?=\s+(?:a|an|as)\b))\s+|"
            rf"(?:i'm|im|i\s+am)\s+(?:a|an)\s+(?:[\w-]+\s+){{0,2}}?(?:{_JOB_ALT})\b|"
            r"(?:i'm|im|i\s+am)\s+(?:now\s+)?(?:retired|unemployed|self-employed|"
            r"a\s+freelancer)\b|[\w\s-]{1,40}?\s+by\s+(?:profession|trade)\b",
        ),
        (
            "user.employer",
            r"(?:(?:i|we)\s+(?:now\s+|currently\s+)?work\s+(?:at|for)|my\s+(?:employer|company)\s+is|"
            r"(?:i'm|i\s+am)\s+(?:now\s+)?employed\s+(?:by|at)|"
            r"i\s+(?:just\s+|recently\s+)?started\s+(?:a\s+new\s+job\s+|working\s+)?at)\s+",
        ),
        (
            "user.birthday",
            r"my\s+(?:birthday|bday|b-day|date\s+of\s+birth|dob|birth\s*date)\s*(?:is|:|'s)?\s*|"
            r"i\s+was\s+born\s+(?:on\s+|in\s+(?=\d{4}\b))",
        ),
        (
            "user.timezone",
            r"my\s+time\s*zone\s+is\s+|"
            r"(?:i'm|im|i\s+am)\s+(?:in|on)\s+(?:the\s+)?(?=(?:utc|gmt|[a-z]{2,4}\s+time|"
            r"(?:pacific|eastern|central|mountain|uk|british|european|central\s+european|"
            r"india|japan|china|australian\s+eastern)\s+(?:standard\s+)?time|[a-z]+/[a-z_]+)\b)",
        ),
    )
)
_PARTNER_PATTERNS = (
    re.compile(
        _LEAD + rf"my\s+{_PARTNER}(?P<via>'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+is)?"
        r"\s*,?\s+(?P<name>[^\W\d_][\w'-]*)(?P<rest>.*)$",
        _I | re.S,
    ),
    re.compile(
        _LEAD + rf"(?P<name>[^\W\d_][\w'-]*)\s+is\s+my\s+{_PARTNER}(?P<rest>.*)$", _I | re.S
    ),
    re.compile(
        _LEAD + r"(?:i'm|im|i\s+am)\s+(?:married|engaged)\s+to\s+(?P<name>[^\W\d_][\w'-]*)"
        r"(?P<rest>.*)$",
        _I | re.S,
    ),
)
# A second statement in the tail means the fact is more than the slot's value.
_CLAUSE_RE = re.compile(
    r"\b(?:but|because|so|although|though|while|whereas|which|who|plus|also)\b|[;?]", _I
)
# "and" joins two statements unless it sits inside a name ("Marks and Spencer").
_AND_RE = re.compile(r"\band\s+(\S+)", _I)
_FIRST_PERSON = frozenset({"I", "I'm", "I've", "I'd", "I'll"})
_PAST_RE = re.compile(r"\b(?:anymore|any\s+more|no\s+longer|used\s+to|not\s+any)\b", _I)
_MAX_TAIL_WORDS = 12
# Required in the tail for some slots.
_NEEDS: dict[str, re.Pattern[str]] = {
    "user.email": re.compile(r"[^\s@]+@[^\s@]+\.[A-Za-z]{2,}"),
    "user.work_email": re.compile(r"[^\s@]+@[^\s@]+\.[A-Za-z]{2,}"),
    "user.phone": re.compile(r"(?:\d[\s().-]*){7,}"),
    "user.work_phone": re.compile(r"(?:\d[\s().-]*){7,}"),
}


def _plain_tail(tail: str) -> bool:
    stripped = tail.strip(" \t\n.,!")
    if len(stripped.split()) > _MAX_TAIL_WORDS or _CLAUSE_RE.search(stripped):
        return False
    if _PAST_RE.search(stripped):
        return False
    return all(
        word[0].isupper() and word not in _FIRST_PERSON for word in _AND_RE.findall(stripped)
    )


def _partner_name(name: str, *, named: bool) -> bool:
    lowered = name.lower()
    if lowered in _NOT_A_NAME:
        return False
    return named or name[0].isupper() or lowered in FIRST_NAMES


def detect_slot(text: str) -> str | None:
    """The single-valued slot this fact states (one of SLOTS), or None.

    None for questions, negations and past tense ("I don't live in Leeds any more", "I used to
    work at Acme"), facts that say more than one thing, pets, other people and anything the
    user can have several of.
    """
    clean = " ".join(text.translate(_QUOTES).split())
    if not clean or clean.endswith("?"):
        return None
    for pattern in _PARTNER_PATTERNS:
        match = pattern.match(clean)
        if match is None:
            continue
        named = bool(match.groupdict().get("via")) and match.group("via").strip().lower() != "is"
        rest = match.group("rest").strip(" .,!")
        # Only the name (and perhaps a surname) may follow: "my partner Jo is vegan" is about
        # Jo's diet, and must not retire the fact that names her.
        surname_only = not rest or (len(rest.split()) == 1 and rest[0].isupper())
        if surname_only and _partner_name(match.group("name"), named=named):
            return "user.partner"
    for slot, pattern in _SLOT_PATTERNS:
        match = pattern.match(clean)
        if match is None:
            continue
        tail = clean[match.end() :]
        if not _plain_tail(tail):
            return None
        need = _NEEDS.get(slot)
        if need is not None and not need.search(tail):
            continue
        if slot not in ("user.job_title", "user.timezone") and not re.search(r"\w", tail):
            continue
        return slot
    return None


def _is_edge_noise(char: str) -> bool:
    return char.isspace() or unicodedata.category(char)[0] in "PS"


_LEADING_THAT_RE = re.compile(r"^that\s+")


def normalise(text: str) -> str:
    """The dedupe form of a fact: NFKC, casefolded, curly quotes straightened, whitespace
    collapsed, surrounding punctuation and a leading "that " stripped."""
    folded = " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold().split())
    while True:
        start, end = 0, len(folded)
        while start < end and _is_edge_noise(folded[start]):
            start += 1
        while end > start and _is_edge_noise(folded[end - 1]):
            end -= 1
        stripped = _LEADING_THAT_RE.sub("", folded[start:end])
        if stripped == folded:
            return folded
        folded = stripped


_REQUEST_RE = re.compile(
    r"^\s*(?:/remember(?!\S)|(?:(?:hey|hi|ok|okay|so|oh)\b[\s,]*)?"
    r"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|please\s+|pls\s+)?"
    r"(?:remember|memori[sz]e|note(?:\s+to\s+self)?|make\s+a\s+note(?:\s+of)?|keep\s+in\s+mind|"
    r"don'?t\s+forget|do\s+not\s+forget|for\s+future\s+reference|just\s+so\s+you\s+know|fyi)\b"
    r"(?:\s+(?:this|it))?(?:\s+please)?)[\s,:;-]*",
    _I,
)
_THAT_SUBJECT_RE = re.compile(
    r"^that\s+(?=(?:i|i'm|im|i've|i'd|i'll|my|me|we|we're|our|us|you|your|he|he's|she|she's|"
    r"they|they're|his|her|their|it|it's|the|a|an|this|these|those|there|every|everyone|"
    r"[A-Z0-9])\b)",
)
_TRAILING_RE = re.compile(
    r"[\s,]*(?:(?:please|pls|thanks|thank\s+you|thx|ty|for\s+me|for\s+later|cheers)[\s,]*)*"
    r"[\s.!]*$",
    _I,
)
# After "remember", these start a reminder or a memory, not a fact: keep the request as it is.
_NOT_A_FACT_RE = re.compile(r"^(?:to|when|the\s+time|how|what|who|where|why|if)\b", _I)


def fact_from_request(text: str) -> str:
    """The fact to store from the user's request wording: "that my dog is called Rex" → "my dog
    is called Rex"; "remember that I like green tea, thanks" → "I like green tea". Text that is
    already a fact comes back as it was (trimmed of surrounding space and a final full stop);
    a bare "remember" gives "" (nothing to store); "remember to …" is kept whole.
    Conservative: it never rewrites pronouns or words inside the fact."""
    original = " ".join(text.translate(_QUOTES).split())
    fact = original
    lead = _REQUEST_RE.match(fact)
    if lead is not None and lead.end() > 0:
        rest = fact[lead.end() :]
        if not rest.strip(" .!?"):
            return ""  # "remember" and nothing else: there is no fact to store
        if _NOT_A_FACT_RE.match(rest):
            return original.rstrip(".! ")
        fact = rest
    fact = _THAT_SUBJECT_RE.sub("", fact, count=1)
    trailing = _TRAILING_RE.search(fact)
    if trailing is not None and trailing.start() > 0:
        fact = fact[: trailing.start()]
    fact = fact.strip()
    return fact or original.rstrip(".! ")
