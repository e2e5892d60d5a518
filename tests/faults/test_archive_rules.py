"""Archives follow the disk's rules (issue 33): a hidden name, a name the ``.gitignore`` excludes, a block
folder's files and what the user ignored, inside a zip or tar, are left out as the same names on disk
are: not indexed, not searchable, not read for a person or a model.

The property test builds the same members twice, once in an archive and once as files in a folder
beside it, and checks that the walker's answer on disk and ``member_reason``'s answer in the archive
agree for every generated name. The real index checks each interface the probe used.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sensetree.ingest.confine import NotServed, RootGuard
from sensetree.ingest.extract.archives import archive_members, ignore_files, read_archive
from sensetree.ingest.extract.base import Job
from sensetree.ingest.walker import MAX_IGNORE_BYTES, inner_ignores, member_reason, member_rules, walk
from sensetree.operations import IgnoreParams, QueueParams
from tests.support.index import catalog, catalog_under

GITIGNORE = "private.txt\n*.key\nsecret/\nlogs/*.log\n"
PARTS = st.sampled_from([".env", ".ssh", "id_rsa", ".git", "config", "node_modules", "pkg", "private.txt",
                         "a.key", "secret", "logs", "x.log", "notes", "readme.md", "docs", "plan.txt", "__pycache__",
                         ".DS_Store", "Thumbs.db", "._resource", "report.txt", "keys"])
MEMBER = st.lists(PARTS, min_size=1, max_size=4).map("/".join)


def _extract_to(folder: Path, members: dict[str, str]) -> None:
    for name, text in members.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _consistent(names: list[str]) -> dict[str, str]:
    """Member names that can be files at once on disk: none is also a folder of another."""
    kept: dict[str, str] = {}
    for name in names:
        if any(other.startswith(name + "/") or name.startswith(other + "/") for other in kept):
            continue
        kept[name] = f"text of {name}"
    return kept


FOLDER = st.lists(PARTS.filter(lambda p: "." not in p), max_size=2).map("/".join)
PATTERNS = st.lists(st.sampled_from(["plan.txt", "*.md", "docs/", "!readme.md", "report*", "keys/", "/notes",
                                     "*.txt", "pkg"]), min_size=1, max_size=3).map("\n".join)
INNER_IGNORE = st.tuples(FOLDER, st.sampled_from([".gitignore", ".sensetreeignore"]), PATTERNS)


def _archive(members: dict[str, str | bytes], kind: str) -> bytes:
    """The bytes of a zip or tar.gz holding ``members``."""
    out = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(out, "w") as bundle:
            for name, content in members.items():
                bundle.writestr(name, content)
    else:
        with tarfile.open(fileobj=out, mode="w:gz") as bundle:
            for name, content in members.items():
                data = content.encode() if isinstance(content, str) else content
                info = tarfile.TarInfo(name)
                info.size = len(data)
                bundle.addfile(info, io.BytesIO(data))
    return out.getvalue()


NESTED = "inner.zip"  # members whose path starts here go in an archive inside the archive


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.one_of(MEMBER, MEMBER.map(f"{NESTED}/".__add__)), min_size=1, max_size=8),
       kind=st.sampled_from(["zip", "tar.gz"]),
       inner=st.lists(st.tuples(st.sampled_from(["", f"{NESTED}/"]), INNER_IGNORE), max_size=3))
def test_a_member_is_left_out_exactly_when_the_same_name_on_disk_is(tmp_path_factory, names, kind, inner):
    """The archive's own .gitignore files count too, each below its folder, as they would on disk; so do
    those of an archive inside it (issue 42), the inner archive taken as a folder as the outer one is."""
    base = tmp_path_factory.mktemp("rules")
    root = base / "root"
    root.mkdir()
    (root / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    placed = [(where + f"{folder}/{name}".lstrip("/"), patterns) for where, (folder, name, patterns) in inner]
    members = _consistent(names + [path for path, _ in placed])
    for path, patterns in placed:
        if path in members:
            members[path] = patterns + "\n"
    nested = {name.removeprefix(f"{NESTED}/"): text for name, text in members.items() if name.startswith(f"{NESTED}/")}
    outer: dict[str, str | bytes] = {name: text for name, text in members.items() if name not in
                                     {f"{NESTED}/{n}" for n in nested}}
    if nested:
        outer[NESTED] = _archive(dict(nested), "zip")
    archive = root / f"bundle.{kind}"
    archive.write_bytes(_archive(outer, kind))
    on_disk = root / "bundle"  # the same members, extracted beside it
    _extract_to(on_disk, members)

    walked = {Path(e.path).relative_to(on_disk).as_posix() for e in walk(str(root))
              if e.kind == "file" and Path(e.path).is_relative_to(on_disk)}
    rules = member_rules(str(archive), [str(root)])
    ignores = inner_ignores(ignore_files(archive))
    listed = {m.path[len(str(archive)) + 1:] for m in archive_members(archive)} - {NESTED}
    kept = {name for name in listed if member_reason(rules, name.split("/"), ignores) is None}
    assert kept == walked, (members, sorted(walked), sorted(kept))
    guard = RootGuard([str(root)])
    for name in listed:  # the reader's rule (confinement) says the same as indexing's
        try:
            guard.check_served(f"{archive}/{name}")
            served = True
        except NotServed:
            served = False
        assert served == (name in kept), name
    shown = next(read_archive(archive.read_bytes(), Job(archive.name)))
    assert not any(line.startswith((".", "node_modules/")) or "/." in line for line in shown.splitlines()[1:]), shown


ENV = "ZIP_KEY=sk-live-5521 tangerine"
RSA = "-----BEGIN OPENSSH PRIVATE KEY----- quokka"
GIT = "[remote origin] url = https://token@example.com/marmot"
NODE = "module.exports = wombat"
PRIVATE = "payroll of the kestrel crew"
KEPT = "the harbour lighthouse keeper writes about the tides"
LATER = "otters swim in the estuary at dawn"
LOGGED = "debug trace of the pelican deploy"  # excluded by the archive's own .gitignore
TRACED = "stack trace of the cormorant job"  # excluded by the .gitignore of an archive inside the archive
PAYROLL = "salaries of the albatross team"  # excluded by a .gitignore over 256 KB
MINUTES = "minutes of the albatross team meeting"  # beside it: held back, its folder's rules unread
BIG_GITIGNORE = "payroll.txt\n" + "".join(f"generated/part_{n}.bin\n" for n in range(20_000))  # 500 KB


@pytest.mark.parametrize("padding", [0, MAX_IGNORE_BYTES])
def test_an_ignore_file_too_large_to_read_holds_its_folder_back(tmp_path, padding):
    """Below the bound a large .gitignore is read and its rules hold; past it its folder's members are held
    back, each with the reason, never indexed as if the file were not there."""
    root = tmp_path / "root"
    root.mkdir()
    gitignore = "payroll.txt\n" + "#" * padding + "\n"
    archive = root / "big.zip"
    archive.write_bytes(_archive({"team/.gitignore": gitignore, "team/payroll.txt": PAYROLL,
                                  "team/minutes.txt": MINUTES, "top.txt": KEPT}, "zip"))
    rules = member_rules(str(archive), [str(root)])
    ignores = inner_ignores(ignore_files(archive))
    reasons = {name: member_reason(rules, name.split("/"), ignores) for name in ("team/payroll.txt",
                                                                                 "team/minutes.txt", "top.txt")}
    assert reasons["top.txt"] is None and reasons["team/payroll.txt"]
    if padding:
        assert "larger than 256 KB" in reasons["team/minutes.txt"] and "held back" in reasons["team/payroll.txt"]
    else:
        assert reasons["team/minutes.txt"] is None and "excluded" in reasons["team/payroll.txt"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, make_engine):
    base = tmp_path_factory.mktemp("archive-rules")
    root = base / "root"
    root.mkdir()
    (root / ".gitignore").write_text("private.txt\n", encoding="utf-8")
    archive = root / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(".env", ENV)
        bundle.writestr("project/.ssh/id_rsa", RSA)
        bundle.writestr("project/.git/config", GIT)
        bundle.writestr("project/node_modules/pkg/index.js", NODE)
        bundle.writestr("project/private.txt", PRIVATE)
        bundle.writestr("project/.gitignore", "*.log\n")
        bundle.writestr("project/deploy.log", LOGGED)
        bundle.writestr("project/notes.txt", KEPT)
        bundle.writestr("project/later.txt", LATER)
        bundle.writestr("project/inner.zip", _archive({"logs/.gitignore": "*.log\n", "logs/trace.log": TRACED,
                                                       "readme.txt": "the inner archive's readme"}, "zip"))
    (root / "big.zip").write_bytes(_archive({"team/.gitignore": BIG_GITIGNORE, "team/payroll.txt": PAYROLL,
                                             "team/minutes.txt": MINUTES, "top.txt": KEPT}, "zip"))
    data = base / "data"
    engine = make_engine(data, root)
    yield {"root": root, "archive": archive, "data": data, "engine": engine}
    engine.close()




@pytest.mark.slow  # an index with worker processes
@pytest.mark.parametrize("secret", [ENV, RSA, GIT, NODE, PRIVATE, LOGGED, TRACED, PAYROLL, MINUTES])
def test_hidden_and_ignored_members_are_neither_indexed_nor_found(indexed, secret):
    from sensetree.operations import SearchParams

    engine = indexed["engine"]
    files = set(catalog_under(engine, indexed["archive"])) | set(catalog_under(engine, indexed["root"] / "big.zip"))
    assert {f"{indexed['archive']}/project/notes.txt", f"{indexed['archive']}/project/inner.zip/readme.txt",
            f"{indexed['root']}/big.zip/top.txt"} <= files
    assert not any(name in path for path in files
                   for name in ("/.env", "/.ssh/", "/.git/", "node_modules", "private", ".gitignore", "deploy.log",
                                "trace.log", "/team/"))
    word = secret.split()[-1]
    response = engine.run(SearchParams(word))
    assert all(secret not in (r.snippet or "") for r in response.results)
    assert all(not r.path.endswith((".env", "id_rsa", "config", "index.js", "private.txt", ".log", "payroll.txt",
                                    "minutes.txt"))
               for r in response.results)
    shown = engine.reader().read_text(str(indexed["archive"]), 10_000).text  # the archive's own listing
    assert "notes.txt" in shown and ".env" not in shown and "id_rsa" not in shown and "node_modules" not in shown


@pytest.mark.slow  # an index with worker processes
def test_the_queue_says_why_a_folder_of_an_archive_is_held_back(indexed):
    noted = {row.path: row.notes for row in indexed["engine"].run(QueueParams()).noted}
    note = noted[str(indexed["root"] / "big.zip")]
    assert "team" in note and ".gitignore" in note and "larger than 256 KB" in note and "not indexed" in note
    reader = indexed["engine"].reader()
    for member, why in (("big.zip/team/minutes.txt", "larger than 256 KB"),
                        ("bundle.zip/project/inner.zip/logs/trace.log", "excluded by the ignore rules")):
        with pytest.raises(NotServed, match=why):
            reader.read_text(str(indexed["root"] / member), 1000)
    assert reader.read_text(str(indexed["root"] / "bundle.zip/project/inner.zip/readme.txt"), 1000).text


@pytest.mark.slow
@pytest.mark.parametrize("member, why", [(".env", "hidden file"), ("project/.ssh/id_rsa", "hidden folder"),
                                         ("project/.git/config", "hidden folder"),
                                         ("project/private.txt", "excluded by the .gitignore"),
                                         ("project/node_modules/pkg/index.js", "node_modules folder"),
                                         ("project/deploy.log", "excluded by the ignore rules")])
def test_a_left_out_member_is_refused_to_readers_like_the_disk_file(indexed, cli, member, why):
    path = f"{indexed['archive']}/{member}"
    with pytest.raises(NotServed, match=why):
        indexed["engine"].reader().read_text(path, 1000)
    refused = cli.run(indexed["data"], "summarise", path, check=False)
    assert refused.returncode == 1 and why in refused.stderr and "unexpected" not in refused.stderr
    for secret in (ENV, RSA, GIT, NODE, PRIVATE, LOGGED, TRACED):
        assert secret not in refused.stdout + refused.stderr
    assert indexed["engine"].reader().read_text(f"{indexed['archive']}/project/notes.txt", 1000).text == KEPT


@pytest.mark.slow  # indexes again
def test_a_member_the_user_ignored_stays_out_when_its_archive_is_read_again(indexed):
    engine, archive = indexed["engine"], indexed["archive"]
    later = f"{archive}/project/later.txt"
    assert later in catalog_under(engine, archive)
    engine.run(IgnoreParams(later))
    with zipfile.ZipFile(archive, "a") as bundle:  # the archive changes: it is read again
        bundle.writestr("project/more.txt", "a new note about herons")
    engine.index()
    files = set(catalog_under(engine, archive))
    assert f"{archive}/project/more.txt" in files and later not in files
    with pytest.raises(NotServed, match="is ignored"):
        engine.reader().read_text(later, 1000)


@pytest.mark.slow  # indexes twice
def test_an_index_made_before_the_rule_loses_its_hidden_members_on_the_next_run(tmp_path, make_engine):
    """A member row an older version indexed (a `.env` in a backup) goes once every archive is read again."""
    root = tmp_path / "root"
    root.mkdir()
    archive = root / "backup.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(".env", ENV)
        bundle.writestr("notes.txt", KEPT)
    with make_engine(tmp_path / "data", root) as engine:
        old = f"{archive}/.env"
        with catalog(engine.data_dir, write=True) as older:  # as an index made before the rule
            older.states.replace_archive_members(str(archive), str(root), [(old, 10, 0.0),
                                                                           (f"{archive}/notes.txt", 10, 0.0)])
            older.set_meta("archive_rules", None)
        assert old in catalog_under(engine, archive)
        engine.index()
        files = catalog_under(engine, archive)
        assert old not in files and f"{archive}/notes.txt" in files
        with catalog(engine.data_dir) as now:
            assert now.meta("archive_rules")
