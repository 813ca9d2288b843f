"""The word lists the sensitivity detectors match: relationships, pets, first names, jobs,
nationalities, health terms by kind, religion, politics, sexual orientation and gender identity,
ethnic origin and trade unions.

Plain data, written compactly (`words` splits on whitespace, `phrases` on commas), and the
regex alternations built from it (`alternation`). A list only says what may match; the rules,
people and health modules decide what a match means.

What this module must never do: hold a word in anything but lower case (the detectors compare
lowercased tokens, so a capitalised word would never trigger a rule or name a person), or import
anything of ours: `memory.slots` reads FIRST_NAMES and JOB_WORDS from here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def words(text: str) -> frozenset[str]:
    """Whitespace-separated words (a compact way to write long vocabularies)."""
    return frozenset(text.split())


def phrases(text: str) -> tuple[str, ...]:
    """Comma-separated phrases (a compact way to write long vocabularies)."""
    return tuple(" ".join(p.split()) for p in text.split(",") if p.strip())


def alternation(words: Iterable[str]) -> str:
    """A regex alternation of literal words/phrases, longest first; spaces match any space."""
    parts = sorted(set(words), key=len, reverse=True)
    return "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in parts)


RELATIONS = words(
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
REL_ALT = alternation(RELATIONS)
REL_MODS = (
    r"(?:(?:older|younger|little|big|baby|elder|eldest|oldest|youngest|twin|step|half|ex|late|"
    r"new|best|old|future|former|current|dear|great)[\s-]?){0,3}"
)

PETS = words(
    """
    dog dogs puppy pup puppies cat cats kitten kittens kitty hamster hamsters rabbit rabbits
    bunny parrot budgie bird birds fish goldfish tortoise turtle horse pony gerbil ferret snake
    lizard gecko iguana chinchilla rat rats pet pets cockatiel canary hen hens pig lab labrador
    spaniel terrier retriever poodle collie dachshund pug beagle
    """
)
PET_ALT = alternation(PETS)

# First names, taken as a person's only in a person context (see people.py). Names that are also
# common words (Will, Mark, May, Rose, Grace, Bill…) are left out on purpose.
FIRST_NAMES = words(
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
NOT_NAMES = words(
    """
    i me my he she it we they you this that there here who what which whose where when why how
    the a an and or but is was are were be been has have had not no yes so very also just now
    then too really still always never called named likes loves lives works said says wants
    needs prefers hates
    """
)

# A person context for a first name: the word before it, or the word after it.
NAME_BEFORE = words(
    """
    call ring phone text txt message msg email e-mail meet meeting visit visiting see seeing
    tell ask remind invite thank with and dear for to by
    """
)
NAME_AFTER = words(
    """
    is was has likes loves lives works said says wants needs prefers hates from and who will
    can can't doesn't isn't called texted emailed rang phoned hates lives
    """
)
TITLE_BRANDS = frozenset({"pepper", "who", "martens", "bean", "oetker", "strange", "seuss"})

JOB_WORDS = words(
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

DEMONYMS = words(
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
HEALTH_KINDS: dict[str, tuple[str, ...]] = {
    "health condition": phrases(
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
    "mental health": phrases(
        """
        depression, depressed, anxiety, adhd, autism, autistic, asperger's, aspergers, bipolar,
        schizophrenia, schizophrenic, ptsd, ocd, eating disorder, anorexia, anorexic, bulimia,
        bulimic, self harm, self-harm, self harming, suicidal, panic attacks, panic disorder, mental
        health, mental illness, addiction, alcoholic, alcoholism, recovering addict, in recovery,
        rehab, antidepressant, antidepressants, antipsychotic, antipsychotics
        """
    ),
    "disability": phrases(
        """
        disabled, disability, disabilities, wheelchair, deaf, blind, hard of hearing, hearing aid,
        hearing aids, visually impaired, partially sighted, paralysed, paralyzed, amputee,
        prosthetic, dyslexia, dyslexic, dyspraxia, dyscalculia, down syndrome, down's syndrome,
        learning disability, stammer, stutter
        """
    ),
    "pregnancy or fertility": phrases(
        """
        pregnant, pregnancy, ivf, miscarriage, infertility, infertile, trying for a baby, expecting
        a baby, fertility treatment, morning sickness
        """
    ),
    "allergy or intolerance": phrases(
        """
        hayfever, hay fever,
        allergy, allergies, allergic, intolerant, intolerance, anaphylaxis, anaphylactic, epipen,
        epi pen
        """
    ),
    "medication": phrases(
        """
        insulin, metformin, sertraline, fluoxetine, prozac, citalopram, escitalopram, lexapro,
        zoloft, paroxetine, venlafaxine, mirtazapine, adderall, ritalin, methylphenidate,
        lisinopril, amlodipine, atorvastatin, statin, statins, levothyroxine, warfarin, inhaler,
        antibiotics, painkillers, ibuprofen, paracetamol, codeine, morphine, oxycodone, methadone,
        hrt, contraceptive pill, diazepam, valium, xanax, propranolol, beta blockers, medication,
        medications, meds, prescription, prescribed
        """
    ),
    "sexual health": phrases(
        """
        std, sti, stis, stds, herpes, chlamydia, gonorrhoea, gonorrhea, syphilis, hpv, prep
        """
    ),
}
# Care whose mere existence reveals a condition; only with a possessive or "see(ing) a".
HEALTH_CARE = words(
    """
    therapist psychiatrist psychologist counsellor counselor oncologist cardiologist
    neurologist endocrinologist rheumatologist obstetrician
    """
)
HEALTH_TERMS: dict[tuple[str, ...], str] = {
    tuple(term.split()): kind for kind, terms in HEALTH_KINDS.items() for term in terms
}
HEALTH_FIRST = frozenset(t[0] for t in HEALTH_TERMS)
# Words that tie a health term to a person: the nearest one before the term decides.
HEALTH_LINK = (
    words(
        """
    i i'm im i've ive i'd me my mine we we're our us he he's she she's they they're his her
    him their them have has had got get gets getting suffer suffers suffered suffering live
    lives living diagnosed take takes taking took use uses using need needs prescribed
    treated treatment recovering managing manage battling fighting am is are was were been
    being with
    """
    )
    | RELATIONS
)
# Words that make it a topic rather than a condition, when nearer the term than any link.
HEALTH_TOPIC = words(
    """
    about regarding book books article articles documentary documentaries podcast podcasts
    film films movie movies show series course lecture lectures class essay paper thesis
    research researching study studying charity fundraiser fundraising awareness conference
    news campaign donate donated donation donating read reading watched watching learn
    learning learnt learned
    """
)
# Words right after a term that make it a topic: "diabetes research", "cancer charity".
HEALTH_TOPIC_AFTER = words(
    """
    research charity charities awareness fundraiser fundraising walk run marathon month week
    day documentary book article podcast conference campaign foundation association society
    trust ribbon uk
    """
)
# Pronouns/people that make a clause about a human even when a pet is named in it.
HUMAN_SUBJECT = (
    words("i i'm im i've ive we we're he he's she she's they they're me us him them") | RELATIONS
)
POSSESSIVES = words("my our his her their your")

RELIGION_TERMS = words(
    """
    christian catholic protestant anglican methodist baptist evangelical mormon muslim moslem
    jewish jew hindu buddhist sikh jain bahai baha'i pagan wiccan atheist agnostic religious
    spiritual quaker orthodox presbyterian lutheran pentecostal adventist taoist zoroastrian
    rastafarian unitarian scientologist sunni shia shiite
    """
)
RELIGION_TRIGGERS = RELIGION_TERMS | words(
    """
    church churches mass mosque synagogue shul temple gurdwara chapel pray prays praying
    prayed worship faith religion god allah jesus christ ramadan passover shabbat sabbath lent
    diwali eid kippur hashanah hanukkah vaisakhi navratri kosher halal priest vicar imam rabbi
    pastor parish congregation
    """
)
POLITICS_TERMS = phrases(
    """
    democrat, republican, socialist, communist, marxist, anarchist, libertarian, tory, leftist,
    left-wing, right-wing, left wing, right wing, centrist, feminist, pro-life, pro-choice, pro
    life, pro choice, nationalist, unionist, monarchist, zionist, anti-zionist, brexiteer, remainer,
    trump supporter, maga, labour supporter, labour voter, labour member, green voter, tory voter,
    conservative voter, lib dem, lib dem voter
    """
)
PARTIES = phrases(
    """
    labour, labour party, conservative party, conservatives, tories, tory party, lib dems, liberal
    democrats, green party, greens, reform uk, reform, ukip, snp, plaid cymru, sinn fein, sinn féin,
    dup, democratic party, democrats, republican party, republicans, gop, dsa, afd, cdu, spd
    """
)
POLITICS_TRIGGERS = words(
    """
    democrat republican socialist communist marxist anarchist libertarian tory tories leftist
    left right centrist feminist pro nationalist unionist monarchist zionist anti brexiteer
    remainer trump maga labour conservative conservatives lib green greens reform ukip snp
    plaid sinn dup democrats republicans gop dsa afd cdu spd vote voted votes voting voter
    politics political liberal progressive canvassing canvass party
    """
)
ORIENTATION_TERMS = phrases(
    """
    gay, lesbian, bisexual, pansexual, asexual, queer, homosexual, heterosexual, transgender,
    transsexual, non-binary, nonbinary, non binary, genderqueer, genderfluid, intersex, polyamorous,
    celibate, a virgin, lgbt, lgbtq, lgbtq+
    """
)
ORIENTATION_TRIGGERS = words(
    """
    gay lesbian bisexual bi pansexual asexual ace queer homosexual heterosexual straight trans
    transgender transsexual non nonbinary binary genderqueer genderfluid intersex polyamorous
    poly celibate virgin lgbt lgbtq came come coming out sexuality orientation sex sexual
    transition transitioning
    """
)
ETHNIC_TERMS = phrases(
    """
    black, white, asian, hispanic, latino, latina, latinx, latine, mixed race, mixed-race, biracial,
    multiracial, african american, african-american, afro-caribbean, south asian, east asian, arab,
    romani, roma, gypsy, traveller, irish traveller, indigenous, aboriginal, native american, first
    nations, maori, māori, pacific islander, inuit, kurdish, berber, persian, han chinese
    """
)
ETHNIC_TRIGGERS = words(
    """
    black white asian hispanic latino latina latinx latine mixed biracial multiracial african
    afro caribbean arab romani roma gypsy traveller indigenous aboriginal native first maori
    māori pacific inuit kurdish berber persian han descent heritage ancestry extraction
    ethnicity race ethnic racial
    """
)
UNIONS = phrases(
    """
    unison, unite, unite the union, gmb, neu, nasuwt, rcn, bma, ucu, rmt, aslef, pcs, cwu, usdaw,
    fbu, nut, teamsters, seiu, uaw, afl-cio, afscme, ufcw, ibew, cupe, nea, aft, equity, prospect,
    community union
    """
)
