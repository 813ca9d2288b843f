"""How sensitive a fact is, and whether it may be stored at all — decided in code, not by a model.

`assess(text)` runs deterministic detectors over a candidate fact and returns an `Assessment`:
a level (`low | personal | secret`), short reasons a person can read ("health condition
(diabetes)", "email address", "card number (passes the Luhn check)"), a category, and — for
credentials — a refusal message. `combine()` folds in a language model's label and the
category's floor: the model may raise a level, never lower it. `refuse_credentials(text)` is
the store's defence-in-depth hook.

What this module must never do: call a model or the network, write or log the text it is
given (nor any piece of it: reasons come from a fixed vocabulary, so they never carry a
name, a number or a password), or take more than linear time (every pattern is precompiled
and either bounded or anchored so that a run of characters is scanned from its start only;
a 100 KB paste returns in milliseconds). It imports nothing of ours but `memory.types` and
`memory.credentials`, the credential detector it shares with the audit's redaction.

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
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from memory.credentials import credential_kinds
from memory.types import Assessment, Sensitivity, highest

log = logging.getLogger("chamberlain.memory.sensitivity")

LOW = Sensitivity.LOW
PERSONAL = Sensitivity.PERSONAL
SECRET = Sensitivity.SECRET

REFUSAL_MESSAGE = (
    "Chamberlain never stores passwords, keys or recovery codes; keep them in a password manager."
)

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
    "general": LOW,
    "preference": LOW,
    "pet": LOW,
    "schedule": LOW,
    "relationships": PERSONAL,
    "location": PERSONAL,
    "contact": PERSONAL,
    "work": PERSONAL,
    "identity": PERSONAL,
    "health": SECRET,
    "finance": SECRET,
    "beliefs": SECRET,
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

_I = re.IGNORECASE


def _rx(pattern: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _words(text: str) -> frozenset[str]:
    """Whitespace-separated words (a compact way to write long vocabularies)."""
    return frozenset(text.split())


def _phrases(text: str) -> tuple[str, ...]:
    """Comma-separated phrases (a compact way to write long vocabularies)."""
    return tuple(" ".join(p.split()) for p in text.split(",") if p.strip())


def _alt(words: Iterable[str]) -> str:
    """A regex alternation of literal words/phrases, longest first; spaces match any space."""
    parts = sorted(set(words), key=len, reverse=True)
    return "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in parts)


# ---------------------------------------------------------------------------------- vocabulary

_RELATIONS = _words(
    """
    wife husband partner spouse girlfriend boyfriend fiance fiancé fiancee fiancée son sons
    daughter daughters kid kids child children baby mum mom mother mam mummy mommy dad father
    daddy parents parent brother brothers sister sisters sibling siblings twin grandma gran
    granny nan nana grandmother grandad granddad grandpa grandfather grandparents grandson
    granddaughter grandchildren grandkids aunt auntie aunty uncle cousin cousins niece nephew
    stepmum stepmom stepdad stepson stepdaughter stepbrother stepsister godmother godfather
    godson goddaughter boss manager colleague colleagues coworker coworkers workmate teammate
    friend friends bestie bff mate pal neighbour neighbor neighbours neighbors flatmate
    roommate housemate landlord landlady tenant ex carer caregiver nanny babysitter childminder
    tutor mentor lawyer solicitor accountant in-laws
    """
)
_REL_ALT = _alt(_RELATIONS)
_REL_MODS = (
    r"(?:(?:older|younger|little|big|baby|elder|eldest|oldest|youngest|twin|step|half|ex|late|"
    r"new|best|old|future|former|current|dear|great)[\s-]?){0,3}"
)

_PETS = _words(
    """
    dog dogs puppy pup puppies cat cats kitten kittens kitty hamster hamsters rabbit rabbits
    bunny parrot budgie bird birds fish goldfish tortoise turtle horse pony gerbil ferret snake
    lizard gecko iguana chinchilla rat rats pet pets cockatiel canary hen hens pig lab labrador
    spaniel terrier retriever poodle collie dachshund pug beagle
    """
)
_PET_ALT = _alt(_PETS)

# First names, taken as a person's only in a person context (see _names). Names that are also
# common words (Will, Mark, May, Rose, Grace, Bill…) are left out on purpose.
FIRST_NAMES = _words(
    """
    aaron adam adrian ahmed aidan alan alastair albert alex alexander alfie ali alistair andrew
    andy angus anthony antonio archie arjun arthur ben benjamin bilal brian callum cameron
    carlos charles charlie chris christopher colin connor craig damian daniel danny darren dave
    david declan dominic duncan dylan edward elliot eric ethan euan finn finley freddie gareth
    gary gavin geoffrey graham greg gregory hamish harry harvey henry hugo ian isaac jack jacob
    jake jamal james jamie jason jeff jeremy jim jimmy joe joel john jon jonathan jose joseph
    josh joshua juan kai karl keith kevin kieran kyle leo leon lewis liam logan louis luca lucas
    luke malcolm marcus mario martin matt matthew michael mike mohammed muhammad mohammad nathan
    neil nigel noah oliver ollie omar oscar owen patrick paul pedro peter phil philip raj ravi
    richard robert robbie roger ronan ross ryan sam samuel scott sean sebastian simon stephen
    steve steven stuart theo thomas tim timothy toby tom tommy tony wayne william yusuf zach
    abigail aisha alice alison amanda amelia amy ana andrea angela anna anne annie aoife beth
    bethany caroline catherine charlotte chiara chloe claire clara danielle deborah eleanor
    elena elizabeth ella ellie emily emma erin eva evie fatima fiona freya gemma hannah harriet
    helen imogen ines isabel isabella isla jane jennifer jenny jess jessica joanna julia julie
    karen kate katie kathryn kirsty laura lauren leah leila lena linda lisa louise lucy lydia
    maria marta mary maya megan melissa mia michelle millie nadia naomi natalie nicola niamh
    nina olivia phoebe priya rachel rebecca sara sarah sofia sophia sophie stephanie susan tara
    yasmin zara zoe
    """
)

# Words that sit where a name would and are not one.
_NOT_NAMES = _words(
    """
    i me my he she it we they you this that there here who what which whose where when why how
    the a an and or but is was are were be been has have had not no yes so very also just now
    then too really still always never called named likes loves lives works said says wants
    needs prefers hates
    """
)

# A person context for a first name: the word before it, or the word after it.
_NAME_BEFORE = _words(
    """
    call ring phone text txt message msg email e-mail meet meeting visit visiting see seeing
    tell ask remind invite thank with and dear for to by
    """
)
_NAME_AFTER = _words(
    """
    is was has likes loves lives works said says wants needs prefers hates from and who will
    can can't doesn't isn't called texted emailed rang phoned hates lives
    """
)
_TITLE_BRANDS = frozenset({"pepper", "who", "martens", "bean", "oetker", "strange", "seuss"})

JOB_WORDS = _words(
    """
    nurse doctor teacher engineer developer programmer designer lawyer solicitor barrister
    accountant architect pharmacist dentist vet veterinarian scientist researcher lecturer
    professor student librarian chef cook baker plumber electrician carpenter builder mechanic
    driver pilot paramedic firefighter officer cop soldier journalist writer editor
    photographer artist musician actor actress consultant analyst manager director ceo cto
    founder freelancer contractor receptionist cleaner carer midwife therapist psychologist
    surgeon physiotherapist worker servant translator farmer retiree pensioner salesperson
    cashier barista waiter waitress bartender marketer recruiter scientist technician
    administrator secretary clerk banker trader economist agent realtor tester sysadmin
    """
)

_DEMONYMS = _words(
    """
    british english scottish welsh irish american canadian australian french german italian
    spanish portuguese dutch belgian swiss austrian swedish norwegian danish finnish icelandic
    polish czech slovak hungarian romanian bulgarian greek turkish russian ukrainian
    lithuanian latvian estonian croatian serbian slovenian bosnian albanian chinese japanese
    korean vietnamese thai filipino indonesian malaysian singaporean indian pakistani
    bangladeshi sri lankan nepali afghan iranian iraqi syrian lebanese egyptian moroccan
    algerian tunisian nigerian ghanaian kenyan ethiopian somali south african zimbabwean
    brazilian argentinian argentine chilean colombian peruvian venezuelan mexican cuban
    jamaican kiwi
    """
)

# --- health: (kind, terms). A term is one to three lowercase words.
_HEALTH_KINDS: dict[str, tuple[str, ...]] = {
    "health condition": _phrases(
        """
        diabetes, diabetic, prediabetes, asthma, asthmatic, epilepsy, epileptic, cancer, tumour,
        tumor, leukaemia, leukemia, lymphoma, melanoma, arthritis, fibromyalgia, lupus, crohn's,
        crohns, colitis, ibs, coeliac, celiac, hiv, aids virus, hepatitis, covid, long covid, flu,
        pneumonia, bronchitis, copd, emphysema, hypertension, high blood pressure, hypothyroidism,
        hyperthyroidism, thyroid, high cholesterol, anaemia, anemia, endometriosis, pcos, migraine,
        migraines, insomnia, sleep apnoea, sleep apnea, heart condition, heart disease, heart
        attack, heart failure, kidney disease, liver disease, multiple sclerosis, parkinson's,
        parkinsons, alzheimer's, alzheimers, dementia, motor neurone disease, cystic fibrosis,
        sickle cell, haemophilia, hemophilia, psoriasis, eczema, gout, osteoporosis, scoliosis,
        concussion, tinnitus, glaucoma, cataracts, a stroke, stroke survivor, tourette's, tourettes,
        chronic pain, chronic fatigue, diagnosis, diagnosed, blood type, blood group, blood
        pressure, blood sugar, cholesterol, had surgery, have surgery, having surgery, need surgery,
        needs surgery, after surgery, from surgery, knee surgery, hip surgery, heart surgery,
        back surgery, eye surgery, brain surgery, weight loss surgery, gastric bypass, transplant,
        pacemaker, stoma, chemo,
        chemotherapy, radiotherapy, dialysis, vasectomy, hysterectomy, mastectomy, menopause,
        perimenopause, terminally ill, terminal illness, chronic illness, chronically ill,
        immunocompromised
        """
    ),
    "mental health": _phrases(
        """
        depression, depressed, anxiety, adhd, autism, autistic, asperger's, aspergers, bipolar,
        schizophrenia, schizophrenic, ptsd, ocd, eating disorder, anorexia, anorexic, bulimia,
        bulimic, self harm, self-harm, self harming, suicidal, panic attacks, panic disorder, mental
        health, mental illness, addiction, alcoholic, alcoholism, recovering addict, in recovery,
        rehab, antidepressant, antidepressants, antipsychotic, antipsychotics
        """
    ),
    "disability": _phrases(
        """
        disabled, disability, disabilities, wheelchair, deaf, blind, hard of hearing, hearing aid,
        hearing aids, visually impaired, partially sighted, paralysed, paralyzed, amputee,
        prosthetic, dyslexia, dyslexic, dyspraxia, dyscalculia, down syndrome, down's syndrome,
        learning disability, stammer, stutter
        """
    ),
    "pregnancy or fertility": _phrases(
        """
        pregnant, pregnancy, ivf, miscarriage, infertility, infertile, trying for a baby, expecting
        a baby, fertility treatment, morning sickness
        """
    ),
    "allergy or intolerance": _phrases(
        """
        hayfever, hay fever,
        allergy, allergies, allergic, intolerant, intolerance, anaphylaxis, anaphylactic, epipen,
        epi pen
        """
    ),
    "medication": _phrases(
        """
        insulin, metformin, sertraline, fluoxetine, prozac, citalopram, escitalopram, lexapro,
        zoloft, paroxetine, venlafaxine, mirtazapine, adderall, ritalin, methylphenidate,
        lisinopril, amlodipine, atorvastatin, statin, statins, levothyroxine, warfarin, inhaler,
        antibiotics, painkillers, ibuprofen, paracetamol, codeine, morphine, oxycodone, methadone,
        hrt, contraceptive pill, diazepam, valium, xanax, propranolol, beta blockers, medication,
        medications, meds, prescription, prescribed
        """
    ),
    "sexual health": _phrases(
        """
        std, sti, stis, stds, herpes, chlamydia, gonorrhoea, gonorrhea, syphilis, hpv, prep
        """
    ),
}
# Care whose mere existence reveals a condition; only with a possessive or "see(ing) a".
_HEALTH_CARE = _words(
    """
    therapist psychiatrist psychologist counsellor counselor oncologist cardiologist
    neurologist endocrinologist rheumatologist obstetrician
    """
)
_HEALTH_TERMS: dict[tuple[str, ...], str] = {
    tuple(term.split()): kind for kind, terms in _HEALTH_KINDS.items() for term in terms
}
_HEALTH_FIRST = frozenset(t[0] for t in _HEALTH_TERMS)
# Words that tie a health term to a person: the nearest one before the term decides.
_HEALTH_LINK = (
    _words(
        """
    i i'm im i've ive i'd me my mine we we're our us he he's she she's they they're his her
    him their them have has had got get gets getting suffer suffers suffered suffering live
    lives living diagnosed take takes taking took use uses using need needs prescribed
    treated treatment recovering managing manage battling fighting am is are was were been
    being with
    """
    )
    | _RELATIONS
)
# Words that make it a topic rather than a condition, when nearer the term than any link.
_HEALTH_TOPIC = _words(
    """
    about regarding book books article articles documentary documentaries podcast podcasts
    film films movie movies show series course lecture lectures class essay paper thesis
    research researching study studying charity fundraiser fundraising awareness conference
    news campaign donate donated donation donating read reading watched watching learn
    learning learnt learned
    """
)
# Words right after a term that make it a topic: "diabetes research", "cancer charity".
_HEALTH_TOPIC_AFTER = _words(
    """
    research charity charities awareness fundraiser fundraising walk run marathon month week
    day documentary book article podcast conference campaign foundation association society
    trust ribbon uk
    """
)
# Pronouns/people that make a clause about a human even when a pet is named in it.
_HUMAN_SUBJECT = (
    _words("i i'm im i've ive we we're he he's she she's they they're me us him them") | _RELATIONS
)
_POSSESSIVES = _words("my our his her their your")

_RELIGION_TERMS = _words(
    """
    christian catholic protestant anglican methodist baptist evangelical mormon muslim moslem
    jewish jew hindu buddhist sikh jain bahai baha'i pagan wiccan atheist agnostic religious
    spiritual quaker orthodox presbyterian lutheran pentecostal adventist taoist zoroastrian
    rastafarian unitarian scientologist sunni shia shiite
    """
)
_RELIGION_TRIGGERS = _RELIGION_TERMS | _words(
    """
    church churches mass mosque synagogue shul temple gurdwara chapel pray prays praying
    prayed worship faith religion god allah jesus christ ramadan passover shabbat sabbath lent
    diwali eid kippur hashanah hanukkah vaisakhi navratri kosher halal priest vicar imam rabbi
    pastor parish congregation
    """
)
_POLITICS_TERMS = _phrases(
    """
    democrat, republican, socialist, communist, marxist, anarchist, libertarian, tory, leftist,
    left-wing, right-wing, left wing, right wing, centrist, feminist, pro-life, pro-choice, pro
    life, pro choice, nationalist, unionist, monarchist, zionist, anti-zionist, brexiteer, remainer,
    trump supporter, maga, labour supporter, labour voter, labour member, green voter, tory voter,
    conservative voter, lib dem, lib dem voter
    """
)
_PARTIES = _phrases(
    """
    labour, labour party, conservative party, conservatives, tories, tory party, lib dems, liberal
    democrats, green party, greens, reform uk, reform, ukip, snp, plaid cymru, sinn fein, sinn féin,
    dup, democratic party, democrats, republican party, republicans, gop, dsa, afd, cdu, spd
    """
)
_POLITICS_TRIGGERS = _words(
    """
    democrat republican socialist communist marxist anarchist libertarian tory tories leftist
    left right centrist feminist pro nationalist unionist monarchist zionist anti brexiteer
    remainer trump maga labour conservative conservatives lib green greens reform ukip snp
    plaid sinn dup democrats republicans gop dsa afd cdu spd vote voted votes voting voter
    politics political liberal progressive canvassing canvass party
    """
)
_ORIENTATION_TERMS = _phrases(
    """
    gay, lesbian, bisexual, pansexual, asexual, queer, homosexual, heterosexual, transgender,
    transsexual, non-binary, nonbinary, non binary, genderqueer, genderfluid, intersex, polyamorous,
    celibate, a virgin, lgbt, lgbtq, lgbtq+
    """
)
_ORIENTATION_TRIGGERS = _words(
    """
    gay lesbian bisexual bi pansexual asexual ace queer homosexual heterosexual straight trans
    transgender transsexual non nonbinary binary genderqueer genderfluid intersex polyamorous
    poly celibate virgin lgbt lgbtq came come coming out sexuality orientation sex sexual
    transition transitioning
    """
)
_ETHNIC_TERMS = _phrases(
    """
    black, white, asian, hispanic, latino, latina, latinx, latine, mixed race, mixed-race, biracial,
    multiracial, african american, african-american, afro-caribbean, south asian, east asian, arab,
    romani, roma, gypsy, traveller, irish traveller, indigenous, aboriginal, native american, first
    nations, maori, māori, pacific islander, inuit, kurdish, berber, persian, han chinese
    """
)
_ETHNIC_TRIGGERS = _words(
    """
    black white asian hispanic latino latina latinx latine mixed biracial multiracial african
    afro caribbean arab romani roma gypsy traveller indigenous aboriginal native first maori
    māori pacific inuit kurdish berber persian han descent heritage ancestry extraction
    ethnicity race ethnic racial
    """
)
_UNIONS = _phrases(
    """
    unison, unite, unite the union, gmb, neu, nasuwt, rcn, bma, ucu, rmt, aslef, pcs, cwu, usdaw,
    fbu, nut, teamsters, seiu, uaw, afl-cio, afscme, ufcw, ibew, cupe, nea, aft, equity, prospect,
    community union
    """
)

# ---------------------------------------------------------------------------------- text model


_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'"})
_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_CLAUSE_BREAK_RE = re.compile(r"[.;!?,:\n()\"]")
_DIGIT_RE = re.compile(r"\d")


class _Text:
    """The candidate fact, tokenised once for every detector."""

    __slots__ = ("clauses", "has_digit", "text", "tokens", "words")

    def __init__(self, raw: str) -> None:
        # One character for one: match offsets stay those of the raw text.
        self.text = raw.translate(_QUOTES)
        tokens: list[str] = []
        clauses: list[int] = []
        clause = 0
        prev_end = 0
        for match in _WORD_RE.finditer(self.text):
            start = match.start()
            if _CLAUSE_BREAK_RE.search(self.text, prev_end, start):
                clause += 1
            prev_end = match.end()
            tokens.append(match.group().lower())
            clauses.append(clause)
        self.tokens = tokens
        self.clauses = clauses
        words = set(tokens)
        words.update(t[:-2] for t in tokens if t.endswith("'s"))
        self.words = frozenset(words)
        self.has_digit = _DIGIT_RE.search(self.text) is not None


@dataclass(frozen=True, slots=True)
class _Finding:
    level: Sensitivity
    reason: str
    # The category this finding implies, or None when it should not decide the category.
    category: str | None


# ----------------------------------------------------------------------------- checksums


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


def _iban_in(candidate: str) -> bool:
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


_NINO_RE = re.compile(
    r"(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])\s?(\d{2})\s?(\d{2})\s?(\d{2})\s?"
    r"([A-D])(?![A-Za-z0-9])",
    _I,
)
_NINO_BAD_PREFIXES = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})


def nino_valid(text: str) -> bool:
    """True for a well-formed UK National Insurance number (e.g. "AB 12 34 56 C")."""
    match = _NINO_RE.fullmatch(text.strip())
    return match is not None and match.group(1).upper() not in _NINO_BAD_PREFIXES


# ------------------------------------------------------------------------------- credentials
# One detector, shared with the audit's redaction: memory/credentials.py.


def _refusal(kinds: list[str]) -> str:
    return f"Not remembered: that looks like {kinds[0]}. {REFUSAL_MESSAGE}"


def refuse_credentials(text: str) -> str | None:
    """The refusal message when `text` holds a credential, else None (the store's hook)."""
    kinds = credential_kinds(text)
    return _refusal(kinds) if kinds else None


# ---------------------------------------------------------------------------- regex rules


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
    rf"(?:my|our|his|her|their)\s+(?:[\w-]+\s+){{0,2}}?(?:{_REL_ALT})\s+(?:is|are|was|were|"
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
        _rx(_SUBJ_COP + rf"(?P<term>{_alt(_RELIGION_TERMS)})\b"),
        SECRET,
        "religion ({term})",
        "beliefs",
        _RELIGION_TERMS,
        check=_subject_is_person,
    ),
    _Rule(
        _rx(
            r"\b(?:i|we|he|she|they|my\s+[\w-]+|our\s+[\w-]+)\s+(?:usually\s+|always\s+|still\s+|"
            r"regularly\s+|never\s+|sometimes\s+)?(?:go|goes|went|attend|attends|attended|"
            r"worship|worships)\s+(?:to\s+|at\s+)?(?:the\s+|a\s+|my\s+|our\s+|local\s+)?"
            r"(?:\w+\s+)?(?P<term>church|mass|mosque|synagogue|shul|temple|gurdwara|chapel|"
            r"meeting\s+house|kingdom\s+hall|friday\s+prayers?)\b"
        ),
        SECRET,
        "religion ({term})",
        "beliefs",
        _words("church mass mosque synagogue shul temple gurdwara chapel kingdom prayers"),
    ),
    _Rule(
        _rx(
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
        SECRET,
        "religion or belief",
        "beliefs",
        _RELIGION_TRIGGERS,
    ),
    _Rule(
        _rx(
            _SUBJ_COP + rf"(?:an?\s+)?(?P<term>{_alt(_POLITICS_TERMS)}|"
            r"conservative(?!\s+(?:with|about|in|when|by))|"
            r"liberal(?!\s+(?:with|about|in|when|by))|progressive(?!\s+(?:with|about|in|lenses)))\b"
        ),
        SECRET,
        "political opinion ({term})",
        "beliefs",
        _POLITICS_TRIGGERS,
        check=_subject_is_person,
    ),
    _Rule(
        _rx(
            r"\b(?:i|we|he|she|they|my\s+[\w-]+|our\s+[\w-]+|[a-z]+)\s+(?:always\s+|usually\s+|"
            r"never\s+|just\s+|probably\s+|will\s+|won't\s+|would\s+|didn't\s+)?"
            r"(?:vote[sd]?|voting)\s+(?:for\s+(?:the\s+)?)?"
            rf"(?:{_alt(_PARTIES)}|remain|leave|yes|no|green|democrat|republican|"
            r"conservative|liberal|trump|biden|harris|starmer|sunak|farage)\b|"
            r"\bvote[sd]?\s+for\s+(?-i:[A-Z])|"
            rf"\bmember\s+of\s+(?:the\s+)?(?:{_alt(_PARTIES)})\b|"
            rf"\b(?:{_alt(_PARTIES)})\s+(?:party\s+)?(?:member|membership|voter|supporter|"
            r"activist|councillor|canvasser)\b|"
            r"\b(?:my|our|his|her|their)\s+(?:politics|political\s+(?:views|beliefs|opinions|"
            r"leanings|affiliation|party))\b|"
            r"\b(?:i|we|he|she|they)\s+(?:support|back|campaign\s+for|canvass\s+for|"
            rf"donate\s+to)\s+(?:the\s+)?(?:{_alt(_PARTIES)})\b|"
            r"\b(?:canvassing|campaigning)\s+for\s+(?:the\s+)?"
            rf"(?:{_alt(_PARTIES)})\b"
        ),
        SECRET,
        "political opinion",
        "beliefs",
        _POLITICS_TRIGGERS,
    ),
    _Rule(
        _rx(
            r"\b(?:i'm|i\s+am|im|we're|we\s+are|he's|she's|he\s+is|she\s+is|they're|"
            r"my\s+[\w-]+\s+is)\s+(?:a\s+|an\s+|also\s+)?(?:trade\s+)?union\s+(?:member|rep|"
            r"representative|steward|official|organi[sz]er)\b|"
            r"\b(?:(?:member|members)\s+of|joined|belong\s+to|belongs\s+to|i'm\s+in|i\s+am\s+in|"
            r"we're\s+in)\s+(?:the\s+|a\s+|my\s+)?(?:trade\s+|labou?r\s+|teachers'?\s+|"
            r"nurses'?\s+)?(?:union|unions)\b|"
            rf"\b(?:member\s+of|joined|belong\s+to|belongs\s+to)\s+(?:the\s+)?(?:{_alt(_UNIONS)})\b|"
            r"\b(?:my|our|his|her|their)\s+(?:trade\s+)?union(?:\s+(?:membership|dues|subs|rep|"
            r"representative|steward|card|branch))?\b(?!\s+(?:jack|flag))|"
            r"\btrade\s+union\s+member|"
            rf"\b(?:{_alt(_UNIONS)})\s+(?:union\s+)?(?:member|membership|rep|steward|card)\b"
        ),
        SECRET,
        "trade-union membership",
        "beliefs",
        frozenset({"union", "unions", *_UNIONS}),
    ),
    # ---------------------------------------------------------------- secret: identity
    _Rule(
        _rx(
            _SUBJ_COP + rf"(?:(?:{_alt(_ORIENTATION_TERMS)})\b(?!\s+(?:fat|fats))|"
            r"trans\s+(?:woman|man|person|guy|girl|masc|femme)\b|"
            r"(?:bi|ace|straight|trans|poly)" + _END_OF_PHRASE + r")"
        ),
        SECRET,
        "sexual orientation or gender identity",
        "identity",
        _ORIENTATION_TRIGGERS,
        check=_subject_is_person,
    ),
    _Rule(
        _rx(
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
        SECRET,
        "sexual orientation or gender identity",
        "identity",
        _ORIENTATION_TRIGGERS,
    ),
    _Rule(
        _rx(
            r"(?:\b(?:i\s+am|i'm|im|we\s+are|we're|(?:he|she|they)(?:\s+is|\s+are|'s|'re)|"
            rf"(?:my|our)\s+(?:family|parents|ancestors|{_REL_ALT})\s+(?:is|are|was|were)|"
            r"(?P<subj>[a-z]+)\s+is)\s+" + _SUBJ_MODS + r")"
            rf"(?P<term>{_alt(_ETHNIC_TERMS)})(?![\w-])"
            r"(?!\s+(?:and\s+)?(?:belt|sheep|coffee|tea|wine|friday|chocolate|bread|rice|out|"
            r"list|board|noise|mode|tie|hat|shirt|trousers|jeans|as|with|fan|card|christmas|"
            r"market|community|collie|food|restaurant|cuisine))"
        ),
        SECRET,
        "racial or ethnic origin ({term})",
        "identity",
        _ETHNIC_TRIGGERS,
        check=_subject_is_person,
    ),
    _Rule(
        _rx(
            r"\b(?:of|my|our|his|her|their)\s+(?:[\w-]+\s+){0,2}?(?:descent|heritage|ancestry|"
            r"extraction)\b|"
            r"\b(?:my|our|his|her|their)\s+(?:ethnicity|race|ethnic\s+(?:background|origin|"
            r"group)|racial\s+(?:background|origin|identity))\b"
        ),
        SECRET,
        "racial or ethnic origin",
        "identity",
        _words("descent heritage ancestry extraction ethnicity race ethnic racial"),
    ),
    _Rule(
        _rx(
            r"\bbiometrics?\b|"
            r"\b(?:my|our|his|her|their)\s+(?:[\w-]+\s+)?(?:fingerprints?|retina(?:l)?\s+scan|"
            r"iris\s+scan|face\s*print|voice\s*print|palm\s*print|face\s+scan|facial\s+(?:scan|"
            r"data|template|geometry))\b"
        ),
        SECRET,
        "biometric data",
        "identity",
        _words(
            "biometric biometrics fingerprint fingerprints retina retinal iris faceprint face "
            "voiceprint voice palmprint palm facial"
        ),
    ),
    _Rule(
        _rx(
            r"\b(?:dna\s+(?:test|tests|results?|profile|sample|kit)|genetic\s+(?:test|tests|"
            r"testing|results?|condition|disorder|marker|mutation|data|screening|risk)|genome|"
            r"genotype|23\s*and\s*me|ancestrydna|ancestry\s+dna|brca[12]?(?:\s+gene)?|"
            r"carrier\s+of|gene\s+(?:mutation|variant)|apoe4?|(?:my|our|his|her)\s+(?:dna|genes))\b"
        ),
        SECRET,
        "genetic data",
        "health",
        _words(
            "dna genetic genome genotype 23andme 23 ancestrydna ancestry brca brca1 brca2 carrier "
            "gene apoe apoe4 genes"
        ),
    ),
    # ---------------------------------------------------------------- secret: numbers
    _Rule(
        _rx(
            r"\bpassport\s*(?:number|no\.?|num|#)?\b[^\n]{0,30}?(?<![A-Za-z0-9])"
            r"(?=[A-Za-z]{0,3}\d)[A-Za-z0-9]{6,10}(?![A-Za-z0-9])"
        ),
        SECRET,
        "passport number",
        "identity",
        frozenset({"passport"}),
        needs_digit=True,
    ),
    _Rule(
        _rx(
            r"\b(?:driv(?:er'?s|ing)\s+licen[cs]e|licen[cs]e\s+(?:number|no\.?))\b[^\n]{0,30}?"
            r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]{0,12}\d)[A-Za-z0-9][A-Za-z0-9 -]{4,20}[A-Za-z0-9]"
        ),
        SECRET,
        "driving licence number",
        "identity",
        frozenset({"licence", "license"}),
        needs_digit=True,
    ),
    _Rule(
        _rx(
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
        SECRET,
        "government ID number",
        "identity",
        _words(
            "national id identity tax tfn itin ein utr ssn social sin nhs medicare medicaid "
            "aadhaar aadhar pan personnummer bsn burgerservicenummer dni nie nif codice steuer "
            "insee pesel cpf curp nric mykad hkid green alien uscis resident"
        ),
        needs_digit=True,
        check=lambda m: sum(c.isdigit() for c in m.group()) >= 4,
    ),
    _Rule(
        _rx(
            r"\b(?:(?:bank\s+)?account\s*(?:number|no\.?|num|#)|acct\s*(?:no\.?|#|number)?|"
            r"a/c\s*(?:no\.?)?|bank\s+account|checking\s+account|savings\s+account|"
            r"current\s+account)\b[^\n\d]{0,25}\d[\d -]{4,20}\d|"
            r"\bsort\s*code\b[^\n\d]{0,20}\d{2}[- ]?\d{2}[- ]?\d{2}\b|"
            r"\b(?:routing|aba|transit)\s*(?:number|no\.?|#)?\b[^\n\d]{0,20}\d{9}\b|"
            r"(?<![\d-])\d{2}-\d{2}-\d{2}\s*,?\s*\d{8}(?!\d)"
        ),
        SECRET,
        "bank account details",
        "finance",
        None,
        needs_digit=True,
    ),
    # ---------------------------------------------------------------- personal: people
    _Rule(
        _rx(
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+" + _REL_MODS + rf"(?P<term>{_REL_ALT})\b"
            r"|\b(?:i|we)\s+(?:have|'ve\s+got|have\s+got|had)\s+(?:a|an|one|two|three|four|five|"
            r"\d|twin|no|an\s+older|a\s+younger)\s+(?:[\w-]+\s+)?(?P<term2>" + _REL_ALT + r")\b"
        ),
        PERSONAL,
        "relationship ({term})",
        "relationships",
        _RELATIONS,
    ),
    _Rule(
        # Family words used as names: "tell mum", "grandad's 90th".
        _rx(
            r"\b(?P<term>mum|mom|mam|mummy|mommy|dad|daddy|grandad|granddad|grandpa|grandma|gran|"
            r"granny|nan|nana|auntie|aunty)(?:'s)?\b"
        ),
        PERSONAL,
        "relationship ({term})",
        "relationships",
        _words(
            "mum mom mam mummy mommy dad daddy grandad granddad grandpa grandma gran granny nan "
            "nana auntie aunty"
        ),
    ),
    _Rule(
        _rx(
            r"\b(?:i'm|i\s+am|im|we're|we\s+are|he's|she's|he\s+is|she\s+is)\s+(?:now\s+|"
            r"recently\s+|happily\s+|newly\s+|getting\s+|just\s+got\s+)?(?P<term>married|divorced|"
            r"single|engaged|widowed|separated|in\s+a\s+relationship)(?![\w-])"
        ),
        PERSONAL,
        "relationship status",
        "relationships",
        _words("married divorced single engaged widowed separated relationship"),
    ),
    _Rule(
        re.compile(
            r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame)\.?\s+(?P<name>[A-Z][a-z'-]+)"
            r"(?:\s+[A-Z][a-z'-]+)?"
        ),
        PERSONAL,
        "a person's name",
        "relationships",
        _words("mr mrs ms miss mx dr prof sir dame"),
        check=lambda m: m.group("name").lower() not in _TITLE_BRANDS,
    ),
    _Rule(
        _rx(
            r"\b(?:my\s+name\s+is|my\s+name's|call\s+me(?!\s+(?:on|at|back|later|tomorrow|"
            r"tonight|when|if|after|before|in|asap|now|soon|sometime|maybe|a|an|the|if|crazy|"
            r"old|out|up|over|whenever)\b)|i'm\s+called|i\s+am\s+called|i\s+go\s+by|"
            r"people\s+call\s+me|everyone\s+calls\s+me|friends\s+call\s+me|"
            r"my\s+(?:first|last|middle|full|maiden|family|sur|nick|legal)\s*name)\b"
        ),
        PERSONAL,
        "your name",
        "identity",
        _words("name name's call called go calls surname nickname maiden"),
    ),
    # ---------------------------------------------------------------- personal: places
    _Rule(
        _rx(
            r"\b(?:i|we)\s+(?:now\s+|currently\s+|still\s+|also\s+)?(?:live|reside|am\s+living|"
            r"'m\s+living|are\s+living)\s+(?:at|on)\b|"
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+(?:home\s+|house\s+|postal\s+|mailing\s+|"
            r"street\s+|work\s+|office\s+|new\s+|old\s+|current\s+|delivery\s+|billing\s+)?"
            r"address\b(?!\s+book)|"
            r"\b(?:flat|apartment|apt|unit|suite)\s+\d{1,4}[a-z]?\b"
        ),
        PERSONAL,
        "home address",
        "location",
        _words("live lives reside living address flat apartment apt unit suite"),
    ),
    _Rule(
        _rx(
            r"(?<![\d,.])\d{1,5}[a-z]?,?\s+(?:(?!(?:the|a|an|on|in|at|of|my|to|for|and|or|by|"
            r"from|with|down|up|across|along|near|past|this|that|every|per|each|times|minutes?|"
            r"mins?|hours?|days?|weeks?|miles?|km|metres?|meters?|steps?|blocks?)\b)"
            r"[a-z][a-z'.-]*\s+){1,3}(?:street|st|road|rd|avenue|ave|lane|ln|drive|close|court|"
            r"ct|place|crescent|cres|terrace|gardens|gdns|boulevard|blvd|square|grove|mews|"
            r"parade|highway|hwy|circle|parkway|pkwy|trail|wharf|quay|broadway)\b"
        ),
        PERSONAL,
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
        PERSONAL,
        "postcode",
        "location",
        None,
        needs_digit=True,
    ),
    _Rule(
        _rx(
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
        PERSONAL,
        "where you live or are",
        "location",
        _words(
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
        PERSONAL,
        "where you live or are",
        "location",
        _words("i'm im am we're are"),
    ),
    # ---------------------------------------------------------------- personal: identity
    _Rule(
        _rx(
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+(?:birthday|bday|b-day|birth\s*date|"
            r"date\s+of\s+birth|dob)\b|\bborn\s+(?:on|in)\b|\b(?:i|he|she|we|they)\s+(?:was|were)"
            r"\s+born\b|\b(?:date\s+of\s+birth|d\.o\.b\b|dob)\b|\bbirthday\s+is\s+(?:on\s+)?\d"
        ),
        PERSONAL,
        "date of birth",
        "identity",
        _words("birthday bday b day birth birthdate dob born d"),
    ),
    _Rule(
        _rx(
            r"\b(?:i'm|i\s+am|im|i\s+will\s+be|i'll\s+be)\s+\d{1,3}\s*(?:years?\s*old|yrs?\s*old|"
            r"y/?o)\b|\bi\s+(?:just\s+)?turned\s+\d{1,3}\b|\bmy\s+age\s+is\b|"
            r"\b(?:i'm|i\s+am|im)\s+(?:in\s+my\s+)?(?:twenties|thirties|forties|fifties|sixties|"
            r"seventies|eighties)\b"
        ),
        PERSONAL,
        "age",
        "identity",
        _words(
            "old yo y turned age twenties thirties forties fifties sixties seventies eighties yrs"
        ),
    ),
    _Rule(
        _rx(
            r"\b(?:i'm|i\s+am|im|we're|we\s+are)\s+(?:originally\s+|half\s+|part\s+|a\s+)?"
            rf"(?P<term>{_alt(_DEMONYMS)})(?![\w-])(?!\s+(?:food|cuisine|restaurant|film|films|music|"
            r"wine|beer|cars?|tea|coffee|breakfast|style|accent))|"
            r"\b(?:my|our)\s+(?:nationality|citizenship)\b|"
            r"\b(?:i|we)\s+(?:have|hold)\s+(?:a\s+|an\s+|dual\s+)?(?:\w+\s+)?(?:citizenship|"
            r"passport)\b"
        ),
        PERSONAL,
        "nationality",
        "identity",
        _DEMONYMS | _words("nationality citizenship passport"),
    ),
    _Rule(
        _rx(r"\b(?:my|our|his|her|their)\s+(?:preferred\s+)?pronouns\b|\bpronouns\s+are\b"),
        PERSONAL,
        "pronouns",
        "identity",
        _words("pronouns"),
    ),
    # ---------------------------------------------------------------- personal: work
    _Rule(
        _rx(
            r"\b(?:i|we)\s+(?:currently\s+|now\s+|still\s+|also\s+)?(?:work|worked|am\s+working|"
            r"'m\s+working|work\s+full[\s-]time|work\s+part[\s-]time)\s+(?:at|for)\b|"
            r"\b(?:my|our)\s+(?:employer|company|firm|workplace)\b|\bemployed\s+(?:by|at)\b|"
            r"\b(?:i|we)\s+(?:just\s+)?(?:joined|started\s+at|started\s+working\s+at|"
            r"got\s+a\s+job\s+(?:at|with)|got\s+hired\s+(?:at|by))\b|"
            r"\b(?:my|a)\s+(?:new\s+)?job\s+(?:at|with)\b"
        ),
        PERSONAL,
        "employer",
        "work",
        _words("work worked working employer company firm workplace employed joined started job"),
    ),
    _Rule(
        _rx(
            r"\bi\s+work\s+as\b|\bmy\s+(?:job|role|position|occupation|profession|title)"
            r"(?:\s+title)?\s+is\b|\bby\s+(?:profession|trade)\b|\bemployed\s+as\b|"
            r"\bmy\s+job\s+title\b|"
            rf"\b(?:i'm|i\s+am|im)\s+(?:a|an)\s+(?:[\w-]+\s+){{0,2}}?(?:{_alt(JOB_WORDS)})\b|"
            r"\b(?:i|we)\s+work\s+(?:in|from\s+home|remotely|from\s+the\s+office)\b|"
            r"\b(?:i'm|i\s+am|im)\s+(?:retired|unemployed|self-employed|self\s+employed|"
            r"freelance|between\s+jobs|on\s+maternity\s+leave)\b"
        ),
        PERSONAL,
        "job",
        "work",
        JOB_WORDS
        | _words(
            "work job role position occupation profession title trade employed retired "
            "unemployed self freelance jobs maternity"
        ),
    ),
    # ---------------------------------------------------------------- personal: contact
    _Rule(
        _rx(
            r"\b(?:my|our|his|her|their)\s+(?:[\w-]+\s+)?(?:handle|username|user\s+name|"
            r"gamertag|discord|skype|telegram|signal|whatsapp|instagram|insta|twitter|tiktok|"
            r"snapchat|linkedin|github|mastodon|bluesky|steam)\s+(?:name\s+|id\s+|handle\s+)?"
            r"(?:is|:)|\b(?:username|user\s+name|handle|gamertag|screen\s+name)\b[^\n]{0,25}?"
            r"(?:\bis\b|:)"
        ),
        PERSONAL,
        "online handle",
        "contact",
        _words(
            "handle username user gamertag discord skype telegram signal whatsapp instagram "
            "insta twitter tiktok snapchat linkedin github mastodon bluesky steam"
        ),
    ),
    _Rule(
        _rx(
            r"\b(?:number\s*plate|licen[cs]e\s*plate|reg(?:istration)?(?:\s+(?:number|plate))?|"
            r"plate)\b[^\n]{0,15}?(?<![A-Za-z0-9])(?=[A-Za-z]{0,3}\d)[A-Za-z0-9]{2,4}\s?"
            r"[A-Za-z0-9]{2,4}(?![A-Za-z0-9])"
        ),
        PERSONAL,
        "vehicle registration",
        "identity",
        _words("plate reg registration"),
        needs_digit=True,
    ),
    # ---------------------------------------------------------------- personal: health-adjacent
    _Rule(
        _rx(
            r"\b(?:my|our|his|her|their|[^\W\d_]+'s)\s+(?:doctor|doctors|gp|dentist|optician|"
            r"optometrist|physio|physiotherapist|surgeon|consultant|nurse|specialist|"
            r"dermatologist|orthodontist|hygienist|chiropractor|osteopath|podiatrist|hospital|"
            r"clinic)\b|"
            r"\b(?:doctor'?s|doctors|gp|dentist|dental|hospital|clinic|optician|physio|"
            r"vaccination|vaccine|blood\s+test|check-?up|smear\s+test|scan)\s+appointment\b|"
            r"\bappointment\s+(?:at|with)\s+(?:the\s+|my\s+)?(?:doctor|gp|dentist|hospital|"
            r"clinic|optician|physio)\b"
        ),
        PERSONAL,
        "medical appointment or provider",
        None,
        _words(
            "doctor doctors gp dentist optician optometrist physio physiotherapist surgeon "
            "consultant nurse specialist dermatologist orthodontist hygienist chiropractor "
            "osteopath podiatrist hospital clinic appointment dental"
        ),
    ),
)


def _rule_findings(text: _Text) -> Iterator[_Finding]:
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
            yield _Finding(rule.level, reason, rule.category)
            break


# ------------------------------------------------------------------------------ people's names

_REL_THEN_NAME_RE = _rx(
    r"\b(?:my|our|his|her|their)\s+" + _REL_MODS + rf"(?:{_REL_ALT})"
    r"(?:(?P<via>'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+called|\s+named|\s+goes\s+by)"
    r"|\s*,)?\s+(?P<name>[^\W\d_][\w'-]*)"
)
_NAME_THEN_REL_RE = _rx(
    r"(?<![\w'])(?P<name>[^\W\d_][\w'-]*)\s+(?:is|was|'s)\s+(?:my|our)\s+"
    + _REL_MODS
    + rf"(?:{_REL_ALT})\b"
)
_PET_NAME_RES = (
    _rx(
        rf"\b(?:my|our|his|her|their|the)\s+(?:[\w-]+\s+){{0,2}}?(?:{_PET_ALT})"
        r"(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+called|\s+named|\s*,)?\s+"
        r"(?P<name>[^\W\d_][\w'-]*)"
    ),
    _rx(rf"(?P<name>[^\W\d_][\w'-]*)\s+is\s+(?:my|our)\s+(?:[\w-]+\s+){{0,2}}?(?:{_PET_ALT})\b"),
)


def _plausible_name(word: str, *, named: bool) -> bool:
    lowered = word.lower()
    if lowered in _NOT_NAMES or lowered in _RELATIONS or lowered in _PETS:
        return False
    return named or word[0].isupper() or lowered in FIRST_NAMES


def _pet_names(text: _Text) -> set[str]:
    if _PETS.isdisjoint(text.words):
        return set()
    names: set[str] = set()
    for pattern in _PET_NAME_RES:
        for match in pattern.finditer(text.text):
            names.add(match.group("name").lower())
    return names


def _name_findings(text: _Text) -> Iterator[_Finding]:
    pets = _pet_names(text)
    if not _RELATIONS.isdisjoint(text.words):
        for match in _REL_THEN_NAME_RE.finditer(text.text):
            name = match.group("name")
            if name.lower() not in pets and _plausible_name(
                name, named=match.group("via") is not None
            ):
                yield _Finding(PERSONAL, "a person's name", "relationships")
                return
        for match in _NAME_THEN_REL_RE.finditer(text.text):
            name = match.group("name")
            if name.lower() not in pets and _plausible_name(name, named=False):
                yield _Finding(PERSONAL, "a person's name", "relationships")
                return
    if FIRST_NAMES.isdisjoint(text.words):
        return
    tokens = text.tokens
    for index, token in enumerate(tokens):
        base = token[:-2] if token.endswith("'s") else token
        if base not in FIRST_NAMES or base in pets:
            continue
        possessive = token != base
        before = tokens[index - 1] if index > 0 else ""
        after = tokens[index + 1] if index + 1 < len(tokens) else ""
        same_clause_before = index > 0 and text.clauses[index - 1] == text.clauses[index]
        same_clause_after = (
            index + 1 < len(tokens) and text.clauses[index + 1] == text.clauses[index]
        )
        if (
            possessive
            or (same_clause_before and before in _NAME_BEFORE)
            or (same_clause_after and after in _NAME_AFTER)
        ):
            yield _Finding(PERSONAL, "a person's name", "relationships")
            return


# ------------------------------------------------------------------------------------ health


# Terms that say "health" without saying what: a more specific term in the text wins the reason.
_HEALTH_GENERIC = frozenset(
    {("diagnosis",), ("diagnosed",), ("medication",), ("medications",), ("meds",),
     ("prescription",), ("prescribed",)}
)  # fmt: skip


def _health_findings(text: _Text) -> Iterator[_Finding]:
    tokens = text.tokens
    if _HEALTH_FIRST.isdisjoint(text.words) and _HEALTH_CARE.isdisjoint(text.words):
        return
    weak: str | None = None
    strong: tuple[str, ...] | None = None
    for index, token in enumerate(tokens):
        if token in _HEALTH_CARE:
            before = tokens[max(0, index - 2) : index]
            if any(w in _POSSESSIVES or w.endswith("'s") for w in before[-1:]) or (
                len(before) == 2
                and before[0] in ("see", "sees", "seeing", "saw")
                and before[1] == "a"
            ):
                yield _Finding(SECRET, f"mental or specialist health care ({token})", "health")
                return
            continue
        if token not in _HEALTH_FIRST:
            continue
        term = _health_term_at(text, index)
        if term is None:
            continue
        verdict = _health_link(text, index, index + len(term))
        if verdict == "animal":
            continue
        if verdict == "topic":
            weak = weak or " ".join(term)
            continue
        if strong is None or strong in _HEALTH_GENERIC:
            strong = term
        if strong not in _HEALTH_GENERIC:
            break
    if strong is not None:
        yield _Finding(SECRET, f"{_HEALTH_TERMS[strong]} ({' '.join(strong)})", "health")
    elif weak is not None:
        yield _Finding(PERSONAL, f"mentions a health topic ({weak})", None)


def _health_term_at(text: _Text, index: int) -> tuple[str, ...] | None:
    """The longest health term starting at token `index`, within one clause."""
    tokens, clauses = text.tokens, text.clauses
    for size in (3, 2, 1):
        candidate = tuple(tokens[index : index + size])
        if (
            len(candidate) == size
            and candidate in _HEALTH_TERMS
            and clauses[index + size - 1] == clauses[index]
        ):
            return candidate
    return None


def _health_link(text: _Text, start: int, end: int) -> str:
    """'person' when the term at tokens[start:end] is about a person, 'topic' when it is a
    subject of interest, 'animal' when about a pet."""
    tokens, clauses = text.tokens, text.clauses
    clause = clauses[start]
    if (
        end < len(tokens)
        and clauses[end] == clause
        and tokens[end] in _HEALTH_TOPIC_AFTER
        and not (start > 0 and tokens[start - 1] in _POSSESSIVES)
    ):
        return "topic"
    window = [tokens[i] for i in range(max(0, start - 8), start) if clauses[i] == clause]
    has_pet = any(w in _PETS or (w.endswith("'s") and w[:-2] in _PETS) for w in window)
    if has_pet and not any(w in _HUMAN_SUBJECT for w in window):
        return "animal"
    for word in reversed(window):
        if word in _HEALTH_TOPIC:
            return "topic"
        if word in _HEALTH_LINK or word.endswith("'s"):
            return "person"
    # No subject at all: facts are about the user unless they say otherwise.
    return "person"


# ----------------------------------------------------------------------------- numbers


_DIGIT_RUN_RE = re.compile(r"(?<![\d])\d+(?:[ -]\d+)*(?!\d)")
_SEPARATOR_RE = re.compile(r"[ -]")


def _card_numbers(text: _Text) -> bool:
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
_SSN_CONTEXT_RE = _rx(
    r"\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\b[^\d\n]{0,20}"
    r"(\d{3}[- ]?\d{2}[- ]?\d{4})(?!\d)"
)

# Phone numbers: runs of digit groups (with parentheses and a leading +) judged afterwards.
_PHONE_TOKEN = r"(?:\(\d{1,5}\)\s?\d+|\(\d{1,5}\)|\d+)"
_PHONE_RUN_RE = re.compile(
    rf"(?<![\w+/.-])(?:(?:\+|00)\s?)?{_PHONE_TOKEN}(?:[ .\-/]{{1,2}}{_PHONE_TOKEN}){{0,8}}(?![\w])"
)
_US_PHONE_RE = re.compile(r"(?:\+?1[ .-]?)?\(?[2-9]\d{2}\)?[ .-]?\d{3}[ .-]\d{4}")
_PHONE_CONTEXT_RE = _rx(
    r"(?:\b(?:phone|mobile|cell|tel|telephone|landline|whatsapp|fax|text\s+me|call\s+me|"
    r"ring\s+me|reach\s+me|contact\s+me|get\s+me)|\b(?:my|his|her|their|our|[^\W\d_]+'s)\s+"
    r"(?:new\s+|work\s+|home\s+|old\s+)?number)\b[^\n\d]{0,25}$"
)
_DATE_LIKE_RE = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|\d{1,2}:\d{2}"
)


def _phone_numbers(text: _Text) -> bool:
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


def _number_findings(text: _Text) -> Iterator[_Finding]:
    raw = text.text
    if "@" in raw and _EMAIL_RE.search(raw):
        yield _Finding(PERSONAL, "email address", "contact")
    if not text.has_digit:
        return
    if _card_numbers(text):
        yield _Finding(SECRET, "card number (passes the Luhn check)", "finance")
    if any(_iban_in(m.group()) for m in _IBAN_RE.finditer(raw)):
        yield _Finding(SECRET, "bank account number (IBAN, valid checksum)", "finance")
    if any(ssn_valid(m.group()) for m in _SSN_RE.finditer(raw)) or any(
        ssn_valid(m.group(1)) for m in _SSN_CONTEXT_RE.finditer(raw)
    ):
        yield _Finding(SECRET, "US Social Security number", "identity")
    if any(m.group(1).upper() not in _NINO_BAD_PREFIXES for m in _NINO_RE.finditer(raw)):
        yield _Finding(SECRET, "UK National Insurance number", "identity")
    if _phone_numbers(text):
        yield _Finding(PERSONAL, "phone number", "contact")


# ---------------------------------------------------------------------------- low categories

_FINANCE_RE = _rx(
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
_PET_RE = _rx(
    rf"\b(?:my|our|the|his|her|their)\s+(?:[\w-]+\s+){{0,2}}?(?:{_PET_ALT})\b|"
    rf"\bis\s+(?:my|our)\s+(?:[\w-]+\s+)?(?:{_PET_ALT})\b|"
    rf"\b(?:i|we)\s+(?:have|'ve\s+got|got|adopted|own)\s+(?:a|an|two|three|\d)\s+(?:[\w-]+\s+)?"
    rf"(?:{_PET_ALT})\b"
)
_SCHEDULE_RE = _rx(
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
_PREFERENCE_RE = _rx(
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


def _category(text: _Text, findings: list[_Finding]) -> str:
    found = {f.category for f in findings if f.category is not None}
    raw = text.text
    if "finance" not in found and _FINANCE_RE.search(raw):
        found.add("finance")
    if not _PETS.isdisjoint(text.words) and _PET_RE.search(raw):
        found.add("pet")
    if _SCHEDULE_RE.search(raw):
        found.add("schedule")
    if _PREFERENCE_RE.search(raw):
        found.add("preference")
    return next((c for c in _CATEGORY_ORDER if c in found), "general")


# ---------------------------------------------------------------------------------- public


def _findings(text: _Text) -> list[_Finding]:
    findings = list(_health_findings(text))
    findings.extend(_rule_findings(text))
    findings.extend(_name_findings(text))
    findings.extend(_number_findings(text))
    return findings


def assess(text: str) -> Assessment:
    """What the detectors find in a candidate fact: level, reasons, category, refusal."""
    parsed = _Text(text)
    kinds = credential_kinds(text)
    findings = _findings(parsed)
    category = _category(parsed, findings)
    level = highest(*(f.level for f in findings), CATEGORY_FLOORS[category])
    reasons: list[str] = []
    for reason in [*kinds, *(f.reason for f in findings)]:
        if reason not in reasons:
            reasons.append(reason)
    if kinds:
        return Assessment(level=SECRET, reasons=reasons, category=category, refused=_refusal(kinds))
    return Assessment(level=level, reasons=reasons, category=category)


def categorize(text: str) -> str:
    """The one category (from CATEGORIES) a fact belongs to."""
    parsed = _Text(text)
    return _category(parsed, _findings(parsed))


def normalise_category(category: str | None) -> str:
    """One of CATEGORIES for a category from anywhere (a model, the CLI); unknown → general."""
    if not isinstance(category, str):
        return "general"
    key = category.strip().casefold()
    key = _CATEGORY_ALIASES.get(key, key)
    return key if key in CATEGORY_FLOORS else "general"


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
