"""Exact things found exactly (issue 39): SenseTree against Recoll on probes that one file holds.

    python bench/exact.py --files 600 --probes 60 --keyword-only           # a quick look (about 10 minutes)
    python bench/exact.py --work /tmp/exact --keyword-only                  # the defaults; a rerun reuses the indexes
    python bench/exact.py --work /tmp/exact --model minilm --embed-files 60 # and with every vector present

Copies a seeded sample of the text files of FOLDER (default /usr/share/doc; sorted list, ``--files``,
.gz read by both tools) into WORK/copy, indexes it with SenseTree (its own data dir, stopped when the
semantic phase starts: the keyword phase) and with Recoll (``recollindex`` with its own config dir,
``topdirs`` = the copy, told to read as text the plain-text types its default config only names; a
file of a type it still reads no text of stays out of the probe pool, said), and draws ``--probes``
probes of each kind, each held by exactly one file of the copy, as found by scanning the text
SenseTree extracts (the ``preview`` operation; a file longer than its 200,000 characters is read by
Python here, gunzipped) plus each file's own path:

- word: a word of letters as written, held by one file, whose Snowball English stem other words
  give to at least 10 other files ("definite" beside hundreds of "definition");
- identifier: snake_case, UPPER_CASE, CamelCase or dotted.names, held by one file (as a substring,
  any case);
- number: a dotted number or version (1.7.3.3, 2000.09.17), held by one file;
- name: a file's own name, with or without its extension, that no other file or folder is called;
- phrase: 3-4 consecutive words in double quotes that one file holds in that order, each word in 5+ files
  (and at most 300 other files holding all of them: checking "of the" everywhere is slow).

At most one probe of a kind comes from a file, so a kind can run out of files before ``--probes``.

Both tools get the probe as a person types it (Recoll: ``recollq``'s query language). A probe counts
when its file is among the first 3 results (names: the first); an identical copy that SenseTree lists
under a result (its duplicates) counts as that result. With ``--model``/``--embed-files`` and without
``--keyword-only``, a second SenseTree data dir is indexed to the end (every vector present): on
the whole copy, or on ``--embed-files`` files of it (the probes' files first; Recoll and SenseTree's
keyword phase then index those files alone too), and the probes whose file is there run again.
Prints per kind hits/probes for each, the ratio, a few misses (what came first), the keyword
phase's time and query p50/p95; ``--json`` writes every probe's results.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import gzip
import html.parser
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote

import Stemmer

from sensetree import (
    AddRootParams,
    Engine,
    PreviewParams,
    RootsParams,
    SearchParams,
    SenseTreeError,
    SetParams,
    SettingsParams,
    StatusParams,
)

KINDS = ("word", "identifier", "number", "name", "phrase")
TOP = {"name": 1}  # how far down the file may be: names first, the rest among the first 3
DEFAULT_TOP = 3
LIMIT = 10  # results asked of each tool (a miss shows where the file came, if it came)
STEM_FILES = 10  # other files that hold the probe word's stem through other words
PHRASE_WORD_FILES = 5  # files each word of a phrase is in
PHRASE_WITHIN = 300  # at most this many other files hold all its words (checking more is slow): "of the" is not drawn
PHRASE_WINDOW = 200  # characters of a file a phrase is drawn from, at a random place
MIN_WORD = 5
MIN_NAME = 4
SHOWN_SETTINGS = ("embedding.model", "retrieval.rerank", "retrieval.fusion", "retrieval.spelling")
SEP = "\n\x00\n"  # between a file's path and its text: no phrase runs across it
# Recoll types many plain-text files of /usr/share/doc by what `file` says (text/x-changelog for changelog.gz,
# text/x-readme, text/x-authors...) and its default mimeconf has no reader for those: it indexes their names
# only. Its config dir here tells it to read them as text, so that it sees what SenseTree sees; a file of a
# type it still cannot read stays out of the probe pool.
RECOLL_AS_TEXT = (
    "text/x-changelog",
    "text/x-readme",
    "text/x-authors",
    "text/x-makefile",
    "text/x-matlab",
    "text/x-csrc",
    "text/x-chdr",
    "text/x-c++src",
    "text/x-c++hdr",
    "text/x-diff",
    "text/x-news",
    "text/x-todo",
    "text/x-copying",
    "text/x-install",
    "text/x-credits",
    "text/x-asm",
    "text/x-java",
    "text/x-lisp",
    "text/x-tex",
    "text/x-po",
    "text/x-objective-c",
    "text/x-script.python",
    "text/x-ruby",
    "text/x-tcl",
    "text/x-lua",
    "text/x-patch",
    "text/x-ssa",
)

LETTERS = re.compile(r"[A-Za-z]+")
CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
IDENTIFIERS = {
    "snake_case": re.compile(r"(?<![\w.])[a-z][a-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w])"),
    "UPPER_CASE": re.compile(r"(?<![\w.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w])"),
    "CamelCase": re.compile(r"(?<![\w.])(?:[a-z]+|[A-Z][a-z0-9]+)(?:[A-Z][a-z0-9]+)+(?![\w.])"),
    "dotted.name": re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?![\w])"),
}
NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+){2,}(?!\.?\d)")
PHRASE_GAP = re.compile(r"[ \t]+|[ \t]*\n[ \t]*")  # words of a phrase as written: spaces, at most one line break


# the copy ------------------------------------------------------------------------------------------------


def is_text(path: Path) -> bool:
    """Text (after gunzip): UTF-8 without NUL in its first 8 KB, or an HTML page. Images, PDFs and other
    binaries stay out of the copy: Recoll reads no images, and neither tool is measured on them here."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path) as handle:
                head = handle.read(8192)
        else:
            with path.open("rb") as handle:
                head = handle.read(8192)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start > len(head) - 4  # a character cut at 8 KB
    return True


def make_copy(folder: Path, copy: Path, files: int, seed: int) -> list[str]:
    """The sample's paths relative to ``copy``; a copy already there from the same arguments is reused."""
    manifest = copy.parent / "copy.json"
    wanted = {"folder": str(folder), "files": files, "seed": seed}
    if manifest.exists() and copy.exists():
        kept = json.loads(manifest.read_text())
        if {k: kept.get(k) for k in wanted} == wanted:
            return list(kept["paths"])
    everything = sorted(
        os.path.relpath(os.path.join(root, name), folder)
        for root, _, names in os.walk(folder)
        for name in names
        if os.path.isfile(os.path.join(root, name)) and not os.path.islink(os.path.join(root, name))
    )
    texts = [p for p in everything if is_text(folder / p)]
    chosen = sorted(random.Random(f"{seed}:files").sample(texts, min(files, len(texts))))
    if copy.exists():
        shutil.rmtree(copy)
    for rel in chosen:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(folder / rel, copy / rel)
    manifest.write_text(json.dumps({**wanted, "paths": chosen, "all": len(everything), "texts": len(texts)}))
    print(f"copied {len(chosen)} of {len(texts)} text files ({len(everything)} files in all) of {folder} to {copy}")
    return chosen


class _HTMLText(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def python_text(path: Path) -> str:
    """The whole text as Python reads it (gunzipped; an HTML page's text without its tags)."""
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    if re.search(r"\.html?(\.gz)?$", path.name, re.I):
        parser = _HTMLText()
        parser.feed(text)
        text = " ".join(parser.parts)
    return text


# the two tools --------------------------------------------------------------------------------------------


@dataclass
class Indexing:
    seconds: float  # the keyword phase (SenseTree) or recollindex, this run
    reused: bool  # the data dir already held the index: the time is a rescan's
    files: int
    keyword_ready: int
    semantic: int
    chunks_left: int
    total_seconds: float = 0.0  # the whole run (with the semantic phase, where it ran)
    built_seconds: float = 0.0  # the run that built the index, this one or an earlier (WHERE.indexing.json)

    def remembered(self, where: Path) -> Indexing:
        """This run's figures with the time the index took to build, kept beside it for reruns."""
        record = where.with_name(where.name + ".indexing.json")
        if not self.reused:
            record.write_text(json.dumps({"built_seconds": self.seconds}))
        self.built_seconds = json.loads(record.read_text())["built_seconds"] if record.exists() else float("nan")
        return self


def sensetree_index(data: Path, root: Path, model: str | None, keyword_only: bool) -> Indexing:
    """Index ``root`` into ``data``; ``keyword_only`` stops as the semantic phase starts."""
    with Engine(data) as engine:
        before = engine.run(StatusParams()).phases
        if model:
            engine.run(SetParams("embedding.model", model, confirm=True))
        # a search at the keyword phase embeds its candidates on demand, and keeps their vectors: off here,
        # so that the keyword-phase index stays one
        engine.run(SetParams("retrieval.on_demand_seconds", 0 if keyword_only else 0.8))
        if str(root) not in engine.run(RootsParams()).roots:
            engine.run(AddRootParams(str(root)))
        stop = threading.Event()
        keyword_done: list[float] = []
        started = time.perf_counter()

        def heard(progress) -> None:
            if progress.phase == "semantic" and not keyword_done:
                keyword_done.append(time.perf_counter() - started)
                if keyword_only:
                    stop.set()

        engine.index(on_update=heard, stop=stop)
        total = time.perf_counter() - started
        seconds = keyword_done[0] if keyword_done else total
        after = engine.run(StatusParams()).phases
    return Indexing(
        seconds, before.keyword_ready > 0, after.files, after.keyword_ready, after.semantic, after.chunks_left, total
    ).remembered(data)


def preview(engine: Engine, path: Path):
    """SenseTree's text of a file: a .gz file is an archive to it, whose one member is the text."""
    if path.suffix == ".gz":
        try:
            return engine.run(PreviewParams(str(path / path.stem)))
        except SenseTreeError:
            pass  # a version that reads the .gz itself as the text
    return engine.run(PreviewParams(str(path)))


def recoll_index(conf: Path, copy: Path) -> tuple[Indexing, dict[str, str]]:
    """``recollindex`` on the copy with its own config dir (a changed config indexes afresh); each entry it holds
    (relative path) with the MIME type it gave it."""
    conf.mkdir(parents=True, exist_ok=True)
    config = {
        "recoll.conf": f"topdirs = {copy}\nloglevel = 1\n",
        "mimeconf": "[index]\n" + "".join(f"{m} = internal text/plain\n" for m in RECOLL_AS_TEXT),
    }
    reused = (conf / "xapiandb").exists() and all(
        (conf / n).exists() and (conf / n).read_text() == t for n, t in config.items()
    )
    for name, text in config.items():
        (conf / name).write_text(text)
    started = time.perf_counter()
    subprocess.run(["recollindex", "-c", str(conf), *([] if reused else ["-z"])], check=True, capture_output=True)
    seconds = time.perf_counter() - started
    out = subprocess.run(
        ["recollq", "-c", str(conf), "-F", "url mtype", "-n", "0", f'dir:"{copy}"'], capture_output=True, text=True
    ).stdout
    held = {}
    for line in out.splitlines():
        fields = line.split()
        try:
            url, mime = (base64.b64decode(f, validate=True).decode(errors="replace") for f in fields)
        except (ValueError, binascii.Error):
            continue  # the query and the count, said before the results
        if url.startswith("file://"):
            held[os.path.relpath(url[len("file://") :], copy)] = mime
    return Indexing(seconds, reused, len(held), len(held), 0, 0).remembered(conf), held


def recoll_readers() -> set[str] | None:
    """The MIME types Recoll reads the content of (its mimeconf's [index] section, and ours); None: not known."""
    system = Path("/usr/share/recoll/examples/mimeconf")
    if not system.exists():
        return None
    section = re.split(r"^\[index\]$", system.read_text(errors="replace"), maxsplit=1, flags=re.M)[1]
    section = re.split(r"^\[", section, maxsplit=1, flags=re.M)[0]
    return {
        line.split("=")[0].strip() for line in section.splitlines() if "=" in line and not line.lstrip().startswith("#")
    } | set(RECOLL_AS_TEXT)


def recoll_query(conf: Path, query: str, limit: int) -> list[str]:
    """Paths of ``recollq``'s results, best first (a document inside an archive counts as its file)."""
    out = subprocess.run(
        ["recollq", "-c", str(conf), "-b", "-e", "-n", str(limit), query], capture_output=True, text=True
    ).stdout
    paths: list[str] = []
    for line in out.splitlines():
        if line.startswith("file://"):
            path = unquote(line[len("file://") :].strip())
            if path not in paths:
                paths.append(path)
    return paths


def sensetree_query(engine: Engine, query: str) -> list[list[str]]:
    """Each result's paths (its own first, then its identical copies), best first."""
    response = engine.run(SearchParams(query, limit=LIMIT))
    return [[r.path, *r.duplicates] for r in response.results]


# the probes ----------------------------------------------------------------------------------------------


@dataclass
class Probe:
    kind: str
    query: str  # as typed
    file: str  # relative to the copy
    sort: str = ""  # the identifier's form, a name with or without its extension
    found: dict[str, dict] = field(default_factory=dict)  # tool -> {rank, first, ms}


class Corpus:
    """The copy's texts and who holds what: letter words (CamelCase parts too), identifiers, numbers."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.files = sorted(texts)
        self.text = {f: f + SEP + texts[f] for f in self.files}
        self.lower = {f: t.lower() for f, t in self.text.items()}
        self.words: dict[str, set[str]] = defaultdict(set)
        self.idents: dict[str, set[str]] = defaultdict(set)
        self.numbers: dict[str, set[str]] = defaultdict(set)
        for f, text in self.text.items():
            for run in set(LETTERS.findall(text)):
                self.words[run.lower()].add(f)
                if run != run.lower() and run != run.upper():
                    for part in CAMEL_PART.findall(run):
                        self.words[part.lower()].add(f)
            for pattern in IDENTIFIERS.values():
                for ident in set(pattern.findall(text)):
                    self.idents[ident.lower()].add(f)
            for number in set(NUMBER.findall(text)):
                self.numbers[number].add(f)
        stemmer = Stemmer.Stemmer("english")
        self.stem = {w: s for w, s in zip(self.words, stemmer.stemWords(list(self.words)))}
        self.stem_files: dict[str, set[str]] = defaultdict(set)
        for word, holders in self.words.items():
            self.stem_files[self.stem[word]] |= holders

    def only(self, f: str, needle: str, within: set[str] | None = None) -> bool:
        """Whether ``f`` is the one file whose text holds ``needle`` (any case) as a substring."""
        needle = needle.lower()
        return all((g == f) == (needle in self.lower[g]) for g in (within or set(self.files)) | {f})

    def word(self, f: str, rng: random.Random) -> tuple[str, str] | None:
        text = self.text[f]
        candidates = sorted(
            {
                w
                for w in LETTERS.findall(text)
                if len(w) >= MIN_WORD
                and w == w.lower()
                and self.words[w] == {f}
                and len(self.stem_files[self.stem[w]] - {f}) >= STEM_FILES
            }
        )
        rng.shuffle(candidates)
        # a word standing alone somewhere, not only inside an identifier (snake_case) or a number
        return next(((w, "") for w in candidates if re.search(rf"(?<![\w]){w}(?![\w])", text)), None)

    def identifier(self, f: str, rng: random.Random) -> tuple[str, str] | None:
        text = self.text[f]
        found = sorted(
            {
                (sort, ident)
                for sort, pattern in IDENTIFIERS.items()
                for ident in pattern.findall(text)
                if len(ident) >= 6
                and self.idents[ident.lower()] == {f}
                and not (sort == "dotted.name" and min(map(len, ident.split("."))) < 2)
            }
        )
        rng.shuffle(found)
        for sort, ident in found[:20]:
            pieces = {p.lower() for p in LETTERS.findall(ident)}
            within = set.intersection(*(self.words[p] for p in pieces)) if pieces else None
            if self.only(f, ident, within):
                return ident, sort
        return None

    def number(self, f: str, rng: random.Random) -> tuple[str, str] | None:
        candidates = sorted({n for n in NUMBER.findall(self.text[f]) if self.numbers[n] == {f}})
        return (rng.choice(candidates), "") if candidates else None

    def phrase(self, f: str, rng: random.Random) -> tuple[str, str] | None:
        text = self.text[f]
        for _ in range(30):
            at = rng.randrange(len(text))
            window = text[at : at + PHRASE_WINDOW]
            tokens = list(LETTERS.finditer(window))[1:]  # the first may be a word cut in two
            size = rng.choice((3, 4))
            if tokens and tokens[-1].end() == len(window):
                tokens.pop()  # so may the last
            if len(tokens) < size:
                continue
            start = rng.randrange(len(tokens) - size + 1)
            run = tokens[start : start + size]
            words = [m.group().lower() for m in run]
            if any(len(w) < 2 or len(self.words[w]) < PHRASE_WORD_FILES for w in words):
                continue
            if not all(PHRASE_GAP.fullmatch(window[a.end() : b.start()]) for a, b in zip(run, run[1:])):
                continue
            within = set.intersection(*(self.words[w] for w in words)) - {f}
            if len(within) > PHRASE_WITHIN:
                continue
            # the words in this order with anything but letters and digits between them, as both tools read it
            pattern = re.compile(r"[^a-z0-9\x00]+".join(map(re.escape, words)) + r"(?![a-z0-9])")
            if _holds(self.lower[f], pattern) and not any(_holds(self.lower[g], pattern) for g in within):
                return '"' + " ".join(m.group() for m in run) + '"', f"{size} words"
        return None


def _holds(text: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` (led by a literal word, which keeps the scan fast) matches where a word starts."""
    at = pattern.search(text)
    while at is not None:
        if at.start() == 0 or not ("a" <= text[at.start() - 1] <= "z" or text[at.start() - 1].isdigit()):
            return True
        at = pattern.search(text, at.start() + 1)
    return False


def name_probes(files: list[str], rng: random.Random) -> dict[str, tuple[str, str]]:
    """Each file's name, with or without its extension, where no other file or folder is called that."""
    called: dict[str, int] = defaultdict(int)
    folders = {part.lower() for f in files for part in Path(f).parts[:-1]}
    forms = {}
    for f in files:
        name = Path(f).name
        stem = os.path.splitext(name)[0]
        forms[f] = {(name, "with extension"), *([(stem, "without extension")] if stem and stem != name else [])}
        for form in {n.lower() for n, _ in forms[f]}:
            called[form] += 1
    chosen = {}
    for f in files:
        usable = sorted(
            (n, s) for n, s in forms[f] if called[n.lower()] == 1 and n.lower() not in folders and len(n) >= MIN_NAME
        )
        if usable:
            chosen[f] = rng.choice(usable)
    return chosen


def draw(corpus: Corpus, pool: list[str], per_kind: int, seed: int) -> list[Probe]:
    """``per_kind`` probes of each kind, at most one a file, the files taken in a seeded order."""
    probes = []
    for kind in KINDS:
        rng = random.Random(f"{seed}:{kind}")
        order = rng.sample(pool, len(pool))
        names = name_probes(corpus.files, random.Random(f"{seed}:names")) if kind == "name" else {}
        taken = 0
        for f in order:
            if taken >= per_kind:
                break
            got = names.get(f) if kind == "name" else getattr(corpus, kind)(f, rng)
            if got:
                probes.append(Probe(kind, got[0], f, got[1]))
                taken += 1
    return probes


# measuring ------------------------------------------------------------------------------------------------


def rank_of(results: list[list[str]], wanted: str) -> int | None:
    """1-based rank of the result that is ``wanted`` or lists it as an identical copy."""
    return next((i for i, paths in enumerate(results, 1) if wanted in paths), None)


def owner(rel: str, files: set[str]) -> str:
    """The file of the copy that ``rel`` is or lies in (SenseTree names a .gz file's text as its member)."""
    path = rel
    while path not in files and os.path.dirname(path):
        path = os.path.dirname(path)
    return path if path in files else rel


def ask(probes: list[Probe], tool: str, search, root: Path, files: set[str]) -> list[float]:
    """Run every probe through ``search`` (query -> results, each a list of paths); its latencies (ms)."""
    latencies = []
    for probe in probes:
        started = time.perf_counter()
        results = search(probe.query)
        ms = (time.perf_counter() - started) * 1000
        latencies.append(ms)
        relative = [[owner(os.path.relpath(p, root), files) for p in paths] for paths in results]
        rank = rank_of(relative, probe.file)
        probe.found[tool] = {
            "rank": rank,
            "hit": rank is not None and rank <= TOP.get(probe.kind, DEFAULT_TOP),
            "first": relative[0][0] if relative else None,
            "ms": round(ms, 1),
        }
    return latencies


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else (values[0] if values else 0.0)


def report(probes: list[Probe], tools: list[str], show: int) -> dict:
    table = {}
    print(f"\n{'kind':12}{'probes':>7}" + "".join(f"{t:>22}" for t in tools) + f"{'ratio':>8}")
    for kind in KINDS:
        mine = [p for p in probes if p.kind == kind and all(t in p.found for t in tools)]
        hits = {t: sum(p.found[t]["hit"] for p in mine) for t in tools}
        table[kind] = {"probes": len(mine), **{t: hits[t] for t in tools}}
        cells = "".join(f"{hits[t]:>9}/{len(mine):<4}{100 * hits[t] / max(len(mine), 1):>7.1f} %" for t in tools)
        ratio = hits[tools[0]] / hits[tools[-1]] if hits[tools[-1]] else float("inf")
        print(f"{kind:12}{len(mine):>7}{cells}{ratio:>8.2f}")
    print(f"(a hit: the file among the first {DEFAULT_TOP} results, names: first; ratio: {tools[0]} / {tools[-1]})")
    for kind in KINDS:
        misses = [p for p in probes if p.kind == kind and tools[0] in p.found and not p.found[tools[0]]["hit"]]
        if misses:
            print(f"\n{tools[0]} misses, {kind} ({len(misses)}):")
        for p in misses[:show]:
            print(f"  {p.query!s:40.40} in {p.file}{f' ({p.sort})' if p.sort else ''}")
            for t in tools:
                found = p.found[t]
                print(f"      {t:>10}: rank {found['rank'] or '>' + str(LIMIT)}, first {found['first']}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--work", type=Path, help="where the copy and Recoll's index go (default: a temp folder)")
    parser.add_argument("--data-dir", type=Path, help="SenseTree's data dirs go under it (default: WORK/data)")
    parser.add_argument("--files", type=int, default=1500, help="files sampled into the copy")
    parser.add_argument("--probes", type=int, default=300, help="probes of each kind")
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--model", help="embedding model for both data dirs (default: the product's)")
    parser.add_argument("--keyword-only", action="store_true", help="no run with every vector present")
    parser.add_argument("--embed-files", type=int, help="the run with every vector present on this many files")
    parser.add_argument("--show", type=int, default=4, help="misses shown of each kind")
    parser.add_argument("--json", type=Path, help="write every figure and probe here")
    args = parser.parse_args()
    if shutil.which("recollindex") is None:
        raise SystemExit("Recoll is not installed: apt-get install recollcmd")

    work = (args.work or Path(tempfile.mkdtemp(prefix="sensetree-exact-"))).resolve()
    data = (args.data_dir or work / "data").resolve()
    copy = work / "copy"
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(args, work, data, copy)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path, data: Path, copy: Path) -> None:
    files = make_copy(args.folder.resolve(), copy, args.files, args.seed)
    model = (args.model or "default").replace("/", "-")
    keyword_data = data / f"keyword-{model}"
    keyword = sensetree_index(keyword_data, copy, args.model, keyword_only=True)
    print(
        f"SenseTree keyword phase: {keyword.seconds:.1f} s"
        f"{' (a rescan of the index already there)' if keyword.reused else ''}"
        f"; {keyword.keyword_ready}/{keyword.files} files keyword-ready, {keyword.semantic} with every vector"
    )
    recoll, recoll_held = recoll_index(work / "recoll", copy)
    print(f"recollindex: {recoll.seconds:.1f} s{' (incremental)' if recoll.reused else ''}; {len(recoll_held)} entries")

    texts: dict[str, str] = {}
    by_python, unread = 0, []
    with Engine(keyword_data) as engine:
        for rel in files:
            shown = preview(engine, copy / rel)
            if not shown.text.strip():
                unread.append(rel)
                continue
            if shown.truncated:
                by_python += 1
                texts[rel] = python_text(copy / rel)
            else:
                texts[rel] = shown.text
    print(
        f"texts scanned: {len(texts) - by_python} from SenseTree's preview, {by_python} longer than it "
        f"(read by Python, gunzipped); {len(unread)} SenseTree gave no text for"
    )
    readers = recoll_readers()
    not_recoll = sorted(f for f in texts if f not in recoll_held)
    no_reader = sorted(f for f in texts if f in recoll_held and readers is not None and recoll_held[f] not in readers)
    print(
        f"left out of the probe pool: {len(unread)} files without text in SenseTree, {len(not_recoll)} not in "
        f"Recoll's index{': ' + ', '.join(not_recoll[:5]) if not_recoll else ''}, {len(no_reader)} whose type "
        f"Recoll reads no text of{': ' + ', '.join(sorted({recoll_held[f] for f in no_reader})) if no_reader else ''}"
        f"{'' if readers is not None else ' (its mimeconf not found: not checked)'}"
    )
    corpus = Corpus(texts)
    pool = sorted(set(texts) - set(not_recoll) - set(no_reader))
    started = time.perf_counter()
    probes = draw(corpus, pool, args.probes, args.seed)
    print(
        f"{len(probes)} probes drawn from {len(pool)} files in {time.perf_counter() - started:.0f} s: "
        + ", ".join(f"{sum(p.kind == k for p in probes)} {k}" for k in KINDS)
    )

    latencies = {}
    with Engine(keyword_data) as engine:
        sensetree_query(engine, "warm up")  # the models load once
        latencies["sensetree"] = ask(probes, "sensetree", lambda q: sensetree_query(engine, q), copy, set(files))
        values = engine.run(SettingsParams()).values()
        settings = {k: values.get(k) for k in SHOWN_SETTINGS} | {"reranker": engine.run(StatusParams()).reranker}
    conf = work / "recoll"
    latencies["recoll"] = ask(probes, "recoll", lambda q: [[p] for p in recoll_query(conf, q, LIMIT)], copy, set(files))

    print(f"\n== keyword phase (SenseTree stopped as its semantic phase began) · {len(files)} files · {settings}")
    table = {"keyword": report(probes, ["sensetree", "recoll"], args.show)}
    print("\nquery ms        p50     p95")
    for tool, values in latencies.items():
        print(f"{tool:12}{percentile(values, 50):>7.0f}{percentile(values, 95):>8.0f}")
    print(
        f"index seconds (when built): SenseTree keyword phase {keyword.built_seconds:.1f}, "
        f"recollindex {recoll.built_seconds:.1f}"
    )

    embedded: dict = {}
    if not args.keyword_only:
        embedded = every_vector(args, work, data / f"embedded-{model}", copy, files, probes, latencies)
        table["embedded"] = embedded["table"]

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "settings": settings,
                    "indexing": {
                        "sensetree keyword phase": asdict(keyword),
                        "recoll": asdict(recoll),
                        **{f"every vector: {k}": v for k, v in embedded.get("indexing", {}).items()},
                    },
                    "latency_ms": {
                        t: {"p50": percentile(v, 50), "p95": percentile(v, 95)} for t, v in latencies.items()
                    },
                    "table": table,
                    "probes": [asdict(p) for p in probes],
                    "probes with every vector": embedded.get("probes", []),
                },
                indent=1,
            )
        )


def every_vector(
    args: argparse.Namespace,
    work: Path,
    data: Path,
    copy: Path,
    files: list[str],
    probes: list[Probe],
    latencies: dict[str, list[float]],
) -> dict:
    """The probes again on a data dir indexed to the end: the whole copy, or ``--embed-files`` of its files (the
    probes' files first), then with Recoll and the keyword phase on those same files."""
    root, subset = copy, set(files)
    if args.embed_files and args.embed_files < len(files):
        rng = random.Random(f"{args.seed}:embed")
        wanted = sorted({p.file for p in probes})
        rest = sorted(set(files) - set(wanted))
        subset = set((rng.sample(wanted, len(wanted)) + rng.sample(rest, len(rest)))[: args.embed_files])
        root = work / f"subset-{len(subset)}"
        if not root.exists():
            for rel in sorted(subset):
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(copy / rel, root / rel)
    data = data.with_name(f"{data.name}-{len(subset)}")
    theirs = [Probe(p.kind, p.query, p.file, p.sort) for p in probes if p.file in subset]
    indexing = {}
    if root == copy:  # the same files as the keyword-phase run: its figures stand
        for p, q in zip(theirs, probes):
            p.found = {"keyword phase": q.found["sensetree"], "recoll": q.found["recoll"]}
    else:
        recoll, _ = recoll_index(work / f"recoll-{len(subset)}", root)
        indexing["recoll"] = asdict(recoll)
        ask(
            theirs,
            "recoll",
            lambda q: [[p] for p in recoll_query(work / f"recoll-{len(subset)}", q, LIMIT)],
            root,
            subset,
        )
        first = sensetree_index(data, root, args.model, keyword_only=True)
        indexing["keyword phase"] = asdict(first)
        if first.semantic == 0:  # a fresh data dir (a rerun finds it embedded: no keyword phase to measure)
            with Engine(data) as engine:
                sensetree_query(engine, "warm up")
                ask(theirs, "keyword phase", lambda q: sensetree_query(engine, q), root, subset)
    done = sensetree_index(data, root, args.model, keyword_only=False)
    indexing["every vector"] = asdict(done)
    print(
        f"\nSenseTree to the end on {len(subset)} files: {done.total_seconds:.0f} s"
        f"{' (its keyword phase done before)' if done.reused else ''}; "
        f"{done.semantic}/{done.files} files with every vector, "
        f"{done.chunks_left} chunks without"
    )
    with Engine(data) as engine:
        sensetree_query(engine, "warm up")
        latencies["sensetree, every vector"] = ask(
            theirs, "every vector", lambda q: sensetree_query(engine, q), root, subset
        )
    tools = ["every vector", *(["keyword phase"] if all("keyword phase" in p.found for p in theirs) else []), "recoll"]
    print(
        f"\n== every vector present · {len(subset)} files, {len(theirs)} probes "
        f"({'a subset of the copy: SenseTree and Recoll indexed these files alone' if root != copy else 'the copy'})"
    )
    table = report(theirs, tools, args.show)
    values = latencies["sensetree, every vector"]
    print(f"query ms p50 {percentile(values, 50):.0f}, p95 {percentile(values, 95):.0f}")
    return {"table": table, "indexing": indexing, "probes": [asdict(p) for p in theirs]}


if __name__ == "__main__":
    main()
