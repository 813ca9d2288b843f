"""Start at login: the XDG autostart entry, under a tmp HOME and XDG_CONFIG_HOME (never the real
one)."""

from __future__ import annotations

import configparser
import os
import re
import sys
from pathlib import Path

import pytest

from app import autostart, launcher


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def _entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text(encoding="utf-8"))
    return dict(parser["Desktop Entry"])


def test_enable_writes_the_entry_under_xdg_config_home_and_disable_removes_it(
    user_home, tmp_path, monkeypatch
):
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    assert autostart.is_enabled() is False

    written = autostart.enable(["/usr/bin/chamberlain"])

    assert written == config / "autostart" / "chamberlain.desktop"
    assert autostart.is_enabled() is True
    entry = _entry(written)
    assert entry["Type"] == "Application"
    assert entry["Exec"] == "/usr/bin/chamberlain"
    assert entry["Name"] == "Chamberlain"
    assert not (user_home / ".config").exists()  # nothing in the default place

    assert autostart.disable() is True
    assert not written.exists()
    assert autostart.is_enabled() is False
    assert autostart.disable() is False  # already off: nothing to do, no error


@pytest.mark.parametrize("value", [None, "", "relative/config"], ids=["unset", "empty", "relative"])
def test_without_an_absolute_xdg_config_home_the_entry_goes_to_dot_config(
    user_home, monkeypatch, value
):
    if value is not None:
        monkeypatch.setenv("XDG_CONFIG_HOME", value)
    autostart.enable(["chamberlain"])
    assert (user_home / ".config" / "autostart" / "chamberlain.desktop").is_file()
    assert autostart.is_enabled()


def test_enabling_again_replaces_the_command_and_leaves_other_entries_alone(user_home):
    folder = user_home / ".config" / "autostart"
    folder.mkdir(parents=True)
    other = folder / "other.desktop"
    other.write_text("[Desktop Entry]\nExec=other\n")
    autostart.enable(["/old/chamberlain"])
    autostart.enable(["/new/chamberlain"])
    assert _entry(folder / "chamberlain.desktop")["Exec"] == "/new/chamberlain"
    autostart.disable()
    assert sorted(p.name for p in folder.iterdir()) == ["other.desktop"]
    assert other.read_text() == "[Desktop Entry]\nExec=other\n"


def test_arguments_are_quoted_as_the_desktop_entry_spec_says(user_home):
    path = autostart.enable(
        ["/opt/My Apps/python3", "-m", "app.cli", "--home", "/data/$USER/100%", 'say "hi"', ""]
    )
    # Raw file text: quoting, then the string escape that doubles every backslash.
    exec_line = next(
        line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("Exec=")
    )
    assert exec_line == (
        'Exec="/opt/My Apps/python3" -m app.cli --home "/data/\\\\$USER/100%%" '
        '"say \\\\"hi\\\\"" ""'
    )


def test_a_command_a_desktop_entry_cannot_hold_is_refused_and_nothing_is_written(user_home):
    with pytest.raises(autostart.AutostartError, match="line break"):
        autostart.enable(["chamberlain", "--home", "a\nb"])
    with pytest.raises(autostart.AutostartError, match="no command"):
        autostart.enable([])
    assert not autostart.entry_path().exists()
    assert autostart.is_enabled() is False


def test_a_hand_made_or_switched_off_entry_does_not_count_as_enabled(user_home):
    path = autostart.entry_path()
    path.parent.mkdir(parents=True)
    path.write_text("[Desktop Entry]\nExec=something-else\n")
    assert autostart.is_enabled() is False
    autostart.enable(["chamberlain"])
    path.write_text(path.read_text() + "Hidden=true\n")
    assert autostart.is_enabled() is False


def test_a_folder_that_cannot_be_written_is_a_clear_error(user_home):
    # A file where the autostart folder should be: mkdir fails whoever runs the test.
    (user_home / ".config").mkdir()
    (user_home / ".config" / "autostart").write_text("not a folder")
    with pytest.raises(autostart.AutostartError, match="could not be written"):
        autostart.enable(["chamberlain"])
    assert not autostart.is_enabled()


def test_the_default_command_starts_this_interpreters_desktop_app(user_home):
    command = autostart.default_command()
    assert command == [sys.executable, "-P", "-m", "app.launcher"]
    assert launcher.wants_app(command[4:])  # no arguments: the desktop app, not the CLI


@pytest.fixture
def installed(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in for the Debian package's layout under tmp_path: the bundle's executable in
    usr/lib/chamberlain and usr/bin/chamberlain a symlink to it, as packaging/build.sh makes
    them."""
    install_dir = tmp_path / "usr" / "lib" / "chamberlain"
    install_dir.mkdir(parents=True)
    binary = install_dir / "chamberlain"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    command = tmp_path / "usr" / "bin" / "chamberlain"
    command.parent.mkdir(parents=True)
    command.symlink_to(binary)
    return install_dir, command


def test_the_installed_app_starts_at_login_through_usr_bin_not_its_bundle_path(
    user_home, installed
):
    install_dir, command = installed
    found = autostart.default_command(
        frozen=True,
        executable=str(install_dir / "chamberlain"),
        install_dir=install_dir,
        installed_command=command,
    )
    assert found == [str(command)]
    assert _entry(autostart.enable(found))["Exec"] == str(command)


def test_a_built_binary_outside_the_install_folder_starts_itself(user_home, installed, tmp_path):
    install_dir, command = installed
    elsewhere = tmp_path / "unpacked" / "chamberlain"
    assert autostart.default_command(
        frozen=True, executable=str(elsewhere), install_dir=install_dir, installed_command=command
    ) == [str(elsewhere)]


def test_the_bundle_without_its_usr_bin_command_starts_itself(user_home, installed):
    install_dir, command = installed
    command.unlink()  # e.g. the package unpacked with dpkg -x, or /usr/bin/chamberlain removed
    binary = str(install_dir / "chamberlain")
    assert autostart.default_command(
        frozen=True, executable=binary, install_dir=install_dir, installed_command=command
    ) == [binary]


def test_the_install_paths_are_the_ones_the_package_installs():
    """packaging/build.sh links /usr/bin/chamberlain to the bundle in /usr/lib/chamberlain: if
    either moves, the autostart entry would name a command the package no longer installs."""
    build = (Path(__file__).parents[2] / "packaging" / "build.sh").read_text(encoding="utf-8")
    [link] = re.findall(r'^ln -s (\S+) "\$stage(\S+)"', build, re.M)
    target, command = link
    assert Path(command) == autostart.INSTALLED_COMMAND
    # A relative link (Debian's policy within /usr) resolved from the command's own folder.
    resolved = Path(os.path.normpath(autostart.INSTALLED_COMMAND.parent / target))
    assert resolved == autostart.INSTALL_DIR / "chamberlain"
