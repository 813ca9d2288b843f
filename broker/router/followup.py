"""What the router may know of the conversation a message follows: the person's own earlier
words and what the earlier turns named and listed, never the model's or a tool's instructions.

A follow-up ("the second one", "do the same for Downloads", "and tomorrow?") routes like the
turn it follows unless its own words say otherwise, and its referring words resolve to what that
turn named (the folder used) or listed (the files, in the order the person saw them).

`follow_up` reads one message against the earlier turns (a last turn that only closed the one
before, "ok", "omg", "thanks", is passed over: `talking_turns`), first match wins:

1. a self-correction keeps only what follows it ("pause it? no, just kill it" → "just kill it");
2. a closer ("thanks!", "cool", "typical lol") is chat;
3. a pointer into what a turn listed ("the second one", "number two", "the last link", "the
   pdf", "the chai one", "the one about the tram", "that page" when one page was shown, "the
   one after" the item the last turn picked, a listed name typed again; in a short message its
   words do not decide, a bare number, "2 delete", or a word only one listed name has, "open
   rota quick") picks that item: a file is read, a link is fetched, unless the words ask for
   something else ("delete the second one" is a file task with no direct action, rated as its
   words and the item are);
4. words that plainly name their own target (a URL, a command, a typed path with its verb)
   route by themselves;
5. "remember that", "keep it in mind" is a memory write (of the person's words only);
6. a verb on "it" / "that" ("open it", "summarise that", "list what's in there") acts on the one
   thing the last turn named or listed;
7. "why?" / "how come?" after a status readout asks for an investigation, after anything else
   is chat; an investigation's cue ("work out what's going on") after a status readout is one;
8. "tell me more", "again" repeat the earlier intent; "do it for port 8080" after a how-to
   asks for what the how-to described;
9. a continuation ("do the same for Downloads", "what about Berlin?", "and tomorrow?", "and in
   French?", "Downloads too") repeats the earlier turn's intent with the new folder, URL, topic
   or words;
10. a new value for a remembered fact ("it's 0800 555 0211 now") is a memory write;
11. a short message the rules are unsure of continues the earlier intent, with what that turn
    named, when the classifier finds that intent likely enough in context (`_continues`);
12. anything else routes by its own words (`None`: the caller keeps its own reading).

Trust: `Earlier.text` and `Earlier.named` come from the person's messages only. `Earlier.listed`
holds the names a tool returned (a listing, search results), kept only so that "the second one"
can pick one of them; a listed name is data: it never widens which tools are shown and it is
never taken as the person's request unless the follow-up's own words point at it by position or
by name. A picked item only ever raises risk (a credential file picked by position is high, as
typed), never sets an action the follow-up's words do not ask for, a high-risk one never gets a
direct action, and a name that does not look like a file name or a web link (a line break, a
shell character, an overlong string) is never picked. A memory write here never takes its fact
from an earlier turn. This module must never read files, run anything, or look inside a reply's
text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from broker.router.extraction import _make_view
from broker.router.patterns import (
    _DISCOVERY_CUE_RE,
    _KNOWN_FOLDERS,
    _QUESTION_RE,
    _RUNS_IT_RE,
    _URL_RE,
    _words,
)
from broker.router.scoring import DIRECT_ACTION_CONFIDENCE, _high_risk, _needs, _risk
from broker.types import RISK_ORDER, Action, Intent, RiskLevel, RouterArguments, RouterOutput


@dataclass(frozen=True)
class Earlier:
    """One earlier turn of the conversation, as the router may read it."""

    # The person's message, as they typed it.
    text: str
    # How it was routed.
    intent: Intent
    # Paths, folders and URLs the person's own words named (the router's arguments).
    named: tuple[str, ...] = ()
    # What the turn listed, in the order shown (file names of a listing, result URLs): data.
    listed: tuple[str, ...] = ()


# A follow-up whose words plainly continue or point: as sure as a plain request.
FOLLOW_UP_CONFIDENCE = DIRECT_ACTION_CONFIDENCE
# A continuation read from weaker words ("and X"), or an unsure message taken as continuing.
LIKELY_FOLLOW_UP_CONFIDENCE = 0.8
# An unsure message: how much likelier the last turn's intent is than without a conversation.
SAME_INTENT_PRIOR = 3.0
# Without the classifier, a message the rules read below this continues the last turn.
UNSURE_OWN_READING = 0.7
# Longer than this, a message is read only by its own words and by what it points at.
FOLLOW_UP_CHARS = 300
# A continuation's new part ("do the same for X") longer than this is a request of its own.
CONTINUATION_WORDS = 10
# An unsure message longer than this is not taken as continuing the last turn.
UNSURE_WORDS = 12
# "how come it lost so much? anything on the system making it worse?" is still a why.
WHY_WORDS = 16
# A continuation's new part this short is read as a fragment of the earlier request, unless
# it reads plainly as another one with a direct action of its own.
FRAGMENT_WORDS = 4
# How many turns back "the second one" may look for a listing.
LOOK_BACK = 3
# A message this short, unsure by its own words, may point by a bare number or a name's word.
LOOSE_WORDS = 8
# A listed name longer than this is not something a person points at.
MAX_LISTED_CHARS = 1024

# The module's own few words: what only a follow-up needs. Each pattern is anchored or bounded
# and has no nested unbounded quantifier that can overlap; all run on at most FOLLOW_UP_CHARS.
_I = re.IGNORECASE
_LEAD = (
    r"(?:(?:ok(?:ay)?|so|now|and|also|great|cool|thanks|nice|perfect|alright|right|then|hmm|"
    r"please|pls|just|yeah|yes|yep|sure|can\s+you|could\s+you|would\s+you|"
    r"go\s+ahead\s+and)[\s,.!]+)*"
)

_CLOSER_WORDS = _words(
    "ok okay k kk cool great nice perfect awesome thanks thank thx ty tysm ta cheers gotcha "
    "alright good helpful works helps sense understood noted lol lmao haha hah heh wow neat "
    "sweet brilliant appreciate appreciated bye goodbye nvm excellent amazing super fantastic "
    "wonderful lovely fine nevermind typical yay ugh oh ah meh yikes damn fab legend star "
    "phew whoa oops hmm interesting fair lovely cute obrigado obrigada perfeito gracias merci "
    "danke grazie"
)
# Words a closer may hold besides the closers themselves ("thank you so much", "got it").
_CLOSER_FILLER = _words(
    "you so much very a lot that's thats that it is was all i see got makes never mind for "
    "the help man mate buddy dude really just again night job one this you're youre ur u "
    "are what enough sounds ok muito muchas mille beaucoup schön"
)
_WORD_RE = re.compile(r"[a-z0-9']+")
# A bare yes to what a reply offered ("sure, go ahead", "yes do it"): it names nothing, so it
# reaches no further than the person's own request before it (`bare_yes`).
_CONSENT_WORDS = _words("sure yes yeah yep yup yea ya proceed ahead do")
_CONSENT_FILLER = _words(
    "ok okay alright then please pls plz it that now just and right away thanks thank you go "
    "for on carry fine thats that's absolutely definitely of course sounds good why not"
)

# "pause the render? no just kill it", "nope, the docx", "X. actually, Y".
_CORRECTION_RE = re.compile(
    r"(?:(?:^|[?.!,;]\s*|\s-+\s*)(?:no+|nah|nope|actually|wait|scratch\s+that|or\s+rather)\b"
    r"(?:[\s,.!]+(?:no+|wait|actually|sorry))*[\s,.!]+|^not\s+[^,.;?!]{1,60},\s*)"
    r"(?P<rest>\S[^?]{0,200}[?.!]*)$",
    _I,
)

_ORD_WORDS: dict[str, int] = {
    "first": 1,
    "1st": 1,
    # The usual slips of a fast typist ("opne the frist link").
    "frist": 1,
    "fisrt": 1,
    "secnd": 2,
    "seccond": 2,
    "thrid": 3,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
    "fifth": 5,
    "5th": 5,
    "sixth": 6,
    "6th": 6,
    "seventh": 7,
    "7th": 7,
    "eighth": 8,
    "8th": 8,
    "ninth": 9,
    "9th": 9,
    "tenth": 10,
    "10th": 10,
    "last": -1,
    "final": -1,
    "bottom": -1,
    "top": 1,
    "penultimate": -2,
}
_ORD = (
    r"(second[\s-]+(?:to[\s-]+)?last|next[\s-]+to[\s-]+last|first|1st|second|2nd|third|3rd|"
    r"frist|fisrt|secnd|seccond|thrid|"
    r"fourth|4th|fifth|5th|sixth|6th|seventh|7th|eighth|8th|ninth|9th|tenth|10th|last|final|"
    r"penultimate|top|bottom)"
)
_ITEM_WORDS = (
    r"one|ones|file|item|link|url|result|hit|entry|doc|document|page|site|article|folder|"
    r"pdf|image|photo|picture|pic|video|song|track|spreadsheet|sheet|option|thing|story|"
    r"source|repo|post|paper"
)
_ITEM = r"(?:" + _ITEM_WORDS + r")"
# "the second one", "2nd link", "the last result", "open the third" (at the end).
_ORDINAL_RE = re.compile(
    r"\b(?:(?:the|that|this)\s+)?" + _ORD + r"(?:\s+" + _ITEM + r"\b|\s*[.!?]*\s*$|"
    r"\s+(?:in|on|from)\s+(?:the|that|your)\s+list\b|\s*,|\s+(?:please|pls|plz)\b)",
    _I,
)
# What follows "the first one" in a question about the world ("... to climb Everest").
_SUPERLATIVE_RE = re.compile(r"\s+(?:to|who|that|ever|in\s+history)\b", _I)
# "number 2", "#3", "item 4", "result 1".
_NUMBER_RE = re.compile(
    r"(?:\b(?:number|no\.?|item|result|link|file|entry|option)\s*|#)(\d{1,2})\b|"
    r"\b(?:number|item|result|link|entry|option)\s+(one|two|three|four|five|six|seven|eight|"
    r"nine|ten)\b",
    _I,
)
_NUMBER_WORDS = {
    word: place
    for place, word in enumerate(
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"], start=1
    )
}
# "the pdf", "that spreadsheet", "the png one": a file type pointed at.
_TYPE_REF_RE = re.compile(
    r"\b(?:the|that|this)\s+\.?([a-z0-9]{2,12})(?:\s+(?:one|file|doc|document))?\b", _I
)
# "the chai one", "the explainer link", "the 2025 one": a word of one listed name.
_NAME_FRAME_RE = re.compile(
    r"(?:\b(?:the|that|this|their|its|your)\s+|^(?!(?:the|that|this|a|an|which|what|my|no|"
    r"and|or|any|each|every)\b))([\w\-]{2,40}(?:\s+[\w\-]{1,40})?)\s+(?:one|link|page|site|"
    r"article|file|doc|document|result|folder|version|piece|story|post|guide|video|review|"
    r"thread|report|sheet|log|script|dir|directory|wav|mp3|mp4|mov|pdf|docx?|xlsx?|csv|txt|png|"
    r"jpe?g|zip|iso|recording|track|clip|mix|photo|picture|image|video|spreadsheet)\b",
    _I,
)
# "the v2", "that ch3": a word with a digit in it, pointing at the one listed name holding it.
_CODE_REF_RE = re.compile(r"\b(?:the|that|this)\s+((?:[a-z]+\d|\d+[a-z])[\w\-]{0,30})\b", _I)
# Words a person says for what a name abbreviates: "the march sheet" is sales_mar.xlsx, "the
# arabic version" manual_AR.pdf, "the swedish one" glossary_sv_en.tbx.
_SAID_AS: dict[str, tuple[str, ...]] = {
    **{
        month: (month[:3],)
        for month in (
            "january",
            "february",
            "march",
            "april",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    },
    "sept": ("sep",),
    "english": ("en", "eng"),
    "arabic": ("ar", "ara"),
    "swedish": ("sv", "swe"),
    "german": ("de", "ger", "deu"),
    "french": ("fr", "fra", "fre"),
    "spanish": ("es", "spa"),
    "italian": ("it", "ita"),
    "polish": ("pl", "pol"),
    "portuguese": ("pt", "por"),
    "dutch": ("nl", "nld"),
    "danish": ("da", "dan"),
    "norwegian": ("no", "nor", "nb"),
    "finnish": ("fi", "fin"),
    "russian": ("ru", "rus"),
    "ukrainian": ("uk", "ukr"),
    "chinese": ("zh", "chi", "zho"),
    "japanese": ("ja", "jp", "jpn"),
    "korean": ("ko", "kor"),
    "turkish": ("tr", "tur"),
    "greek": ("el", "gre"),
}
# "the whole thesis folder", "that Invoices folder": a folder named by its own name.
# Words about what holds the thing pointed at: its folder, its site.
_AROUND_RE = re.compile(
    r"\b(?:(?:the|that|this)\s+)?same\s+(?:folder|dir|directory|place|location|site|website)\b|"
    r"\b(?:on|from)\s+(?:that|this|their|its)\s+(?:web\s*)?site\b",
    _I,
)
_FOLDER_WORD_RE = re.compile(
    r"\b(?:the|that|this|my)\s+(?:whole\s+|entire\s+)?([\w\-.]{2,40})\s+(?:folder|dir|"
    r"directory)\b",
    _I,
)
# "the one about the tram", "the article on pricing": a word of one listed name after it.
_ABOUT_NAME_RE = re.compile(
    r"\b(?:one|link|page|article|story|piece|file|post|result|letter)\s+(?:about|on|with|from|"
    r"for|to)\s+(?:the\s+|that\s+|my\s+|our\s+)?([\w\-]{2,40})\b",
    _I,
)
# "that page", "the site", "that file", "in there": the one page or file a turn showed.
_THE_ONE_RE = re.compile(
    r"\b(?:that|this|the\s+same|their|its)\s+(?:[a-z]+\s+){0,2}?(?P<kind>page|site|website|link|url|article|"
    r"piece|story|post|timetable|file|doc|document|folder|dir|directory|pdf)\b",
    _I,
)
# "that path", "this share", "those dates", "that one": a thing the turn before showed.
_KIND_REF_RE = re.compile(
    r"\b(?:that|this|those|these|the\s+same)\s+(?:[a-z]+\s+)?(?:"
    + _ITEM_WORDS
    + r"|website|dir|directory|path|drive|share|script|log|portal|address|recipe|date|number)s?\b",
    _I,
)
_MIDDLE_RE = re.compile(r"\bthe\s+middle\s+" + _ITEM + r"\b", _I)
_IT_RE = re.compile(r"\b(?:it|its|it's|them)\b", _I)
# "what time is it", "is it raining", "it's late": an "it" that points at nothing.
_EMPTY_IT_RE = re.compile(
    r"\bwhat\s+time\s+is\s+it\b|"
    r"\b(?:is|was|will)\s+it\s+(?:be\s+)?(?:raining|snowing|sunny|cold|hot|warm|windy|possible|"
    r"true|worth)\b|\bit'?s\s+(?:raining|snowing|cold|hot|warm|late|early|sunny|windy)\b",
    _I,
)
_PAGE_KINDS = _words("page site website link url article piece story post timetable")
# "the newest", "the oldest of those": by the dates the listed names carry.
_BY_DATE_RE = re.compile(
    r"\b(?:(?P<new>newest|latest|most\s+recent)|(?P<old>oldest|earliest))\b(?!\s+(?:news|"
    r"version\s+of|update|release))",
    _I,
)
# A date in a name: 2026-11-24, 2026_11_24, 2026.11.24, 20261124.
# With a time after it ("Screenshot 2026-11-26 at 22.14.03"), the time orders the same day.
_NAME_DATE_RE = re.compile(
    r"(?<!\d)(20\d\d)[-_.]?(0[1-9]|1[0-2])[-_.]?(0[1-9]|[12]\d|3[01])(?!\d)"
    r"(?:(?:\s+at\s+|[\sT_-])([01]\d|2[0-3])[.:\-]?([0-5]\d)(?:[.:\-]?([0-5]\d))?(?!\d))?"
)
# "the one after", "the next one", "the one before": next to the item the last turn picked.
_RELATIVE_RE = re.compile(
    r"\b(?:the\s+)?(?:(?P<after>one\s+after|next\s+one|one\s+below)|"
    r"(?P<before>one\s+before|previous\s+one|one\s+above))\b",
    _I,
)
# "open the lease", "delete the setlist": an acting verb and a word of one listed name.
_VERB_NAME_RE = re.compile(
    r"^" + _LEAD + r"([a-z]+)(?:\s+(?:up|me))?\s+(?:the|that|my)\s+([\w\-]{2,40})\b", _I
)
# Words that follow "the" without naming anything.
_NOT_A_NAME = _words(
    "same other next new old right wrong whole first last one ones file files folder thing "
    "list link page site rest top bottom latest newest oldest biggest smallest"
)
# Words after which a person describes the thing they point at ("the affiche for the concert").
_POINTING_WORDS = _words("the that this those these dat dis dem thos")
# Words too common to point at a listed name by themselves ("the", "what", "new", "file").
_COMMON = _words(
    "the and for you your with what whats which this that those these them there then than "
    "from about into onto over under can could would should will please pls now just also "
    "not but all any some how why who when where get got give need want see let lets me my "
    "its it's one ones file files doc docs folder new old copy final draft version show tell "
    "more less much many most top big bigger biggest small smaller latest newest oldest next "
    "last first second third other same again too www com org net http https example yes "
    "yeah nope okay quick instead rather actually really maybe thing things stuff"
)
# "top 5", "last 3": a count, not a position.
_COUNTING = _words("top last first next bottom past every")
_TYPE_WORDS: dict[str, frozenset[str]] = {
    "pdf": frozenset({"pdf"}),
    "spreadsheet": frozenset({"xlsx", "xls", "csv", "ods", "tsv"}),
    "excel": frozenset({"xlsx", "xls"}),
    "image": frozenset({"png", "jpg", "jpeg", "gif", "webp", "heic", "bmp", "svg", "tif", "tiff"}),
    "photo": frozenset({"png", "jpg", "jpeg", "heic", "webp"}),
    "picture": frozenset({"png", "jpg", "jpeg", "gif", "heic", "webp", "bmp"}),
    "screenshot": frozenset({"png", "jpg", "jpeg"}),
    "video": frozenset({"mp4", "mkv", "mov", "avi", "webm"}),
    "song": frozenset({"mp3", "m4a", "flac", "ogg", "wav"}),
    "text": frozenset({"txt", "md"}),
    "markdown": frozenset({"md", "markdown"}),
    "word": frozenset({"doc", "docx", "odt"}),
    "presentation": frozenset({"ppt", "pptx", "odp", "key"}),
    "slides": frozenset({"ppt", "pptx", "odp", "key"}),
    "archive": frozenset({"zip", "tar", "gz", "tgz", "7z", "rar", "xz", "bz2"}),
    "iso": frozenset({"iso"}),
    "installer": frozenset({"exe", "msi", "dmg", "pkg", "deb", "rpm", "appimage"}),
    "script": frozenset({"sh", "py", "js", "ps1", "bat"}),
}
# Every extension names its own type ("the docx", "that csv").
for _one in _words(
    "txt md docx doc xlsx xls pptx ppt odt ods json yaml yml toml csv png jpg jpeg gif mp3 mp4 "
    "py sh js html xml log ini cfg conf epub mov mkv wav flac svg heic webp zip tar gz exe msi "
    "dmg deb rpm"
):
    _TYPE_WORDS.setdefault(_one, frozenset({_one}))

# A verb that reads what it is pointed at ("open it", "summarise the second one").
_READ_VERB = (
    r"(?:open|read|show|display|view|print|cat|preview|check|look\s+at|go\s+through|skim|"
    r"summari[sz]e|sum\s+up|tl;?dr|give\s+me(?:\s+the\s+gist\s+of)?|go\s+to|visit|fetch|load|"
    r"list|ls|describe|explain|pull\s+up|bring\s+up|fire\s+up|what'?s\s+in|whats\s+in|"
    r"what\s+is\s+in|what'?s\s+inside|tell\s+me\s+about)"
)
_READ_VERB_RE = re.compile(r"^" + _LEAD + _READ_VERB + r"\b", _I)
_WRITE_VERB_RE = re.compile(
    r"\b(?:delete|remove|trash|bin|rm|erase|wipe|shred|rename|move|mv|copy|cp|duplicate|edit|"
    r"modify|change|overwrite|replace|compress|zip|unzip|unpack|extract|back\s*up|backup|share|"
    r"send|upload|email|mail|attach|convert|print|install|run|execute|launch|play|save|"
    r"download|store)\b",
    _I,
)
_IN_BROWSER_RE = re.compile(r"\b(?:in|with)\s+(?:my|the|a)\s+(?:browser|new\s+tab)\b", _I)
_PRONOUN = (
    r"(?:it|that|this|them|those|these|that\s+one|this\s+one|there|in\s+there|in\s+it|"
    r"dat|dat\s+one|dis|dis\s+one|"
    r"th(?:at|is|e)\s+(?:file|page|link|site|article|folder|document|doc|url|thing))"
)
# A verb with "it" as its object: "open it", "delete that one", "pull it up", "list what's in
# there", "move it to ~/old". "that om-1 guide" is not a pronoun but a name.
_ACT_ON_IT_RE = re.compile(
    r"^"
    + _LEAD
    + r"(?:(?P<verb>[a-z]+(?:\s+(?:up|down|out|through|at))?)\s+(?:me\s+)?"
    + _PRONOUN
    + r"(?:\s+(?:up|open|again|please|for\s+me|now|then))*\s*(?:$|[?.!,]|\s+(?:to|into|in|as|on|"
    r"next|from|and|with|so)\b)|"
    r"(?:list\s+)?(?:what'?s|whats|what\s+is)\s+(?:in|inside)\s+" + _PRONOUN + r"\b)",
    _I,
)
# Verbs that act on a file or a page when "it" is their object ("pull it up", "bin it").
_ACTING_VERBS = _words(
    "open read show display view print cat preview check skim summarise summarize sum tldr "
    "list ls describe explain pull bring fire load visit fetch play delete remove trash bin rm "
    "erase rename move copy edit unzip unpack extract save download share send upload email "
    "attach convert run launch install close go look scan search grep pop grab zip compress "
    "stick put"
)
# Words that refer to what the last turn named ("the reviews on there", "that page").
_REFERS_RE = re.compile(
    r"\b(?:(?:on|in|from|of|at)\s+(?:there|it)|there|th(?:at|is|e)\s+(?:page|site|article|"
    r"doc|document|file|folder|link|url|tab))\b",
    _I,
)
# "remember that", "keep it in mind", "store that as well", "save that password for me".
_KEEP_THAT_RE = re.compile(
    r"^" + _LEAD + r"(?:please\s+)?(?:remember|memori[sz]e|store|save|note|jot\s+down|"
    r"write\s+down|make\s+a\s+note\s+of|keep)\s+(?:that|it|this|those|these)\b|"
    r"^" + _LEAD + r"(?:please\s+)?(?:jot|write|note|put)\s+(?:that|it|this|those|these)\s+down\b|"
    # "add that too", but not "add that printer to this machine"
    r"^" + _LEAD + r"(?:please\s+)?add\s+(?:that|it|this|those|these)\s*(?:too|as\s+well|"
    r"to\s+(?:your\s+)?(?:memory|notes|list))?\s*[.!]*$|"
    r"\bkeep\s+(?:that|it|this)\s+in\s+mind\b|"
    r"[,.;!]\s*(?:please\s+)?(?:remember|memori[sz]e|note)\s+(?!(?:when|how|what|where|who|"
    r"which|if|the\s+time)\b)\S",
    _I,
)
# "store the new harbour master's name", "save aled's number as my electrician": a detail the
# turn before gave, kept even when its words also name a listed item.
_KEEP_DETAIL_RE = re.compile(
    r"^" + _LEAD + r"(?:please\s+)?(?:remember|store|save|note|keep|jot\s+down|write\s+down)\s+"
    r"(?:the|her|his|their|that|this|[\w\-]+'s)\s+(?:[\w'\-]+\s+){0,3}?(?:name|names|number|"
    r"address|date|dates|code|time|details|email|phone|contact)\b"
    r"(?!\s+(?:in|into|to|as\s+(?:a|an)|as\s+[\w\-]+\.[a-z0-9]{1,5})\b)",
    _I,
)
# "you hang on to that for me", "so do remember my 4mm needles are in the blue tin": kept
# whatever place the words name (the tin is not a folder).
_KEEP_SAID_RE = re.compile(
    r"\b(?:hang|hold)\s+on(?:\s+to|to)\s+(?:that|it|this|those|these)\b|"
    r"\b(?:do|please)\s+remember\s+(?:that\s+)?(?:my|our|i|i'm|we)\b|"
    # "store our fiscal year as apr-mar for future reports"
    r"^(?:please\s+)?(?:store|save|remember|note|keep)\s+(?:my|our)\s+[^.?!]{1,60}?\bfor\s+"
    r"(?:future|later|next\s+time|reference)\b",
    _I,
)
# "save it next to my reports in ~/work", "save that as a pdf": a file, not a memory.
_TO_A_PLACE_RE = re.compile(
    r"\b(?:in|into|to|next\s+to|under|inside)\s+(?:my|the|a|~|/|\.)|"
    r"\bas\s+(?:a|an)\s+(?:\w+\s+)?(?:file|pdf|document|doc|text|spreadsheet|image|copy)\b|"
    r"\bas\s+[\w\-]+\.[a-z0-9]{1,5}\b",
    _I,
)
# "do the same for Downloads", "same with ./src", "now for Berlin", "do it for port 8080".
_SAME_RE = re.compile(
    r"^" + _LEAD + r"(?:(?:do|try|run|repeat|check)\s+(?:the\s+same(?:\s+thing)?|that|it|this)"
    r"(?:\s+again)?|(?:the\s+)?same(?:\s+thing)?|again|now|repeat|same\s+question)\s*,?\s*"
    r"(?:but\s+)?(?:for|with|in|on|using|about|at)\s+(?P<rest>\S.*)$",
    _I | re.S,
)
# "and tomorrow?", "what about Berlin?", "how about in French?".
_ABOUT_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|cool|thanks|great|nice|alright|hmm|right|oh|ah|oh\s+yeah|oh\s+and\s+yeah)"
    r"[\s,.!]+)?"
    r"(?:and\s+(?:what|wh?at|wot|how)\s+about|(?:what|wh?at|wot)\s+about|how\s+about|"
    r"what\s+of|and\s+for|and\s+also|also\s+for|and|n|or|but\s+for|also|then|now)\b[\s,]*"
    r"(?P<rest>.*)$",
    _I | re.S,
)
# "louder still", "a bit dimmer", "bigger, 125 is good", "go 70": a setting turned up or down.
_ADJUST_RE = re.compile(
    r"\b(?:louder|quieter|softer|dimmer|brighter|darker|bigger|smaller|larger|higher|lower|"
    r"more\s+(?:loud|quiet|bright|dim)|(?:turn|crank|bump)\s+it\s+(?:up|down)|"
    r"(?:up|down)\s+a\s+(?:bit|notch|little))\b|"
    r"^(?:\w+[\s,.!]+){0,2}?(?:go|set|make\s+it|scale|to)?\s*\d{2,3}\s*%?\s*(?:is\s+\w+)?[.!]*$",
    _I,
)
# How many words a setting turned up or down takes at most.
ADJUST_WORDS = 10
# "say both of those back to me", "read it back": what was kept, read out.
_SAID_BACK_RE = re.compile(
    r"\b(?:say|read|repeat|tell|give)\s+(?:me\s+)?(?:it|that|those|them|these|both(?:\s+of\s+"
    r"(?:those|them|these))?|all\s+of\s+(?:it|them|that))\s+back\b",
    _I,
)
# "english is mrs hart btw", "fyi its the 14th": a fact added in passing.
_BY_THE_WAY_RE = re.compile(r"\b(?:btw|by\s+the\s+way|fyi)\b", _I)
# "sorry who signs off again", "what's the gate code again?": a question asked before.
_AGAIN_RE = re.compile(
    r"^(?:\w+[\s,.!]+){0,2}?(?:what|what'?s|whats|wat|wats|who|who'?s|whos|when|when'?s|whens|"
    r"where|where'?s|wheres|which|how\s+much|how\s+many)\b[^\n]{0,60}?\bagain\s*[?!.]*$",
    _I,
)
# "Downloads too", "the battery as well".
_TOO_RE = re.compile(r"^(?P<rest>\S.{0,200}?)\s+(?:too|as\s+well|also)\s*[?.!]*$", _I | re.S)
# "why?", "how come?": after a status readout an investigation, after anything else chat.
_WHY_RE = re.compile(
    r"^(?:\S{1,10}[?!]+\s+)?(?:but\s+|and\s+|so\s+|ok(?:ay)?[\s,]+|hmm[\s,]+)?(?:why|whys|why'?s|"
    r"why\s+not|how\s+come|how\s+so|what\s+caused\s+(?:it|that|this)|why\s+is\s+(?:it|that))\b"
    r"[^\n]{0,80}$|"
    r"^[^\n]{1,60}?[?!.]\s*(?:but\s+|so\s+)?how\s+come\s*[?!.]*$",
    _I,
)
# "what's taking it all up?" after a disk readout: what the space goes to.
_WHATS_TAKING_RE = re.compile(
    r"\bwhat(?:'?s|s|\s+is|\s+are)\s+(?:taking|using|eating|hogging|filling|draining|"
    r"slowing)\b",
    _I,
)
# Questions about the answer just given.
_META_RE = re.compile(
    r"^(?:but\s+|and\s+|so\s+|ok(?:ay)?[\s,]+)?(?:really|are\s+you\s+sure|what\s+do\s+you\s+"
    r"mean|what\s+does\s+that\s+mean|meaning|"
    r"is\s+that\s+(?:good|bad|normal|a\s+lot|ok|okay|right|true|correct|enough|high|low)|"
    r"explain(?:\s+that|\s+it|\s+why)?|elaborate|can\s+you\s+elaborate|in\s+what\s+way|"
    r"which\s+is\s+better|which\s+one\s+is\s+better|is\s+it\s+(?:safe|worth\s+it|bad|good)|"
    r"say\s+(?:that|it)\s+again|shorter|simpler|in\s+simpler\s+terms|in\s+one\s+sentence|"
    r"make\s+it\s+(?:shorter|longer|simpler|funnier)|another\s+one|one\s+more)\b"
    r"[^\n]{0,60}$",
    _I,
)
# Asking for more of what the earlier turn gave: the same intent again.
_MORE_RE = re.compile(
    r"^(?:ok(?:ay)?[\s,]+|and\s+|so\s+)?(?:tell\s+me\s+more|more\s+(?:details|info|results)|"
    r"more|go\s+on|continue|keep\s+going|what\s+else|anything\s+else|show\s+me\s+more|"
    r"any\s+more|the\s+rest|refresh|again|try\s+again|once\s+more|and\s+now|now|check\s+again|"
    r"do\s+it\s+again|(?:and|what\s+about)\s+now)\b[\s?.!]*$",
    _I,
)
# "how do I check which port ...": a how-to; "do it for port 8080" then asks for it done.
_HOWTO_LEAD_RE = re.compile(
    r"^(?:so\s+|and\s+)?(?:how\s+(?:do|can|should|would|could)\s+(?:i|we|you|one)\s+|"
    r"how\s+to\s+|is\s+there\s+a\s+way\s+to\s+|what'?s\s+the\s+command\s+to\s+)",
    _I,
)
_DO_IT_RE = re.compile(
    r"^" + _LEAD + r"(?:do\s+(?:it|that|this)|go\s+ahead|try\s+it|run\s+it|yes\s+do\s+it)\b",
    _I,
)
# A remembered value changed: "they changed it, it's 0800 555 0211 now", "i moved to days".
_NEW_VALUE_RE = re.compile(
    r"\b(?:now|anymore|changed|moved|switched|updated|out\s+of\s+date|outdated|no\s+longer|"
    r"not\s+anymore|instead|actually\s+it'?s|it'?s\s+now|^update\s*:|"
    r"add\b(?![^.?!]{0,40}\bto\s+(?:this|my|the)\s+(?:machine|computer|pc|laptop|mac|system)\b))",
    _I,
)
# A short message that is a whole question of its own ("what time is it"), not a fragment.
_ASKS_RE = re.compile(
    r"^(?:what|what'?s|whats|who|who'?s|when|where|which|why|how|is|are|was|were|will|does|do|"
    r"did|can|could|should|would|tell|show|give|find|open|play|take|set|turn|make)\b",
    _I,
)
# "which one is the biggest", "which of those do i need": a question about what was listed.
_WHICH_OF_RE = re.compile(
    r"\bwhich(?:ever)?\s+(?:one|ones|of\s+(?:them|those|these|the\s+\w+))\b|"
    r"\b(?:any|all|each|some|none|both|either)\s+of\s+(?:them|those|these)\b",
    _I,
)
_BARE_FOLDER_RE = re.compile(
    r"\b(documents|docs|downloads?|desktop|pictures|photos|music|videos|movies|home)\b", _I
)
# What a pickable listed name may hold: no line break, no shell or quoting character.
_UNSAFE_NAME_RE = re.compile(r"[\x00-\x1f\x7f`$|;&<>\"]")
_READ_ACTIONS: frozenset[str] = frozenset(
    {
        "list_files",
        "read_file",
        "search_files",
        "system_info",
        "screenshot",
        "active_window",
        "fetch_url",
        "web_search",
    }
)
_FILE_READS = frozenset({Intent.FILE_TASK, Intent.ONE_SHOT_DISCOVERY})
_STATUS = frozenset({Intent.SYSTEM_TASK, Intent.ONE_SHOT_DISCOVERY})
_MEMORY = frozenset({Intent.MEMORY_READ, Intent.MEMORY_WRITE})

Reroute = Callable[[str], RouterOutput]
# The classifier's probability of each intent for some words ({} without a classifier).
Ranked = Callable[[str], dict[Intent, float]]


def follow_up(
    text: str,
    earlier: Sequence[Earlier],
    own: RouterOutput,
    alone: Reroute,
    rules: Reroute,
    ranked: Ranked | None = None,
) -> RouterOutput | None:
    """`text` read as a follow-up to `earlier` (oldest first; the last is the turn it follows),
    or None when its own words decide. `own` is how `text` routes alone; `alone` routes other
    words the same way (rules and classifier), `rules` by the rules only (an earlier message
    read again for its arguments); `ranked` gives the classifier's probabilities."""
    return read_follow_up(text, earlier, own, alone, rules, ranked)[0]


def read_follow_up(
    text: str,
    earlier: Sequence[Earlier],
    own: RouterOutput,
    alone: Reroute,
    rules: Reroute,
    ranked: Ranked | None = None,
) -> tuple[RouterOutput | None, str, str | None]:
    """`follow_up`; the name of the rule that decided ("pointed", "why_status", …; "none"
    when none did), what the learned follow-up reader (`followup_model`) weighs it by; and
    what its referring words point at whatever it asks (`RouterArguments.refers_to`): a
    listed item picked by position, name, type or date, or described by words only its name
    holds ("the affiche for the concert"); after "that file", "this site", "those dates",
    "it", the one thing the turn before named or listed; else a folder called by its name."""
    if not earlier or len(text) > FOLLOW_UP_CHARS:
        return None, "not_read", None
    message = " ".join(text.split())
    if not message or message.startswith("/"):
        return None, "not_read", None
    whole = own
    corrected = _CORRECTION_RE.search(message)
    if corrected is not None and len(corrected.group("rest").split()) >= 2:
        # "pause the render? no, just kill it": what the person settled on.
        message = corrected.group("rest").strip()
        own = alone(message)
    turns = talking_turns(earlier)
    pointed = _pointed(message, turns, own)
    rule, out = _follow(message, turns, own, alone, rules, ranked, pointed)
    referred = _referred(message, turns, pointed)
    if corrected is not None and own is not whole:
        rule = "corrected_" + rule
    if out is None:
        if own is whole:
            return None, rule, referred
        out = own
    # The message as typed goes on (the model reads all of it), never rated below its own
    # reading: a correction chooses the reading, not a lower risk.
    return (
        out.model_copy(
            update={"text": text.strip(), "risk_level": _max_risk(out.risk_level, whole.risk_level)}
        ),
        rule,
        referred,
    )


def _follow(
    message: str,
    earlier: Sequence[Earlier],
    own: RouterOutput,
    alone: Reroute,
    rules: Reroute,
    ranked: Ranked | None,
    pointed: _Target | None,
) -> tuple[str, RouterOutput | None]:
    """`follow_up` on the normalised message the person settled on, after `earlier` (its
    talking turns), and the rule that decided; `pointed` is the listed item its words pick."""
    if _closer(message):
        return "closer", _chat(message)
    last = _thread(earlier)
    if bare_yes(message):
        # Whatever the reply offered, a yes names nothing: it goes on with what the person
        # asked for before (a request that acts), else it is talk. Never reread by the model.
        if last.intent is Intent.CHAT_ONLY or last.intent in _MEMORY:
            return "consent", _chat(message)
        out = _like(last.intent, last, message, None, rules, own, LIKELY_FOLLOW_UP_CONFIDENCE)
        out.arguments.action = None  # the model answers it: the yes does not redo the request
        return "consent", out
    if _KEEP_DETAIL_RE.search(message):
        return "keep_that", _memory_write(message, own)
    if pointed is not None:
        return "pointed", _act_on(message, pointed, own)
    if _own_request(own):
        return "own_request", None
    # Only when the message's own words name no place ("my Documents folder" is ~/Documents,
    # not a listed /mnt/backup/Documents) and the thread is about files.
    folder = (
        _folder_by_name(message, earlier)
        if last.intent is Intent.FILE_TASK and not own.arguments.paths and not own.arguments.cwd
        else None
    )
    if folder is not None:
        out = _act_on(message, folder, own)
        if not _READ_VERB_RE.match(message):
            out.arguments.action = None  # "and the whole thesis folder?": the ask, not a listing
        return "folder_by_name", out
    if _KEEP_SAID_RE.search(message) or (
        _KEEP_THAT_RE.search(message) and not _TO_A_PLACE_RE.search(message)
    ):
        return "keep_that", _memory_write(message, own)
    acted = _ACT_ON_IT_RE.match(message)
    if acted is not None:
        target = _pronoun_target(earlier)
        verb = acted.group("verb")
        if verb is None or _verb_acts(verb, message, own):
            if target is not None:
                return "pronoun", _act_on(message, target, own)
            if own.confidence < DIRECT_ACTION_CONFIDENCE and any(map(_is_url, last.listed)):
                # "open it" after several results: a page is to be read, the model picks which.
                return "pronoun_results", _like(
                    Intent.BROWSE_ONCE, last, message, None, rules, own, 0.8
                )
    words = len(message.split())
    if _WHICH_OF_RE.search(message) and own.confidence < DIRECT_ACTION_CONFIDENCE and last.listed:
        # "which one is the biggest", "which of those do i need": about what the turn showed.
        return "which_of", _like(
            last.intent, last, message, None, rules, own, LIKELY_FOLLOW_UP_CONFIDENCE
        )
    if (
        own.confidence < DIRECT_ACTION_CONFIDENCE
        and words <= UNSURE_WORDS
        and _REFERS_RE.search(message)
        and len(_named(last)) == 1
        and last.intent in (Intent.FILE_TASK, Intent.BROWSE_ONCE)
    ):
        # "what are people complaining about in the reviews on there": the page just named.
        return "refers", _like(
            last.intent, last, message, None, rules, own, LIKELY_FOLLOW_UP_CONFIDENCE
        )
    if words <= WHY_WORDS and _WHY_RE.match(message):
        if last.intent in _STATUS:
            return "why_status", _like(Intent.ONE_SHOT_DISCOVERY, last, message, None, rules, own)
        return "why_chat", _chat(message)
    if (
        last.intent in _STATUS
        and (_DISCOVERY_CUE_RE.search(message) or _WHATS_TAKING_RE.search(message))
        and own.intent is not Intent.ONE_SHOT_DISCOVERY
        and own.confidence < DIRECT_ACTION_CONFIDENCE
    ):
        return "discovery_cue", _like(Intent.ONE_SHOT_DISCOVERY, last, message, None, rules, own)
    if words <= CONTINUATION_WORDS and _META_RE.match(message):
        return "meta", _chat(message)
    if _MORE_RE.match(message):
        return "more", _like(last.intent, last, message, None, rules, own)
    task = _howto_task(last, message, alone, rules)
    if task is not None:
        return "howto", task
    rest, plain = _continuation(message)
    if rest is not None and not _own_turn(rest, own, last):
        sure = FOLLOW_UP_CONFIDENCE if plain else LIKELY_FOLLOW_UP_CONFIDENCE
        return "continuation", _like(last.intent, last, message, rest, rules, own, sure)
    if (
        last.intent in _MEMORY
        and own.confidence < DIRECT_ACTION_CONFIDENCE
        and _NEW_VALUE_RE.search(message)
        and not _QUESTION_RE.search(message)
    ):
        return "new_value", _memory_write(message, own)
    if own.confidence < DIRECT_ACTION_CONFIDENCE and any(t.intent in _MEMORY for t in earlier):
        after_facts = _after_facts(message, last, rules, own)
        if after_facts is not None:
            return after_facts
    if (
        last.intent is Intent.SYSTEM_TASK
        and words <= ADJUST_WORDS
        and own.confidence < DIRECT_ACTION_CONFIDENCE
        and _ADJUST_RE.search(message)
    ):
        # "louder still please", "hmm dimmer", "too small. scale 150" after a setting was
        # changed: the same setting, more or less.
        return "adjust", _like(Intent.SYSTEM_TASK, last, message, None, rules, own)
    if _continues(message, words, own, last, ranked):
        return "continues", _like(
            last.intent, last, message, message, rules, own, LIKELY_FOLLOW_UP_CONFIDENCE
        )
    return "none", None


def _after_facts(
    message: str, last: Earlier, rules: Reroute, own: RouterOutput
) -> tuple[str, RouterOutput] | None:
    """An unsure message after facts were asked for or kept in this conversation, and the rule
    that read it: "say both of those back to me" and "who signs off again" recall them;
    "english is mrs hart btw" keeps one more."""
    if _SAID_BACK_RE.search(message):
        return "said_back", _like(Intent.MEMORY_READ, last, message, None, rules, own)
    if _BY_THE_WAY_RE.search(message) and not _QUESTION_RE.search(message):
        return "by_the_way", _memory_write(message, own)
    if _AGAIN_RE.match(message):
        return "again", _like(Intent.MEMORY_READ, last, message, None, rules, own)
    return None


def _referred(message: str, turns: Sequence[Earlier], pointed: _Target | None) -> str | None:
    """What the words point at (`read_follow_up`), given the listed item they pick, if any."""
    target = pointed
    pointing = _IT_RE.search(_EMPTY_IT_RE.sub(" ", message))
    if target is None:
        # "the smith one, what do you make of it": the words say which; "it" is that one.
        target = _described(message, turns)
    if target is None:
        # "that exports folder" after .../exports/q4_plan.json: the folder, not the file.
        target = _folder_by_name(message, turns)
    around = False
    if target is None and (_KIND_REF_RE.search(message) or pointing):
        target = _pronoun_target(turns)
        # "the results.csv in the same folder": the folder of the file the turn showed.
        around = target is not None and bool(_AROUND_RE.search(message))
    if target is None:
        return None
    value = _in_folder(target.value, target.turn) if target.listed else target.value
    return _around(value) if around else value


def _around(value: str) -> str:
    """What holds `value`: a file's folder ("the results.csv in the same folder"), a page's
    site ("the pricing page on the same site"). A folder or a site is its own."""
    if _is_url(value):
        scheme, _, rest = value.partition("://") if "://" in value else ("", "", value)
        host = rest.split("/", 1)[0]
        return f"{scheme}://{host}" if scheme else host
    if not _ext(value):
        return value
    cut = max(value.rstrip("/\\").rfind("/"), value.rstrip("/\\").rfind("\\"))
    return value[:cut] if cut > 0 else value


def _continues(
    message: str, words: int, own: RouterOutput, last: Earlier, ranked: Ranked | None
) -> bool:
    """An unsure message read in context: the classifier's probabilities with the last turn's
    intent `SAME_INTENT_PRIOR` times as likely as without a conversation (people mostly go on
    with what they were doing), against its own reading. Without the classifier, an unsure
    reading of a short message continues."""
    if own.confidence >= DIRECT_ACTION_CONFIDENCE or own.arguments.action is not None:
        return False
    if words > UNSURE_WORDS:
        return False
    fragment = words <= FRAGMENT_WORDS and not _ASKS_RE.match(message)
    if own.intent is last.intent:
        # "the Danube, next one" read as a page to read, "flu jab?" as a search, by their own
        # words: the same request, and where or what it is about comes from the turn before.
        return fragment and not _carries_its_own(own)
    if fragment:
        return True  # "silver?", "the Danube, next one": a fragment of the same request
    probabilities = ranked(own.text) if ranked is not None else {}
    if not probabilities:
        return own.confidence < UNSURE_OWN_READING
    return SAME_INTENT_PRIOR * probabilities.get(last.intent, 0.0) > probabilities.get(
        own.intent, own.confidence
    )


def _carries_its_own(out: RouterOutput) -> bool:
    """Whether a reading names what it acts on by itself: a path, a folder, a URL, a search, a
    command or a fact."""
    args = out.arguments
    return bool(args.paths or args.cwd or args.url or args.query or args.command or args.fact)


def talking_turns(earlier: Sequence[Earlier]) -> Sequence[Earlier]:
    """The turns a follow-up goes on from: a last turn that only closed the one before ("ok",
    "omg", "thanks", "typical") says nothing of what comes next, so "flu jab?" after "how
    much is a covid booster" and "ok" goes on from the booster's search."""
    end = len(earlier)
    while end > 1 and _closer(" ".join(earlier[end - 1].text.split())):
        end -= 1
    return earlier[:end]


def _thread(earlier: Sequence[Earlier]) -> Earlier:
    """The last turn, naming what the run of turns with its intent named: "what's question 1"
    after "open quiz.example.com/daily" is still about that page."""
    last = earlier[-1]
    if _named(last):
        return last
    for turn in reversed(earlier[-LOOK_BACK:-1]):
        if turn.intent is not last.intent:
            break
        named = _named(turn)
        if named:
            return replace(last, named=tuple(named))
    return last


def _own_turn(rest: str, own: RouterOutput, last: Earlier) -> bool:
    """A continuation's new part that is a request of its own ("and what's the weather
    tomorrow?" after a listing)."""
    words = len(rest.split())
    if words > CONTINUATION_WORDS:
        return True
    return (
        own.confidence >= DIRECT_ACTION_CONFIDENCE
        and own.intent is not last.intent
        and (words > FRAGMENT_WORDS or own.arguments.action is not None)
    )


def _own_request(own: RouterOutput) -> bool:
    """The message names what it acts on (a URL, a command, a typed path) plainly."""
    args = own.arguments
    if own.source == "prefix":
        return True
    return own.confidence >= 0.95 and bool(args.url or args.command or args.action)


def _closer(message: str) -> bool:
    words = _WORD_RE.findall(message.lower())
    if not words:
        # Only punctuation or emoji ("👍", "!!"): a reaction.
        return True
    if len(words) > 8:
        return False
    closer = False
    for word in words:
        if word in _CLOSER_WORDS:
            closer = True
        elif word not in _CLOSER_FILLER:
            return False
    return closer or words in (["got", "it"], ["i", "see"], ["makes", "sense"])


def bare_yes(message: str) -> bool:
    """ "sure, go ahead", "yes do it": a yes that names nothing to do."""
    words = _WORD_RE.findall(message.lower())
    if not words or len(words) > 8:
        return False
    return all(w in _CONSENT_WORDS or w in _CONSENT_FILLER for w in words) and any(
        w in _CONSENT_WORDS for w in words
    )


def _chat(message: str) -> RouterOutput:
    return RouterOutput(
        intent=Intent.CHAT_ONLY, confidence=FOLLOW_UP_CONFIDENCE, source="heuristic", text=message
    )


def _memory_write(message: str, own: RouterOutput) -> RouterOutput:
    """A memory write of the person's own words in this message: never a fact taken from an
    earlier turn, a reply or a listing."""
    fact = own.arguments.fact if own.intent is Intent.MEMORY_WRITE else None
    if fact is not None and len(fact.split()) < 2:
        fact = None  # "remember that too": no fact in the words, the turn's text stands
    return RouterOutput(
        intent=Intent.MEMORY_WRITE,
        **_needs(Intent.MEMORY_WRITE, False, False),
        confidence=FOLLOW_UP_CONFIDENCE,
        source="heuristic",
        arguments=RouterArguments(fact=fact),
        text=message,
    )


# --- pointing into a listing


@dataclass(frozen=True)
class _Target:
    """What a follow-up points at: a path or URL, and the turn it came from."""

    value: str
    turn: Earlier
    # From a tool's listing (data), not from the person's words.
    listed: bool


def _pickable(name: str) -> bool:
    return 0 < len(name) <= MAX_LISTED_CHARS and not _UNSAFE_NAME_RE.search(name)


def _is_url(value: str) -> bool:
    return bool(_URL_RE.fullmatch(value)) or value.lower().startswith(("http://", "https://"))


def _base(name: str) -> str:
    return name.rstrip("/\\").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]


def _ext(name: str) -> str:
    if _is_url(name):
        return ""
    base = _base(name)
    return base.rsplit(".", 1)[-1].lower() if "." in base.strip(".") else ""


def _pointed(message: str, earlier: Sequence[Earlier], own: RouterOutput) -> _Target | None:
    """The listed item the words point at by position, by type or by name, if exactly one (a
    name or type the latest listing lacks is looked for in the listings before it);
    "the one after" the item the last turn picked; "that page" when a turn showed one. A short
    message its own words do not plainly decide may also point by a bare number ("2 delete")
    or by a word only one listed name has ("open rota quick")."""
    relative = _RELATIVE_RE.search(message)
    if relative is not None:
        return _next_to(earlier, 1 if relative.group("after") else -1)
    for turn in reversed(earlier[-LOOK_BACK:]):
        # An unusable name keeps its place: positions count what the person saw.
        listed = list(turn.listed)
        if not listed:
            continue
        index = _position(message)
        if index is None and _MIDDLE_RE.search(message) and len(listed) % 2 == 1:
            index = len(listed) // 2  # "the middle one" of three or five; of four, none
        loose = _terse(message, own)
        if index is None and loose:
            index = _bare_number(message)
        if index is not None:
            if -len(listed) <= index < len(listed) and _pickable(listed[index]):
                return _Target(listed[index], turn, listed=True)
            return None
        pickable = [name for name in listed if _pickable(name)]
        named = _by_name(message, pickable) or _by_date(message, pickable)
        if named is None:
            named = _the_one(message, pickable)
        if named is None and loose:
            named = _by_a_word(message, pickable)
        if named is not None:
            return _Target(named, turn, listed=True)
        # "i meant the march sheet" after "read the february one": a name the latest listing
        # does not hold is looked for in the listing before it (positions stay with the last).
    return None


def _terse(message: str, own: RouterOutput) -> bool:
    """A short message its own words do not decide, neither a whole question of its own
    ("what's the weather in Paris tomorrow?" after a listing holding weather.txt) nor a
    continuation ("and for rye bread?")."""
    words = len(message.split())
    if own.confidence >= DIRECT_ACTION_CONFIDENCE or words > LOOSE_WORDS:
        return False
    if _continuation(message)[0] is not None:
        return False  # "and for rye bread?" after bread.example.com: the same ask, new words
    return words <= FRAGMENT_WORDS or not (
        _ASKS_RE.match(message) or message.rstrip().endswith("?")
    )


def _bare_number(message: str) -> int | None:
    """ "2 delete", "do 1", "3": a number alone in a very short message."""
    words = message.lower().strip(" ?.!").split()
    if len(words) > 3:
        return None
    numbers = [w for w in words if w.isdigit() and 0 < int(w) <= 10]
    if len(numbers) != 1 or any(w in _COUNTING for w in words):
        return None
    return int(numbers[0]) - 1


def _by_a_word(message: str, listed: list[str]) -> str | None:
    """The one listed name that holds a word of the message ("rota" in rota_dec.xlsx), when
    the message's other words point at no other name."""
    hits: set[str] = set()
    for word in _WORD_RE.findall(message.lower()):
        word = word.strip("'")
        if len(word) < 3 or word in _NOT_A_NAME or word in _ACTING_VERBS or word in _COMMON:
            continue
        matched = [name for name in listed if _word_in(word, _tail(name))]
        if len(matched) == 1:
            hits.add(matched[0])
    return hits.pop() if len(hits) == 1 else None


def _described(message: str, earlier: Sequence[Earlier]) -> _Target | None:
    """The listed item the message describes by words only its name holds ("the affiche for
    the concert" of affiche_concert_A2.tiff, "the konica couché one", "mrs brearley's"), in the
    latest listing that has one. Only ever what the words point at (`refers_to`): it decides
    nothing about the request, since a word shared by chance must not choose what is acted on."""
    folded = _folded(message)
    for turn in reversed(earlier[-LOOK_BACK:]):
        pickable = [name for name in turn.listed if _pickable(name)]
        if len(pickable) < 2:
            continue  # one listed item: "it", "that file" already point at it
        names = [_folded(name) for name in pickable]
        named = _by_a_word(_described_words(folded), names)
        if named is not None:
            return _Target(pickable[names.index(named)], turn, listed=True)
    return None


def _described_words(message: str) -> str:
    """The words of `message` that describe a thing it points at: within three words after
    "the", "that", "this" … ("the affiche for the concert"), before "one" ("the konica one"),
    or owning something ("mrs brearley's"). "what's the practical difference between a .csv
    and a .txt file" points at no listed .csv by its words."""
    words = _WORD_RE.findall(message.lower())
    kept: list[str] = []
    for index, word in enumerate(words):
        before = words[max(0, index - 3) : index]
        after = words[index + 1] if index + 1 < len(words) else ""
        owner = word.endswith("'s") and len(word) > 4
        if owner or any(w in _POINTING_WORDS for w in before) or after in ("one", "ones"):
            kept.append(word[:-2] if owner else word)
    return " ".join(kept)


def _folded(text: str) -> str:
    """`text` without accents ("couché" as "couche"), as names are often typed."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _by_date(message: str, listed: list[str]) -> str | None:
    """ "the newest" / "the oldest of those" when every listed name carries a date and one
    name's date is the latest (or earliest): the listing shows nothing else a router can
    compare (sizes and times are the tool's text, not its listing)."""
    found = _BY_DATE_RE.search(message)
    if found is None or len(listed) < 2:
        return None
    dated: list[tuple[str, str]] = []
    for name in listed:
        dates = _NAME_DATE_RE.findall(_tail(name))
        if not dates:
            return None
        dated.append((max("".join(part or "00" for part in date) for date in dates), name))
    dated.sort(reverse=found.group("new") is not None)
    if dated[0][0] == dated[1][0]:
        return None  # two names of the same day: the date does not decide
    return dated[0][1]


def _the_one(message: str, listed: list[str]) -> str | None:
    """ "that page" when exactly one page was listed, "that file" when exactly one file was."""
    found = _THE_ONE_RE.search(message)
    if found is None:
        return None
    pages = found.group("kind").lower() in _PAGE_KINDS
    kind = [name for name in listed if _is_url(name) is pages]
    return kind[0] if len(kind) == 1 else None


def _next_to(earlier: Sequence[Earlier], step: int) -> _Target | None:
    """The item listed next to (`step` 1: after, -1: before) the one the last turn's words
    picked from an earlier turn's listing."""
    picked = earlier[-1].named
    for turn in reversed(earlier[-LOOK_BACK:-1]):
        listed = list(turn.listed)
        for index, name in enumerate(listed):
            if name in picked or _in_folder(name, turn) in picked:
                place = index + step
                if 0 <= place < len(listed) and _pickable(listed[place]):
                    return _Target(listed[place], turn, listed=True)
                return None
    return None


def _position(message: str) -> int | None:
    found = _ORDINAL_RE.search(message)
    if (
        found is not None
        and _SUPERLATIVE_RE.match(message[found.end() :])
        and _QUESTION_RE.match(message)
    ):
        found = None  # "who was the first one to climb Everest": not a pointer into a list
    if found is not None:
        word = found.group(1).lower()
        if word != "last" and word.endswith("last"):
            return -2  # "second to last", "next-to-last"
        place = _ORD_WORDS[word]
        return place - 1 if place > 0 else place
    number = _NUMBER_RE.search(message)
    if number is None:
        return None
    place = int(number.group(1)) if number.group(1) else _NUMBER_WORDS[number.group(2).lower()]
    return place - 1 if place > 0 else None


def _by_name(message: str, listed: list[str]) -> str | None:
    """A listed name typed again ("budget.xlsx"), a word of one in "the chai one", or a file
    type only one of them has ("the pdf")."""
    lowered = message.lower()
    exact = [n for n in listed if not _is_url(n) and _mentions(lowered, _base(n).lower())]
    exact += [n for n in listed if _is_url(n) and _mentions(lowered, n.lower())]
    if exact:
        return exact[0] if len(exact) == 1 else None
    stems = [n for n in listed if not _is_url(n) and _mentions(lowered, _stem(n).lower())]
    if stems:
        # "execute backup_photos now": a name typed without its extension.
        return stems[0] if len(stems) == 1 else None
    words = [found.group(1).lower() for found in _NAME_FRAME_RE.finditer(message)]
    words += [found.group(1).lower() for found in _ABOUT_NAME_RE.finditer(message)]
    words += [found.group(1).lower() for found in _CODE_REF_RE.finditer(message)]
    verb = _VERB_NAME_RE.match(message)
    if verb is not None and verb.group(1).lower() in _ACTING_VERBS:
        words.append(verb.group(2).lower())
    for word in words:
        parts = _name_parts(word)
        if not parts:
            continue
        framed = [n for n in listed if all(_word_in(part, _tail(n)) for part in parts)]
        if not framed:
            # "the nginx one" of /var/log/nginx/access.log.1: the folder a file sits in names
            # it too, when only one listed file sits in such a folder.
            framed = [n for n in listed if all(_word_in(part, _near_tail(n)) for part in parts)]
        if len(framed) == 1:
            return framed[0]
        if framed:
            return None
    for found in _TYPE_REF_RE.finditer(message):
        extensions = _TYPE_WORDS.get(found.group(1).lower())
        if extensions is None:
            continue
        typed = [n for n in listed if _ext(n) in extensions]
        return typed[0] if len(typed) == 1 else None
    return None


def _name_parts(words: str) -> list[str]:
    """The words of a name a person typed, a number joined to the word before it as names
    write it ("term 2" is "term2"); a lone number is never a name."""
    parts: list[str] = []
    for part in words.split():
        if part in _NOT_A_NAME:
            continue
        if part.isdigit() and parts and not parts[-1].isdigit():
            parts[-1] += part
        elif len(part) >= 2:
            parts.append(part)
    return parts


def _near_tail(name: str) -> str:
    """A listed file's name with the folder it sits in ("nginx/access.log.1")."""
    if _is_url(name):
        return _tail(name)
    parent = name.replace("\\", "/").rstrip("/").rsplit("/", 2)
    return "/".join(parent[-2:])


def _stem(name: str) -> str:
    """A file's name without its extension, when that stem is distinctive enough to be typed
    on its own ("backup_photos", "ch3-final"): a joined word with a digit, "_" or "-" in it."""
    base = _base(name)
    stem = base.rsplit(".", 1)[0] if "." in base.strip(".") else ""
    if len(stem) < 5 or not re.search(r"[\d_\-]", stem) or not re.fullmatch(r"[\w\-.]+", stem):
        return ""
    return stem


def _word_in(word: str, name: str) -> bool:
    """`word` is one of the name's words, or its singular ("doc" in "docs.example.com"), or
    (four letters or more) the start or end of one ("ledger" in "dailyledger.example.com"),
    or what it abbreviates to ("mar" for "march", "sv" for "swedish")."""
    words = _WORD_RE.findall(name.lower())
    if word in words or word + "s" in words:
        return True
    if any(short in words for short in _SAID_AS.get(word, ())):
        return True
    return len(word) >= 4 and any(
        len(each) > len(word)
        and (each.startswith(word) or each.endswith((word, word + "s", word + "es")))
        for each in words
    )


def _tail(name: str) -> str:
    """The part of a listed name a person would call it by: a file's name, a link's host and
    path (without the scheme)."""
    if _is_url(name):
        return name.split("://", 1)[-1]
    return _base(name)


def _mentions(lowered: str, name: str) -> bool:
    """`name` in the words as a whole word (not inside a longer one)."""
    if len(name) < 3:
        return False
    start = lowered.find(name)
    while start >= 0:
        end = start + len(name)
        before = lowered[start - 1] if start else " "
        after = lowered[end] if end < len(lowered) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = lowered.find(name, start + 1)
    return False


def _pronoun_target(earlier: Sequence[Earlier]) -> _Target | None:
    """What "it" / "that" means: the one thing the last turn named or, failing that, listed.
    A turn that named and listed nothing ("is that safe to run?", "what's the total?") is
    passed over: "run it then" still means the installer found before it. The first turn back
    that named or listed anything decides, so "it" never skips a turn that showed other
    things — unless that turn's own words called an item listed before it by its name ("what
    does clean_textgrids do?": "run it" is that script)."""
    recent = earlier[-LOOK_BACK:]
    for back, turn in enumerate(reversed(recent)):
        named = _named(turn)
        listed = [n for n in turn.listed if _pickable(n)]
        if all(not _ext(n) and not _is_url(n) for n in named):
            # "what does clean_textgrids do?" after a listing: "run it" is the file that
            # question called by its name, not the folder it was listed from.
            asked = _asked_about(turn.text, recent[: len(recent) - back - 1])
            if asked is not None:
                return asked
        if len(named) == 1 and len(listed) == 1 and _inside(listed[0], named[0]):
            # "is there a file called passwords in my home" → one match: "delete it" is the
            # match, never the folder that was searched.
            return _Target(listed[0], turn, listed=True)
        if len(named) == 1:
            return _Target(named[0], turn, listed=False)
        if len(listed) == 1 and not named:
            return _Target(listed[0], turn, listed=True)
        if named or turn.listed:
            return None
    return None


def _asked_about(text: str, before: Sequence[Earlier]) -> _Target | None:
    """The one item of the latest listing in `before` that `text` (a turn that named no file
    or page itself) calls by its name, if any."""
    for turn in reversed(before):
        pickable = [n for n in turn.listed if _pickable(n)]
        if pickable:
            found = _by_name(text, pickable)
            return None if found is None else _Target(found, turn, listed=True)
    return None


def _folder_by_name(message: str, earlier: Sequence[Earlier]) -> _Target | None:
    """ "and the whole thesis folder?" after ~/Documents/thesis/chapter3.tex: the one folder
    above a path the last turns named or listed whose name is the word before "folder"."""
    found = _FOLDER_WORD_RE.search(message)
    if found is None:
        return None
    word = found.group(1).lower()
    if word in _NOT_A_NAME or word in _COMMON:
        return None
    folders: dict[str, _Target] = {}
    for turn in earlier[-LOOK_BACK:]:
        shown = [(n, False) for n in _named(turn)]
        shown += [(n, True) for n in turn.listed if _pickable(n)]
        for name, listed in shown:
            if _is_url(name):
                continue
            path = name.rstrip("/\\")
            while path:
                if _base(path).lower() == word and not _ext(path):
                    if path.lower() not in folders or not listed:
                        folders[path.lower()] = _Target(path, turn, listed=listed)
                    break
                cut = max(path.rfind("/"), path.rfind("\\"))
                path = path[:cut] if cut > 0 else ""
    return next(iter(folders.values())) if len(folders) == 1 else None


def _inside(name: str, folder: str) -> bool:
    """`name` is a path below the folder `folder` (a file the person's words named is not a
    folder to look inside)."""
    if _is_url(name) or _is_url(folder) or _ext(folder):
        return False
    top = folder.rstrip("/\\")
    return len(name) > len(top) + 1 and name.startswith(top) and name[len(top)] in "/\\"


def _verb_acts(verb: str, message: str, own: RouterOutput) -> bool:
    """The verb before "it" acts on a file or a page (read, pull up, delete, …), or the message
    alone already reads as a file or web task."""
    if verb.split()[0].lower() in _ACTING_VERBS or _READ_VERB_RE.match(message):
        return True
    return own.intent in (Intent.FILE_TASK, Intent.BROWSE_ONCE)


def _named(turn: Earlier) -> list[str]:
    """What the turn's own words named: as given, else read from its text again."""
    if turn.named:
        return list(dict.fromkeys(turn.named))
    view = _make_view(turn.text)
    found = list(view.paths) + list(view.folder_paths)
    if view.url is not None:
        found.append(view.url)
    return list(dict.fromkeys(found))


def _act_on(message: str, target: _Target, own: RouterOutput) -> RouterOutput:
    """The follow-up's words applied to the item it points at. Reading is the default; any
    other verb keeps its own weight and the item never lowers the risk."""
    value = target.value
    if target.listed:
        value = _in_folder(value, target.turn)
    writes = bool(_WRITE_VERB_RE.search(message)) and not _READ_VERB_RE.match(message)
    action: Action | None = None
    runs_it = _RUNS_IT_RE.search(message) is not None
    # A listed link "launched" or "run" is a page to open (below), never a program to run.
    opens_link = runs_it and _is_url(value)
    if (runs_it and not opens_link) or (
        not opens_link
        and own.intent is Intent.SYSTEM_TASK
        and (own.confidence >= DIRECT_ACTION_CONFIDENCE or own.needs_system_execute)
    ):
        # "kill it", "run the second one", "launch the installer": a command reading, never a
        # direct one from a name (running a listed script or installer is a system task).
        intent = Intent.SYSTEM_TASK
        args = RouterArguments(paths=[] if _is_url(value) else [value])
    elif _is_url(value):
        intent = Intent.BROWSE_ONCE
        if not writes:
            action = "open_url" if _IN_BROWSER_RE.search(message) else "fetch_url"
        args = RouterArguments(url=value, action=action)
        if writes and _TO_A_PLACE_RE.search(message):
            # "save it in ~/work/reports": the page into a folder is a file task.
            intent = Intent.FILE_TASK
            args = RouterArguments(url=value, paths=list(own.arguments.paths))
    else:
        intent = Intent.FILE_TASK
        if not writes:
            folder = not _ext(value) or value.endswith(("/", "\\"))
            action = "list_files" if folder else "read_file"
        # "read budget.xlsx" names the listed file itself: one path, the one listed.
        others = [p for p in own.arguments.paths if _base(p) != _base(value)]
        args = RouterArguments(paths=list(dict.fromkeys([value, *others])), action=action)
        if len(args.paths) > 1:
            args.action = None
    execute = intent is Intent.SYSTEM_TASK
    risk = _risk(intent, message + " " + value, None, execute, writes)
    if _high_risk(value):
        risk = "high"
    risk = _max_risk(risk, own.risk_level)
    if risk == "high" and target.listed:
        # A listed name is data: one that reaches a credential file or `/` is never acted on
        # without the model and the person's yes, however plainly it was pointed at.
        args.action = None
    return RouterOutput(
        intent=intent,
        **_needs(intent, execute, False),
        risk_level=risk,
        confidence=FOLLOW_UP_CONFIDENCE,
        source="heuristic",
        arguments=args,
        text=message,
    )


def _in_folder(name: str, turn: Earlier) -> str:
    """A bare listed name ("report.pdf") inside the one folder the turn's words named."""
    if _is_url(name) or name.startswith(("~", "/", "\\", ".")) or re.match(r"[a-z]:\\", name, _I):
        return name
    folders = [n for n in _named(turn) if not _is_url(n) and not _ext(n)]
    if len(folders) != 1:
        return name
    folder = folders[0]
    # A Windows folder ("C:\\Projects\\scripts\\") keeps its own separator.
    separator = "\\" if re.match(r"[a-z]:\\|\\\\", folder, _I) else "/"
    return folder.rstrip("/\\") + separator + name


def _max_risk(a: RiskLevel, b: RiskLevel) -> RiskLevel:
    return a if RISK_ORDER[a] >= RISK_ORDER[b] else b


# --- continuing the earlier turn


def _continuation(message: str) -> tuple[str | None, bool]:
    """What follows "do the same for" / "what about" / "and", and whether the words say plainly
    that it continues ("do the same for" does; "X too" less so)."""
    same = _SAME_RE.match(message)
    if same is not None:
        return same.group("rest").strip(" ?.!"), True
    about = _ABOUT_RE.match(message)
    if about is not None and about.group("rest").strip(" ?.!"):
        return about.group("rest").strip(" ?.!"), True
    too = _TOO_RE.match(message)
    if too is not None:
        return too.group("rest").strip(" ?.!"), False
    return None, False


def _howto_task(last: Earlier, message: str, alone: Reroute, rules: Reroute) -> RouterOutput | None:
    """ "do it for port 8080" after "how do I check what port something is listening on": the
    how-to's own words, read as a request."""
    if last.intent is not Intent.CHAT_ONLY or not _DO_IT_RE.match(message):
        return None
    lead = _HOWTO_LEAD_RE.match(last.text.strip())
    if lead is None:
        return None
    task = alone(last.text.strip()[lead.end() :])
    if task.intent is Intent.CHAT_ONLY:
        return None
    rest, _ = _continuation(message)
    return _like(task.intent, Earlier(last.text, task.intent), message, rest, rules, task)


def _new_folder(rest: str) -> str | None:
    view = _make_view(rest)
    found = [p for p in view.paths if not _is_url(p)] + view.folder_paths
    if found:
        return found[0]
    bare = _BARE_FOLDER_RE.search(rest)
    if bare is not None:
        return _KNOWN_FOLDERS[bare.group(1).lower()]
    return None


def _like(
    intent: Intent,
    last: Earlier,
    message: str,
    rest: str | None,
    rules: Reroute,
    own: RouterOutput,
    confidence: float = FOLLOW_UP_CONFIDENCE,
) -> RouterOutput:
    """`intent` (the earlier turn's, usually) with the earlier turn's arguments and what `rest`
    changes (a folder, a URL, a topic, words added to a search)."""
    before = rules(last.text)
    named = _named(last)
    same = before.intent is intent
    args = before.arguments.model_copy(deep=True) if same else RouterArguments()
    if intent in _FILE_READS and not args.paths:
        args.paths = [n for n in named if not _is_url(n)]
    if intent is Intent.BROWSE_ONCE and args.url is None:
        args.url = next((n for n in named if _is_url(n)), None)
    execute = intent is Intent.SYSTEM_TASK and before.intent is intent
    execute = execute and bool(before.needs_system_execute)
    file_domain = intent is Intent.ONE_SHOT_DISCOVERY and (
        bool(before.needs_file_access) or bool(args.paths)
    )
    if rest is not None:
        folder = _new_folder(rest)
        if intent in _FILE_READS and folder is not None:
            args.paths = [folder]
            file_domain = True
        elif intent is Intent.SYSTEM_TASK and args.command is not None and folder is not None:
            args.cwd = folder
        elif intent is Intent.SYSTEM_TASK and folder is not None:
            args.paths = [folder]
        elif intent is Intent.BROWSE_ONCE and (url := _make_view(rest).url) is not None:
            args.url = url
        elif intent is Intent.LOOKUP_SEARCH:
            args.query = _merged_query(args.query or last.text, rest)
            args.action = None  # merged words: the model (or the search) reads them as a whole
        elif intent is Intent.SYSTEM_TASK and (topics := rules(rest).arguments.topics):
            args.topics = list(topics)
        elif intent is Intent.MEMORY_WRITE:
            args.fact = None  # never a fact taken from an earlier turn
    if intent is Intent.MEMORY_WRITE:
        args.fact = own.arguments.fact if own.intent is Intent.MEMORY_WRITE else None
    if confidence < DIRECT_ACTION_CONFIDENCE or (args.action not in _READ_ACTIONS):
        args.action = None
    subject = last.text + " " + message
    writes = intent is Intent.FILE_TASK and before.risk_level != "low"
    risk = _max_risk(
        _risk(intent, subject, args.command, execute, writes, args.cwd),
        before.risk_level if before.intent is intent else "low",
    )
    return RouterOutput(
        intent=intent,
        **_needs(intent, execute, file_domain),
        risk_level=_max_risk(risk, own.risk_level),
        confidence=confidence,
        source="heuristic",
        arguments=args,
        text=message,
    )


_WHEN_WORDS_RE = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|this\s+(?:week|weekend|month|year|morning|evening)|"
    r"next\s+(?:week|weekend|month|year)|last\s+(?:week|weekend|month|year)|now|"
    r"(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    _I,
)


def _merged_query(query: str, rest: str) -> str:
    """The earlier search with the follow-up's words: a new day replaces the old one ("weather
    in Lyon today" + "tomorrow" → "weather in Lyon tomorrow"), other words are added."""
    rest = rest.strip(" ?.!")
    if not rest or rest.lower() in query.lower():
        return query
    if _WHEN_WORDS_RE.search(rest) and _WHEN_WORDS_RE.search(query):
        return " ".join(_WHEN_WORDS_RE.sub(rest, query, count=1).split())
    return f"{query} {rest}"


# --- another intent, chosen by the learned follow-up reader


def reread(
    text: str,
    earlier: Sequence[Earlier],
    current: RouterOutput,
    own: RouterOutput,
    intent: Intent,
    confidence: float,
    rules: Reroute,
) -> RouterOutput:
    """`text` read as `intent` (what `followup_model` chose over `current`, the rules'
    reading): the message's own reading when that is the intent, else the last turn's request
    carried on with what `current` pointed at. Never surer than `LIKELY_FOLLOW_UP_CONFIDENCE`,
    so never a direct action; a memory write's fact is only ever the message's own words."""
    message = " ".join(text.split())
    confidence = min(confidence, LIKELY_FOLLOW_UP_CONFIDENCE)
    kept = current.arguments
    if intent is own.intent:
        args = own.arguments.model_copy(deep=True)
        if intent in (*_FILE_READS, Intent.SYSTEM_TASK) and not args.paths and kept.paths:
            # "open the second one" read as a command: still about the file it picked.
            args.paths = [p for p in kept.paths if not _is_url(p)]
        if intent is Intent.BROWSE_ONCE and args.url is None:
            args.url = kept.url
        out = own.model_copy(update={"confidence": min(own.confidence, confidence)})
        if out.confidence < DIRECT_ACTION_CONFIDENCE:
            args.action = None
        out = out.model_copy(update={"arguments": args})
    elif intent is Intent.MEMORY_WRITE:
        out = _memory_write(message, own).model_copy(update={"confidence": confidence})
    elif intent is Intent.CHAT_ONLY:
        out = _chat(message).model_copy(update={"confidence": confidence})
    else:
        last = _thread(earlier)
        out = _like(intent, last, message, None, rules, own, confidence)
        args = out.arguments.model_copy(deep=True)
        if intent in (*_FILE_READS, Intent.SYSTEM_TASK) and kept.paths:
            args.paths = [p for p in kept.paths if not _is_url(p)] or args.paths
        if intent is Intent.BROWSE_ONCE and kept.url:
            args.url = kept.url
        if intent is Intent.FILE_TASK and kept.url and not args.paths:
            args.url = kept.url  # "save that page into ~/reports": the page, into a folder
        if own.arguments.paths and intent in _FILE_READS:
            args.paths = list(dict.fromkeys([*args.paths, *own.arguments.paths]))
        if own.arguments.url and intent is Intent.BROWSE_ONCE:
            args.url = own.arguments.url
        args.action = None
        out = out.model_copy(update={"arguments": args})
    risk = _max_risk(out.risk_level, own.risk_level)
    if intent is current.intent or intent in (Intent.SYSTEM_TASK, Intent.FILE_TASK):
        risk = _max_risk(risk, current.risk_level)
    return out.model_copy(update={"text": text.strip(), "risk_level": risk})
