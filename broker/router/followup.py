"""What the router may know of the conversation a message follows: the person's own earlier
words and what the earlier turns named and listed, never the model's or a tool's instructions.

A follow-up ("the second one", "do the same for Downloads", "and tomorrow?") routes like the
turn it follows unless its own words say otherwise, and its referring words resolve to what that
turn named (the folder used) or listed (the files, in the order the person saw them).

`follow_up` reads one message against the earlier turns, in this order:

1. a closer ("thanks!", "cool") is chat;
2. a pointer into what a turn listed ("the second one", "the last link", "the pdf", a listed
   name typed again) picks that item: a file is read, a link is fetched, unless the words ask
   for something else ("delete the second one" is a file task with no direct action, rated as
   its words and the item are);
3. a verb on "it" / "that" ("open it", "summarise that") acts on the one thing the last turn
   named or listed;
4. a continuation ("do the same for Downloads", "what about Berlin?", "and tomorrow?", "and in
   French?", "Downloads too") repeats the earlier turn's intent with the new folder, URL, topic
   or words;
5. a question about the answer ("why?", "tell me more") is chat, or the earlier intent when it
   asks for more of the same;
6. anything else routes by its own words (`None`: the caller keeps its own reading).

Trust: `Earlier.text` and `Earlier.named` come from the person's messages only. `Earlier.listed`
holds the names a tool returned (a listing, search results), kept only so that "the second one"
can pick one of them; a listed name is data: it never widens which tools are shown and it is
never taken as the person's request unless the follow-up's own words point at it by position or
by name. A picked item only ever raises risk (a credential file picked by position is high, as
typed), never sets an action the follow-up's words do not ask for, and a name that does not look
like a file name or a web link (a line break, a shell character, an overlong string) is never
picked. This module must never read files, run anything, or look inside a reply's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from broker.router.extraction import _make_view
from broker.router.patterns import _KNOWN_FOLDERS, _URL_RE
from broker.router.scoring import (
    DIRECT_ACTION_CONFIDENCE,
    _high_risk,
    _needs,
    _risk,
)
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
# A bare fragment ("Berlin?") read as a continuation: a guess, below a direct action.
GUESSED_FOLLOW_UP_CONFIDENCE = 0.75
# Longer than this, a message is read as a follow-up only when it points into a listing: a
# continuation or a fragment this long carries a request of its own.
FOLLOW_UP_CHARS = 300
CONTINUATION_WORDS = 10
FRAGMENT_WORDS = 4
# How many turns back "the second one" may look for a listing.
LOOK_BACK = 3
# A listed name longer than this is not something a person points at.
MAX_LISTED_CHARS = 1024

# The module's own few words: what only a follow-up needs. Each pattern is anchored or bounded
# and has no nested unbounded quantifier that can overlap; all run on at most FOLLOW_UP_CHARS.
_I = re.IGNORECASE
_LEAD = r"(?:(?:ok(?:ay)?|so|now|and|also|great|cool|thanks|nice|perfect|alright|right|then|hmm|please|pls|can you|could you|would you)[\s,.!]+)*"  # noqa: E501

_CLOSER_WORDS = frozenset(
    {
        "ok",
        "okay",
        "k",
        "kk",
        "cool",
        "great",
        "nice",
        "perfect",
        "awesome",
        "thanks",
        "thank",
        "thx",
        "ty",
        "tysm",
        "cheers",
        "gotcha",
        "alright",
        "sounds",
        "good",
        "helpful",
        "works",
        "helps",
        "sense",
        "understood",
        "noted",
        "lol",
        "haha",
        "wow",
        "neat",
        "sweet",
        "brilliant",
        "appreciate",
        "appreciated",
        "bye",
        "goodbye",
        "nvm",
        "excellent",
        "amazing",
        "super",
        "fantastic",
        "wonderful",
        "lovely",
        "fine",
        "done",
        "nevermind",
    }
)
# Words a closer may hold besides the closers themselves ("thank you so much", "got it").
_CLOSER_FILLER = frozenset(
    {
        "you",
        "so",
        "much",
        "very",
        "a",
        "lot",
        "that's",
        "thats",
        "that",
        "it",
        "is",
        "was",
        "all",
        "i",
        "see",
        "got",
        "makes",
        "never",
        "mind",
        "for",
        "the",
        "help",
        "man",
        "mate",
        "buddy",
        "dude",
        "really",
        "just",
        "again",
        "good",
        "night",
        "great",
        "job",
        "one",
        "this",
    }
)
_WORD_RE = re.compile(r"[a-z']+")

_ORD_WORDS: dict[str, int] = {
    "first": 1,
    "1st": 1,
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
    r"fourth|4th|fifth|5th|sixth|6th|seventh|7th|eighth|8th|ninth|9th|tenth|10th|last|final|"
    r"penultimate|top|bottom)"
)
_ITEM = (
    r"(?:one|ones|file|item|link|url|result|hit|entry|doc|document|page|site|article|folder|"
    r"pdf|image|photo|picture|pic|video|song|track|spreadsheet|sheet|option|thing|story|"
    r"source|repo|post|paper)"
)
# "the second one", "2nd link", "the last result", "open the third" (at the end).
_ORDINAL_RE = re.compile(
    r"\b(?:(?:the|that|this)\s+)?" + _ORD + r"(?:\s+" + _ITEM + r"\b|\s*[.!?]*\s*$|"
    r"\s+(?:in|on|from)\s+(?:the|that|your)\s+list\b|\s*,|\s+(?:please|pls|plz)\b)",
    _I,
)
# "number 2", "#3", "item 4", "result 1".
_NUMBER_RE = re.compile(
    r"(?:\b(?:number|no\.?|item|result|link|file|entry|option)\s*|#)(\d{1,2})\b", _I
)
# "the pdf", "that spreadsheet", "the png one": a file type pointed at.
_TYPE_REF_RE = re.compile(
    r"\b(?:the|that|this)\s+(?:\.)?([a-z0-9]{2,12})(?:\s+(?:one|file|doc|document))?\b", _I
)
_TYPE_WORDS: dict[str, frozenset[str]] = {
    "pdf": frozenset({"pdf"}),
    "spreadsheet": frozenset({"xlsx", "xls", "csv", "ods", "tsv"}),
    "excel": frozenset({"xlsx", "xls"}),
    "csv": frozenset({"csv"}),
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
    "zip": frozenset({"zip"}),
    "log": frozenset({"log"}),
    "script": frozenset({"sh", "py", "js", "ps1", "bat"}),
}
# Every extension names its own type ("the docx", "that csv").
for _one in (
    "txt",
    "md",
    "docx",
    "doc",
    "xlsx",
    "xls",
    "pptx",
    "ppt",
    "odt",
    "ods",
    "json",
    "yaml",
    "yml",
    "toml",
    "csv",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "mp3",
    "mp4",
    "py",
    "sh",
    "js",
    "html",
    "xml",
    "log",
    "ini",
    "cfg",
    "conf",
    "epub",
    "mov",
    "mkv",
    "wav",
    "flac",
    "svg",
    "heic",
    "webp",
    "zip",
    "tar",
    "gz",
):
    _TYPE_WORDS.setdefault(_one, frozenset({_one}))

# A verb that acts on something pointed at ("open it", "summarise the second one").
_READ_VERB_RE = re.compile(
    r"^" + _LEAD + r"(?:open|read|show|display|view|print|cat|preview|check|look\s+at|"
    r"go\s+through|skim|summari[sz]e|sum\s+up|tl;?dr|give\s+me|go\s+to|visit|fetch|load|"
    r"what'?s\s+in|whats\s+in|what\s+is\s+in|what\s+does|tell\s+me\s+about|"
    r"describe|explain|pull\s+up|bring\s+up)\b",
    _I,
)
_WRITE_VERB_RE = re.compile(
    r"\b(?:delete|remove|trash|bin|rm|erase|wipe|shred|rename|move|mv|copy|cp|duplicate|edit|"
    r"modify|change|overwrite|replace|compress|zip|unzip|extract|back\s*up|backup|share|send|"
    r"upload|email|mail|attach|convert|print|install|run|execute|launch)\b",
    _I,
)
_IN_BROWSER_RE = re.compile(r"\b(?:in|with)\s+(?:my|the|a)\s+(?:browser|new\s+tab)\b", _I)
# "open it", "summarise that", "delete them", "what's in it".
_PRONOUN_RE = re.compile(
    r"\b(?:it|that|this|them|those|these|that\s+one|this\s+one|the\s+same\s+file|"
    r"th(?:at|is|e)\s+(?:file|page|link|site|article|folder|document|doc|url))\b",
    _I,
)
# "do the same for Downloads", "same with ./src", "now for Berlin", "try it in ~/work".
_SAME_RE = re.compile(
    r"^" + _LEAD + r"(?:(?:do|try|run|repeat|check)\s+(?:the\s+same(?:\s+thing)?|that|it|this)"
    r"(?:\s+again)?|(?:the\s+)?same(?:\s+thing)?|again|now|repeat|same\s+question)\s*,?\s*"
    r"(?:but\s+)?(?:for|with|in|on|using|about|at)\s+(?P<rest>\S.*)$",
    _I | re.S,
)
# "and tomorrow?", "what about Berlin?", "how about in French?".
_ABOUT_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|cool|thanks|great|nice|alright|hmm|right)[\s,.!]+)?"
    r"(?:and\s+(?:what|how)\s+about|what\s+about|how\s+about|what\s+of|and\s+for|"
    r"and\s+also|also\s+for|and|or|but\s+for|also|then|now)\b[\s,]*(?P<rest>.*)$",
    _I | re.S,
)
# "Downloads too", "the battery as well".
_TOO_RE = re.compile(r"^(?P<rest>\S.{0,200}?)\s+(?:too|as\s+well|also)\s*[?.!]*$", _I | re.S)
# Questions about the answer just given.
_META_RE = re.compile(
    r"^(?:but\s+|and\s+|so\s+|ok(?:ay)?[\s,]+)?(?:why|why\s+not|how\s+come|how\s+so|really|"
    r"are\s+you\s+sure|what\s+do\s+you\s+mean|what\s+does\s+that\s+mean|meaning|"
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

Reroute = Callable[[str], RouterOutput]


def follow_up(text: str, earlier: Sequence[Earlier], reroute: Reroute) -> RouterOutput | None:
    """`text` read as a follow-up to `earlier` (oldest first; the last is the turn it follows),
    or None when its own words decide. `reroute` routes a message without earlier turns (the
    follow-up's own words, an earlier message with a new folder)."""
    if not earlier or len(text) > FOLLOW_UP_CHARS:
        return None
    message = " ".join(text.split())
    if not message or message.startswith("/"):
        return None
    if _closer(message):
        return _chat(message)
    last = earlier[-1]
    pointed = _pointed(message, earlier)
    if pointed is not None:
        return _act_on(message, pointed, reroute)
    own = reroute(message)
    if _own_request(own):
        return None
    if _READ_VERB_RE.match(message) or _WRITE_VERB_RE.search(message):
        target = _pronoun_target(message, earlier)
        if target is not None:
            return _act_on(message, target, reroute)
    words = len(message.split())
    if _META_RE.match(message) and words <= CONTINUATION_WORDS:
        return _chat(message)
    if _MORE_RE.match(message):
        return _like(last, message, None, reroute, FOLLOW_UP_CONFIDENCE)
    rest, sure = _continuation(message)
    if rest is not None and len(rest.split()) <= CONTINUATION_WORDS:
        # "and what's the weather tomorrow?" after a listing: a request of its own.
        if (
            own.confidence >= DIRECT_ACTION_CONFIDENCE
            and own.intent is not last.intent
            and (len(rest.split()) > FRAGMENT_WORDS or own.arguments.action is not None)
        ):
            return None
        return _like(last, message, rest, reroute, FOLLOW_UP_CONFIDENCE if sure else 0.8)
    if words <= FRAGMENT_WORDS and own.confidence < 0.8:
        return _like(last, message, message, reroute, GUESSED_FOLLOW_UP_CONFIDENCE)
    return None


def _own_request(own: RouterOutput) -> bool:
    """The message names what it acts on (a URL, a command, a typed path) plainly."""
    args = own.arguments
    if own.source == "prefix":
        return True
    return own.confidence >= 0.95 and bool(args.url or args.command or args.action)


def _closer(message: str) -> bool:
    words = _WORD_RE.findall(message.lower())
    if not words or len(words) > 8:
        return False
    closer = False
    for word in words:
        if word in _CLOSER_WORDS:
            closer = True
        elif word not in _CLOSER_FILLER:
            return False
    return closer or message.strip(" !.") == "" or words in (["got", "it"], ["i", "see"])


def _chat(message: str) -> RouterOutput:
    return RouterOutput(
        intent=Intent.CHAT_ONLY,
        confidence=FOLLOW_UP_CONFIDENCE,
        source="heuristic",
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
    base = _base(name)
    return base.rsplit(".", 1)[-1].lower() if "." in base.strip(".") else ""


def _pointed(message: str, earlier: Sequence[Earlier]) -> _Target | None:
    """The listed item the words point at by position, by type or by name, if exactly one."""
    for turn in reversed(earlier[-LOOK_BACK:]):
        listed = [name for name in turn.listed if _pickable(name)]
        if len(listed) != len(turn.listed):
            # One unusable name shifts every position after it: point at nothing rather than
            # at the wrong item.
            listed = list(turn.listed)
        if not listed:
            continue
        index = _position(message)
        if index is not None:
            if -len(listed) <= index < len(listed) and _pickable(listed[index]):
                return _Target(listed[index], turn, listed=True)
            return None
        named = _by_name(message, listed)
        if named is not None:
            return _Target(named, turn, listed=True)
        return None
    return None


def _position(message: str) -> int | None:
    found = _ORDINAL_RE.search(message)
    if found is not None:
        word = found.group(1).lower()
        if word != "last" and word.endswith("last"):
            return -2  # "second to last", "next-to-last"
        place = _ORD_WORDS[word]
        return place - 1 if place > 0 else place
    number = _NUMBER_RE.search(message)
    if number is not None and int(number.group(1)) > 0:
        return int(number.group(1)) - 1
    return None


def _by_name(message: str, listed: list[str]) -> str | None:
    lowered = message.lower()
    exact = [n for n in listed if _pickable(n) and _mentions(lowered, _base(n).lower())]
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        return None
    stems = [
        n
        for n in listed
        if _pickable(n)
        and len(stem := _base(n).rsplit(".", 1)[0].lower()) >= 4
        and _mentions(lowered, stem)
    ]
    if len(stems) == 1:
        return stems[0]
    if stems:
        return None
    for found in _TYPE_REF_RE.finditer(message):
        extensions = _TYPE_WORDS.get(found.group(1).lower())
        if extensions is None:
            continue
        typed = [n for n in listed if _pickable(n) and _ext(n) in extensions]
        return typed[0] if len(typed) == 1 else None
    return None


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


def _pronoun_target(message: str, earlier: Sequence[Earlier]) -> _Target | None:
    """What "it" / "that" means: the one thing the last turn named or listed."""
    if not _PRONOUN_RE.search(message):
        return None
    last = earlier[-1]
    named = _named(last)
    if len(named) == 1:
        return _Target(named[0], last, listed=False)
    listed = [n for n in last.listed if _pickable(n)]
    if len(listed) == 1 and not named:
        return _Target(listed[0], last, listed=True)
    return None


def _named(turn: Earlier) -> list[str]:
    """What the turn's own words named: as given, else read from its text again."""
    if turn.named:
        return list(dict.fromkeys(turn.named))
    view = _make_view(turn.text)
    found = list(view.paths) + list(view.folder_paths)
    if view.url is not None:
        found.append(view.url)
    return list(dict.fromkeys(found))


def _act_on(message: str, target: _Target, reroute: Reroute) -> RouterOutput:
    """The follow-up's words applied to the item it points at. Reading is the default; any
    other verb keeps its own weight and the item never lowers the risk."""
    value = target.value
    if target.listed:
        value = _in_folder(value, target.turn)
    writes = bool(_WRITE_VERB_RE.search(message)) and not _READ_VERB_RE.match(message)
    own = reroute(message)
    if _is_url(value):
        intent = Intent.BROWSE_ONCE
        action: Action | None = None
        if not writes:
            action = "open_url" if _IN_BROWSER_RE.search(message) else "fetch_url"
        args = RouterArguments(url=value, action=action)
    elif writes and own.intent is Intent.SYSTEM_TASK and own.confidence >= 0.85:
        # "run the second one": a command reading, never a direct one from a listed name.
        intent = Intent.SYSTEM_TASK
        args = RouterArguments(paths=[value])
    else:
        intent = Intent.FILE_TASK
        action = None
        if not writes:
            folder = not _ext(value) or value.endswith(("/", "\\"))
            action = "list_files" if folder else "read_file"
        args = RouterArguments(paths=[value], action=action)
    subject = message + " " + value
    execute = intent is Intent.SYSTEM_TASK
    risk = _risk(intent, subject, None, execute, writes)
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
    return folders[0].rstrip("/\\") + "/" + name


def _max_risk(a: RiskLevel, b: RiskLevel) -> RiskLevel:
    return a if RISK_ORDER[a] >= RISK_ORDER[b] else b


# --- continuing the earlier turn


def _continuation(message: str) -> tuple[str | None, bool]:
    """What follows "do the same for" / "what about" / "and", and whether the words say plainly
    that it continues ("do the same for" does; a bare "and X" less so)."""
    same = _SAME_RE.match(message)
    if same is not None:
        return same.group("rest").strip(" ?.!"), True
    about = _ABOUT_RE.match(message)
    if about is not None and about.group("rest").strip(" ?.!"):
        return about.group("rest").strip(" ?.!"), True
    too = _TOO_RE.match(message)
    if too is not None:
        return too.group("rest").strip(" ?.!"), True
    return None, False


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
    last: Earlier, message: str, rest: str | None, reroute: Reroute, confidence: float
) -> RouterOutput:
    """The earlier turn's intent again, with what `rest` changes (a folder, a URL, a topic)."""
    intent = last.intent
    before = reroute(last.text)
    args = (
        before.arguments.model_copy(deep=True)
        if before.intent is intent
        else RouterArguments(paths=list(_named(last)) if intent in _FILE_READS else [])
    )
    execute = intent is Intent.SYSTEM_TASK and bool(before.needs_system_execute)
    file_domain = bool(before.needs_file_access) if intent is Intent.ONE_SHOT_DISCOVERY else False
    if rest is not None:
        view = _make_view(rest)
        folder = _new_folder(rest)
        if intent in _FILE_READS and folder is not None:
            args.paths = [folder]
            file_domain = True
        elif intent is Intent.SYSTEM_TASK and args.command is not None and folder is not None:
            args.cwd = folder
        elif intent is Intent.SYSTEM_TASK and folder is not None:
            args.paths = [folder]
        elif intent is Intent.BROWSE_ONCE and view.url is not None:
            args.url = view.url
        elif intent is Intent.LOOKUP_SEARCH:
            args.query = _merged_query(args.query or last.text, rest)
            args.action = None  # merged words: the model (or the search) reads them as a whole
        elif intent is Intent.SYSTEM_TASK:
            topics = reroute(rest).arguments.topics
            if topics:
                args.topics = topics
        elif intent is Intent.MEMORY_WRITE:
            args.fact = None  # a fragment is not a fact to keep on its own
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
        risk_level=risk,
        confidence=confidence,
        source="heuristic",
        arguments=args,
        text=message,
    )


def _merged_query(query: str, rest: str) -> str:
    """The earlier search with the follow-up's words added ("weather in paris" + "tomorrow")."""
    rest = rest.strip(" ?.!")
    if not rest or rest.lower() in query.lower():
        return query
    return f"{query} {rest}"
