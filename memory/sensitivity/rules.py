"""The rule table: one pattern for each thing a fact can reveal in so many words — religion,
political opinion, trade-union membership, sexual orientation and gender identity, racial or
ethnic origin, biometric and genetic data; passport, driving-licence, government ID and bank
numbers in context; relationships, relationship status, titles and the user's own name;
addresses, postcodes and where the user lives or is; date of birth, age, nationality and
pronouns; employer and job; online handles and number plates; medical appointments.

A rule is tried only when one of its trigger words is among the fact's words (and a digit is
in it, where it needs one), so most of the table costs a set intersection per fact. A rule's
reason is fixed, with at most the matched term in it ("religion (catholic)").

What this module must never do: hold a pattern that backtracks more than linearly (each is
bounded or anchored so that a run of characters is scanned from its start only), or put more
of the user's words in a reason than the one term its pattern spells out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memory.sensitivity.text import Finding, Text, rx
from memory.sensitivity.vocabulary import (
    DEMONYMS,
    ETHNIC_TERMS,
    ETHNIC_TRIGGERS,
    FIRST_NAMES,
    JOB_WORDS,
    ORIENTATION_TERMS,
    ORIENTATION_TRIGGERS,
    PARTIES,
    POLITICS_TERMS,
    POLITICS_TRIGGERS,
    REL_ALT,
    REL_MODS,
    RELATIONS,
    RELIGION_TERMS,
    RELIGION_TRIGGERS,
    TITLE_BRANDS,
    UNIONS,
    alternation,
    words,
)
from memory.types import Sensitivity


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    level: Sensitivity
    # May name the matched group "term": "relationship ({term})".
    reason: str
    category: str | None
    triggers: frozenset[str] | None = None
    needs_digit: bool = False
    # Extra validation of a match; the first match that passes counts.
    check: Callable[[re.Match[str]], bool] | None = None


_SUBJ_MODS = (
    r"(?:(?:not|also|both|now|a|an|very|quite|fairly|really|deeply|openly|proudly|strictly|"
    r"practising|practicing|devout|lapsed|observant|born-again|born\s+again|non-practising|"
    r"non-practicing|committed|staunch|lifelong|life-long|card-carrying|registered|out|"
    r"half|part|fully|totally|definitely|actually|still|always|been|being)\s+){0,4}"
)
# A person and a copula: "I'm", "we are", "my wife is", "he's", "Anna is" (name checked).
_SUBJ_COP = (
    r"(?:\b(?:i\s+am|i'm|im|i\s+was|i've\s+been|ive\s+been|i\s+have\s+been|we\s+are|we're|"
    r"we\s+were|(?:he|she|they)(?:\s+is|\s+are|'s|'re|\s+was|\s+were|\s+has\s+been)|"
    rf"(?:my|our|his|her|their)\s+(?:[\w-]+\s+){{0,2}}?(?:{REL_ALT})\s+(?:is|are|was|were|"
    r"has\s+been)|[\w-]+\s+and\s+i\s+(?:are|were)|(?P<subj>[a-z]+)\s+(?:is|was|has\s+been))\s+"
    + _SUBJ_MODS
    + r")"
)


def _subject_is_person(match: re.Match[str]) -> bool:
    subject = match.groupdict().get("subj")
    return subject is None or subject.lower() in FIRST_NAMES


_END_OF_PHRASE = r"(?=\s*(?:$|[.,!;?)]|and\b|but\b|too\b|now\b|though\b))"

_RULES: tuple[_Rule, ...] = (
    # ---------------------------------------------------------------- secret: beliefs
    _Rule(
        rx(_SUBJ_COP + rf"(?P<term>{alternation(RELIGION_TERMS)})\b"),
        Sensitivity.SECRET,
        "religion ({term})",
        "beliefs",
        RELIGION_TERMS,
        check=_subject_is_person,
    ),
    _Rule(
        rx(
            r"\b(?:i|we|he|she|they|my\s+[\w-]+|our\s+[\w-]+)\s+(?:usually\s+|always\s+|still\s+|"
            r"regularly\s+|never\s+|sometimes\s+)?(?:go|goes|went|attend|attends|attended|"
            r"worship|worships)\s+(?:to\s+|at\s+)?(?:the\s+|a\s+|my\s+|our\s+|local\s+)?"
            r"(?:\w+\s+)?(?P<term>church|mass|mosque|synagogue|shul|temple|gurdwara|chapel|"
            r"meeting\s+house|kingdom\s+hall|friday\s+prayers?)\b"
        ),
        Sensitivity.SECRET,
        "religion ({term})",
        "beliefs",
        words("church mass mosque synagogue shul temple gurdwara chapel kingdom prayers"),
    ),
    _Rule(
        rx(
            r"\b(?:i|we|he|she|they)\s+(?:\w+\s+)?(?:pray|prays|worship|worships)\b|"
            r"\b(?:my|our|his|her|their)\s+(?:(?:religious\s+)?faith|religion|religious\s+beliefs?|"
            r"church|mosque|synagogue|temple|gurdwara|parish|congregation|pastor|priest|vicar|"
            r"imam|rabbi)\b|"
            r"\b(?:i|we|he|she|they)\s+(?:do\s+not\s+|don't\s+|really\s+|still\s+)?believe\s+in\s+"
            r"(?:god|allah|jesus|christ|the\s+lord|a\s+higher\s+power|reincarnation)\b|"
            r"\b(?:observe|observes|celebrate|celebrates|keep|keeps|fast\s+for|fasting\s+for|"
            r"fasting\s+during|fast\s+during)\s+(?:the\s+)?(?:ramadan|passover|shabbat|sabbath|"
            r"lent|diwali|eid|yom\s+kippur|rosh\s+hashanah|hanukkah|vaisakhi|navratri)\b|"
            r"\b(?:i|we|he|she|they)\s+(?:only\s+)?(?:eat|eats|keep|keeps)\s+(?:only\s+)?"
            r"(?:kosher|halal)\b"
        ),
        Sensitivity.SECRET,
        "religion or belief",
        "beliefs",
        RELIGION_TRIGGERS,
    ),
    _Rule(
        rx(
            _SUBJ_COP + rf"(?:an?\s+)?(?P<term>{alternation(POLITICS_TERMS)}|"
            r"conservative(?!\s+(?:with|about|in|when|by))|"
            r"liberal(?!\s+(?:with|about|in|when|by))|progressive(?!\s+(?:with|about|in|lenses)))\b"
        ),
        Sensitivity.SECRET,
        "political opinion ({term})",
        "beliefs",
        POLITICS_TRIGGERS,
        check=_subject_is_person,
    ),
    _Rule(
        rx(
            r"\b(?:i|we|he|she|they|my\s+[\w-]+|our\s+[\w-]+|[a-z]+)\s+(?:always\s+|usually\s+|"
            r"never\s+|just\s+|probably\s+|will\s+|won't\s+|would\s+|didn't\s+)?"
            r"(?:vote[sd]?|voting)\s+(?:for\s+(?:the\s+)?)?"
            rf"(?:{alternation(PARTIES)}|remain|leave|yes|no|green|democrat|republican|"
            r"conservative|liberal|trump|biden|harris|starmer|sunak|farage)\b|"
            r"\bvote[sd]?\s+for\s+(?-i:[A-Z])|"
            rf"\bmember\s+of\s+(?:the\s+)?(?:{alternation(PARTIES)})\b|"
            rf"\b(?:{alternation(PARTIES)})\s+(?:party\s+)?(?:member|membership|voter|supporter|"
            r"activist|councillor|canvasser)\b|"
            r"\b(?:my|our|his|her|their)\s+(?:politics|political\s+(?:views|beliefs|opinions|"
            r"leanings|affiliation|party))\b|"
            r"\b(?:i|we|he|she|they)\s+(?:support|back|campaign\s+for|canvass\s+for|"
            rf"donate\s+to)\s+(?:the\s+)?(?:{alternation(PARTIES)})\b|"
            r"\b(?:canvassing|campaigning)\s+for\s+(?:the\s+)?"
            rf"(?:{alternation(PARTIES)})\b"
        ),
        Sensitivity.SECRET,
        "political opinion",
        "beliefs",
        POLITICS_TRIGGERS,
    ),
    _Rule(
        rx(
            r"\b(?:i'm|i\s+am|im|we're|we\s+are|he's|she's|he\s+is|she\s+is|they're|"
            r"my\s+[\w-]+\s+is)\s+(?:a\s+|an\s+|also\s+)?(?:trade\s+)?union\s+(?:member|rep|"
            r"representative|steward|official|organi[sz]er)\b|"
            r"\b(?:(?:member|members)\s+of|joined|belong\s+to|belongs\s+to|i'm\s+in|i\s+am\s+in|"
            r"we're\s+in)\s+(?:the\s+|a\s+|my\s+)?(?:trade\s+|labou?r\s+|teachers'?\s+|"
            r"nurses'?\s+)?(?:union|unions)\b|"
            rf"\b(?:member\s+of|joined|belong\s+to|belongs\s+to)\s+(?:the\s+)?(?:{alternation(UNIONS)})\b|"
            r"\b(?:my|our|his|her|their)\s+(?:trade\s+)?union(?:\s+(?:membership|dues|subs|rep|"
            r"representative|steward|card|branch))?\b(?!\s+(?:jack|flag))|"
            r"\btrade\s+union\s+member|"
            rf"\b(?:{alternation(UNIONS)})\s+(?:union\s+)?(?:member|membership|rep|steward|card)\b"
        ),
        Sensitivity.SECRET,
        "trade-union membership",
        "beliefs",
        frozenset({"union", "unions", *UNIONS}),
    ),
    # ---------------------------------------------------------------- secret: identity
    _Rule(
        rx(
            _SUBJ_COP + rf"(?:(?:{alternation(ORIENTATION_TERMS)})\b(?!\s+(?:fat|fats))|"
            r"trans\s+(?:woman|man|person|guy|girl|masc|femme)\b|"
            r"(?:bi|ace|straight|trans|poly)" + _END_OF_PHRASE + r")"
        ),
        Sensitivity.SECRET,
        "sexual orientation or gender identity",
        "identity",
        ORIENTATION_TRIGGERS,
        check=_subject_is_person,
    ),
    _Rule(
        rx(
            r"\b(?:i|he|she|they|we|my\s+[\w-]+)\s+(?:just\s+|finally\s+|recently\s+|have\s+|"
            r"has\s+|'ve\s+)?(?:came|come|coming|am\s+coming|'m\s+coming)\s+out\s+"
            r"(?:as\b|to\s+(?:my|his|her|their|our|the\s+family|family|friends|everyone|"
            r"work|colleagues)\b)|"
            r"\b(?:my|our|his|her|their)\s+(?:sexuality|sexual\s+orientation|orientation|"
            r"sex\s+life|sexual\s+(?:health|history|partners?|preferences?)|gender\s+identity|"
            r"transition)\b|"
            r"\b(?:i'm|i\s+am|im|he's|she's|they're|he\s+is|she\s+is)\s+(?:currently\s+)?"
            r"transitioning\b"
        ),
        Sensitivity.SECRET,
        "sexual orientation or gender identity",
        "identity",
        ORIENTATION_TRIGGERS,
    ),
    _Rule(
        rx(
            r"(?:\b(?:i\s+am|i'm|im|we\s+are|we're|(?:he|she|they)(?:\s+is|\s+are|'s|'re)|"
            rf"(?:my|our)\s+(?:family|parents|ancestors|{REL_ALT})\s+(?:is|are|was|were)|"
            r"(?P<subj>[a-z]+)\s+is)\s+" + _SUBJ_MODS + r")"
            rf"(?P<term>{alternation(ETHNIC_TERMS)})(?![\w-])"
            r"(?!\s+(?:and\s+)?(?:belt|sheep|coffee|tea|wine|friday|chocolate|bread|rice|out|"
            r"list|board|noise|mode|tie|hat|shirt|trousers|jeans|as|with|fan|card|christmas|"
            r"market|community|collie|food|restaurant|cuisine))"
        ),
        Sensitivity.SECRET,
        "racial or ethnic origin ({term})",
        "identity",
        ETHNIC_TRIGGERS,
        check=_subject_is_person,
    ),
    _Rule(
        rx(
            r"\b(?:of|my|our|his|her|their)\s+(?:[\w-]+\s+){0,2}?(?:descent|heritage|ancestry|"
            r"extraction)\b|"
            r"\b(?:my|our|his|her|their)\s+(?:ethnicity|race|ethnic\s+(?:background|origin|"
            r"group)|racial\s+(?:background|origin|identity))\b"
        ),
        Sensitivity.SECRET,
        "racial or ethnic origin",
        "identity",
        words("descent heritage ancestry extraction ethnicity race ethnic racial"),
    ),
    _Rule(
        rx(
            r"\bbiometrics?\b|"
            r"\b(?:my|our|his|her|their)\s+(?:[\w-]+\s+)?(?:fingerprints?|retina(?:l)?\s+scan|"
            r"iris\s+scan|face\s*print|voice\s*print|palm\s*print|face\s+scan|facial\s+(?:scan|"
            r"data|template|geometry))\b"
        ),
        Sensitivity.SECRET,
        "biometric data",
        "identity",
        words(
            "biometric biometrics fingerprint fingerprints retina retinal iris faceprint face "
            "voiceprint voice palmprint palm facial"
        ),
    ),
    _Rule(
        rx(
            r"\b(?:dna\s+(?:test|tests|results?|profile|sample|kit)|genetic\s+(?:test|tests|"
            r"testing|results?|condition|disorder|marker|mutation|data|screening|risk)|genome|"
            r"genotype|23\s*and\s*me|ancestrydna|ancestry\s+dna|brca[12]?(?:\s+gene)?|"
            r"carrier\s+of|gene\s+(?:mutation|variant)|apoe4?|(?:my|our|his|her)\s+(?:dna|genes))\b"
        ),
        Sensitivity.SECRET,
        "genetic data",
        "health",
        words(
            "dna genetic genome genotype 23andme 23 ancestrydna ancestry brca brca1 brca2 carrier "
            "gene apoe apoe4 genes"
        ),
    ),
    # ---------------------------------------------------------------- secret: numbers
    _Rule(
        rx(
            r"\bpassport\s*(?:number|no\.?|num|#)?\b[^\n]{0,30}?(?<![A-Za-z0-9])"
            r"(?=[A-Za-z]{0,3}\d)[A-Za-z0-9]{6,10}(?![A-Za-z0-9])"
        ),
        Sensitivity.SECRET,
        "passport number",
        "identity",
        frozenset({"passport"}),
        needs_digit=True,
    ),
    _Rule(
        rx(
            r"\b(?:driv(?:er'?s|ing)\s+licen[cs]e|licen[cs]e\s+(?:number|no\.?))\b[^\n]{0,30}?"
            r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]{0,12}\d)[A-Za-z0-9][A-Za-z0-9 -]{4,20}[A-Za-z0-9]"
        ),
        Sensitivity.SECRET,
        "driving licence number",
        "identity",
        frozenset({"licence", "license"}),
        needs_digit=True,
    ),
    _Rule(
        rx(
            r"\b(?:national\s+(?:id|identity|insurance|identification)(?:\s+(?:number|no\.?|card))?|"
            r"id\s+(?:card\s+)?(?:number|no\.?)|identity\s+(?:card|number)|"
            r"tax\s+(?:id|file\s+number|number|code|reference|identification\s+number)|"
            r"tfn|itin|ein|utr|ssn|social\s+security(?:\s+(?:number|no\.?))?|"
            r"social\s+insurance(?:\s+number)?|sin\s+(?:number|no\.?)|nhs\s+number|"
            r"medicare(?:\s+number)?|medicaid(?:\s+number)?|aadhaa?r(?:\s+number)?|"
            r"pan\s+(?:card|number)|personnummer|bsn|burgerservicenummer|dni|nie|nif|"
            r"codice\s+fiscale|steuer-?id|insee|pesel|cpf|curp|nric|mykad|hkid|green\s+card|"
            r"alien\s+(?:registration\s+)?number|a-number|uscis\s+number|"
            r"resident\s+registration\s+number)\b[^\n]{0,25}?(?<![A-Za-z0-9])"
            r"(?=[A-Za-z0-9 -]{0,6}\d)[A-Za-z0-9][A-Za-z0-9 -]{3,20}[0-9A-Za-z]"
        ),
        Sensitivity.SECRET,
        "government ID number",
        "identity",
        words(
            "national id identity tax tfn itin ein utr ssn social sin nhs medicare medicaid "
            "aadhaar aadhar pan personnummer bsn burgerservicenummer dni nie nif codice steuer "
            "insee pesel cpf curp nric mykad hkid green alien uscis resident"
        ),
        needs_digit=True,
        check=lambda m: sum(c.isdigit() for c in m.group()) >= 4,
    ),
    _Rule(
        rx(
            r"\b(?:(?:bank\s+)?account\s*(?:number|no\.?|num|#)|acct\s*(?:no\.?|#|number)?|"
            r"a/c\s*(?:no\.?)?|bank\s+account|checking\s+account|savings\s+account|"
            r"current\s+account)\b[^\n\d]{0,25}\d[\d -]{4,20}\d|"
            r"\bsort\s*code\b[^\n\d]{0,20}\d{2}[- ]?\d{2}[- ]?\d{2}\b|"
            r"\b(?:routing|aba|transit)\s*(?:number|no\.?|#)?\b[^\n\d]{0,20}\d{9}\b|"
            r"(?<![\d-])\d{2}-\d{2}-\d{2}\s*,?\s*\d{8}(?!\d)"
        ),
        Sensitivity.SECRET,
        "bank account details",
        "finance",
        None,
        needs_digit=True,
    ),
    # ---------------------------------------------------------------- personal: people
    _Rule(
        rx(
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+" + REL_MODS + rf"(?P<term>{REL_ALT})\b"
            r"|\b(?:i|we)\s+(?:have|'ve\s+got|have\s+got|had)\s+(?:a|an|one|two|three|four|five|"
            r"\d|twin|no|an\s+older|a\s+younger)\s+(?:[\w-]+\s+)?(?P<term2>" + REL_ALT + r")\b"
        ),
        Sensitivity.PERSONAL,
        "relationship ({term})",
        "relationships",
        RELATIONS,
    ),
    _Rule(
        # Family words used as names: "tell mum", "grandad's 90th".
        rx(
            r"\b(?P<term>mum|mom|mam|mummy|mommy|dad|daddy|grandad|granddad|grandpa|grandma|gran|"
            r"granny|nan|nana|auntie|aunty)(?:'s)?\b"
        ),
        Sensitivity.PERSONAL,
        "relationship ({term})",
        "relationships",
        words(
            "mum mom mam mummy mommy dad daddy grandad granddad grandpa grandma gran granny nan "
            "nana auntie aunty"
        ),
    ),
    _Rule(
        rx(
            r"\b(?:i'm|i\s+am|im|we're|we\s+are|he's|she's|he\s+is|she\s+is)\s+(?:now\s+|"
            r"recently\s+|happily\s+|newly\s+|getting\s+|just\s+got\s+)?(?P<term>married|divorced|"
            r"single|engaged|widowed|separated|in\s+a\s+relationship)(?![\w-])"
        ),
        Sensitivity.PERSONAL,
        "relationship status",
        "relationships",
        words("married divorced single engaged widowed separated relationship"),
    ),
    _Rule(
        re.compile(
            r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame)\.?\s+(?P<name>[A-Z][a-z'-]+)"
            r"(?:\s+[A-Z][a-z'-]+)?"
        ),
        Sensitivity.PERSONAL,
        "a person's name",
        "relationships",
        words("mr mrs ms miss mx dr prof sir dame"),
        check=lambda m: m.group("name").lower() not in TITLE_BRANDS,
    ),
    _Rule(
        rx(
            r"\b(?:my\s+name\s+is|my\s+name's|call\s+me(?!\s+(?:on|at|back|later|tomorrow|"
            r"tonight|when|if|after|before|in|asap|now|soon|sometime|maybe|a|an|the|if|crazy|"
            r"old|out|up|over|whenever)\b)|i'm\s+called|i\s+am\s+called|i\s+go\s+by|"
            r"people\s+call\s+me|everyone\s+calls\s+me|friends\s+call\s+me|"
            r"my\s+(?:first|last|middle|full|maiden|family|sur|nick|legal)\s*name)\b"
        ),
        Sensitivity.PERSONAL,
        "your name",
        "identity",
        words("name name's call called go calls surname nickname maiden"),
    ),
    # ---------------------------------------------------------------- personal: places
    _Rule(
        rx(
            r"\b(?:i|we)\s+(?:now\s+|currently\s+|still\s+|also\s+)?(?:live|reside|am\s+living|"
            r"'m\s+living|are\s+living)\s+(?:at|on)\b|"
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+(?:home\s+|house\s+|postal\s+|mailing\s+|"
            r"street\s+|work\s+|office\s+|new\s+|old\s+|current\s+|delivery\s+|billing\s+)?"
            r"address\b(?!\s+book)|"
            r"\b(?:flat|apartment|apt|unit|suite)\s+\d{1,4}[a-z]?\b"
        ),
        Sensitivity.PERSONAL,
        "home address",
        "location",
        words("live lives reside living address flat apartment apt unit suite"),
    ),
    _Rule(
        rx(
            r"(?<![\d,.])\d{1,5}[a-z]?,?\s+(?:(?!(?:the|a|an|on|in|at|of|my|to|for|and|or|by|"
            r"from|with|down|up|across|along|near|past|this|that|every|per|each|times|minutes?|"
            r"mins?|hours?|days?|weeks?|miles?|km|metres?|meters?|steps?|blocks?)\b)"
            r"[a-z][a-z'.-]*\s+){1,3}(?:street|st|road|rd|avenue|ave|lane|ln|drive|close|court|"
            r"ct|place|crescent|cres|terrace|gardens|gdns|boulevard|blvd|square|grove|mews|"
            r"parade|highway|hwy|circle|parkway|pkwy|trail|wharf|quay|broadway)\b"
        ),
        Sensitivity.PERSONAL,
        "street address",
        "location",
        None,
        needs_digit=True,
    ),
    _Rule(
        re.compile(
            r"(?<![A-Za-z0-9])(?:[A-Z]{1,2}\d[A-Z\d]?|GIR)\s?\d[ABD-HJLNP-UW-Z]{2}(?![A-Za-z0-9])|"
            r"(?i:\b(?:post\s*code|postal\s+code|zip(?:\s*code)?)\b\W{0,5}(?:is\s+)?"
            r"(?:[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|\d{5}(?:-\d{4})?|[A-Z]\d[A-Z]\s?\d[A-Z]\d)\b)|"
            r"\b(?:AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|"
            r"NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC)"
            r",?\s+\d{5}(?:-\d{4})?\b"
        ),
        Sensitivity.PERSONAL,
        "postcode",
        "location",
        None,
        needs_digit=True,
    ),
    _Rule(
        rx(
            r"\b(?:i|we)\s+(?:now\s+|currently\s+|still\s+|also\s+|just\s+)?(?:live|reside|"
            r"am\s+living|'m\s+living|are\s+living|moved|am\s+moving|'m\s+moving|are\s+moving|"
            r"relocated|grew\s+up|commute)\s+(?:in|to|near|outside|just\s+outside|from|round|"
            r"around)\b|"
            r"\b(?:my|our)\s+(?:home\s*town|hometown|neighbourhood|neighborhood|village|town|"
            r"city|country|local\s+area|area)\s+is\b|"
            r"\bwhere\s+(?:i|we)\s+live\b|"
            r"\b(?:i'm|im|i\s+am|we're|we\s+are)\s+(?:now\s+|currently\s+|just\s+|soon\s+)?"
            r"(?:moving|relocating|renting|living)\s+(?:[\w-]+\s+){0,3}?(?:in|to|near|at)\b|"
            r"\b(?:i|we)\s+(?:rent|own|bought|have)\s+(?:a|an|the)\s+(?:flat|house|apartment|place|"
            r"home|cottage|bungalow|room|studio)\s+(?:in|on|at|near)\b|"
            r"\b(?:my|our)\s+(?:home|house|flat|apartment|office|workplace)\s+"
            r"(?:is\s+)?(?:in|on|at|near|by|just\s+off)\b|"
            r"\b(?:i'm|i\s+am|im|we're|we\s+are)\s+(?:originally\s+)?from\s+(?!the\s+(?:future|"
            r"past)\b)\w|"
            r"\b(?:i'm|i\s+am|im|we're|we\s+are)\s+(?:based|located|staying|living)\s+(?:in|at|"
            r"near|out\s+of)\b"
        ),
        Sensitivity.PERSONAL,
        "where you live or are",
        "location",
        words(
            "live reside living moved moving relocated grew commute hometown home town village "
            "city country area neighbourhood neighborhood house flat apartment place office "
            "workplace work from based located staying"
        ),
    ),
    _Rule(
        re.compile(
            r"\b(?i:i'm|i\s+am|im|we're|we\s+are)\s+(?i:currently\s+|now\s+|still\s+)?"
            r"(?i:in|at)\s+(?!(?:The|A|An|My|Our)\b)[A-Z][a-z]"
        ),
        Sensitivity.PERSONAL,
        "where you live or are",
        "location",
        words("i'm im am we're are"),
    ),
    # ---------------------------------------------------------------- personal: identity
    _Rule(
        rx(
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+(?:birthday|bday|b-day|birth\s*date|"
            r"date\s+of\s+birth|dob)\b|\bborn\s+(?:on|in)\b|\b(?:i|he|she|we|they)\s+(?:was|were)"
            r"\s+born\b|\b(?:date\s+of\s+birth|d\.o\.b\b|dob)\b|\bbirthday\s+is\s+(?:on\s+)?\d"
        ),
        Sensitivity.PERSONAL,
        "date of birth",
        "identity",
        words("birthday bday b day birth birthdate dob born d"),
    ),
    _Rule(
        rx(
            r"\b(?:i'm|i\s+am|im|i\s+will\s+be|i'll\s+be)\s+\d{1,3}\s*(?:years?\s*old|yrs?\s*old|"
            r"y/?o)\b|\bi\s+(?:just\s+)?turned\s+\d{1,3}\b|\bmy\s+age\s+is\b|"
            r"\b(?:i'm|i\s+am|im)\s+(?:in\s+my\s+)?(?:twenties|thirties|forties|fifties|sixties|"
            r"seventies|eighties)\b"
        ),
        Sensitivity.PERSONAL,
        "age",
        "identity",
        words(
            "old yo y turned age twenties thirties forties fifties sixties seventies eighties yrs"
        ),
    ),
    _Rule(
        rx(
            r"\b(?:i'm|i\s+am|im|we're|we\s+are)\s+(?:originally\s+|half\s+|part\s+|a\s+)?"
            rf"(?P<term>{alternation(DEMONYMS)})(?![\w-])(?!\s+(?:food|cuisine|restaurant|film|films|music|"
            r"wine|beer|cars?|tea|coffee|breakfast|style|accent))|"
            r"\b(?:my|our)\s+(?:nationality|citizenship)\b|"
            r"\b(?:i|we)\s+(?:have|hold)\s+(?:a\s+|an\s+|dual\s+)?(?:\w+\s+)?(?:citizenship|"
            r"passport)\b"
        ),
        Sensitivity.PERSONAL,
        "nationality",
        "identity",
        DEMONYMS | words("nationality citizenship passport"),
    ),
    _Rule(
        rx(r"\b(?:my|our|his|her|their)\s+(?:preferred\s+)?pronouns\b|\bpronouns\s+are\b"),
        Sensitivity.PERSONAL,
        "pronouns",
        "identity",
        words("pronouns"),
    ),
    # ---------------------------------------------------------------- personal: work
    _Rule(
        rx(
            r"\b(?:i|we)\s+(?:currently\s+|now\s+|still\s+|also\s+)?(?:work|worked|am\s+working|"
            r"'m\s+working|work\s+full[\s-]time|work\s+part[\s-]time)\s+(?:at|for)\b|"
            r"\b(?:my|our)\s+(?:employer|company|firm|workplace)\b|\bemployed\s+(?:by|at)\b|"
            r"\b(?:i|we)\s+(?:just\s+)?(?:joined|started\s+at|started\s+working\s+at|"
            r"got\s+a\s+job\s+(?:at|with)|got\s+hired\s+(?:at|by))\b|"
            r"\b(?:my|a)\s+(?:new\s+)?job\s+(?:at|with)\b"
        ),
        Sensitivity.PERSONAL,
        "employer",
        "work",
        words("work worked working employer company firm workplace employed joined started job"),
    ),
    _Rule(
        rx(
            r"\bi\s+work\s+as\b|\bmy\s+(?:job|role|position|occupation|profession|title)"
            r"(?:\s+title)?\s+is\b|\bby\s+(?:profession|trade)\b|\bemployed\s+as\b|"
            r"\bmy\s+job\s+title\b|"
            rf"\b(?:i'm|i\s+am|im)\s+(?:a|an)\s+(?:[\w-]+\s+){{0,2}}?(?:{alternation(JOB_WORDS)})\b|"
            r"\b(?:i|we)\s+work\s+(?:in|from\s+home|remotely|from\s+the\s+office)\b|"
            r"\b(?:i'm|i\s+am|im)\s+(?:retired|unemployed|self-employed|self\s+employed|"
            r"freelance|between\s+jobs|on\s+maternity\s+leave)\b"
        ),
        Sensitivity.PERSONAL,
        "job",
        "work",
        JOB_WORDS
        | words(
            "work job role position occupation profession title trade employed retired "
            "unemployed self freelance jobs maternity"
        ),
    ),
    # ---------------------------------------------------------------- personal: contact
    _Rule(
        rx(
            r"\b(?:my|our|his|her|their)\s+(?:[\w-]+\s+)?(?:handle|username|user\s+name|"
            r"gamertag|discord|skype|telegram|signal|whatsapp|instagram|insta|twitter|tiktok|"
            r"snapchat|linkedin|github|mastodon|bluesky|steam)\s+(?:name\s+|id\s+|handle\s+)?"
            r"(?:is|:)|\b(?:username|user\s+name|handle|gamertag|screen\s+name)\b[^\n]{0,25}?"
            r"(?:\bis\b|:)"
        ),
        Sensitivity.PERSONAL,
        "online handle",
        "contact",
        words(
            "handle username user gamertag discord skype telegram signal whatsapp instagram "
            "insta twitter tiktok snapchat linkedin github mastodon bluesky steam"
        ),
    ),
    _Rule(
        rx(
            r"\b(?:number\s*plate|licen[cs]e\s*plate|reg(?:istration)?(?:\s+(?:number|plate))?|"
            r"plate)\b[^\n]{0,15}?(?<![A-Za-z0-9])(?=[A-Za-z]{0,3}\d)[A-Za-z0-9]{2,4}\s?"
            r"[A-Za-z0-9]{2,4}(?![A-Za-z0-9])"
        ),
        Sensitivity.PERSONAL,
        "vehicle registration",
        "identity",
        words("plate reg registration"),
        needs_digit=True,
    ),
    # ---------------------------------------------------------------- personal: health-adjacent
    _Rule(
        rx(
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+(?:doctor|doctors|gp|dentist|optician|"
            r"optometrist|physio|physiotherapist|surgeon|consultant|nurse|specialist|"
            r"dermatologist|orthodontist|hygienist|chiropractor|osteopath|podiatrist|hospital|"
            r"clinic)\b|"
            r"\b(?:doctor'?s|doctors|gp|dentist|dental|hospital|clinic|optician|physio|"
            r"vaccination|vaccine|blood\s+test|check-?up|smear\s+test|scan)\s+appointment\b|"
            r"\bappointment\s+(?:at|with)\s+(?:the\s+|my\s+)?(?:doctor|gp|dentist|hospital|"
            r"clinic|optician|physio)\b"
        ),
        Sensitivity.PERSONAL,
        "medical appointment or provider",
        None,
        words(
            "doctor doctors gp dentist optician optometrist physio physiotherapist surgeon "
            "consultant nurse specialist dermatologist orthodontist hygienist chiropractor "
            "osteopath podiatrist hospital clinic appointment dental"
        ),
    ),
)


def rule_findings(text: Text) -> Iterator[Finding]:
    """One finding for each rule that matches (its first passing match), in table order."""
    for rule in _RULES:
        if rule.needs_digit and not text.has_digit:
            continue
        if rule.triggers is not None and rule.triggers.isdisjoint(text.words):
            continue
        for match in rule.pattern.finditer(text.text):
            if rule.check is not None and not rule.check(match):
                continue
            reason = rule.reason
            if "{term}" in reason:
                groups = match.groupdict()
                term = next((groups[g] for g in ("term", "term2") if groups.get(g)), None)
                reason = (
                    reason.format(term=" ".join(term.lower().split()))
                    if term
                    else reason.replace(" ({term})", "")
                )
            yield Finding(rule.level, reason, rule.category)
            break
