"""tools/commands/readonly.py: which commands a session grant for read-only commands covers."""

from __future__ import annotations

import pytest

from tools.commands.assess import assess_command


@pytest.mark.parametrize(
    ("line", "target"),
    [
        ("df -h", "readonly:df -h"),
        ("ls -la /tmp", "readonly:ls -la /tmp"),
        ("ps aux | grep python | sort", "readonly:ps aux | grep python | sort"),
        ("echo 'a  b'", "readonly:echo 'a  b'"),
        ("  uname   -a  ", "readonly:uname -a"),
        ("exec ls", "readonly:ls"),
        ("nice -n 5 ls", "readonly:nice -n 5 ls"),
        ("sort -o out.txt in.txt", "command:sort -o out.txt in.txt"),
        ("uniq in.txt out.txt", "command:uniq in.txt out.txt"),
        ("date -s 2020-01-01", "command:date -s 2020-01-01"),
        ("hostname newname", "command:hostname newname"),
        ("grep -r needle .", "command:grep -r needle ."),
        ("find build -delete", "command:find build -delete"),
        ("touch new.txt", "command:touch new.txt"),
        ("rm old.txt", "command:rm old.txt"),
    ],
)
def test_command_target_is_readonly_only_for_the_allowlist(user_home, line, target):
    assert assess_command(line, home=user_home).target == target


def test_a_read_only_name_that_resolves_outside_the_system_folders_asks(user_home):
    bin_dir = user_home / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ls"
    fake.write_text("#!/bin/sh\necho not ls\n")
    fake.chmod(0o755)
    check = assess_command("ls", home=user_home, search_path=f"{bin_dir}:/usr/bin:/bin")
    assert check.target == "command:ls"
    assert "not in a system folder" in check.reason
