"""tools/mcp/sandbox.py: what a server's settings make of its sandbox — its roots, what it may
change, its environment, and what happens where no sandbox works. Real folders under tmp_path;
the servers that really run in these walls are tests/security/test_mcp_containment.py's."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support import mcp_fs
from tests.support.mcp_notes import notes_config, write_notes
from tools.manual import ToolError
from tools.mcp import sandbox as server_sandbox
from tools.mcp.config import McpServerConfig
from tools.mcp.hub import McpHub
from tools.mcp.sandbox import (
    SandboxUnavailable,
    ScratchHomes,
    ServerPlaces,
    expanded_args,
    server_launch,
    server_roots,
)
from tools.registry import ToolRegistry
from tools.sandbox import SandboxStatus, sandbox_status

NO_SANDBOX = SandboxStatus(
    False,
    None,
    "bubblewrap (bwrap), which builds the sandbox every command runs in, is not installed",
    "install the bubblewrap package and start Chamberlain again",
)


@pytest.fixture
def places(tmp_path: Path) -> ServerPlaces:
    home = tmp_path / "person"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    (home / "Documents").mkdir()
    app = home / ".chamberlain"
    app.mkdir()
    (app / "token.key").write_text("secret")
    return ServerPlaces.for_install(app, home)


def test_a_leading_tilde_in_an_argument_is_the_persons_home_also_after_an_option(places):
    home = str(places.home)
    assert expanded_args(("~/notes", "--db=~/data.db", "~user", "a~/b"), places.home) == (
        f"{home}/notes",
        f"--db={home}/data.db",
        "~user",
        "a~/b",
    )


def test_the_paths_a_server_is_given_are_its_roots_and_its_own_script_stays_code(places, tmp_path):
    script = tmp_path / "server.py"
    script.write_text("print()")
    data = places.home / "data.db"
    data.write_text("")
    config = McpServerConfig(
        command=sys.executable,
        args=(str(script), "~/Documents", "--db=~/data.db", "--verbose", "not-a-path"),
        write=True,
    )
    roots = server_roots(config, places)
    assert roots.roots == (places.home / "Documents", data)
    assert roots.code == (script,)
    assert roots.writable is True
    assert roots.left_out == ()


def test_a_root_that_is_private_chamberlains_or_above_the_home_is_left_out_saying_why(places):
    config = McpServerConfig(
        command=sys.executable,
        args=("~/.ssh", str(places.app_dirs[0] / "token.key"), "/", str(places.home.parent)),
    )
    roots = server_roots(config, places)
    assert roots.roots == ()
    why = dict(roots.left_out)
    assert "holds credentials" in why["~/.ssh"]
    assert "Chamberlain's own files" in why[str(places.app_dirs[0] / "token.key")]
    assert "whole home folder" in why["/"]
    assert "whole home folder" in why[str(places.home.parent)]


@pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here")
def test_a_sandboxed_launch_mounts_its_folder_writable_only_when_it_may_write(places):
    homes = ScratchHomes(places)
    folder = places.home / "Documents"
    for write, mounted in ((False, "--ro-bind"), (True, "--bind")):
        config = McpServerConfig(command=sys.executable, args=(str(folder),), write=write)
        launch = server_launch("docs", config, places, homes)
        argv = list(launch.argv)
        assert launch.plan is not None
        assert argv[0] == sandbox_status().program
        where = argv.index(str(folder))
        assert argv[where - 1] == mounted
        # Chamberlain's folder and the key are never mounted; its own cache is, last.
        assert str(places.home / ".ssh" / "id_rsa") not in argv
        assert launch.cache == places.app_dirs[0] / "mcp" / "docs"
        program = argv.index("--")
        assert argv[program - 3 : program] == ["--bind", str(launch.cache), str(launch.cache)]
        assert argv[program + 1 :] == [sys.executable, str(folder)]


@pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here")
def test_a_sandboxed_servers_environment_is_small_and_offline_without_a_network(
    places, monkeypatch
):
    monkeypatch.setenv("CHAMBERLAIN_API_KEY", "sk-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("NOTES_TOKEN", "from-the-environment")
    config = McpServerConfig(command=sys.executable, env={"TOKEN": "${env:NOTES_TOKEN}"})
    env = server_launch("plain", config, places, ScratchHomes(places)).env
    assert "CHAMBERLAIN_API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["TOKEN"] == "from-the-environment"
    assert env["HOME"] == str(places.home)  # `~` means to the server what it means to the person
    assert env["npm_config_cache"].startswith(str(places.app_dirs[0] / "mcp" / "plain"))
    assert env["npm_config_offline"] == "true"


def test_without_a_sandbox_here_a_server_is_not_started_and_no_message_offers_turning_it_off(
    places,
):
    config = McpServerConfig(command=sys.executable)
    with pytest.raises(SandboxUnavailable) as raised:
        server_launch("plain", config, places, ScratchHomes(places), status=NO_SANDBOX)
    said = str(raised.value)
    assert said.startswith("MCP servers run only inside a sandbox, and there is none here: ")
    assert "install the bubblewrap package" in said
    for offer in ('"sandbox"', "sandbox: false", "unsandboxed", "without a sandbox"):
        assert offer not in said


def test_a_server_the_sandbox_cannot_start_is_failed_with_that_sentence(
    places, tmp_path, monkeypatch
):
    monkeypatch.setattr(server_sandbox, "sandbox_status", lambda: NO_SANDBOX)
    notes = write_notes(tmp_path / "notes")
    hub = McpHub({"notes": notes_config(notes)}, ToolRegistry(), places=places)
    try:
        hub.ensure()
        status = hub.server_status("notes")
    finally:
        hub.close()
    assert status.state == "failed"
    assert status.failure_kind == "not_started"
    assert (status.last_error or "").startswith("MCP servers run only inside a sandbox")


def test_turning_the_sandbox_off_is_the_persons_choice_and_is_said_plainly(places):
    config = McpServerConfig(command=sys.executable, sandbox=False)
    launch = server_launch("open", config, places, ScratchHomes(places), status=NO_SANDBOX)
    assert launch.plan is None
    assert launch.words.startswith("runs WITHOUT a sandbox")
    assert "everything you can" in launch.words


@pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here")
@pytest.mark.skipif(
    (mcp_fs.node_missing() or mcp_fs.install_problem()) is not None,
    reason=str(mcp_fs.node_missing() or mcp_fs.install_problem()),
)
def test_a_write_into_a_read_only_folder_fails_saying_the_settings_do_not_let_it_write(
    places, tmp_path
):
    """The reference filesystem server, whose entry does not say it may write."""
    notes = write_notes(tmp_path / "notes")
    config = McpServerConfig.model_validate(mcp_fs.server_settings(notes, write=False))
    hub = McpHub({"files": config}, ToolRegistry(), places=places)
    try:
        hub.ensure()
        with pytest.raises(ToolError) as failed:
            hub.call("files", "write_file", {"path": str(notes / "new.txt"), "content": "x"})
    finally:
        hub.close()
    said = str(failed.value)
    assert "read-only file system" in said.lower()
    assert said.endswith(
        '(its sandbox shows it its folders read-only: its settings do not say "write": true)'
    )
    assert not (notes / "new.txt").exists()


@pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here")
@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")
def test_a_server_npx_must_fetch_fails_at_once_saying_its_sandbox_has_no_network(places):
    """The entry people paste (`npx -y PACKAGE`), for a package not in the server's cache: npx
    is told to stay offline, so it fails in a moment rather than after its retries, and the
    status says why and what to do. Nothing is fetched: the sandbox has no network."""
    config = McpServerConfig(
        command="npx", args=("-y", "@modelcontextprotocol/server-everything"), connect_timeout_s=60
    )
    hub = McpHub({"everything": config}, ToolRegistry(), places=places)
    try:
        hub.ensure()
        status = hub.server_status("everything")
    finally:
        hub.close()
    assert status.state == "failed"
    assert (status.last_error or "").endswith(
        "its sandbox has no network, so npx could not fetch the server's package: install the "
        'package and name its program in the entry\'s command, or give the entry "network": true'
    )


@pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here")
def test_a_folder_named_through_a_symlink_is_found_where_the_settings_name_it(places, tmp_path):
    """`~/notes` a link to a folder elsewhere (a synced drive): the server, told `~/notes`,
    finds its notes there inside its sandbox (and at the real place)."""
    real = write_notes(tmp_path / "drive" / "notes")
    (places.home / "notes").symlink_to(real)
    config = notes_config(places.home / "notes", write=False)
    roots = server_roots(config, places)
    assert roots.roots == (real,)
    assert roots.aliases == ((places.home / "notes", real),)
    hub = McpHub({"notes": config}, ToolRegistry(), places=places)
    try:
        hub.ensure()
        listed = hub.call("notes", "list_notes", {}).text
    finally:
        hub.close()
    assert listed.split() == ["groceries.txt", "ideas.md"]


@pytest.mark.skipif(not sandbox_status().available, reason="no sandbox here")
def test_a_writing_server_given_a_place_that_runs_code_gets_it_read_only_and_says_so(
    places, tmp_path
):
    notes = write_notes(tmp_path / "notes")
    hooks = tmp_path / "repo" / ".git"
    (hooks / "hooks").mkdir(parents=True)
    config = McpServerConfig(command=sys.executable, args=(str(notes), str(hooks)), write=True)
    launch = server_launch("mixed", config, places, ScratchHomes(places))
    assert launch.plan is not None
    assert launch.plan.write == (notes,)
    assert f"sees {notes} (read and change); {hooks} (read only: it runs code" in launch.words


def test_a_script_in_a_hidden_folder_runs_with_the_modules_beside_it(places, tmp_path):
    """A server script under /tmp (hidden in the sandbox, as a fresh clone or a download is)
    imports a module beside it: its folder is shown read-only, not only the file (node finds
    its dependencies the same way, in the node_modules of the folder above)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "greeting.py").write_text('HELLO = "hello from beside the script"\n')
    (package / "server.py").write_text(
        "from greeting import HELLO\n"
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('pkg-test', version='1.0')\n"
        "@server.tool()\n"
        "def hello() -> str:\n"
        '    """Say hello."""\n'
        "    return HELLO\n"
        "server.run('stdio')\n"
    )
    registry = ToolRegistry()
    hub = McpHub(
        {"pkg": McpServerConfig(command=sys.executable, args=(str(package / "server.py"),))},
        registry,
        places=places,
    )
    try:
        hub.ensure()
        status = hub.server_status("pkg")
        assert status.state == "connected", status.last_error
        assert "pkg__hello" in registry.names()
        assert "hello from beside the script" in hub.call("pkg", "hello", {}).text
    finally:
        hub.close()
