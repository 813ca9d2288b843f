"""A fact the person told about themselves that nothing kept: found in their own words, so the
reply can offer to remember it (a missed fact is never lost silently).

The router takes "remember that I'm allergic to penicillin" as a memory write; "I'm allergic to
penicillin. Please don't forget that." or "fyi vegetarian now" it may read as talk, and without a
model to propose facts nothing would be kept, and nothing said. `offer_of` finds the sentences of
a message that state something lasting about the person — where they live or work, what they
cannot eat, what they are called, what they prefer — or that the person marks as worth keeping
("fyi", "don't forget", "for future reference"). Passing moods ("I'm tired"), questions and
requests are not offered. Plain code, no model: it reads only the person's own message, so a
document or web page can never make Chamberlain offer to remember what it says.

Nothing is stored here: the front end offers, and the person's yes (`--remember`, "yes" in the
chat, the Remember button) asks for an ordinary memory write of those words, with its usual
sensitivity checks and consent.
"""

from __future__ import annotations

import re

MAX_OFFER_CHARS = 300
MAX_MESSAGE_CHARS = 1500
# How likely a memory write the classifier must find for a plain statement to be offered. On
# blind sets W5-A and W5-B (the classifier not trained on them), the facts the router missed
# that were offered went 8 → 18 of 29 at 0.2, the other messages offered 3 → 5 of 417 (issue 24).
OFFER_SURE = 0.2
# Longer than this, a message says more than "forget that" (`takes_back`).
MAX_TAKE_BACK_CHARS = 80

# Words that mark a statement as meant to be kept.
# "remember" and its common misspellings, but not "remember to <do>" (an instruction), "remember
# me" or "remember when/how …" (talk).
_REMEMBER = (
    r"(?:remember|rember|remeber|remmber|rmbr|remembr)"
    r"(?!\s+(?:to|me|when|how|what|why|where|if|the time|back)\b)"
)
_KEEP = re.compile(
    r"\b(?:don'?t forget|do not forget|dont forget|keep in mind|bear in mind|"
    r"keep (?:that|this|it) in mind|for future reference|for the future|"
    # The same in French, as people who mix it in write it.
    r"souviens-toi|rappelle-toi|garde (?:ça|ca|cela) en (?:tête|tete)|"
    r"pour (?:référence|reference) future|"
    r"note (?:that|this)|take note|make a note|jot (?:this|that) down|write (?:this|that) down|"
    r"for next time|from now on|going forward|update what you know|for the record|"
    r"just so you know|so you know|save this(?: about me)?|keep (?:it|this) for|"
    r"(?:pls|please) update|" + _REMEMBER + r" (?:this|that)(?: for me)?)\b",
    re.IGNORECASE,
)
# Openers of a statement the person gives as information ("fyi vegetarian now").
_LEAD = re.compile(
    r"^\s*(?:fyi|f\.y\.i\.?|btw|by the way|heads up|quick update|just so you know|"
    r"for the record|for future reference|for the future|"
    r"(?:note|correction|news|update)(?=\s*[:,-])|"
    r"souviens-toi(?: que)?|rappelle-toi(?: que)?|pour (?:référence|reference) future|"
    + _REMEMBER
    + r"(?: that)?)\b[\s,:;-]*",
    re.IGNORECASE,
)
# "remember to …", "remember when …": an instruction or talk, never a fact to offer.
_INSTRUCTION = re.compile(
    r"^\s*(?:please\s+|pls\s+)?(?:remember|rember|remeber|don'?t forget|dont forget)\s+"
    r"(?:to|when|how|what|why|where|if)\b",
    re.IGNORECASE,
)
# Lasting things about a person.
_LASTING = re.compile(
    r"\b(?:allergic|allergy|allergies|intolerant|intolerance|vegetarian|vegan|pescatarian|"
    r"gluten|lactose|diabetic|coeliac|celiac|kosher|halal|teetotal|"
    r"(?:live|living|moved|moving|relocated|relocating) (?:in|to|into|back to)|"
    r"(?:work|working) (?:at|for|as|in)|"
    r"(?:new|switched|changed|started|left|quit)(?: my| that| the)? "
    r"(?:job|jobs|role|company|employer|position)|"
    r"(?:starting|started|joining|joined) (?:as|at)|leaving (?:the|my)|switched to|"
    r"(?:her|his|their) name is|(?:don'?t|do not|no longer|never) (?:drink|eat|smoke)|"
    r"got (?:a|an) (?:cat|dog|puppy|kitten|new \w+)|"
    r"(?:my|ma) (?:[a-z]+'s )?(?:[a-z]+ )?(?:name|full name|nickname|pronouns|birthday|address|"
    r"postcode|zip|phone number|mobile number|number|email|wife|husband|partner|son|daughter|"
    r"kids|children|"
    r"dog|dugs?|cat|boss|doctor|dentist|gp|blood type|timezone|time zone|rate|default \w+|"
    r"favou?rite \w+|screen name)(?:'s)? (?:is|are|was|'s)|"
    # French, as above.
    r"je suis (?:v[ée]gane?|v[ée]g[ée]tarien\w*|allergique|intol[ée]rant\w*)|"
    r"j'ai d[ée]m[ée]nag[ée]|mon (?:adresse|nom|anniversaire|tarif|num[ée]ro) |"
    r"je pr[ée]f[èe]re|"
    r"call me|go by|i prefer|prefer (?:to|short|long|metric|imperial|celsius|fahrenheit)|"
    r"born (?:on|in)|my birthday|"
    r"(?:i'?m|i am|im) (?:a|an) [a-z-]+(?: [a-z-]+)?\s*$)",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"\?\s*$|\b(?:whats|what's|what is|wats|can you|could you|pls check|please check)\b|"
    r"^\s*(?:what|who|whom|where|when|why|how|which|can|could|would|will|do|does|did|"
    r"is|are|should|shall|may|might|have you|has|y|wot|wat|wut|whit|hw|wen|whats|wats|"
    r"wheres|hows|whos|whens)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^\s*(?:please\s+|pls\s+|can you\s+|could you\s+)?(?:list|show|open|find|search|look|read|"
    r"summari[sz]e|run|start|stop|kill|check|tell|give|write|draft|make|create|delete|remove|"
    r"move|copy|download|install|translate|explain|help|book|order|buy|send|email|"
    r"call(?! me\b)|play|set|turn|compare|recommend|plan|research|use|factor|always|never|"
    r"fix|replace|update|change|forget|oublie|delete|quit|close|exit|shut|put)\b",
    re.IGNORECASE,
)
# A keep-marker's clause that ends a statement ("…, so keep that in mind for recipes", "…, save
# please", "… take note of that", "… just so u know"): cut, with all that follows. After a comma
# or a full stop any keep word starts it; after a bare space only the unmistakable ones (so "I
# keep it simple" stays whole).
_KEEP_WORDS = (
    r"(?:please\s+|pls\s+|kindly\s+)?(?:keep (?:that|this|it) (?:in mind|handy|for\b)|"
    r"keep in mind|bear in mind|take note|make a note|save (?:please|pls)\b|"
    r"store (?:that|this|it)\b|(?:remember|rember|remeber) (?:that|this)\b|"
    r"don'?t forget|dont forget|do not forget|just so (?:you|u) know|so (?:you|u) know|"
    r"garde (?:ça|ca|cela) en|fur wen|for when)"
)
# Said to the assistant about the fact, pointing back at it ("put it somewhere you'll find it",
# "log that please", "make sure you hang on to that", "add that to what you know about me").
_KEEP_POINTED = (
    r"(?:make sure (?:you|u)\s+|can (?:you|u)\s+|could (?:you|u)\s+)?"
    r"(?:keep|save|store|note|remember|rember|remeber|memori[sz]e|"
    r"(?:put|log|add|jot|write|file|record|stash|hang on to|hang onto|hold on to|hold onto|"
    r"don'?t lose|dont lose)\s+(?:it|that|this|them|those|these)\b)"
)
_KEEP_TAIL = re.compile(
    r"(?:[,;.!—–-]\s*(?:so\s+|and\s+)?"
    # "…. not a joke, put it somewhere you'll find it": the aside goes with the instruction.
    r"(?:(?:not a joke|no joke|seriously|srsly|(?:this is |it'?s )?important)[,;.!\s]+)?"
    r"(?:please\s+|pls\s+|kindly\s+)?" + _KEEP_POINTED + r"\b|"
    r"[,;.!—–-]\s*(?:not a joke|no joke|seriously|srsly|(?:this is |it'?s )?important)[\s.!]*$|"
    r"(?<=\S)\s+(?:so\s+|and\s+)?" + _KEEP_WORDS + r").*$",
    re.IGNORECASE | re.DOTALL,
)
# Words that open a message given to be kept, taken off the fact ("kumbuka: …", "save my …").
_KEEP_LEAD = re.compile(
    r"^\s*(?:please\s+|pls\s+|kindly\s+)?(?:fyi|f\.y\.i\.?|btw|by the way|heads up|"
    r"for the record|for future reference|just so (?:you|u) know|kumbuka|lembra(?:-te)?|"
    r"nakuambia tu|(?:quick\s+)?(?:update|note|correction)(?=\s*[:,-])|"
    r"(?:save|store|keep|note down|write down)(?=\s+my\b)|"
    # "save this please: my licence renews in December": the colon opens the fact.
    r"(?:save|store|keep|note|note down|write down|jot down|remember)\s+(?:this|that|it)"
    r"(?:\s+(?:please|pls|plz|for (?:later|me)))*\s*:)[\s,:;-]*",
    re.IGNORECASE,
)
# "forget" in English and the languages people mix in; "delete", "erase" and "wipe" ask it too
# (`_FORGET_REQUEST`), but more often name a file.
_FORGET_VERBS = "forget|vergeet|vergiss|olvida|oublie|esquece|lupakan|lupain"
# Forgetting what was known, then saying what is true now ("forget what I told you about
# Shopify, I'm at Cohere now"): the statement after the break is the fact.
_FORGET_THEN = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+)?(?:" + _FORGET_VERBS + r")\b[^,;.—–]{1,120}"
    r"[,;.—–]\s*(?:(?:now|instead|actually)[,\s]+)?(?P<rest>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
# Words that lean on the forgotten part ("…, I don't live there anymore"): then all is kept.
_BACK_REFERENCE = re.compile(r"\b(?:there|it|that|them|those|one)\b", re.IGNORECASE)
# Keep words about something said before, with no fact of their own.
_POINTER = re.compile(
    r"^(?:please\s+|pls\s+|and\s+|also\s+)?(?:keep|store|save|remember|rember|note|memori[sz]e|"
    r"write|jot|add)\s+(?:that|this|it|those|these)\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(r"(?:if|when|whenever|for|so)\b", re.IGNORECASE)
# A "btw" or "fyi" left at the end of a kept statement.
_AFTERWORD = re.compile(r"[\s,]+(?:btw|fyi)[\s.!]*$", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+|;\s+")
# What a keep-marker sentence says on its own ("Please don't forget that."): nothing to keep.
_ONLY_MARKER = re.compile(
    r"^\s*(?:please\s+|pls\s+)?(?:(?:don'?t|do not|dont) forget (?:that|this|it)|"
    r"keep (?:that|this|it) in mind|note (?:that|this)|remember (?:that|this)(?: for me)?|update|"
    r"(?:ok|okay|thanks|thank you|ty))[\s.!]*$",
    re.IGNORECASE,
)


def _statement(text: str) -> bool:
    """Whether `text` only states something: no question, no request, no "remember to …"."""
    return (
        "?" not in text
        and _QUESTION.search(text) is None
        and _REQUEST.match(text) is None
        and _INSTRUCTION.match(text) is None
    )


# A clause that does something to what was just said ("put it somewhere you'll find it", "keep
# that in mind"), not a request of its own.
_ON_IT = re.compile(r"^\s*(?:please\s+|pls\s+)?\w+\s+(?:it|that|this|them)\b", re.IGNORECASE)


def asks_anything(text: str) -> bool:
    """Whether any clause of `text` asks a question or makes a request of its own ("I'm
    diabetic, find me a recipe"); a clause about the statement itself ("put it somewhere you'll
    find it") asks nothing."""
    if "?" in text:
        return True
    clauses = [c for c in re.split(r"[,;:.!—–]+", text) if c.strip()]
    return any(
        _QUESTION.search(c) is not None or (_REQUEST.match(c) is not None and not _ON_IT.match(c))
        for c in clauses
    )


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCES.split(text) if part and part.strip()]


def _fact_sentence(sentence: str, marked: bool) -> str | None:
    """The sentence as a fact to offer, or None: a question, a request, a passing remark."""
    led = _LEAD.match(sentence)
    body = sentence[led.end() :] if led else sentence
    body = body.strip(" ,;:-")
    if not body or _QUESTION.search(body) or _REQUEST.match(body) or _ONLY_MARKER.match(body):
        return None
    if led and _CONDITION.match(body):
        return None  # "… ! remember that if I ask you for recipes": when to use it, not a fact
    # A keep-marker's clause ends the fact ("..., so keep that in mind whenever you ..."), and
    # its own words go ("..., please don't forget that").
    body = _KEEP_TAIL.sub("", body)
    body = _KEEP.sub("", body).strip(" ,;:-")
    body = re.sub(r"\b(?:please|pls)\s*[.!]*$", "", body, flags=re.IGNORECASE).strip(" ,;:-")
    if len(body.split()) < 2 and not (led and body):
        return None
    if _LASTING.search(body) or ((led or marked) and len(body.split()) <= 25):
        return body if body.endswith((".", "!")) else body + "."
    return None


def offer_of(text: str, keep_probability: float = 0.0) -> str | None:
    """The person's own statement about themselves worth keeping, or None. `keep_probability`
    is how likely the classifier found a memory write (not sure enough to choose one): at
    `OFFER_SURE` or more, a statement that asks nothing and requests nothing is offered whole
    ("my son name Kevin, he 12") even where no sentence looks lasting to the rules here."""
    if not text or len(text) > MAX_MESSAGE_CHARS:
        return None
    sentences = _sentences(text)
    marked = bool(_KEEP.search(text)) or any(_LEAD.match(s) for s in sentences)
    facts = [fact for s in sentences if (fact := _fact_sentence(s, marked)) is not None]
    if not facts and keep_probability >= OFFER_SURE and _statement(text):
        facts = [kept_words(text)]
    if not facts or not facts[0]:
        return None
    offered = " ".join(facts)
    if len(offered) > MAX_OFFER_CHARS:
        return None
    return offered[0].upper() + offered[1:]


# A request to forget something told before ("forget my home address", "delete everything u know
# about my ex", "olvida lo que te dije de mi dirección"): the verb, the words that point back at
# what was told, then what to forget, up to the first break.
_FORGET_REQUEST = re.compile(
    r"^\s*(?:(?:ok|okay|and|also|please|pls|kindly|can you|could you)[\s,]+)*"
    r"(?:" + _FORGET_VERBS + r"|delete|erase|wipe)\s+"
    r"(?:(?:all\s+)?about\s+|"
    r"what (?:i|I)\s+(?:told|said(?: to)?|gave|sent)(?:\s+(?:you|u))?(?:\s+about)?\s+|"
    r"(?:everything|anything|all|what)\s+(?:you|u)\s+(?:know|have|remember|saved|kept)"
    r"(?:\s+(?:about|on|of))?\s+|lo que te dije (?:de|sobre)\s+|the fact that\s+)?"
    r"(?P<subject>[^,;.!?—–\n]{2,80})",
    re.IGNORECASE,
)
_FORGET_FILLER = re.compile(r"\s+(?:please|pls|now|thanks|ok|okay|again|for good)$", re.IGNORECASE)


def forget_request(text: str) -> tuple[str, str] | None:
    """A message read as a memory write that asks to forget something: (what to forget, what is
    true now, or "" when nothing new is said) — "forget my old gmail, my email is now …" gives
    ("my old gmail", "my email is now …"); None when it asks no such thing. Nothing is forgotten
    here: the caller finds what matches and the person picks what goes."""
    found = _FORGET_REQUEST.match(text.strip())
    if found is None:
        return None
    subject = found.group("subject").strip()
    while (trimmed := _FORGET_FILLER.sub("", subject)) != subject:
        subject = trimmed
    if not subject or subject.casefold() in ("it", "that", "this", "them", "everything"):
        return None  # what to forget was said earlier, or is all of it: the Memory window's job
    kept = kept_words(text)
    stated = _FORGET_REQUEST.match(kept) is None and kept != text.strip()
    return subject, kept if stated else ""


# A correction of something told before ("scratch the old orcid I gave you, the right one is …",
# "that address I gave you for my sister is wrong, she has moved", "412 ewes, not 450 like I told
# you"): it names what was told, as a question about memory does, but changes it.
_CORRECTION_RE = re.compile(
    r"\b(?:scratch|scrap|ditch|drop|bin|replace|wrong|incorrect|outdated|out\s+of\s+date|"
    r"correction|corrected|correcting|mistake|misspoke|mixed\s+(?:it|that|them)?\s*up|"
    r"revoked|typo|no\s+longer|not\s+any\s*more|anymore|"
    r"(?:has|have|'ve|'s)\s+(?:since\s+|now\s+|just\s+)?(?:moved|changed)|"
    r"(?:the\s+)?(?:right|correct|new|current)\s+one\s+is|instead|"
    # "nvm what i said abt my gamertag, changed it to …"
    r"(?:nvm|never\s*mind|ignore|disregard)\s+what\s+i\s+(?:said|told\s+(?:you|u)|wrote)|"
    r"not\s+[^,.;!?]{1,30}\s+(?:like|as)\s+i\s+(?:told|said|gave))\b",
    re.IGNORECASE,
)
_FORGET_LEAD = re.compile(
    r"^\W*(?:(?:please|pls|plz|ok|okay|so|now|also|and|just|kindly|can you|could you|would you)"
    r"[\s,]+)*(?:" + _FORGET_VERBS + r")\b(?!\s+(?:to|it|that|this|about\s+(?:it|that|this))\b)",
    re.IGNORECASE,
)
# "…, and list my downloads", "then just run ls": what follows may be a request of its own.
_AND_THEN = re.compile(r"\b(?:and|then)\s+(?P<rest>\S.*)", re.IGNORECASE | re.DOTALL)
_JUST = re.compile(r"^(?:just|and|then|instead)\s+", re.IGNORECASE)
# What asks rather than tells: a correction said as a question is still a look at memory.
_ASKING_LEAD_RE = re.compile(
    r"^\W*(?:(?:please|pls|ok|okay|so|and|hey)[\s,]+)*(?:what|wat|whats|what's|which|where|when|who|"
    r"whose|how|why|remind|tell|show|list|give|recall|do\s+you|did\s+(?:you|i)|can\s+you|could\s+you|"
    r"have\s+i|is|are|was|were)\b",
    re.IGNORECASE,
)
# Who told it: the words that point at what the correction replaces.
_TOLD = re.compile(
    r"\b(?:i|I)\s+(?:gave|told|sent|said|mentioned)\b(?:\s+(?:it\s+|that\s+)?(?:to\s+)?(?:you|u)\b)?",
)
# Words of a correction that say nothing of what it corrects (the memory search leaves out
# "the", "is", "not" and the like itself).
_CORRECTING_WORDS = re.compile(
    r"\b(?:scratch|scrap|ditch|drop|bin|replace|old|previous|wrong|incorrect|outdated|out\s+of\s+"
    r"date|revoked|typo|no\s+longer|anymore|any\s+more|like|before|earlier|correction|"
    r"corrected|correcting|mistake|misspoke|mixed|what|a|to|about|abt|nvm|never|mind|ignore|"
    r"disregard)\b",
    re.IGNORECASE,
)


def correction_of(text: str) -> str | None:
    """The words naming what a correction of something told before changes ("scratch the old
    orcid I gave you, the right one is …" → "orcid"), to find the outdated fact by; None when
    `text` corrects nothing it told, or asks rather than tells."""
    if "?" in text or _ASKING_LEAD_RE.match(text) or not _CORRECTION_RE.search(text):
        return None
    clauses = [c for c in re.split(r"[,;:.!—–]+", text) if c.strip()]
    told = next((c for c in clauses if _TOLD.search(c)), None)
    if told is None:
        return None
    words = " ".join(_CORRECTING_WORDS.sub(" ", _TOLD.sub(" ", told)).split())
    return words or " ".join(_CORRECTING_WORDS.sub(" ", _TOLD.sub(" ", text)).split()) or None


# "forget that", "scratch that", "no, don't keep it", "forget what I just said": the whole message
# takes back what was just told, pointing at it rather than naming it.
_TAKE_BACK = re.compile(
    r"^\W*(?:(?:no|nah|nope|oh|oops|actually|wait|sorry|hmm+|ok|okay|um+|uh+|never\s*mind|nvm|"
    r"please|pls|just)[\s,.!]+)*"
    r"(?:(?:" + _FORGET_VERBS + r"|scratch|undo|delete|remove|drop|cancel|unsave)\s+"
    r"(?:it|that|this|that\s+one|the\s+last\s+one|what\s+i\s+(?:just\s+)?(?:said|told\s+you|wrote))|"
    r"(?:don'?t|dont|do\s+not)\s+(?:remember|keep|save|store)\s+(?:it|that|this))"
    r"(?:\s+(?:please|pls|then|again|after\s+all|actually|thanks))*[\s.!]*$",
    re.IGNORECASE,
)


def takes_back(text: str) -> bool:
    """Whether `text` only takes back what was just told ("forget that", "scratch that", "no,
    don't keep it"): what it points at is the last message's, never words of its own to keep."""
    return len(text) <= MAX_TAKE_BACK_CHARS and _TAKE_BACK.match(text.strip()) is not None


def asks_to_forget(text: str) -> bool:
    """Whether `text` asks to forget something told before, and only that: "Please forget what
    I told you about the bowling league", "vergeet dat adres …" — not "forget it", "forget to
    …", a question, "delete report.txt", nor "forget the grep, just run ls" (a request)."""
    lead = _FORGET_LEAD.match(text)
    if "?" in text or lead is None or forget_request(text) is None:
        return False
    replaced = _FORGET_THEN.match(text.strip())
    rest = replaced.group("rest") if replaced is not None else ""
    parts = [rest] + [m.group("rest") for m in _AND_THEN.finditer(text[lead.end() :])]
    return not any(_REQUEST.match(_JUST.sub("", part)) for part in parts if part)


def kept_words(text: str) -> str:
    """The person's words as a fact to keep, the keep words that open or close them taken off
    ("my boots are size 11, keep it for future" → "my boots are size 11"), or "" when they only
    point at something said before ("keep that in mind for me"); for a message read as a memory
    write without the rules' own extraction (broker/router/classifier.py)."""
    body = _KEEP_LEAD.sub("", text.strip(), count=1)
    replaced = _FORGET_THEN.match(body)
    rest = replaced.group("rest") if replaced is not None else ""
    if rest and not _REQUEST.match(rest) and not _BACK_REFERENCE.search(rest):
        body = rest  # "forget my old gmail, my email is now …": the new one
    body = _AFTERWORD.sub("", _KEEP_TAIL.sub("", body)).strip(" ,;:-")
    if _POINTER.match(body):
        return ""  # "store that as well": what to keep was said earlier, not here
    return body or text.strip()
