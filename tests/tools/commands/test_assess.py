"""tools/commands/assess.py: every rule applied to one line, and the scope of the person's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.commands.assess import assess_command, command_target
from tools.manual import ToolRefused


def test_the_users_own_command_is_scoped_to_exactly_that_line_in_that_folder(user_home):
    assert command_target("  uname   -a  ", home=user_home) == f"command:uname -a\nin {user_home}"


def test_command_target_refuses_with_the_reason(user_home):
    with pytest.raises(ToolRefused, match="`;` runs a second command"):
        command_target("ls; rm -rf ~", home=user_home)


@pytest.mark.parametrize(
    ("line", "reversibility"),
    [
        ("ls", "easy"),
        ("touch x", "effort"),
        ("cp a b", "effort"),
        ("rm x", "irreversible"),
        ("find build -name x -delete", "irreversible"),
        ("curl -d x=1 https://example.org", "irreversible"),
    ],
)
def test_each_command_has_its_own_reversibility(user_home, line, reversibility):
    check = assess_command(line, home=user_home)
    assert check.reversibility == reversibility
    assert reversibility in check.reason or check.readonly


def test_a_command_that_names_a_credential_is_refused_whatever_it_does(user_home):
    (user_home / ".ssh").mkdir()
    (user_home / ".ssh" / "id_ed25519").write_text("not a real key")
    for line in ("cat ~/.ssh/id_ed25519", "ls .ssh", "grep -r x .ssh", "cp x ~/.ssh/"):
        with pytest.raises(ToolRefused, match="credentials"):
            assess_command(line, home=user_home)


def test_a_link_to_rm_under_another_name_is_still_rm(user_home):
    bin_dir = user_home / "bin"
    bin_dir.mkdir()
    rm = Path(os.path.realpath("/bin/rm"))
    (bin_dir / "tidy").symlink_to(rm)
    with pytest.raises(ToolRefused, match="`rm` with recursive or force"):
        assess_command("tidy -rf ~", home=user_home, search_path=f"{bin_dir}:/usr/bin:/bin")
