"""tools/commands/options.py: a program's options read the way GNU getopt reads them, so a rule
cannot be dodged by how an option is spelled or where it stands."""

from __future__ import annotations

from tools.commands.options import has_flag, long_matches, options_and_operands, program_name


def test_options_after_operands_still_count_and_a_double_dash_ends_them():
    options, operands = options_and_operands(["~", "-r", "notes", "-f", "--", "-rf", "-"])
    assert options == ["-r", "-f"]
    assert operands == ["~", "notes", "-rf", "-"]


def test_a_long_option_is_recognised_abbreviated_or_with_a_value():
    for spelled in ("--recursive", "--rec", "--r", "--recursive=yes"):
        assert long_matches(spelled, ["recursive"])
    assert not long_matches("--", ["recursive"])
    assert not long_matches("--recursively", ["recursive"])
    assert not long_matches("-recursive", ["recursive"])


def test_a_flag_is_found_inside_a_cluster_or_by_its_long_name():
    assert has_flag(["-vrf"], "f", ("force",))
    assert has_flag(["--forc"], "f", ("force",))
    assert not has_flag(["-v", "--verbose"], "f", ("force",))


def test_a_program_is_matched_by_its_base_name_whatever_its_path_or_case():
    assert program_name("/usr/bin/RM.exe") == "rm"
    assert program_name("./bin/Rm") == "rm"
