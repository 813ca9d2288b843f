"""The intent rules: each reads the message view and returns a `_Guess`, or None to pass.

`_RULES` are tried in order and the first answer stands, so the order is part of the meaning: an
earlier rule wins every message a later one would also read. A rule attaches a direct action only
when the request is plainly one and names what it needs.

This module must never run anything, touch the filesystem, or score risk and needs (`scoring`
does): a rule reads the view and nothing else.
"""

from __future__ import annotations

from broker.fact_offer import asks_anything, asks_to_forget, correction_of, kept_words
from broker.router.extraction import _blank, _dedupe, _pattern, _topics, _type_pattern, _View
from broker.router.patterns import (
    _A_VALUE_RE,
    _ACTIVE_WINDOW_RE,
    _BRIGHTNESS_RE,
    _BROWSE_VERB_RE,
    _CHAT_RE,
    _COMMIT_TO_MEMORY_RE,
    _CONCEPT_RE,
    _COST_RE,
    _DESTRUCTIVE_RE,
    _DISCOVERY_CUE_RE,
    _DISPLAY_CAUSE_RE,
    _DISPLAY_PROBLEM_RE,
    _DONT_LOOK_RE,
    _FILE_DOMAIN_RE,
    _FILE_LIST_VERB_RE,
    _FILE_NOUN_RE,
    _FILE_READ_VERB_RE,
    _FILE_SEARCH_QUERY_RE,
    _FILE_SEARCH_VERB_RE,
    _FILE_WRITE_VERB_RE,
    _FIRST_PERSON_RE,
    _FREE_SPACE_RE,
    _FRONT_PAGE_RE,
    _GLOB_RE,
    _HAS_EXTENSION_RE,
    _HEALTH_FACT_RE,
    _HOGGING_RE,
    _HOWTO_RE,
    _IF_ASKED_TAIL_RE,
    _IN_A_BROWSER_RE,
    _IN_GENERAL_RE,
    _JOKE_ONLY_RE,
    _KEPT_LIST_RE,
    _KYA_RE,
    _LYRICS_RE,
    _MACHINE_FACT_RE,
    _MEM_READ_RE,
    _MEM_WRITE_LEAD_RE,
    _MEM_WRITE_TAIL_RE,
    _MODE_SWITCH_RE,
    _NAMED_RE,
    _NAMED_SITE_RE,
    _NEVER_MIND_ABOUT_RE,
    _NEW_NAMED_FILE_RE,
    _NEW_WORDS_RE,
    _NOT_ASKING_TO_ACT_RE,
    _NOTE_DOWN_RE,
    _NOTE_FORM_FACT_RE,
    _ONLY_BROWSE_VERB_RE,
    _OPEN_IN_BROWSER_RE,
    _OPEN_NAMED_SITE_RE,
    _OPENERS_RE,
    _PERSONAL_DOC_RE,
    _PIVOT_RE,
    _QUESTION_RE,
    _REMINISCE_RE,
    _SAVED_SCREENSHOT_RE,
    _SCREEN_RE,
    _SCREENSHOT_RE,
    _SEARCH_LEAD_RE,
    _SEARCH_TAIL_RE,
    _SEARCH_VERB_RE,
    _SURE_CHAT_RE,
    _SYSTEM_DOMAIN_RE,
    _SYSTEM_VERB_RE,
    _THAT_RE,
    _TO_VERB_RE,
    _TOLD_YOU_MIXED_RE,
    _WEB_STRONG_RE,
    _WEB_WEAK_RE,
    _WORD_TOKEN_RE,
    _YOU_RE,
    _YOU_SAID_RE,
    DESKTOP_APP_RE,
    DESKTOP_APP_VERB_LAST_RE,
    NAMED_PROGRAM_RE,
    OPEN_SITE_IN_BROWSER_RE,
)
from broker.router.scoring import DIRECT_ACTION_CONFIDENCE, UNSURE_COMMAND_CONFIDENCE, _Guess
from broker.types import Action, Intent, RouterArguments

# A screen request this short is the request and nothing else ("take a screenshot of my screen").
SHORT_REQUEST_WORDS = 6
# At most this many words after "ok", "thanks", "haha": still only the opener ("ok thanks a
# lot", "haha nice one"); more is a request of its own, read by the other rules.
OPENER_ONLY_WORDS = 3
# A typed path in a message that asks nothing of it ("my dotfiles live in ~/code/dotfiles").
UNSURE_FILE_CONFIDENCE = 0.7


def request_after_openers(text: str) -> str | None:
    """The request after the greetings, thanks and "ok"s `text` starts with ("haha. ok real
    q: petrol price today" → "petrol price today"); None when it starts with none, or when
    only a few words follow them (then they are all it says)."""
    lead = _OPENERS_RE.match(text)
    if lead is None:
        return None
    rest = text[lead.end() :]
    return rest if len(_WORD_TOKEN_RE.findall(rest)) > OPENER_ONLY_WORDS else None


def request_after_pivot(text: str) -> str | None:
    """The request after a turn to it part-way through `text` ("… — anyway, what's 18% of
    4,350?" → "what's 18% of 4,350?"); None when there is no such turn, when only a few words
    follow it, or when they ask nothing ("… Anyway, that's the newest member of the family.")."""
    pivot = _PIVOT_RE.search(text)
    if pivot is None:
        return None
    rest = text[pivot.end() :]
    if len(rest.split()) <= OPENER_ONLY_WORDS or not asks_anything(rest):
        return None
    return rest


def _talk(view: _View) -> _Guess | None:
    """Talk, whatever it names: a joke with nothing asked after it, what the assistant said
    before, a question asked "in general"."""
    text = view.text
    if _JOKE_ONLY_RE.search(text):
        return _Guess(Intent.CHAT_ONLY, 0.95)  # "… my downloads folder lmao jk jk"
    if _YOU_SAID_RE.match(text):
        return _Guess(Intent.CHAT_ONLY, 0.9)
    if _IN_GENERAL_RE.search(text) and "?" in text and view.command is None:
        return _Guess(Intent.CHAT_ONLY, 0.85)
    if _NOT_ASKING_TO_ACT_RE.search(text) and view.command is None:
        return _Guess(Intent.CHAT_ONLY, 0.85)  # "… usual causes? not asking you to check"
    return None


def _memory_write(view: _View) -> _Guess | None:
    text = view.text
    if asks_to_forget(text):
        # "Please forget what I told you about the bowling league": not a question about what
        # was told (memory_read), though it names it. The writer shows what matches.
        return _Guess(Intent.MEMORY_WRITE, 0.85)
    lead = _MEM_WRITE_LEAD_RE.match(text)
    if lead is not None:
        word = lead.group("lead").lower()
        rest = lead.group("rest").strip()
        if not rest or _TO_VERB_RE.match(rest):
            # "remember to include the hidden files: list ~/.config" is an instruction.
            return None
        # "remember my flight number? whats it": a question, though it ends otherwise.
        reminiscing = _REMINISCE_RE.match(rest) or "?" in rest
        if (
            word == "remember"
            and reminiscing
            and (not _THAT_RE.match(rest) or rest.lower().startswith("that time"))
        ):
            return None
        confidence = 0.9
        if word in ("just so you know", "fyi", "from now on"):
            if not _FIRST_PERSON_RE.search(rest):
                return None
            confidence = 0.75
        tail = _MEM_WRITE_TAIL_RE.search(rest)
        if tail is not None:
            rest = rest[: tail.start()]
        fact = _THAT_RE.sub("", rest).strip().rstrip(".!").strip()
        return _Guess(Intent.MEMORY_WRITE, confidence, RouterArguments(fact=fact or None))
    committed = _COMMIT_TO_MEMORY_RE.match(text)
    if committed is not None:
        # "commit those dates to memory": what was said before; "commit my pin 4471 to
        # memory": the words in between.
        fact = committed.group("fact").strip()
        said = _FIRST_PERSON_RE.search(fact) is not None
        # The rules' to decide: "commit ... to memory" is never a git commit, though a
        # classifier that has read many "commit and push" may think so.
        return _Guess(Intent.MEMORY_WRITE, 0.95, RouterArguments(fact=fact if said else None))
    if _HEALTH_FACT_RE.search(text) and not asks_anything(text):
        # "I'm allergic to penicillin. not a joke, put it somewhere you'll find it".
        return _Guess(Intent.MEMORY_WRITE, 0.8, RouterArguments(fact=kept_words(text) or None))
    never_mind = _NEVER_MIND_ABOUT_RE.match(text)
    if never_mind is not None and correction_of(text) is not None:
        # The writer keeps what holds now ("my gamertag, changed it to …") and shows the older
        # fact to forget.
        holds = never_mind.group("said").strip()
        return _Guess(Intent.MEMORY_WRITE, 0.85, RouterArguments(fact=holds))
    if _NOTE_FORM_FACT_RE.search(text) and not asks_anything(text):
        # A fact in note form: kept as any fact is (said with its undo; a sensitive one waits
        # for consent).
        return _Guess(Intent.MEMORY_WRITE, 0.75, RouterArguments(fact=kept_words(text) or None))
    later = _IF_ASKED_TAIL_RE.search(text)
    if later is not None:
        fact = text[: later.start()].strip(" ,.;!-")
        if (
            fact
            and not asks_anything(fact)
            and (_FIRST_PERSON_RE.search(fact) or _A_VALUE_RE.search(fact))
        ):
            # A value said for when someone asks: kept as the person said it, never at once.
            return _Guess(Intent.MEMORY_WRITE, 0.75, RouterArguments(fact=fact))
    tail = _MEM_WRITE_TAIL_RE.search(text)
    if tail is not None:
        fact = text[: tail.start()].strip().rstrip(".!,").strip()
        # "what are my kids names, do u remember": a question, not a fact to keep.
        if fact and not _QUESTION_RE.search(fact):
            if _FIRST_PERSON_RE.search(fact):
                return _Guess(Intent.MEMORY_WRITE, 0.85, RouterArguments(fact=fact))
            if _A_VALUE_RE.search(fact):
                fact = _NOTE_DOWN_RE.sub("", fact) or fact
                # "10.20.4.31 = primary postgres node, pls keep it": a value to keep, said
                # without "my" (less sure: a capable model may refine the reading; kept as
                # any fact is, with its undo).
                return _Guess(Intent.MEMORY_WRITE, 0.75, RouterArguments(fact=fact))
    return None


def _command(view: _View) -> _Guess | None:
    if view.run_task:
        return _Guess(Intent.SYSTEM_TASK, 0.75, RouterArguments(paths=view.paths), execute=True)
    if view.command is None:
        return None
    args = RouterArguments(command=view.command, cwd=view.cwd, paths=view.paths)
    if not view.certain:
        # Understood, but only a guess ("run npm install in frontend"): the model decides, or
        # without one the reply shows the exact line to confirm (see `understood_command`).
        return _Guess(Intent.SYSTEM_TASK, UNSURE_COMMAND_CONFIDENCE, args, execute=True)
    args.action = "run_command"
    return _Guess(Intent.SYSTEM_TASK, 0.95, args, execute=True)


def _browse(view: _View) -> _Guess | None:
    if view.url is None:
        return None
    rest = _blank(view.text, *view.url_span) if view.url_span else view.text
    confidence = 0.9 if _BROWSE_VERB_RE.search(rest) or not rest.strip() else 0.8
    words = " ".join(rest.split())
    if _ONLY_BROWSE_VERB_RE.match(words):
        confidence = 0.95
    args = RouterArguments(url=view.url)
    if _OPEN_IN_BROWSER_RE.match(words):
        args.action = "open_url"
        return _Guess(Intent.BROWSE_ONCE, 0.95, args)
    if confidence >= DIRECT_ACTION_CONFIDENCE:
        args.action = "fetch_url"
    return _Guess(Intent.BROWSE_ONCE, confidence, args)


def _screen(view: _View) -> _Guess | None:
    if not (_SCREEN_RE.search(view.text) or _ACTIVE_WINDOW_RE.search(view.text)):
        return None
    if (
        _SYSTEM_VERB_RE.match(view.text)
        or DESKTOP_APP_RE.match(view.text)
        or _BRIGHTNESS_RE.search(view.text)
    ):
        # "make the screen brighter", "close the terminal window", "would you make the screen
        # a little brighter": a setting or a program, read by `_system_verb`.
        return None
    if _HOWTO_RE.match(view.text) or _DONT_LOOK_RE.search(view.text):
        return None  # "I don't need you to look at anything on my computer": talked about
    if _SAVED_SCREENSHOT_RE.search(view.text):
        return _file_guess(view, 0.9)  # a screenshot kept as a file, not the live screen
    if _DISPLAY_PROBLEM_RE.search(view.text) and _DISPLAY_CAUSE_RE.search(view.text):
        # "my screen goes black for a second randomly, whats going on": a problem to look into.
        return _Guess(Intent.ONE_SHOT_DISCOVERY, 0.8, RouterArguments(topics=_topics(view.text)))
    args = RouterArguments()
    if _ACTIVE_WINDOW_RE.search(view.text):
        args.action = "active_window"
    elif _SCREENSHOT_RE.search(view.text):
        args.action = "screenshot"
    # "take a screenshot", "which window is active": the request and nothing else.
    short = args.action is not None and len(view.text.split()) <= SHORT_REQUEST_WORDS
    return _Guess(Intent.SCREEN_OBSERVE, 0.95 if short else 0.9, args)


def _discovery(view: _View) -> _Guess | None:
    text = view.text
    cues = _DISCOVERY_CUE_RE.findall(text)
    if not cues:
        return None
    if len(cues) == 1 and _HOGGING_RE.match(cues[0]) and _topics(text):
        return None  # "what's eating my cpu": a status question, the top processes answer it
    file_domain = bool(_FILE_DOMAIN_RE.search(text)) or bool(view.paths or view.folder_paths)
    if not file_domain and not _SYSTEM_DOMAIN_RE.search(text):
        return None
    confidence = 0.8 if len(cues) > 1 else 0.75
    args = RouterArguments(paths=view.paths + view.folder_paths, topics=_topics(text))
    return _Guess(Intent.ONE_SHOT_DISCOVERY, confidence, args, file_domain=file_domain)


def _named_site(view: _View) -> _Guess | None:
    """A site named without its address, to open or read: "launch the BBC weather site"."""
    if view.url or view.paths or view.folder_paths or _FILE_NOUN_RE.search(view.text):
        return None
    if _OPEN_NAMED_SITE_RE.match(view.text) or _NAMED_SITE_RE.search(view.text):
        return _Guess(Intent.BROWSE_ONCE, 0.8)
    return None


def _system_verb(view: _View) -> _Guess | None:
    if _BRIGHTNESS_RE.search(view.text):
        return _Guess(Intent.SYSTEM_TASK, 0.85, execute=True)  # a setting, however asked
    named_app = (
        DESKTOP_APP_RE.match(view.text)
        or DESKTOP_APP_VERB_LAST_RE.search(view.text)
        or NAMED_PROGRAM_RE.search(view.text)
    )
    if named_app and not view.url and not view.paths:
        # "open firefox pls": a program of this computer to start, not a site.
        return _Guess(Intent.SYSTEM_TASK, 0.85, execute=True)
    if (
        OPEN_SITE_IN_BROWSER_RE.match(view.text)
        and not (view.paths or view.folder_paths)
        and not _FILE_NOUN_RE.search(view.text)
    ):
        return _Guess(Intent.BROWSE_ONCE, 0.8)  # "open google scholar in safari"
    if not (_SYSTEM_VERB_RE.match(view.text) or _MODE_SWITCH_RE.search(view.text)):
        return None
    if _IN_A_BROWSER_RE.search(view.text):
        return _Guess(Intent.BROWSE_ONCE, 0.8)  # "launch the kyocera portal in edge"
    return _Guess(Intent.SYSTEM_TASK, 0.85, RouterArguments(paths=view.paths), execute=True)


def _file_explicit(view: _View) -> _Guess | None:
    if not view.paths and not _GLOB_RE.search(view.text):
        return None
    if _FREE_SPACE_RE.search(view.text) and not _file_verb(view.text):
        return None  # "how much free disk on / and /home": the disks' status
    if not _file_verb(view.text) and not asks_anything(view.text):
        # "my dotfiles live in ~/code/dotfiles, not ~/.dotfiles": a path said, nothing asked
        # of it; the classifier may read a fact to keep.
        return _file_guess(view, UNSURE_FILE_CONFIDENCE)
    guess = _file_guess(view, 0.9)
    if guess.arguments.action is not None and view.paths:
        guess.confidence = 0.95  # a path the person typed and a verb that plainly acts on it
    elif _NEW_NAMED_FILE_RE.match(view.text):
        guess.confidence = 0.95  # a new file the person names: nothing else it could be
    return guess


def _chat(view: _View) -> _Guess | None:
    text = view.text
    if _SURE_CHAT_RE.search(text):
        return _Guess(Intent.CHAT_ONLY, 0.9)
    if _HOWTO_RE.match(text) or _CONCEPT_RE.search(text):
        return _Guess(Intent.CHAT_ONLY, 0.8)
    if _CHAT_RE.search(text):
        return _Guess(Intent.CHAT_ONLY, 0.85)
    if _OPENERS_RE.match(text) and request_after_openers(text) is None:
        return _Guess(Intent.CHAT_ONLY, 0.85)
    return None


def _system_info(view: _View) -> _Guess | None:
    topics = _topics(view.text)
    if not topics or _COST_RE.search(view.text):
        # "how much does apple charge to replace an m1 air battery": a price, not a readout.
        return None
    words = len(view.text.split())
    confidence = 0.9 if words <= 12 else 0.8
    args = RouterArguments(topics=topics)
    if confidence >= DIRECT_ACTION_CONFIDENCE:
        args.action = "system_info"
    return _Guess(Intent.SYSTEM_TASK, confidence, args)


def _file_implicit(view: _View) -> _Guess | None:
    text = view.text
    if _MEM_READ_RE.search(text) and not (view.paths or view.folder_paths):
        # "find my mate daz's number, i gave it u ages ago, its not in my files": what was
        # told, for `_memory_read` (the labelling rules: "look up my vet's number, I gave it
        # to you" is memory_read).
        return None
    if view.folder_paths or _PERSONAL_DOC_RE.match(text) or _FILE_NOUN_RE.search(text):
        return _file_guess(view, 0.85 if _file_verb(text) else 0.7)
    if _type_pattern(text) and _FILE_SEARCH_VERB_RE.match(text):
        return _file_guess(view, 0.8)
    if _KEPT_LIST_RE.match(text):
        return _file_guess(view, 0.8)
    return None


def _file_verb(text: str) -> bool:
    """Whether `text` asks to list, read, search or write files."""
    return bool(
        _FILE_LIST_VERB_RE.search(text)
        or _FILE_READ_VERB_RE.search(text)
        or _FILE_SEARCH_VERB_RE.match(text)
        or _FILE_WRITE_VERB_RE.search(text)
    )


def _file_guess(view: _View, confidence: float) -> _Guess:
    text = view.text
    paths = list(view.paths)
    pattern = _pattern(text)
    searching = bool(_FILE_SEARCH_VERB_RE.match(text))
    query: str | None = None
    if searching:
        named = _NAMED_RE.search(text)
        if named is not None:
            pattern = named.group(1)
            paths = [p for p in paths if p != pattern]
        else:
            found = _FILE_SEARCH_QUERY_RE.search(text)
            if found is not None:
                query = found.group("q").strip().rstrip("?.!") or None
                if query == pattern:
                    query = None
    paths = _dedupe(paths + view.folder_paths)
    args = RouterArguments(paths=paths, pattern=pattern, query=query)
    if confidence >= DIRECT_ACTION_CONFIDENCE:
        args.action = _file_action(view, text, paths, pattern, searching)
    return _Guess(Intent.FILE_TASK, confidence, args)


def _file_action(
    view: _View, text: str, paths: list[str], pattern: str | None, searching: bool
) -> Action | None:
    """A direct file action, only when the request is plainly one and names what it needs."""
    if not paths or _FILE_WRITE_VERB_RE.search(text) or _DESTRUCTIVE_RE.search(text):
        return None
    if searching:
        return "search_files" if pattern else None
    if len(paths) != 1 or pattern:
        return None
    path = paths[0]
    has_ext = bool(_HAS_EXTENSION_RE.search(path.rstrip("/\\").rsplit("/", 1)[-1]))
    is_folder = path in view.folder_paths or path.endswith(("/", "\\")) or path == "~"
    if _FILE_LIST_VERB_RE.search(text):
        return "read_file" if has_ext else "list_files"
    if _FILE_READ_VERB_RE.search(text):
        # "the README in ./project": the path is where the file lives, not the file.
        if is_folder or path in view.path_in:
            return None
        return "read_file"
    return None


def _memory_read(view: _View) -> _Guess | None:
    asked = "?" in view.text or _KYA_RE.search(view.text) is not None
    told = asked and _TOLD_YOU_MIXED_RE.search(view.text) is not None
    if not (_MEM_READ_RE.search(view.text) or told):
        return None
    if correction_of(view.text) is not None:
        # "scratch the old orcid I gave you, the right one is …": a change to keep, which the
        # writer stores in the person's words, showing the older facts it may replace.
        return _Guess(Intent.MEMORY_WRITE, 0.8)
    if _MACHINE_FACT_RE.search(view.text):
        # "what's my ip address": about this machine, not something the user told us.
        return _Guess(Intent.SYSTEM_TASK, 0.7)
    return _Guess(Intent.MEMORY_READ, 0.85)


def _lookup(view: _View) -> _Guess | None:
    text = view.text
    if _FRONT_PAGE_RE.search(text):
        return _Guess(Intent.BROWSE_ONCE, 0.8)  # one site's front page, to read
    confidence = 0.0
    if _SEARCH_VERB_RE.search(text):
        confidence = 0.85
    elif (
        _WEB_STRONG_RE.search(text)
        or _COST_RE.search(text)
        or (_LYRICS_RE.search(text) and not _NEW_WORDS_RE.search(text))
    ):
        confidence = 0.8
    elif _WEB_WEAK_RE.search(text) and _QUESTION_RE.search(text) and not _YOU_RE.search(text):
        confidence = 0.7
    if confidence == 0.0:
        return None
    query = _SEARCH_TAIL_RE.sub("", _SEARCH_LEAD_RE.sub("", text, count=1)).strip()
    query = query.rstrip("?!. ") or text
    args = RouterArguments(query=query)
    if confidence >= DIRECT_ACTION_CONFIDENCE and query != text:
        args.action = "web_search"
    return _Guess(Intent.LOOKUP_SEARCH, confidence, args)


_RULES = (
    _talk,
    _memory_write,
    _command,
    _browse,
    _screen,
    _discovery,
    _named_site,
    _system_verb,
    _file_explicit,
    _chat,
    _system_info,
    _file_implicit,
    _memory_read,
    _lookup,
)
