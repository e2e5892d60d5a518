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
    assert agent.path == tmp_path / "Library" / "LaunchAgents" / "org.sensetree.serve.plist"
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
    assert task.query == ["schtasks", "/Query", "/TN", "SenseTree"]


def test_install_status_uninstall_on_this_machine(tmp_path, cli, monkeypatch):
    """For real, with this machine's systemctl; where there is no user session, install says so."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    data = tmp_path / "data"
    unit = home / ".config" / "systemd" / "user" / "sensetree.service"

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
