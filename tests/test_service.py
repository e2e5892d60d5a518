"""`sensetree service`: the definitions each system's manager reads, checked by the tools there are here.

The systemd unit goes through `systemd-analyze verify` (Debian's systemd; .ci/run installs it), the
launchd plist through plistlib both ways, the Windows task's XML through an XML parser, and install,
status and uninstall run for real against this machine's `systemctl --user` (which has no user
session here, so install must say so and keep the definition).
"""

from __future__ import annotations

import configparser
import json
import plistlib
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sensetree.errors import BadInput
from sensetree.interfaces import service

AWKWARD = "data dir with spaces, 100% 'quotes' & $HOME"


def _command(tmp_path: Path) -> list[str]:
    return service.serve_command(tmp_path / AWKWARD, 8765, "linux")


def test_the_command_is_this_python_serving_the_data_dir(tmp_path):
    command = _command(tmp_path)
    assert command[:3] == [sys.executable, "-m", "sensetree.interfaces.cli"]
    assert command[3:] == ["serve", "--no-browser", "--port", "8765", "--data-dir", str(tmp_path / AWKWARD)]


def test_systemd_unit_reads_back_and_runs_at_low_priority(tmp_path):
    command = _command(tmp_path)
    unit = service.systemd_unit(command)
    parsed = configparser.ConfigParser(interpolation=None, strict=False)
    parsed.optionxform = str  # systemd keys are case-sensitive
    parsed.read_string(unit)
    run = parsed["Service"]
    assert run["Nice"] == "10" and run["IOSchedulingClass"] == "idle" and run["Restart"] == "on-failure"
    assert parsed["Install"]["WantedBy"] == "default.target"
    words = shlex.split(run["ExecStart"].replace("%%", "%").replace("$$", "$"))
    assert words == command


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (apt-get install systemd)")
def test_systemd_analyze_verifies_the_unit(tmp_path):
    unit = tmp_path / "sensetree.service"
    unit.write_text(service.systemd_unit(_command(tmp_path)), encoding="utf-8")
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                          timeout=120)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if "sensetree.service" in line]
    assert done.returncode == 0 and problems == [], done.stdout + done.stderr
    # the check is real: a word systemd cannot read is reported
    unit.write_text(service.systemd_unit(_command(tmp_path)).replace("Nice=10", "Nice=lowish"), encoding="utf-8")
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                          timeout=120)
    assert "lowish" in done.stderr


def test_launchd_plist_round_trip(tmp_path):
    command = service.serve_command(tmp_path / AWKWARD, 8765, "darwin")
    agent = plistlib.loads(service.launchd_plist(command, tmp_path / "serve.log"))
    assert agent == {
        "Label": "org.sensetree.serve", "ProgramArguments": command, "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False}, "ProcessType": "Background", "LowPriorityIO": True, "Nice": 10,
        "ThrottleInterval": 30, "StandardOutPath": str(tmp_path / "serve.log"),
        "StandardErrorPath": str(tmp_path / "serve.log")}


def test_macos_definition_goes_to_launch_agents(tmp_path):
    agent = service.definition(tmp_path / "data", system="darwin", home=tmp_path)
    own = service.suffix(tmp_path / "data").replace("-", ".")  # a data dir other than the default: its own label
    assert agent.path == tmp_path / "Library" / "LaunchAgents" / f"org.sensetree.serve{own}.plist"
    assert agent.start[0][:2] == ["launchctl", "bootstrap"] and agent.stop[0][:2] == ["launchctl", "bootout"]


def test_windows_task_xml_reads_back(tmp_path):
    command = [r"C:\Users\Zoë\AppData\Local\pipx\venvs\sensetree\Scripts\pythonw.exe", "-m",
               "sensetree.interfaces.cli", "serve", "--no-browser", "--port", "8765", "--data-dir",
               r"C:\Users\Zoë\My Files & <Notes>"]
    content = service.task_xml(command, r"LAPTOP\Zoë").encode("utf-16")
    assert content[:2] in (b"\xff\xfe", b"\xfe\xff")  # schtasks /XML reads UTF-16
    task = ET.fromstring(content)
    ns = {"t": service.TASK_NS}
    assert task.tag == f"{{{service.TASK_NS}}}Task"
    assert task.findtext("t:Settings/t:Priority", namespaces=ns) == "7"
    assert task.findtext("t:Settings/t:ExecutionTimeLimit", namespaces=ns) == "PT0S"
    assert task.findtext("t:Settings/t:DisallowStartIfOnBatteries", namespaces=ns) == "false"
    assert task.findtext("t:Triggers/t:LogonTrigger/t:UserId", namespaces=ns) == r"LAPTOP\Zoë"
    assert task.findtext("t:Principals/t:Principal/t:LogonType", namespaces=ns) == "InteractiveToken"
    assert task.findtext("t:Actions/t:Exec/t:Command", namespaces=ns) == command[0]
    arguments = task.findtext("t:Actions/t:Exec/t:Arguments", namespaces=ns)
    assert arguments.endswith(r'--data-dir "C:\Users\Zoë\My Files & <Notes>"')


def test_windows_definition_registers_a_task(tmp_path):
    task = service.definition(tmp_path / "data", system="win32", home=tmp_path)
    assert task.path == tmp_path / "data" / "sensetree-task.xml"
    assert task.start[0][:2] == ["schtasks", "/Create"] and "/XML" in task.start[0]
    assert task.query == ["schtasks", "/Query", "/TN", f"SenseTree{service.suffix(tmp_path / 'data')}"]


def test_install_status_uninstall_on_this_machine(tmp_path, cli, monkeypatch):
    """For real, with this machine's systemctl; where there is no user session, install says so."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    data = tmp_path / "data"
    unit = home / ".config" / "systemd" / "user" / f"sensetree{service.suffix(data)}.service"

    installed = cli.run(data, "service", "install", check=False)
    assert unit.exists() and f"wrote {unit}" in installed.stdout + installed.stderr
    if installed.returncode != 0:  # no systemd user manager here: the reason is said, the unit kept
        assert "systemctl --user" in installed.stderr and "failed" in installed.stderr
    status = json.loads(cli.run(data, "service", "status", "--json").stdout)
    assert status["installed"] and status["definition"] == str(unit) and not status["running"]
    assert status["registered"] == (installed.returncode == 0)
    text = cli.run(data, "service", "status").stdout
    assert text.startswith("installed: yes") and "running:   no" in text

    removed = cli.run(data, "service", "uninstall")
    assert f"removed {unit}" in removed.stdout and not unit.exists()
    assert "not installed" in cli.run(data, "service", "uninstall").stdout


def test_each_data_dir_has_its_own_service_and_the_default_keeps_todays_names(tmp_path, monkeypatch):
    monkeypatch.setattr(service.platformdirs, "user_data_dir", lambda *a, **k: str(tmp_path / "default"))
    for system, plain in (("linux", "sensetree.service"), ("darwin", "org.sensetree.serve.plist")):
        default = service.definition(tmp_path / "default", system=system, home=tmp_path)
        a = service.definition(tmp_path / "a", system=system, home=tmp_path)
        b = service.definition(tmp_path / "b", system=system, home=tmp_path)
        assert default.path.name == plain
        assert len({default.path, a.path, b.path}) == 3
        assert a.path == service.definition(tmp_path / "x" / ".." / "a", system=system, home=tmp_path).path
        assert b.stop != a.stop and b.query != a.query
    assert service.definition(tmp_path / "default", system="win32").query[-1] == "SenseTree"
    task = service.definition(tmp_path / "a", system="win32")
    assert task.query[-1].startswith("SenseTree-") and task.query[-1] in task.stop[1]
    assert f"\\{task.query[-1]}<" in task.content.decode("utf-16")


def test_uninstall_of_one_data_dir_leaves_anothers_service(tmp_path, cli, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    a, b = tmp_path / "a", tmp_path / "b"
    cli.run(a, "service", "install", "--data-dir", a, check=False)
    unit_a = service.definition(a).path
    assert unit_a.exists()
    removed = cli.run(a, "service", "uninstall", "--data-dir", b)
    assert "not installed" in removed.stdout and unit_a.exists()
    assert str(a) in unit_a.read_text(encoding="utf-8")
    cli.run(a, "service", "uninstall", "--data-dir", a)
    assert not unit_a.exists()


CONTROL = st.characters(min_codepoint=0, max_codepoint=0x9F).filter(lambda c: ord(c) < 32 or ord(c) >= 0x7F)
NAME = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/"), min_size=1, max_size=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=NAME, odd=CONTROL, after=NAME)
def test_a_data_dir_with_a_control_character_is_refused_before_a_unit_is_written(tmp_path, before, odd, after):
    folder = tmp_path / f"{before}{odd}{after}"
    for system in ("linux", "darwin", "win32"):
        with pytest.raises(BadInput, match="control characters"):
            service.definition(folder, system=system, home=tmp_path)
    assert not (tmp_path / ".config").exists()


def test_install_with_a_newline_in_the_data_dir_says_so_and_writes_nothing(tmp_path, cli, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    data = tmp_path / "data\nExecStartPre=/bin/touch /tmp/pwned"
    done = cli.run(tmp_path / "d", "service", "install", "--data-dir", data, check=False)
    assert done.returncode == 1 and "control characters" in done.stderr and "unexpected" not in done.stderr
    assert not (home / ".config" / "systemd").exists()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (apt-get install systemd)")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAME)
def test_systemd_analyze_verifies_the_unit_of_any_printable_data_dir(tmp_path, name):
    command = service.serve_command(tmp_path / name, 8765, "linux")
    unit = tmp_path / "sensetree.service"
    unit.write_text(service.systemd_unit(command), encoding="utf-8")
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                          timeout=120)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if "sensetree.service" in line]
    assert done.returncode == 0 and problems == [], (name, done.stdout + done.stderr)


def test_uninstall_finds_a_unit_an_older_version_wrote_under_the_plain_name_only_if_it_is_this_data_dirs(
        tmp_path, cli, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    a, b = tmp_path / "a", tmp_path / "b"
    old = service.definition(a, legacy=True)  # what install wrote before each data dir had its own unit
    assert old.path.name == "sensetree.service"
    old.path.parent.mkdir(parents=True)
    old.path.write_bytes(old.content)
    assert service.serves(old, a) and not service.serves(old, b)
    assert "not installed" in cli.run(b, "service", "uninstall", "--data-dir", b).stdout and old.path.exists()
    assert json.loads(cli.run(a, "service", "status", "--json", "--data-dir", a).stdout)["installed"]
    assert f"removed {old.path}" in cli.run(a, "service", "uninstall", "--data-dir", a).stdout
    assert not old.path.exists()


def test_a_launchd_agent_says_which_data_dir_it_serves(tmp_path):
    a, b = tmp_path / AWKWARD, tmp_path / "b"
    agent = service.definition(a, system="darwin", home=tmp_path, legacy=True)
    agent.path.parent.mkdir(parents=True)
    agent.path.write_bytes(agent.content)
    assert service.serves(agent, a) and not service.serves(agent, b)


def test_install_with_a_home_that_is_a_file_says_so(tmp_path, cli, monkeypatch):
    home = tmp_path / "home"
    home.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for data in (["--data-dir", tmp_path / "data"], []):  # the data dir given, or the default one under HOME
        done = cli.run(tmp_path / "d", "service", "install", *data, check=False)
        assert done.returncode == 1 and "HOME is set to a file" in done.stderr and "unexpected" not in done.stderr
