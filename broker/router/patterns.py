"""The router's vocabulary: the regexes and word sets the message view, the rules and risk read.

Compiled once at import; none has nested unbounded quantifiers that can overlap, so each scan runs
in linear time (and the heuristics never look past `SCAN_LIMIT` characters). Grouped by what reads
them: arguments (commands, folders, URLs, paths, globs), intents, and risk. The few words only
refinement looks for are in `reach`; the reply fence is in `verdict`.

This module holds data: it must never import the rest of the router, decide anything, or gain a
pattern that can backtrack on a long paste.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NORMALISE = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "\u00a0": " "})

_PREFIX_RE = re.compile(r"/(chat|search|browse|screen|file|run|remember|recall)(?=\s|$)", _I)

# Polite lead-ins people put before an imperative ("can you please run ...").
_POLITE_WORDS = (
    r"please|pls|plz|hey|ok|okay|so|now|also|and|just|kindly|can you|could you|"
    r"would you|will you|go ahead and|i want you to|i need you to|i'd like you to"
)
_POLITE = r"(?:(?:" + _POLITE_WORDS + r")[\s,]+)*"

# --- arguments
_BACKTICK_RE = re.compile(r"`([^`\n]{1,1000})`")
# "execute: rm -rf /" is as much a command as "execute rm -rf /": the colon changes nothing.
_RUN_RE = re.compile(
    r"^" + _POLITE + r"(?:run|execute|exec)(?:\s*:)?\s+"
    # "run this: ipconfig /flushdns", "run the following command: …": the line after the colon.
    r"(?:(?:this|that|the\s+following)(?:\s+(?:shell\s+|terminal\s+)?command)?\s*:\s*|"
    r"(?:(?:the|a|an)\s+)?(?:shell\s+|terminal\s+)?command(?:\s*:)?\s+)?"
    r"(?P<cmd>\S.*)$",
    _I | re.S,
)
_RUN_VERB_RE = re.compile(r"\b(?:run|execute|exec)\b", _I)
# A command line given after a colon in a sentence that speaks of running or typing it ("my son
# wrote this down for me to run if the internet goes funny: ipconfig /flushdns"): something to
# run, though the sentence is too loose to run the line as it stands.
# The line ends the message, or a sentence follows it ("…: sudo rm -rf /Library. Please carry
# out the instruction").
_LINE_AFTER_COLON_RE = re.compile(
    r":\s*(?P<line>[^\s:`'\"][^:\n`]{1,119}?)(?:[.!]\s+[A-Z][^:\n`]{0,300})?[.!]?\s*$"
)
_RUN_OR_TYPE_RE = re.compile(r"\b(?:run|execute|exec|type|enter)\b", _I)
# A command line in quotes that someone said to type ("My nephew told me type 'ipconfig
# /flushdns' … Please run it for me", "Mi hijo dice que escriba 'shutdown /s /t 0' … Hazlo tú"):
# something to run, asked of us in the words around it; the line is shown before it runs.
_QUOTED_LINE_RE = re.compile(r"['‘\"“](?P<line>[a-z][\w.-]*(?:\s+[^'’\"”\n]{1,100})?)['’\"”]", _I)
_TYPE_OR_DO_IT_RE = re.compile(
    r"\b(?:please|pls|can\s+you|could\s+you|would\s+you|will\s+you)\s+(?:run|execute|type|enter|do)"
    r"\s+it\b|\b(?:run|do|type|execute)\s+it\s+for\s+me\b|\bhazlo\b|\bcarry\s+(?:it\s+)?out\b",
    _I,
)
# Asked what a quoted command means: talk about it, never a request to run it.
_WHAT_IT_MEANS_RE = re.compile(
    r"\b(?:what\s+(?:does|do|means|is)|explain|difference|mean(?:s|ing)?)\b", _I
)
# "don't run anything: difference between `rm -rf /` and …", "no need to run anything": commands
# to talk about, not to run.
_DONT_RUN_RE = re.compile(
    r"\b(?:don'?t|dont|do\s+not|no\s+need\s+to|without|never|not\s+(?:asking\s+you\s+)?to)\s+"
    r"(?:actually\s+|really\s+)?(?:run|execute|exec)\b",
    _I,
)
# "run me through ...", "run a marathon": the word after "run" says it is not a command.
_NOT_A_COMMAND = _words(
    "me us through a an away out into over around late errands down up by along"
)
# "run the backup script", "execute my tests", "run it": something is to be run, but not spelled
# out (never the command `it`).
_NAMED_TASK = _words("the my our this that it them those these both")
# "run a speed test", "run a quick scan of my disk": "a" or "an" and, within three words, a
# thing a computer runs; "run a marathon", "run an errand" name none.
_RUNNABLE = _words(
    "command commands script check checks scan test tests benchmark diagnostic diagnostics "
    "backup update cleanup program job query ping traceroute"
)
_RUNNABLE_WITHIN = 3
# Politeness after a command is dropped; "now" is not ("shutdown now" is the command).
_FOR_ME_RE = re.compile(r"(?<!\s)\s+(?:for me|please|pls)\s*[.!?]*$", _I)
# Words no command line takes as a bare argument, but English does: "run find out which app is
# using the camera", "execute sort of a health check on this pc". One of them outside quotes
# makes "run ..." a sentence about something to run, not the command itself.
_FILLER = _words(
    "a an the of at to for with from by about into onto which what who whom whose where when "
    "why how is are was were be been am it its it's this that these those my your our their his "
    "her me you we they them us i out some any and or but if so than please using whether there "
    "here can could would should will does did not just very really also too in"
)
_WORD_TOKEN_RE = re.compile(r"[a-z']+", _I)
# Shell-like words: a quoted string is one word, whatever it holds.
_TOKEN_RE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s\"']+")
# "... in ~/Desktop", "... inside the folder ./web", "... in my home dir": where it runs. Only
# the last one counts; what follows it must be a folder (see `_folder`).
_IN_FOLDER_RE = re.compile(
    r"(?:^|\s)(?:in|inside)\s+(?:(?:the\s+)?(?:folder|directory|dir)\s+)?(?=\S)", _I
)
_BARE_FOLDER_RE = re.compile(r"\w[\w.\-]{0,100}")
# "`df -h` and `free -m`": nothing but commands and the words that join them.
_SEPARATOR_RE = re.compile(r"[\s,.;:!&+]+")
_JOINERS = _words("and then also plus")

_TLDS = r"com|org|net|io|dev|gov|edu|uk|de|fr|nl|eu|ai|app|info|ca|au|jp|co"
_URL_RE = re.compile(
    r"(?<![\w@/.\-])(?:https?://[^\s<>\"'`]+|www\.[^\s<>\"'`]+|"
    r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:"
    # A well-known TLD on its own ("python.org"), or any short one when a path follows
    # ("docs.rs/serde"); "main.rs" alone is a file name, not a site.
    r"(?:" + _TLDS + r")(?::\d{1,5})?(?:/[^\s<>\"'`]*)?|[a-z]{2,3}/[^\s<>\"'`]*)(?![\w.\-]))",
    _I,
)

_STOP = r"\s\"'`,;()<>|"
# A single quote opens and closes only at a word's edge: the apostrophe in "what's" is not one.
_QUOTED_RE = re.compile(r"\"([^\"\n]{1,260})\"|(?<!\w)'([^'\n]{1,260})'(?!\w)")
# A quoted file name with spaces ("old notes.txt") is one path, however many words it has.
_QUOTED_NAME_WORDS = 8
_PATH_LIKE_RE = re.compile(r"(?:~|\.{1,2}[/\\]|/|[a-z]:\\)", _I)
_PATH_RE = re.compile(
    r"(?<![\w/:.~\\\-*])("
    r"~/[^" + _STOP + r"]*|~(?![\w/])"
    r"|\.{1,2}/[^" + _STOP + r"]*"
    r"|/[\w.\-][^" + _STOP + r"]*"
    r"|[a-z]:\\[^" + _STOP + r"]*"
    # A Windows share: \\LDS-FS01\Payroll\Leavers
    r"|\\\\[\w.\-$]+\\[^" + _STOP + r"]*"
    r")",
    _I,
)
# File extensions that make a bare word a file name ("notes.txt") or a type ("pdf files").
_EXTENSIONS = _words(
    "txt md markdown pdf doc docx xls xlsx ppt pptx odt ods odp rtf csv tsv json yaml yml toml "
    "ini cfg conf log py ipynb js ts sh rs go java c cpp h hpp htm html css xml sql jpg jpeg png "
    "gif svg webp heic bmp tif tiff mp3 mp4 m4a mkv mov avi wav flac ogg zip tar gz tgz bz2 xz "
    "7z rar iso dmg tex bib epub bak tmp db sqlite env lock pem key"
)
# A dotted token; the last part is checked against _EXTENSIONS in Python, which keeps the
# regex free of backtracking through a long alternation.
_FILENAME_RE = re.compile(r"(?<![\w/\\.~*\-])([\w\-]+(?:\.[\w\-]+)+)(?![\w\-])")
_HAS_EXTENSION_RE = re.compile(r"\.[a-z0-9]{1,5}$", _I)
_TRAILING_PUNCT = ".,;:!?)]}'\""

_KNOWN_FOLDERS = {
    "documents": "~/Documents",
    "docs": "~/Documents",
    "downloads": "~/Downloads",
    "download": "~/Downloads",
    "desktop": "~/Desktop",
    "pictures": "~/Pictures",
    "photos": "~/Pictures",
    "music": "~/Music",
    "videos": "~/Videos",
    "movies": "~/Videos",
    "home": "~",
}
_KNOWN_FOLDER_RE = re.compile(
    r"\b(?:my|the)\s+(documents|docs|downloads?|desktop|pictures|photos|music|videos|movies|home)"
    r"(\s+(?:folder|directory|dir))?\b",
    _I,
)

_GLOB_RE = re.compile(r"(?<![\w/\\*.\-?])([\w.\-]*\*[\w.*?\-]*)")
# "PDF files", ".docx files", "pdfs": the word is checked against _EXTENSIONS in Python.
_TYPE_WORD_RE = re.compile(
    r"(?<![\w.])\.?([a-z0-9]{1,5})\s+(?:files?|documents?|docs|images?|photos?|pics|"
    r"pictures|videos?)\b|(?<![\w.])([a-z0-9]{2,5})s\b",
    _I,
)
# Extensions that are also common words: "key documents", "go files" name no file type.
_NOT_A_TYPE = frozenset({"key", "go", "c", "h", "lock", "env", "db"})
_NAMED_RE = re.compile(r"\b(?:named|called)\s+[\"']?([\w.*?\-]{1,100})", _I)

# --- intents
_MEM_WRITE_LEAD_RE = re.compile(
    r"^" + _POLITE + r"(?P<lead>remember|memori[sz]e|note(?: to self)?|keep in mind|"
    r"don'?t forget|do not forget|make (?:a )?note(?: of)?|store the fact|"
    r"save (?:this|that)(?:\s+(?:please|pls|plz|for later))?\s*:|"
    r"for future reference|just so you know|fyi|for your information|from now on|"
    r"(?:add|save|put|write) (?:this |that )?(?:to|in|into) (?:your )?memory|"
    # Said with a fact in the person's own words: "jot down that my bike is 56cm", "store
    # this for later: policy AB-1", "keep track of this: ..." (first person or a colon needed).
    r"(?P<keep>(?:store|save|jot down|write down|keep track of)"
    r"(?: (?:the fact|this|that)(?: for later)?)?"
    r"(?= that (?:i|i'm|im|i've|ive|my|we|we're|our)\b|\s*:)|just so you remember))"
    r"(?!\w)[\s,:]*(?P<rest>.*)$",
    _I | re.S,
)
# "I'm allergic to penicillin", "i am colour-blind (deuteranopia), so …": a lasting fact about
# the person's health or diet, said plainly (a question or a request with it is not one).
_HEALTH_FACT_RE = re.compile(
    r"\b(?:i'?m|i\s+am|im)\s+(?:(?:also|now|severely|very|quite|mildly|badly)\s+)?(?:allergic|"
    r"intolerant|coeliac|celiac|diabetic|vegan|vegetarian|pescatarian|pregnant|colou?r[\s-]?blind|"
    r"deaf|hard\s+of\s+hearing|dyslexic|epileptic|asthmatic|lactose|gluten|partially\s+sighted)\b",
    _I,
)
# "commit my locker code to memory", "kindly commit those dates to memory".
_COMMIT_TO_MEMORY_RE = re.compile(
    r"^" + _POLITE + r"commit\s+(?P<fact>[^.!?]{1,120}?)\s+to\s+(?:your\s+)?memory\s*[.!]*$", _I
)
_MEM_WRITE_TAIL_RE = re.compile(
    # The lookbehind starts a match only at the beginning of a punctuation run: linear time.
    r"(?<![\s,.;!\-])[\s,.;!\-]+(?:(?:please|pls|and)\s+)?"
    r"(?:(?:remember|(?:take\s+|make\s+a\s+)?note|memori[sz]e)(?:\s+(?:of\s+)?(?:that|this|it))?|"
    r"(?:save|store|update|keep)\s+(?:that|this|it)(?:\s+in mind)?|"
    # "Could you file that away somewhere?", "just context for later, not asking anything"
    r"(?:(?:could|can|would|will)\s+(?:you|u)\s+)?(?:file|tuck|put)\s+(?:that|this|it)\s+away"
    r"(?:\s+(?:somewhere|for me|for later))?\s*\??|"
    r"(?:just\s+)?(?:context|background)\s+for\s+later(?:[\s,.;-]+not\s+asking\s+anything)?|"
    r"not\s+asking\s+anything(?:[\s,.;-]+just\s+(?:context|background|fyi)(?:\s+for\s+later)?)?)"
    r"(?:\s+(?:going forward|from now on|for later|for next time))?\s*[.!]*$",
    _I,
)
# "badge number's 40417 if IT ever asks", "my day rate's £350. quote those when I ask": a value
# said for later, when someone asks for it.
_IF_ASKED_TAIL_RE = re.compile(
    r"(?<![\s,.;!\-])[\s,.;!\-]+(?:(?:use|quote|give|tell\s+(?:me|them))\s+(?:those|these|that|this|"
    r"it|them)\s+)?(?:in\s+case|if|when(?:ever)?)\s+[\w']+(?:\s+[\w']+)?\s+(?:ever\s+)?asks?"
    r"(?:\s+(?:for\s+it|again|me))?[\s.!]*$",
    _I,
)
# Taking back what was told about something, then saying what holds now ("nvm what i said abt
# my gamertag, changed it to xJaydnFlickz"): a correction to keep.
_NEVER_MIND_ABOUT_RE = re.compile(
    r"^(?:(?:ok|okay|oh|sorry|actually)[\s,]+)*(?:nvm|never\s*mind|ignore|disregard)\s+what\s+i\s+"
    r"(?:said|told\s+(?:you|u)|wrote)\s+(?:abt|about|re|on)\s+(?P<said>\S.*)",
    _I,
)
# The screen's brightness to change, however it is asked ("Would you be kind enough to make the
# screen a little brighter?", "the screen is way too dim, can you crank the brightness", "Make
# the Bildschirm brighter"): a setting (the labelling rules), not a look at the screen.
_BRIGHTNESS_RE = re.compile(
    r"\b(?:make|turn|put|set)\s+(?:the\s+|my\s+|this\s+)?(?:screen|display|monitor|bildschirm|"
    r"brightness)\s+(?:a\s+(?:little|bit|touch)\s+|(?:much\s+|way\s+)?)(?:brighter|dimmer|darker|"
    r"up|down)\b|"
    r"\b(?:crank|turn|bump|raise|lower|increase|decrease|reduce|dim)\s+(?:up\s+|down\s+)?"
    r"(?:the\s+|my\s+)?(?:brightness|screen\s+brightness)\b",
    _I,
)
# A fact in note form, with nothing asked: a favourite ("fav coffee: oat flat white extra
# shot") or a birthday with its date ("flatmate josh bday 3 june").
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]{0,6}"
_NOTE_FORM_FACT_RE = re.compile(
    r"^(?:my\s+)?(?:fav|fave|favou?rite)\s+[\w'-]+(?:\s+[\w'-]+)?\s*[:=]\s*\S|"
    r"\b(?:bday|b-?day|birthday)\s+(?:is\s+)?(?:on\s+)?(?:the\s+)?"
    r"(?:\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?"
    + _MONTH
    + r"|"
    + _MONTH
    + r"\s+\d{1,2}(?:st|nd|rd|th)?)\b",
    _I,
)
# "remember when ...", "remember the time ...": nostalgia, not an instruction.
_REMINISCE_RE = re.compile(
    r"^(?:when|the time|that time|those|how|back when|the days|the old|what|who|where|"
    r"if|whether|why)\b",
    _I,
)
# Told to run what the words point at rather than read it: the verb opens the request ("launch
# the installer", "ok, execute it", "now run the first one"), not a question ("how do i install
# it").
_RUNS_IT_RE = re.compile(
    r"(?:^|[,.;:!]\s*|\b(?:then|now|just|please|pls|plz|go ahead and|and)\s+)"
    r"(?:run|execute|exec|launch|install)\s+(?!me\b|us\b|through\b)",
    _I,
)
# "jot down 10.20.4.31 = db primary, keep it": the words before the value are not the fact.
_NOTE_DOWN_RE = re.compile(r"^(?:jot|note|write|put)\s+(?:down\s+)?(?:that\s+)?", _I)
# A value worth keeping holds a digit: a number, an address, a code ("10.20.4.55", "TP1342").
_A_VALUE_RE = re.compile(r"\d")
_FIRST_PERSON_RE = re.compile(r"\b(?:i|i'm|im|i've|my|me|mine|we|our)\b", _I)
_THAT_RE = re.compile(r"^that\s+", _I)
_TO_VERB_RE = re.compile(r"^to\s+[a-z]", _I)

# A display problem to diagnose ("the screen keeps going black, whats causing it", "flickers
# whenever the kids play minecraft, what's going on"): one_shot_discovery by the labelling rules,
# not a look at what the screen shows. The problem and a call to find its cause, together.
_DISPLAY_PROBLEM_RE = re.compile(
    r"\b(?:flicker\w*|flash(?:es|ing)\b|go(?:es|ing)?\s+(?:black|blank|dark)|gone\s+(?:all\s+)?"
    r"(?:black|blank|dark|stretched|blurry|fuzzy|weird)|blacks?\s+out|black-?outs?|stretched|"
    r"blurry|fuzzy|tearing|stutter\w*|glitch\w*|dead\s+pixels?|blink\w*|pisca\w*|"
    r"gone\s+(?:all\s+)?(?:yellow|blue|pink|green|red|purple|washed|dim)\w*|"
    r"(?:yellow|blue|pink|green|purple|red)ish|tinted|discolou?r\w*|upside\s+down|sideways)",
    _I,
)
_DISPLAY_CAUSE_RE = re.compile(
    r"\b(?:why|y\s+does|what'?s\s+going\s+on|whats\s+going\s+on|what\s+(?:has\s+)?happened|"
    r"what\s+is\s+happening|what'?s\s+happening|figure\s+out|find\s+out|work\s+out|"
    r"what'?s\s+causing|causing|cause|culprit|what'?s\s+wrong|whats\s+wrong|since|keeps?|"
    r"messing|fix|diagnos\w*|broken|driver|problem)\b",
    _I,
)
_SCREEN_RE = re.compile(
    r"\b(?:(?:screen\s?shot|screen\s?grab|screencap)\b(?!\s+(?:files?|folder))|"
    # Not "my screen name" (a name told or asked, the labelling rules say), "screen time", nor a
    # setting or a product's screen ("the screen size on the new inspection camera").
    r"(?:my|the|this|on)\s+(?:screen|display|monitor)\b(?!\s+(?:names?|time|size|sizes|resolution|"
    r"brightness|protector|saver|reader|door)\b)|on-screen|"
    r"(?:this|the|that|current|active|open|focused)\s+(?:[\w\-]+\s+){0,2}?"
    r"(?:window|dialog|popup|pop-up)\b|"
    r"dialog(?:ue)?\s+box|popped\s+up|pop-?up\s+(?:window|message)|foreground|"
    r"(?:a|the|this|that|some)\s+(?:[\w\-]+\s+)?pop-?up\b(?!\s+blockers?)|"
    # "the slide currently displayed", "the application that currently has the focus".
    r"(?:currently|now|at\s+present|right\s+now)\s+(?:being\s+)?(?:displayed|showing|on\s+screen)\b|"
    r"\bhas\s+(?:the\s+)?(?:keyboard\s+)?focus\b|"
    r"what\s+(?:i'?m|am\s+i)\s+looking\s+at|in front of me|"
    r"\bread\b[^.?!]{0,40}\b(?:off|on)\s+(?:the|my|that)\s+(?:terminal|console)\b|"
    r"(?:describe|look at|what'?s on|what is on)\s+my\s+desktop)",
    _I,
)

# Clear screen requests a direct action answers without the model choosing a tool.
_ACTIVE_WINDOW_RE = re.compile(
    r"^(?:please\s+)?(?:which|what)(?:'s| is)?\s+(?:the\s+)?(?:window|app|application|program)\s+"
    r"(?:is\s+)?(?:active|focused|in\s+front|in\s+focus|on\s+top)\b|"
    r"^(?:please\s+)?(?:what|which)(?:'s| is)\s+(?:the\s+)?(?:active|focused|current|foreground)\s+"
    r"(?:window|app|application)\b|"
    r"^(?:please\s+)?(?:which|what)\s+(?:window|app|application|program)\s+(?:am\s+i|i'?m|im)\s+"
    r"(?:using|in|on)\b|"
    # "Which of these windows am I actually typing into?"
    r"\b(?:which|what)\s+(?:of\s+(?:these|the|my)\s+)?(?:windows?|apps?|programs?)\s+"
    r"(?:am\s+i|i'?m|im)\s+(?:actually\s+|really\s+)?typing\s+(?:in|into|to)\b",
    _I,
)
# "there's a screenshot of my train tickets saved on the desktop": a picture file already kept,
# not the live screen (the labelling rules: a saved screenshot is a file task).
_SAVED_SCREENSHOT_RE = re.compile(
    r"\b(?:screen\s?shots?|screen\s?grabs?|screencaps?)\s+(?:of\s+[^,.?!]{1,60}?\s+)?"
    r"(?:(?:i\s+|that\s+i\s+)?(?:saved|stored|took|made|downloaded|kept)|"
    r"(?:that'?s\s+|which\s+is\s+|is\s+)?(?:sitting\s+)?(?:on|in)\s+(?:the\s+|my\s+)?"
    r"(?:desktop|downloads|pictures|documents|photos|screenshots\s+folder|folder)|"
    r"(?:from\s+)?(?:yesterday|last\s+(?:night|week|month)|earlier|this\s+morning))\b|"
    # "took a screenshot of the wiring diagram yesterday, can ya open it up".
    r"\b(?:took|saved|made|grabbed|snapped)\s+(?:a\s+|that\s+|the\s+)?(?:screen\s?shot|"
    r"screen\s?grab|screencap)\b",
    _I,
)
_SCREENSHOT_RE = re.compile(
    r"^(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:take|grab|make|capture)\s+"
    r"(?:a\s+|me\s+a\s+)?(?:screen\s?shot|screen\s?grab|screencap|(?:a\s+)?capture)\b|"
    r"^(?:please\s+)?(?:capture|read)\s+(?:my|the)\s+screen\b|"
    r"^(?:what'?s|what\s+is)\s+on\s+(?:my|the)\s+screen\b",
    _I,
)

_HOWTO_RE = re.compile(
    r"^(?:so\s+|and\s+|but\s+)?(?:how\s+(?:do|can|should|would|could|does|to)\b|how\s+to\b)", _I
)
_CONCEPT_RE = re.compile(
    r"^(?:so\s+|and\s+|but\s+)?(?:"
    r"(?:what|what'?s|whats)\s+(?:is\s+|are\s+)?(?:a|an)\s+\w|"
    r"(?:what|who)\s+(?:is|are)\s+[\w\-]+(?:\s+exactly)?\s*\??$|"
    r"(?:can you\s+|could you\s+|please\s+)?(?:explain|define|describe)\s+"
    r"(?:what|how|why|the|a|an)\b|"
    r"why\s+(?:is|are|do|does)\s+(?:the|a|an)\b|"
    r"is\s+it\s+true\s+(?:that\s+)?(?!my\b|our\b))"
    r"|\bwhat\s+does\s+[^?]{1,60}?\s+(?:mean|stand for|do)\b"
    r"|\bdifference\s+between\b|\bwhat'?s\s+the\s+(?:meaning|definition)\s+of\b",
    _I,
)
# Greetings, thanks and "ok"s at the start of a message. With a few words at most after them
# they are all it says ("ok thanks", "haha nice one"): small talk. Before a request ("haha. ok
# real q: petrol price today", "thanks, now take a screenshot"), the request is what is routed.
_OPENERS_RE = re.compile(
    r"^(?:(?:hi|hello|hey|yo|hiya|thanks|thank you|thx|ty|good (?:morning|night|evening|"
    r"afternoon)|bye|goodbye|lol|haha+|hehe|ok|okay|cool|nice|great|alright|sweet|perfect|"
    r"awesome|real q|quick q|quick question|(?:a\s+)?(?:different|other|another|new|unrelated|"
    r"random|separate)\s+(?:question|q|thing|topic)|(?:on\s+)?(?:a\s+)?different\s+note|"
    r"changing\s+(?:the\s+)?(?:subject|topic)|anyway|anyways|moving on)\b[\s,.!:;\-]*)+",
    _I,
)
# A turn to the real request part-way through ("Haha my screen is covered in flour — anyway,
# what's 18% of 4,350?", "…. jokes aside: list my downloads"): what follows is routed.
_PIVOT_RE = re.compile(
    r"(?:[—–.!?,;:]|\s-)\s*(?:(?:but|so|ok|okay)\s+)?(?:anyway|anyways|anyhow|jokes?\s+aside|jk|j/k|"
    r"that\s+aside|all\s+that\s+aside|real\s+question|serious\s+question)"
    r"\b[\s,.:;!—–-]*(?=\S)",
    _I,
)
# A joke with nothing asked after it ("hows the weather in my downloads folder lmao jk jk"):
# talk (the labelling rules).
_JOKE_ONLY_RE = re.compile(
    r"\b(?:jk|j/k|jks|jkjk|(?:just|only|i'?m|im)\s+(?:kidding|joking))"
    r"(?:[\s,.!]+(?:jk|j/k|lol|lmao|haha+|hehe|xd|kidding))*[\s.!]*$",
    _I,
)
# Said not to look ("I don't need you to look at anything on my computer — just an
# explanation"): the screen or a file is talked about, not to be read.
# Said not to be acted on ("— usual causes? not asking you to check", "mere files check mat
# karna"): a question about such things, not this computer.
_NOT_ASKING_TO_ACT_RE = re.compile(
    r"\bnot\s+asking\s+(?:you|u)\s+to\s+(?:check|look|run|open|do|touch)\b|"
    r"\b(?:check|touch|open)\s+mat\s+kar(?:na|o|o\s+na)\b",
    _I,
)
_DONT_LOOK_RE = re.compile(
    r"\b(?:(?:don'?t|dont|do\s+not)\s+(?:need|want)\s+(?:you|u)\s+to\s+(?:look|check|open|read)|"
    r"no\s+need\s+to\s+(?:look|check|open|read)|(?:don'?t|dont|do\s+not)\s+(?:look|check)\s+at)"
    r"\s+(?:at\s+)?(?:anything|my\s+(?:screen|computer|pc|laptop|files?)|the\s+screen)\b",
    _I,
)
# Asked "in general", with a question: about such things, not this one ("Someone sent
# https://bit.ly/… — in general, how can you tell if a shortened link like that is a scam?").
_IN_GENERAL_RE = re.compile(r"\b(?:in\s+general|generally\s+speaking)\b", _I)
# "remember when you told me that thing about caffeine? run me through it again": what the
# assistant said, talk (the labelling rules: "remember when we …" is chat).
_YOU_SAID_RE = re.compile(
    r"^(?:do\s+(?:you|u)\s+)?remember\s+when\s+(?:(?:you|u)\s+(?:told|said|explained|showed|gave)|"
    r"we)\b",
    _I,
)
# "how do you say 'price comparison' in portuguese", "X is 'pepper' in english, did you know?",
# "turn this into flashcards": language and writing, not a search or a memory.
_SURE_CHAT_RE = re.compile(
    r"\bhow\s+(?:do|would|should|can)\s+(?:you|u|i|we)\s+say\b|"
    r"\bdid\s+(?:you|u)\s+know\s*[?!.]*\s*$|"
    r"^(?:can\s+(?:you|u)\s+|could\s+(?:you|u)\s+|please\s+)?(?:turn|make)\s+(?:this|that|it|these|those)"
    r"\s+into\s+(?:an?\s+)?(?:flash\s?cards?|bullet|list|summary|poem|song|email|letter|caption|"
    r"tweet|post|quiz|table|story|haiku|limerick|outline|notes?)\b",
    _I,
)
_CHAT_RE = re.compile(
    r"\b(?:joke|poem|haiku|limerick|story|riddle|proofread|translate|rewrite|paraphrase|"
    r"summari[sz]e|brainstorm|ideas for)\b|"
    r"\b(?:who|what|how)\s+(?:are|can)\s+you\b",
    _I,
)

# How much room is free on a disk ("how much free disk on / and /home right now"): a status
# readout of the disks named, not their files.
_FREE_SPACE_RE = re.compile(
    r"\b(?:free|left|available|remaining)\s+(?:disk|space|storage)\b|"
    r"\b(?:disk|space|storage)\s+(?:is\s+)?(?:free|left|available|remaining)\b",
    _I,
)
_DISCOVERY_CUE_RE = re.compile(
    r"\b(?:why\s+(?:is|are|does|do|did|has|have|won'?t|can'?t|isn'?t|doesn'?t)|"
    r"figure out|work out|find out|investigate|diagnose|troubleshoot|"
    r"what'?s wrong|whats wrong|what is wrong|what'?s going on|whats going on|is it safe|"
    r"(?:safe|safely) (?:to )?(?:delete|remove|prune|nuke|clear|purge|wipe)|dead weight|"
    r"can i (?:safely )?(?:delete|remove)|"
    r"whether i should|should i (?:delete|remove|close|uninstall|kill)|"
    r"what (?:can|should) i (?:clean|delete|remove|get rid|uninstall)|get rid of|clean up|"
    r"which (?:ones? )?i (?:don'?t|do not) need|"
    r"(?:what'?s|whats|what is|wtf is|what the hell is)\s+"
    r"(?:using|eating|taking up|hogging|draining|killing)|"
    r"is broken|keeps (?:failing|crashing|dropping|freezing|disconnecting)|"
    r"(?:isn'?t|not|stopped) working|(?:wrong|rong)\s+with\s+(?:it|my|the|this)|"
    r"keeps\s+(?:insisting|saying|telling\s+me|claiming)|unavailable|not\s+(?:detected|recogni[sz]ed)|"
    r"can'?t\s+(?:find|detect|see)\s+(?:my|the)\s+(?:mic|microphone|camera|webcam|printer|"
    r"headphones|headset|speakers?|keyboard|mouse|drive|disk|phone))\b",
    _I,
)
_HOGGING_RE = re.compile(r"(?:what'?s|whats|what is)\s", _I)
_FILE_DOMAIN_RE = re.compile(
    r"\b(?:disk|drive|space|storage|files?|folders?|director(?:y|ies)|downloads|documents|"
    r"pictures|photos|projects?|home)\b",
    _I,
)
_SYSTEM_DOMAIN_RE = re.compile(
    r"\b(?:laptop|computer|pc|mac|machine|system|fans?|wi-?fi|internet|network|connection|"
    r"bandwidth|"
    r"boots?|booting|startup|start up|login|log in|port|python|pip|apps?|programs?|"
    r"process(?:es)?|battery|ram|memory|cpu|slow|slowly|sluggish|overheating|"
    r"crash(?:es|ing)?|freez(?:e|es|ing)|sound|audio|mic|microphone|speakers?|headphones?|headset|"
    r"webcam|bluetooth|printer|usb|keyboard|touchpad|trackpad|beep\w*)\b",
    _I,
)

# `_POLITE`, and words before the verb that do not change what is asked ("safely eject", "ok
# fine restart"): one group, so a long run of them is read in linear time.
_SYSTEM_LEAD = (
    r"(?:(?:safely|quickly|right|fine|then|yes|yeah|yep|sure|" + _POLITE_WORDS + r")[\s,]+)*"
)
_SYSTEM_VERB_RE = re.compile(
    r"^" + _SYSTEM_LEAD + r"(?:kill|pkill|killall|shut\s*down|power\s*off|"
    r"shut\s+(?:that|this|the|my)\s+(?:[\w\-]+\s+){1,3}down|"
    r"reboot|restart|install|uninstall|upgrade|launch|mount|unmount|umount|eject|suspend|"
    # "close that zoom thing", "minimise the terminal window": a program or window of this
    # computer (not "close to …", "quit smoking"; a program by its name is `DESKTOP_APP_RE`'s).
    r"(?:close|quit|exit|minimi[sz]e|maximi[sz]e)\s+(?:(?:the|that|this|my|all|every|those)\s+)?"
    r"(?:[\w.\-]+\s+){0,2}?(?:apps?|applications?|programs?|windows?|tabs?|thing|everything)\b|"
    r"lock\s+(?:the\s+|my\s+|this\s+)?(?:computer|pc|laptop|screen|mac|machine|workstation|"
    r"session|desktop)|"
    r"mute|unmute|silence|"
    r"hibernate|change\s+(?:the|that|this|my)\s+(?:[\w\-]+\s+)?settings?\b|"
    r"fire\s+(?:(?:that|it|this|them)\s+)?(?:off|up)\b|"
    r"(?:make|set)\s+[^.?!]{1,50}?\s+(?:the\s+)?default\b(?!\s+(?:style|font|template|text))|"
    r"(?:flip|switch|set|change|put)\s+(?:my\s+|the\s+|this\s+)?(?:laptop|pc|computer|mac|screen|"
    r"machine|desktop|display)\s+(?:over\s+)?(?:to|into|onto)\b|"
    r"add\s+(?:the|that|this|a|an|my)\s+(?:[\w\-]+\s+){0,3}?(?:to|on)\s+(?:this|my|the)\s+"
    r"(?:machine|computer|pc|laptop|mac|system)\b|"
    # "make the screen brighter": a setting of this computer, not a look at the screen.
    r"(?:make|turn|set)\s+(?:the\s+|my\s+|everything\s+)?(?:screen|display|monitor|volume|sound|"
    r"text|font|writing|words|letters|icons|(?:mouse\s+)?(?:cursor|pointer))"
    r"(?:\s+on\s+(?:the\s+|my\s+)?(?:screen|display|monitor))?\s+"
    r"(?:a\s+bit\s+|a\s+little\s+)?(?:brighter|dimmer|darker|louder|quieter|bigger|larger|smaller|"
    r"clearer|up|down)\b|"
    r"(?:turn|switch|flip)\s+(?:on|off)\s+(?:the\s+|my\s+)?(?:wi-?fi|bluetooth|"
    r"(?:[\w\-]+\s+){1,2}mode|night\s+light|do\s+not\s+disturb|vpn|firewall|hotspot)|"
    r"open\s+(?:the\s+|my\s+)?[\w\-.]+\s+(?:program|app|application)\b(?!\s+(?:store|page|"
    r"site|website)))\b",
    _I,
)
# "stretch it out, eco mode on till I find a plug": a mode of this computer switched.
_MODE_SWITCH_RE = re.compile(
    r"(?:^|[,;.!]\s*)(?:(?:put|set|switch|turn|flip|stick|pop|get|and|then|now|please|pls|"
    r"ok|okay|so)\s+)*(?:the\s+|my\s+)?(?:eco|dark|light|night|airplane|aeroplane|flight|"
    r"focus|silent|quiet|game|gaming|performance|power[\s\-]?sav(?:er|ing)|battery[\s\-]?saver|"
    r"low[\s\-]power|do\s+not\s+disturb|dnd)\s+mode\s+(?:on|off)\b",
    _I,
)

# The system-information topics the router names (those `_TOPIC_RES` recognises).
TOPICS: tuple[str, ...] = ("cpu", "memory", "disk", "battery", "uptime", "processes")
_TOPIC_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cpu", re.compile(r"\b(?:cpu|processor|load average|system load)\b", _I)),
    (
        "memory",
        re.compile(
            r"\b(?:ram|(?<!-)swap(?!-|\s+(?:the|that|this|it|my|out|over|them|places)\b)|memory\s+(?:usage|use|is|left|free|available|used|pressure)|"
            r"(?:free|used|available|how much)\s+memory)\b",
            _I,
        ),
    ),
    (
        "disk",
        re.compile(
            r"\b(?:disk|disks|drive|drives|storage|free space|space left|ssd|hdd|partitions?|"
            r"how much (?:free )?space|space (?:do i have )?(?:left|remaining|available))\b",
            _I,
        ),
    ),
    (
        "battery",
        re.compile(
            r"\b(?:battery|charging|charge level|plugged in|akku|batterie|bater[ií]a|batteria)\b",
            _I,
        ),
    ),
    (
        "uptime",
        re.compile(
            r"\b(?:uptime|up\s+time|been up|been running|since (?:the )?(?:last )?boot|"
            r"last (?:boot|reboot|restart))\b",
            _I,
        ),
    ),
    (
        "processes",
        re.compile(
            r"\b(?:process|processes|running programs|what'?s running|programs? running|"
            r"apps? running|task manager|(?:what'?s|whats|what is)\s+(?:using|eating|hogging))\b",
            _I,
        ),
    ),
)

_FILE_NOUN_RE = re.compile(
    r"\b(?:my|the|this|that|these|those|all|some|which|any)\s+(?:[\w.\-]+\s+){0,2}"
    r"(?:files?|folders?|director(?:y|ies)|documents)\b|"
    # "grep that log for nan", "tail the error log": a log is a file.
    r"^" + _POLITE + r"(?:grep|tail|head|cat|less)\s+(?:the|that|this|my)\s+"
    r"(?:[\w.\-]+\s+){0,2}logs?\b|"
    r"\bwhere\s+did\s+i\s+(?:save|put|store|download)\b|"
    r"\bfiles?\s+(?:named|called)\b|"
    # "the document I typed about my tablets", "I saved a picture of the grandchildren": a
    # file the person made or kept.
    r"\b(?:document|doc|letter|spreadsheet|picture|photo|pdf|file|minutes|notes|scan|recording)s?"
    r"\s+(?:[\w']+\s+){0,4}?(?:i|we)\s+(?:typed|wrote|saved|made|scanned|downloaded|created|"
    r"recorded|printed)\b|"
    r"\bi\s+(?:saved|downloaded|scanned)\s+(?:a|the|that|some)\s+(?:[\w']+\s+){0,2}"
    r"(?:picture|photo|document|pdf|file|letter|spreadsheet)s?\b",
    _I,
)
_PERSONAL_DOC_RE = re.compile(
    r"^" + _POLITE + r"(?:find|open|show|read|locate|where(?:'s| is)?|search for)\s+"
    r"(?:me\s+)?my\s+(?:[\w\-]+\s+)?(?:resume|cv|notes|spreadsheets?|essay|thesis|reports?|"
    r"invoices?|receipts?|presentation|slides|contract|tax return|payslips?|"
    r"screenshots|photos|pictures)\b",
    _I,
)

_FILE_LIST_VERB_RE = re.compile(
    r"^" + _POLITE + r"(?:list|ls|show(?:\s+me)?\s+(?:the\s+)?(?:files|contents)|"
    r"show(?:\s+me)?\s+what'?s\s+in)\b|"
    r"\b(?:what'?s|whats|what is)\s+in\b|\bcontents\s+of\b",
    _I,
)
_FILE_READ_VERB_RE = re.compile(
    r"^" + _POLITE + r"(?:read|open|show|display|print|cat|view|output)\b|"
    r"\b(?:what'?s|whats|what is)\s+in\b|\bcontents\s+of\b|\bread\s+it\b",
    _I,
)
_FILE_SEARCH_VERB_RE = re.compile(r"^" + _POLITE + r"(?:find|search|look\s+for|locate|grep)\b", _I)
# "write a note called todo.txt saying buy milk", "create a file named plan.md": a new file the
# person names, with its extension; a file task whatever else the sentence says.
_NEW_NAMED_FILE_RE = re.compile(
    r"^" + _POLITE + r"(?:write|create|make|save|start|add)\b[^.?!]{0,40}?\b(?:called|named|titled)"
    r"\s+['\"]?[\w.-]+\.[a-z0-9]{1,5}\b",
    _I,
)
# "add milk to my list", "put batteries on the shopping list": a list the person keeps, a file
# (a remembered fact is added to "that", "my allergies" or "the list of ... I'm handling").
_KEPT_LIST_RE = re.compile(
    r"^" + _POLITE + r"(?:add|put|stick|pop|jot)\b[^.?!]{1,40}?\b(?:to|on|onto)\s+(?:my|the)\s+"
    r"(?:(?:shopping|grocery|groceries|to-?do|packing|reading|wish|bucket)\s+)?list\s*[.!]?\s*$",
    _I,
)
_FILE_WRITE_VERB_RE = re.compile(
    r"\b(?:rename|move|mv|copy|cp|delete|remove|rm|create|make|write|save|edit|append|touch|"
    r"mkdir|back\s*up|backup|compress|zip|unzip|extract|overwrite|replace|empty|clean|"
    r"wipe|erase|shred|change|modify)\b",
    _I,
)
_FILE_SEARCH_QUERY_RE = re.compile(
    r"\b(?:search|look through|go through|grep)\s+(?:in\s+)?\S.{0,120}?\s+for\s+(?P<q>.+)$",
    _I | re.S,
)
_IN_PATH_RE = re.compile(
    r"\b(?:in|inside|under|within|from)\s+(?:the\s+)?(?:folder\s+|directory\s+)?$", _I
)

_MEM_READ_RE = re.compile(
    r"\b(?:do|did)\s+you\s+(?:still\s+)?(?:remember|know|recall)\b[^?.!]{0,80}?"
    r"\b(?:my|me|i|i'm|we|our)\b|"
    r"\b(?:what|wat|wut)\s+(?:else\s+)?(?:do|did)\s+(?:you|u|ya)\s+(?:actually\s+|really\s+|even\s+)?"
    r"(?:know|remember|have)\s+(?:about|on|of)\s+(?:me|my|us|our)\b|"
    # "and other things you know of me", "anything more stored about me"
    r"\b(?:things|stuff|anything|everything|else)\s+(?:else\s+|more\s+)?(?:(?:you|u)"
    r"(?:'ve|'re|\s+have|\s+are)?\s+(?:know|remember|stored|saved|kept|noted|got|have|holding|"
    r"keeping|storing)|stored|saved|kept|noted)\s+"
    r"(?:about|of|on)\s+(?:me|us|my|our)\b|"
    # "when's the hearing, i gave you a date", "is that our region? I saved it with you"
    r"\bi\s+(?:gave|sent|mentioned|told|provided|shared)\s+(?:it\s+|that\s+|them\s+)?"
    r"(?:to\s+|with\s+)?(?:you|u)\b|"
    # "you retain certain details which I have shared with you … what you presently hold"
    r"\b(?:details|information|records?|things|facts)\s+(?:which|that)\s+i\s+(?:have\s+|'ve\s+)?"
    r"(?:shared|given|told|provided)\b|"
    # "Abre lo que tienes guardado de mí": what is saved about the person, in Spanish.
    r"\blo\s+que\s+(?:tienes|sabes|guardaste|has\s+guardado)\s+(?:guardado\s+)?(?:de|sobre)\s+m[ií]\b|"
    r"\b(?:saved|stored|left|kept|noted|note|put)\b[^.?!]{0,30}?\bwith\s+(?:you|u)\b|"
    r"\b(?:everything|anything|all|stuff)\s+(?:that\s+)?(?:i'?ve|ive|i\s+have|i)\s+(?:given|told|sent|"
    r"said\s+to)\s+(?:you|u)\b|"
    r"\b(?:did|have)\s+i\s+(?:ever\s+|already\s+)?(?:tell|told|mention|mentioned|say|said|give|"
    r"gave|given)\b|"
    r"\bwhat\s+did\s+i\s+(?:say|tell|mention)\b|\bi\s+(?:told|tell)\s+you\b|"
    # "search ur memory 4 my flatmates bday"
    r"\b(?:search|check|look|go\s+through)\s+(?:in\s+|through\s+)?(?:your|ur|yr)\s+(?:memory|memories)\b|"
    r"^(?:do\s+|did\s+)?you\s+(?:still\s+)?(?:remember|know|recall)\s+"
    r"(?:my|our|what i|where i|when i)\b|"
    r"\bwhat(?:'?s|\s+is|\s+was)\s+the\s+name\s+of\s+(?:my|our)\b|"
    r"^(?:please\s+)?remind\s+me\s+(?:what|who|when|where|how|of|about)\b|"
    r"^(?:please\s+)?remind\s+me\s+(?:which|whether|if)\b[^?.!]{0,60}?\bi\s+(?:said|told)\b|"
    r"^(?:please\s+|can you\s+|could you\s+)?recall\b|"
    r"^(?:and\s+|so\s+)?(?:what|what'?s|whats|wat|wat'?s|wats|when|when'?s|whens|who|who'?s|whos|where|"
    r"where'?s|wheres|how old)(?:\s+(?:is|are|was|were))?\s+my\b",
    _I,
)

# "I told you" / "I gave it to you" in the languages people mix in (Spanish, Filipino, Italian,
# Portuguese, French, German, Polish): with a question, what was told is asked for ("¿Cómo se
# llama el dentista de mi hijo? Te lo dije la otra vez."); without one it may only lead into a
# request ("como te dije, abre la carpeta …") or a forget ("Dimentica quello che ti ho detto").
_TOLD_YOU_MIXED_RE = re.compile(
    r"\b(?:ya\s+)?te\s+(?:lo\s+|la\s+)?(?:di|dije|hab[ií]a\s+(?:dado|dicho))\b|"
    r"\b(?:sinabi|nasabi|binigay|ibinigay)\s+ko\s+(?:na\s+)?(?:sa'?yo|sayo|sa\s+iyo)\b|"
    r"\bte\s+l'?avevo\s+(?:dato|detto)\b|\bti\s+(?:avevo|ho)\s+detto\b|"
    r"\bte\s+(?:disse|falei|passei)\b|\bje\s+te\s+l'?(?:ai|avais)\s+(?:dit|donn[ée]e?)\b|"
    r"\bhab(?:e)?\s+ich\s+dir\s+(?:doch\s+|schon\s+)?(?:gesagt|gegeben)\b|"
    r"\b(?:m[oó]wi[lł](?:em|am)|da[lł](?:em|am))\s+ci\b|"
    # Hindi-English: "maine di thi na tujhe", "maine bataya tha", "save kiya tha tune"
    r"\bmaine\s+(?:di|diya|bataya|btaya|bola|save\s+(?:kiya|karwaya))\s+th[ai]\b|"
    r"\bsave\s+kiya\s+tha\s+(?:tune|tumne|aapne)\b",
    _I,
)
# "kya" (what) asks in Hindi-English, with or without a question mark.
_KYA_RE = re.compile(r"\bkya\b", _I)
_MACHINE_FACT_RE = re.compile(
    r"\bmy\s+(?:(?:local|public)\s+)?(?:ip|ip address|mac address|hostname|host name|"
    r"kernel(?: version)?|os(?: version)?|screen resolution|gpu|graphics card)\b|"
    r"\bmy\s+(?:(?:mac|macbook|laptop|pc|computer|machine|system)(?:'?s)?\s+)?(?:chip|cpu|processor|"
    r"ram|unified memory|storage|ssd|model|serial(?: number)?|refresh rate|resolution)\b",
    _I,
)

_SEARCH_VERB_RE = re.compile(
    r"^" + _POLITE + r"(?:search|google|bing|duckduckgo|look\s*up|look\s+into|find|"
    r"check online)\b|"
    r"\b(?:look\s*up|google|search (?:the web|online|the internet|for))\b",
    _I,
)
_SEARCH_LEAD_RE = re.compile(
    r"^" + _POLITE + r"(?:search|google|bing|duckduckgo|look\s*up|find(?:\s+me)?)\s+"
    r"(?:(?:the\s+)?(?:web|internet|online|google|duckduckgo|bing)\s+)?(?:for|about|on)?\s*",
    _I,
)
_SEARCH_TAIL_RE = re.compile(
    r"(?<!\s)\s+(?:online|on the web|on the internet|on google|for me)\s*[?.!]*$", _I
)
_WEB_STRONG_RE = re.compile(
    r"\b(?:weather|forecast|rain|raining|snow|snowing|news|headlines|stock|stocks|"
    r"share price|price of|prices?|exchange rate|score|scores|near me|open now|outage|"
    r"showtimes|flights?|traffic|recipe|reviews?|tutorials?|documentation|docs for|"
    r"latest version|release date|trending|these days|population of|"
    # Tours and results, also as second-language English writes them ("who win yesterday?").
    r"touring|tour dates|on tour|who\s+(?:win|won|wins)\s+(?:yesterday|today|last\s+night)|"
    r"opening\s+hours|[oö]ffnungszeiten|horarios?\s+de\s+atenci[oó]n|orari\s+di\s+apertura|"
    # Weather in the languages people mix in.
    r"clima|pron[oó]stico|qu[eé]\s+tiempo\s+(?:va\s+a\s+)?hac\w+|che\s+tempo\s+fa|"
    r"previs[aã]o\s+do\s+tempo|m[eé]t[eé]o)\b|"
    r"\bhow much (?:is|are|does|do|did) (?:a|an|the)\b|\b(?:places|spots) (?:in|near|around)\b",
    _I,
)
# A song's words are fetched, never recalled ("lyrics to …", "letra da música …"), unless the
# person asks for new ones (`_NEW_WORDS_RE`: "write me lyrics for a birthday song").
_LYRICS_RE = re.compile(r"\b(?:lyrics|letras?\s+d[aeo]|paroles\s+de|songtext)\b", _I)
_NEW_WORDS_RE = re.compile(
    r"\b(?:write|writing|compose|make\s+up|come\s+up\s+with|rhym\w*|rewrite|translate|"
    r"parody|my\s+own|new\s+(?:lyrics|verse))\b",
    _I,
)
_WEB_WEAK_RE = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|last night|this (?:week|weekend|month|year)|"
    r"right now|at the moment|currently|current|latest|recent|recently|won|win|playing|"
    r"when is the next|still going on|in (?:19|20)\d\d)\b",
    _I,
)
_QUESTION_RE = re.compile(
    r"\?\s*$|^(?:what|what'?s|whats|who|who'?s|when|where|which|why|how|is|are|was|were|will|"
    r"does|did|do|any|can|could|should)\b",
    _I,
)
_YOU_RE = re.compile(r"\b(?:you|your|you're|youre)\b", _I)

# "how much does apple charge to replace an m1 air battery": a price, not a readout.
_COST_RE = re.compile(
    r"\bhow\s+much\s+(?:does|do|would|will)\s+(?:\w+\s+){1,3}(?:charge|cost)\b", _I
)
# "what's on nofilmschool's homepage today", "front page of lobste.rs": one site's own page to
# read, not a search (not "my homepage", a page "I have open").
_FRONT_PAGE_RE = re.compile(
    r"\b(?:what'?s|whats|what\s+is|what\s+are|headlines|read|summari[sz]e|show)\b[^?.!]{0,40}?"
    r"(?:(?:the\s+)?(?:home\s*page|front\s*page|landing\s+page)\s+(?:of|on)\s+(?!my\b|our\b)\S+|"
    r"\b(?!my\b|our\b|this\b|that\b)[\w.\-]+(?:'s)?\s+(?:home\s*page|front\s*page))",
    _I,
)
# "launch the kyocera portal in edge": a page in a browser, not a program.
_IN_A_BROWSER_RE = re.compile(
    r"\b(?:portal|site|website|page|web\s*app|dashboard|url|link)\s+(?:up\s+)?(?:in|on|with)\s+"
    r"(?:my\s+|the\s+|a\s+)?(?:browser|firefox|chrome|chromium|safari|edge|brave|opera|vivaldi|"
    r"new\s+tab)\b",
    _I,
)
# "open google scholar in safari": a site named and the browser to show it in (no file).
OPEN_SITE_IN_BROWSER_RE = re.compile(
    r"^" + _SYSTEM_LEAD + r"(?:open|load|pull\s+up|bring\s+up|go\s+to)\s+(?:up\s+)?"
    r"(?:[\w.\-']+\s+){1,4}?(?:in|on|with|using)\s+(?:my\s+|the\s+|a\s+)?(?:browser|firefox|"
    r"chrome|chromium|safari|edge|brave|opera|vivaldi|librewolf)\b",
    _I,
)
# A site named without its address ("launch the BBC weather site", "Apri il sito del Gambero
# Rosso", "just open the GRA taxpayer portal", "the schedule on the Temple Gardens Centre
# website", "NHS Jobs site. band 8a posts up today?"): one site to open or read, not a program,
# a file or a search.
_SITE_NOUN = (
    r"(?:web\s*site|web\s*page|home\s*page|portal|site|sito(?:\s+web)?|sitio(?:\s+web)?|"
    r"site\s+web)"
)
_OPEN_NAMED_SITE_RE = re.compile(
    r"^" + _SYSTEM_LEAD + r"(?:open|launch|load|visit|pull\s+up|bring\s+up|go\s+(?:to|on)|"
    r"apri|abre|abrir|ouvre|[oö]ffne|otw[oó]rz|fungua|buka)\s+(?:up\s+)?"
    r"(?:the|their|its|il|lo|la|el|le|o|die|den|das)\s+(?:[\w&'.-]+\s+){0,5}?"
    + _SITE_NOUN
    + r"(?:\s+(?:del|della|dello|de|di|do|da|du|of)\s+[\w&'.-]+(?:\s+[\w&'.-]+){0,3})?"
    r"(?=\s*$|\s*[,.!?;:—–-]|\s+(?:for|so|and|to|please|pls|per|por|porfa|now)\b)",
    _I,
)
# The same named in capitals, as a name: "on the Temple Gardens Centre website", "NHS Jobs site."
_NAMED_SITE_RE = re.compile(
    r"\b(?i:on|from|at)\s+(?i:the|their)\s+(?:[A-Z][\w&'.-]*\s+){1,5}"
    r"(?i:web\s*site|site|home\s*page|portal)\b|"
    r"^(?:[A-Z][\w&'.-]*\s+){1,4}(?i:web\s*site|site|portal)\s*[.:,!-]"
)


# "open <url> in my browser": the whole message asks to hand the link to the desktop, not to
# read the page here (`open_url`, not `web_fetch`). Read with the URL blanked out.
_OPEN_IN_BROWSER_RE = re.compile(
    r"^(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:open|launch|show|load)\s+(?:up\s+)?"
    r"(?:(?:in|with|using|on)\s+(?:my|the|a|your)?\s*(?:default\s+|usual\s+|web\s+)*"
    r"(?:browser|firefox|chrome|chromium|safari|edge|brave|opera|vivaldi|librewolf)"
    r"|in\s+a\s+new\s+(?:tab|window))"
    r"(?:\s+(?:please|for\s+me))?\s*[.!]?$",
    _I,
)
# The whole message besides its URL is a verb of opening or reading it ("load <url>", "pls
# visit <url>"): the page is all it asks for, whatever words the address holds.
_ONLY_BROWSE_VERB_RE = re.compile(
    r"^(?:(?:please|pls|can\s+you|could\s+you)\s+)?(?:open|read|visit|go\s+to|browse|fetch|"
    r"load|summari[sz]e|tl;?dr)(?:\s+(?:up|the\s+page|this|this\s+page))?"
    r"(?:\s+(?:please|pls|for\s+me))?\s*[.!:]?$",
    _I,
)
_BROWSE_VERB_RE = re.compile(
    r"\b(?:open|read|visit|go to|browse|fetch|get|summari[sz]e|tl;?dr|check|look at|load|"
    r"what does|what is|whats|what's)\b",
    _I,
)

# --- risk
_DESTRUCTIVE_RE = re.compile(
    r"\b(?:rm|rmdir|del|delete|deleting|remove|removing|erase|wipe|shred|format|mkfs|dd|"
    r"shutdown|shut\s+down|poweroff|power\s+off|halt|reboot|kill|killall|pkill|truncate|"
    r"drop|purge|uninstall|overwrite|destroy|fdisk|parted|chown|chmod)\b|"
    r"(?:^|\s)(?:>|sudo\s+rm)\s",
    _I,
)
# High whatever the punctuation around them: a credential file, and anything aimed at `/`
# itself ("rm -rf /", `ls "/"`, "/*"). Downloads piped to a shell and `git clean` / `git reset
# --hard` are checked stage by stage in `_high_risk`, which keeps every scan linear.
_HIGH_RISK_RE = re.compile(
    r"(?:\.ssh|\.gnupg|\.aws|\.netrc|\.pgpass|\.git-credentials|\.password-store|\.pypirc|"
    r"\.npmrc|\.kube/config|\.docker/config\.json|\.config/gh|\.local/share/keyrings)\b|"
    r"/etc/(?:g?shadow|sudoers)\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|"
    r"(?<![\w./~\-])/(?:\*|\.)?(?![\w./~\-*])|"
    r"[<$]\(\s*(?:curl|wget)\b",
    _I,
)
_STAGE_SPLIT_RE = re.compile(r"\|\|?|&&?|;|\n")
_WORD_SPLIT_RE = re.compile(r"[\s\"'`()]+")
_DOWNLOADERS = frozenset({"curl", "wget"})
_SHELLS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "perl", "ruby", "node"}
)

# --- research (a web lookup that is a task of several searches and pages: `research`)
# Comparing options, weighing sources, recommending, planning: any one of these marks a lookup
# as research. Each alternative is a bounded run of literal words.
_RESEARCH_COMPARE_RE = re.compile(
    r"\b(?:compar(?:e|es|ed|ing|ison|isons)|comparer|versus|vs\.?|pros\s+(?:and|&|/)\s+cons|"
    r"trade-?offs?|side\s+by\s+side|shortlist|weigh(?:\s+(?:up|them|it|those|these|the))?)\b",
    _I,
)
_RESEARCH_PICK_RE = re.compile(
    r"\b(?:recomm?end\w{0,8}|recomend\w{0,8}|pick\s+(?:one|the\s+best|for\s+me|me\s+one)|"
    r"choose\s+(?:one|for\s+me)|tell\s+me\s+which|which\s+(?:one\s+)?to\s+(?:get|buy|choose|pick)|"
    r"(?:which|what)\s+(?:one\s+)?(?:should|would|do)\s+(?:i|we)\s+(?:buy|get|choose|pick|go\s+for)|"
    r"help\s+me\s+(?:choose|decide|pick)|(?:which|wich)\s+(?:one\s+)?is\s+(?:the\s+)?"
    r"(?:best|better|cheapest|worth)|worth\s+(?:it|buying|the\s+money))\b",
    _I,
)
_RESEARCH_SOURCES_RE = re.compile(
    r"\b(?:research(?:ing)?|legwork|dig\s+into|deep\s+dive|(?<!open\s)sources|studies|"
    r"evidence|verdict|literature|(?:check|read|see|look\s+at|find|fynd)\s+(?:me\s+)?"
    r"(?:the\s+|some\s+|sum\s+|a\s+few\s+)?(?:reviews|reveiws|opinions)|"
    r"what\s+(?:do|does)\s+(?:the\s+)?(?:reviews|reddit|people|experts|users)\s+(?:and\s+\w+\s+)?"
    r"(?:\w+\s+)?say)\b",
    _I,
)
_RESEARCH_PLAN_RE = re.compile(
    r"\b(?:itinerar(?:y|ies)|planifie\w{0,4}|plan(?:ning)?\s+(?:\w+\s+){0,3}?"
    r"(?:trip|weekend|holiday|vacation|visit|day\s+out|tour|honeymoon|getaway))\b",
    _I,
)
# Asking to weigh what is out there without naming it ("go through the options", "which ones are
# actually good", "should I get the AirPods or the Buds", "make me a short list").
_RESEARCH_WEIGH_RE = re.compile(
    r"\b(?:go\s+through\s+(?:what'?s\s+out\s+there|the\s+(?:options|numbers|choices|reviews))|"
    r"dig\s+through|look\s+into\s+it|make\s+(?:me\s+|us\s+)?a\s+short\s*list|"
    r"give\s+me\s+(?:some\s+|a\s+few\s+)?options|check\s+a\s+few|stack\s+up|consensus|"
    r"safer\s+bet|(?:which|what)\s+(?:would|should|will)\s+suit|"
    r"(?:which|what)\s+(?:ones?\s+)?(?:are|is)\s+(?:actually\s+|really\s+)?(?:good|worth)|"
    r"(?:is|are)\s+the\s+ones?\s+to\s+(?:get|buy)|which\s+one\s*[?.!]*$|"
    r"makes?\s+(?:the\s+most\s+)?sense\s+for|is\s+it\s+(?:better|smarter|cheaper)\s+to|"
    r"should\s+(?:i|we)\s+(?:get|buy|go\s+with|pick|choose)\s+[^?.!\n]{1,60}?\s+or\s|"
    r"figure\s+out\s+a\s+(?:week|plan|route|schedule|itinerary)|"
    r"plan\s+(?:a|an|my|our|the)\s+(?:[\w-]+\s+){0,3}?(?:party|wedding|retreat|event|celebration)|"
    r"where\s+should\s+(?:we|i)\s+(?:base|stay|host|go|move)|"
    r"what\s+do\s+(?:actual|real)\s+\w+\s+use)",
    _I,
)
RESEARCH_RES = (
    _RESEARCH_COMPARE_RE,
    _RESEARCH_PICK_RE,
    _RESEARCH_SOURCES_RE,
    _RESEARCH_PLAN_RE,
    _RESEARCH_WEIGH_RE,
)
# One fact asked for, whatever research words dress it ("research what time the Target closes",
# "compare today's euro rate to yesterday's", "gather sources on what date the tour ended"): a
# single lookup unless the person also asks to pick among options.
RESEARCH_ONE_FACT_RE = re.compile(
    r"\b(?:what\s+(?:time|date|day)|when\s+(?:does|do|is|did)|opening\s+hours|"
    r"(?:exact\s+|release\s+)date|lyrics|star\s+rating|definition\s+of|who\s+won|"
    r"(?:tax|exchange|euro|dollar|interest|inflation)\s+rate|how\s+much\s+(?:is|are|does)|"
    r"costs?\s+in)\b",
    _I,
)

# --- memory: words that mark a message as something to keep, in any position ("…, keep that in
# mind", "save please", "fyi …", "update: …", "forget my old …", "in case I ask"; and the same in
# the languages people mix in). With the classifier sure of a memory write, one of these lets it
# choose one (broker/router/classifier.py); a model's memory write needs one too (`reach`).
KEEP_SIGN_RE = re.compile(
    r"\b(?:remember|rember|remeber|memori[sz]e|forget|keep|save|store|note|noted|jot|"
    r"write\s+(?:this|that|it)\s+down|update|updated|fyi|btw|by\s+the\s+way|heads\s+up|"
    r"(?:just\s+)?so\s+(?:you|u)\s+know|for\s+(?:future|later|next\s+time|the\s+record)|"
    r"from\s+now\s+on|going\s+forward|stash|put\s+(?:that|this|it)\s+on\s+file|"
    r"in\s+case\s+i\s+(?:ever\s+)?(?:ask|need|forget)|"
    # The same in languages people mix in: Portuguese, Swahili, French, Italian, Spanish,
    # Filipino, Indonesian, Polish, German.
    r"lembra\w{0,4}|kumbuka|souviens|rappelle|nakuambia|ricorda\w{0,2}|recuerda|"
    r"(?:paki)?tandaan|makalimutan|simp[ae]n|cat[ae]t|inget|ingat|lupain|pami[eę]taj|"
    r"zapami[eę]taj|merk\s+dir|vergiss|vergeet|guarda\w{0,4}|gu[aá]rdalo|acu[eé]rdate|olvida|anota\w{0,2})\b",
    _I,
)

# --- a desktop program by its name ("open firefox pls", "Open Control Panel", "fungua VS Code"):
# launching it is a system task, never a site to browse. Only names that are programs first;
# a name that is mostly a site (youtube, bandcamp, gmail) is left to the other rules.
_DESKTOP_APPS = (
    r"firefox|chrom(?:e|ium)|google\s+chrome|(?:microsoft\s+)?edge|safari|brave|opera|vivaldi|"
    r"thunderbird|outlook|(?:microsoft\s+|ms\s+)?(?:word|excel|powerpoint|onenote|teams)|"
    r"libre\s*office(?:\s+\w+)?|discord|steam|obs(?:\s+studio)?|vlc|gimp|inkscape|blender|krita|"
    r"audacity|(?:adobe\s+)?(?:premiere(?:\s+pro)?|photoshop|illustrator|lightroom|acrobat|"
    r"after\s+effects|indesign)|davinci\s+resolve|final\s+cut(?:\s+pro)?|garageband|ableton"
    r"(?:\s+live)?|fl\s+studio|logic\s+pro|vs\s*code|visual\s+studio(?:\s+code)?|pycharm|"
    r"intellij(?:\s+idea)?|android\s+studio|xcode|sublime(?:\s+text)?|notepad(?:\+\+)?|"
    r"calculator|terminal|konsole|powershell|command\s+prompt|cmd|task\s+manager|"
    r"activity\s+monitor|system\s+monitor|control\s+panel|device\s+manager|"
    r"(?:system\s+)?(?:settings|preferences)|file\s+explorer|explorer|finder|nautilus|dolphin|"
    r"spotify|slack|zoom|skype|signal|telegram|whatsapp|keepass(?:xc)?|minecraft|solitaire|paint|"
    r"snipping\s+tool|regedit|registry\s+editor|quickbooks|jupyter(?:\s+lab)?|keynote"
)
DESKTOP_APP_RE = re.compile(
    r"^" + _POLITE + r"(?:open|start|launch|run|fire\s+up|bring\s+up|fungua|abre|abrir|"
    r"ouvre|apri|buka|pakibukas|otw[oó]rz|[oö]ffne|close|quit|exit|shut|"
    # Closing, in the languages people mix in: Italian, Spanish, French, Portuguese, German,
    # Polish, Swahili, Dutch, Turkish.
    r"chiudi|cierra|ferme|fecha|schlie(?:ß|ss)e?|zamknij|funga|sluit|kapat|"
    # Filipino: "isara mo", "pakisara", "buksan mo"
    r"(?:paki)?(?:isara|sara|buksan|bukas)(?:\s+mo)?(?:\s+(?:na|nga|naman))?(?:\s+(?:lahat\s+ng|ang|yung))?)\s+"
    r"(?:up\s+|down\s+|doon\s+)?"
    r"(?:the\s+|my\s+|that\s+|this\s+|a\s+new\s+|o\s+|el\s+|la\s+|le\s+|il\s+)?"
    r"(?:" + _DESKTOP_APPS + r")(?:\s+(?:app|application|program|programme|window|thing))?"
    r"(?:[\s,]+(?:down|please|pls|plz|for\s+me|now|po|tafadhali|porfa|por\s+favor|per\s+favore|"
    r"bitte|na))*\s*[.!]*\s*"
    # "open the LibreOffice Calc, vou fazer the price list", "close WhatsApp, it makes noise all
    # day", "open Excel for me, please? Just the program": why, after it, asking nothing more.
    r"(?:[,.!?]\s*[^?]{1,100})?$",
    _I,
)
# A program the person names as one, by a capitalised name ("Could you open the Photos app for
# me so we can see them properly?", "Please open the Photos programme"): launched, whatever the
# name; not "the app store page".
NAMED_PROGRAM_RE = re.compile(
    r"\b(?i:open|start|launch|quit|close)\s+(?i:the\s+|my\s+)?[A-Z][\w.+-]*(?:\s+[A-Z][\w.+-]*)?"
    r"\s+(?i:app|application|program|programme)\b(?!\s+(?i:store|page|website|site))"
)
# The same with the verb after the name, as Hindi-English puts it ("Final Cut Pro open karo",
# "screen share ke liye Zoom start kar do", "Premiere force quit kar de").
DESKTOP_APP_VERB_LAST_RE = re.compile(
    r"\b(?:" + _DESKTOP_APPS + r")\s+(?:open|start|band|close|quit|force\s+quit|launch)\s+"
    r"(?:karo|kar\s+d[oe]|kardo|karde|kar\s+le|kar)\b",
    _I,
)
