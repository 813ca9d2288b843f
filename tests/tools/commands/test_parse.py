"""tools/commands/parse.py: a line read into the argv of each stage, its quotes removed as bash
would."""

from __future__ import annotations

from tools.commands.parse import parse_command


def test_parse_command_gives_the_argv_of_each_stage(user_home):
    assert parse_command("ls -l ~/proj | wc -l", home=user_home) == [
        ["ls", "-l", f"{user_home}/proj"],
        ["wc", "-l"],
    ]
    assert parse_command("exec command -p ls") == [["ls"]]


def test_parse_command_removes_quotes_like_bash():
    line = r"""printf '%s\n' 'a b' "c\"d" $'e\tf' g\ h '' '$HOME' '*' "it's" '{}'"""
    assert parse_command(line) == [
        ["printf", "%s\\n", "a b", 'c"d', "e\tf", "g h", "", "$HOME", "*", "it's", "{}"]
    ]
