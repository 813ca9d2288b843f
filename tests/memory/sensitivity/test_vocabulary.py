"""Tests for memory/sensitivity/vocabulary.py: every word in a list does what the list is for
when a person says it (a name in a person context is a person's name, "I am a nurse" is a job,
"I'm French" a nationality), whatever case they type it in, and memory.slots can read the lists
without loading a detector.
"""

from __future__ import annotations

import subprocess
import sys

from memory.sensitivity import vocabulary
from memory.sensitivity.assessment import assess
from memory.sensitivity.vocabulary import DEMONYMS, FIRST_NAMES, JOB_WORDS


def test_every_word_list_is_lower_case_as_the_detectors_compare_tokens() -> None:
    lists = {
        name: value
        for name, value in vars(vocabulary).items()
        if name.isupper() and isinstance(value, frozenset | tuple)
    }
    lists.update(
        {f"HEALTH_KINDS[{kind}]": terms for kind, terms in vocabulary.HEALTH_KINDS.items()}
    )
    assert "FIRST_NAMES" in lists
    shouted = {(name, w) for name, words in lists.items() for w in words if w != w.lower()}
    assert not shouted


def test_every_first_name_typed_capitalised_after_call_is_a_persons_name() -> None:
    missed = [
        n for n in FIRST_NAMES if "a person's name" not in assess(f"call {n.title()} back").reasons
    ]
    assert not missed


def test_every_job_word_after_i_am_a_is_a_job() -> None:
    missed = [j for j in JOB_WORDS if "job" not in assess(f"I am a {j}").reasons]
    assert not missed


def test_every_nationality_after_im_is_a_nationality() -> None:
    missed = [d for d in DEMONYMS if "nationality" not in assess(f"I'm {d.title()}").reasons]
    assert not missed


def test_importing_the_vocabulary_loads_no_detector() -> None:
    """memory.slots reads FIRST_NAMES and JOB_WORDS from here; the rule table stays unloaded."""
    probe = (
        "import sys, memory.sensitivity.vocabulary; "
        "print(sorted(m for m in sys.modules if m.startswith('memory.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "['memory.sensitivity', 'memory.sensitivity.vocabulary']"
