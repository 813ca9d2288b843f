"""tools/commands/wrappers.py: every program a stage runs, the wrapped one included."""

from __future__ import annotations

import pytest

from tools.commands.wrappers import MAX_WRAPPER_DEPTH, unwrap
from tools.manual import ToolRefused


def test_each_wrapper_is_unwrapped_down_to_the_program_it_runs():
    chain = unwrap(["nice", "-n", "5", "timeout", "3", "env", "rm", "-rf", "build"])
    assert [inv.name for inv in chain] == ["nice", "timeout", "env", "rm"]
    assert [inv.wrapper for inv in chain] == [True, True, True, False]
    assert chain[-1].args == ("-rf", "build")


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["env", "-S", "rm -rf ~"], "splits a string into a hidden command"),
        (["nice", "--frobnicate", "rm"], "an option Chamberlain does not understand"),
        (["sudo", "ls"], "never elevates"),
        (["xargs", "rm"], "runs programs built from its input"),
        (["timeout", "soon", "rm"], "needs a duration"),
    ],
)
def test_a_wrapper_that_hides_what_it_runs_is_refused(argv, why):
    with pytest.raises(ToolRefused, match=why):
        unwrap(argv)


def test_wrappers_nested_too_deep_are_refused():
    with pytest.raises(ToolRefused, match=f"more than {MAX_WRAPPER_DEPTH} wrapper programs"):
        unwrap(["nice"] * MAX_WRAPPER_DEPTH + ["ls"])
