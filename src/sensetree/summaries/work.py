"""Summaries of whole files, small folders and two files side by side, map then reduce.

A file's whole text is cut into parts that fit the model's context window with room for the
instructions and the notes (``parts.py``); the model notes each part's main points (saying which
pages it covers), then writes the whole from those notes, citing them as ``[n]``. When the notes
themselves are too long for the window, neighbouring notes are combined first. A folder's files
come from their stored summary (the "sense" written at indexing) where there is one, else from
their first part. Two files are compared from the notes on each and, when one is a version of
the other, from the lines that changed (difflib), each change a note that names its page. The diff is
bounded whatever the files (design §5's limits): the lines both share at their start and end are set
aside in one linear pass, and at most ``MAX_DIFF_LINES`` of what remains of each file go to difflib,
whose work grows with the square of the lines it is given (two 300 KB logs of similar lines held it
for minutes); the summary says when the rest was not compared line by line.

Every step says how far it is through ``on_progress`` ("report.pdf: part 3 of 12 (pp. 5–6)").
A sentence of the whole that cites no note gets the note it shares most words with, so each point
can be traced to its pages.
"""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass
from typing import Callable

from ..answers import Note, Summary
from ..errors import BadInput
from ..reader import NotServed, Reader, Unreadable
from .model import ChatModel
from .parts import TextPart, place_label, split_parts, worth_reading

PROMPT_TOKENS = 300  # the instructions, the file's name and the chat template's own tokens
NOTE_TOKENS = 160  # what the notes on one part may take
SUMMARY_TOKENS = 400  # the whole
MAX_PARTS = 80  # a longer file is read up to here, and the summary says so
MAX_FOLDER_FILES = 12  # a folder's files read; the summary names how many were left out
MAX_CHANGES = 12  # changed passages shown to the model when comparing versions
VERSION_RATIO = 0.3  # at least this share of lines in common: the files are versions, the changes say what differs
MAX_DIFF_LINES = 2000  # lines of each file diffed line by line, once their common start and end are set aside
READ_CHARS = 10**9  # a whole file (the reader still stops at the size indexing reads)

NOTE_SYSTEM = (
    "You take notes on one part of a document for the user. Write at most four short sentences with "
    "the main points of this part, using only its text. No introduction, no opinion."
)
WHOLE_SYSTEM = (
    "You summarise a whole document from numbered notes on its parts. Write one paragraph of at most "
    "six sentences that covers the whole document, and end each sentence with the number of the note "
    "it comes from in square brackets, like [2]. Use only the notes."
)
FOLDER_SYSTEM = (
    "You describe what a folder holds from numbered notes on its files. Write one paragraph of at most "
    "six sentences, and end each sentence with the number of the note it comes from in square "
    "brackets, like [2]. Use only the notes."
)
COMPARE_SYSTEM = (
    "You compare two documents, A and B, from numbered notes on their parts and on the passages that "
    "changed. Say what differs between them in at most six sentences, and end each sentence with the "
    "number of the note it comes from in square brackets, like [2]. Use only the notes."
)
COMBINE_SYSTEM = "Combine these notes on neighbouring parts of a document into at most four short sentences."

_MARK = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_WORD = re.compile(r"\w{4,}")

Progress = Callable[[str], None]


@dataclass
class _Read:
    path: str
    name: str
    text: str
    parts: list[TextPart]
    total_parts: int
    spans: tuple = ()


class Summariser:
    """Summaries on one chat model, reading through the engine's confined ``Reader``."""

    def __init__(
        self,
        reader: Reader,
        model: ChatModel,
        on_progress: Progress | None = None,
        senses: Callable[[str], str | None] = lambda _: None,
    ):
        self.reader, self.model = reader, model
        self.on_progress = on_progress or (lambda _: None)
        self.senses = senses  # a file's stored summary, when indexing wrote one
        self.notes: list[Note] = []
        self.notices: list[str] = []
        self.calls = 0
        self.parts_read = 0

    # sizes ---------------------------------------------------------------------------------
    @property
    def part_chars(self) -> int:
        """A part's characters: the window less the instructions and the notes, at the rough
        characters per token, with a tenth kept back for tokenizers that make more tokens."""
        room = self.model.context_window - PROMPT_TOKENS - min(NOTE_TOKENS, self.model.max_tokens)
        return max(500, int(room * self.model.chars_per_token * 0.9))

    def _notes_chars(self) -> int:
        room = self.model.context_window - PROMPT_TOKENS - min(SUMMARY_TOKENS, self.model.max_tokens)
        return max(400, int(room * self.model.chars_per_token * 0.9))

    # the operations ------------------------------------------------------------------------
    def file(self, path: str, question: str | None = None) -> Summary:
        started = time.perf_counter()
        read = self._read(path)
        notes = self._part_notes(read, question)
        text = self._whole(WHOLE_SYSTEM, f"Document: {read.name}", notes, question or "Summarise the document.")
        return self._summary("file", [read.path], question, text, started)

    def folder(self, path: str, question: str | None = None) -> Summary:
        started = time.perf_counter()
        listing = self.reader.list_folder(path, 10_000)
        files = [e for e in listing.entries if not e.is_dir and not e.problem]
        folders = sum(1 for e in listing.entries if e.is_dir)
        if not files:
            raise BadInput(
                f"{listing.path} has no file to summarise" + (f" (only {folders} folders)" if folders else "")
            )
        if len(files) > MAX_FOLDER_FILES:
            self.notices.append(f"only the first {MAX_FOLDER_FILES} of {len(files)} files were read")
        if folders:
            self.notices.append(f"{folders} subfolder(s) not read: summarise each one on its own")
        notes = []
        shown = files[:MAX_FOLDER_FILES]
        for i, entry in enumerate(shown, start=1):
            try:  # a file the user ignored (or a rule leaves out) is left out of the folder, and said
                self.reader.check(entry.path)
            except NotServed as exc:
                self.notices.append(f"{entry.name} not read: {str(exc).removeprefix(entry.name + ': ')}")
                continue
            sense = self.senses(entry.path)
            if sense:
                self.on_progress(f"file {i} of {len(shown)}: {entry.name} (its stored summary)")
                notes.append(self._note(entry.path, entry.name, "its stored summary", sense, None))
                continue
            self.on_progress(f"file {i} of {len(shown)}: {entry.name}")
            try:
                read = self._read(entry.path)
            except (Unreadable, FileNotFoundError) as exc:
                self.notices.append(f"{entry.name}: {exc}")
                continue
            first = read.parts[0]
            if len(read.parts) > 1:
                self.notices.append(
                    f"{entry.name}: only its first part ({first.label}) of {len(read.parts)} was read; "
                    "summarise the file for the whole"
                )
            text = self._ask(
                NOTE_SYSTEM, f"Document: {read.name}\n{self._focus(question)}\nText:\n{first.text}", NOTE_TOKENS
            )
            self.parts_read += 1
            notes.append(
                self._note(
                    read.path,
                    read.name,
                    first.label if len(read.parts) > 1 else "the whole file",
                    text,
                    first.locations[0] if first.locations else None,
                )
            )
        if not notes:
            raise BadInput(f"nothing in {listing.path} could be read: " + "; ".join(self.notices))
        text = self._whole(FOLDER_SYSTEM, f"Folder: {listing.path}", notes, question or "What is in this folder?")
        return self._summary("folder", [listing.path], question, text, started)

    def compare(self, path: str, other: str, question: str | None = None) -> Summary:
        started = time.perf_counter()
        a, b = self._read(path), self._read(other)
        if a.path == b.path:
            raise BadInput(f"{a.name} is the same file twice: name two files to compare")
        changes = _changes(a, b, self.notices)
        if changes is not None:
            self.on_progress(f"{len(changes)} changed passage(s) between {a.name} and {b.name}")
        notes_a = self._part_notes(a, question, tag="A")
        notes_b = self._part_notes(b, question, tag="B")
        notes = notes_a + notes_b
        for where, location, text in (changes or [])[:MAX_CHANGES]:
            notes.append(self._note(b.path, b.name, where, text, location))
        if changes and len(changes) > MAX_CHANGES:
            self.notices.append(f"{len(changes) - MAX_CHANGES} more changed passages were not shown to the model")
        head = f"A: {a.name} ({a.path})\nB: {b.name} ({b.path})"
        if changes is None:
            head += "\nThe two files share little wording: compare what they say."
        text = self._whole(COMPARE_SYSTEM, head, notes, question or "What differs between A and B?")
        return self._summary("compare", [a.path, b.path], question, text, started)

    # the steps -----------------------------------------------------------------------------
    def _read(self, path: str) -> _Read:
        read = self.reader.read_text(path, READ_CHARS)
        if read.context_only:  # the text describes the file, one fact a line: the refusal says its type and size
            facts = dict(line.split(": ", 1) for line in read.text.splitlines() if ": " in line)
            what = "; ".join(facts[k] for k in ("Type", "Size") if k in facts) or _first_words(read.text, 120)
            raise Unreadable(f"{read.name} has no text to summarise ({what})")
        parts = worth_reading(split_parts(read.text, read.spans, self.part_chars))
        if not parts:
            raise Unreadable(f"{read.name} has no text to summarise (it is empty)")
        total = len(parts)
        if total > MAX_PARTS:
            self.notices.append(
                f"{read.name}: only its first {MAX_PARTS} of {total} parts were read "
                f"(up to {parts[MAX_PARTS - 1].label})"
            )
            parts = parts[:MAX_PARTS]
        if read.truncated:
            self.notices.append(f"{read.name}: only the first {len(read.text):,} characters could be read")
        return _Read(read.path, read.name, read.text, parts, total, read.spans)

    def _part_notes(self, read: _Read, question: str | None, tag: str = "") -> list[Note]:
        notes = []
        who = f"{tag}: " if tag else ""
        for part in read.parts:
            self.on_progress(
                f"{who}{read.name}: part {part.n} of {part.of}"
                + (f" ({place_label(list(part.locations))})" if part.locations else "")
            )
            where = f"{part.label}" if part.locations else f"part {part.n} of {part.of}"
            prompt = (
                f"Document: {read.name}\nThis is {where}"
                + (f" (part {part.n} of {part.of})" if part.locations else "")
                + f".\n{self._focus(question)}\nText:\n{part.text.strip()}"
            )
            text = self._ask(NOTE_SYSTEM, prompt, NOTE_TOKENS)
            self.parts_read += 1
            notes.append(
                self._note(
                    read.path,
                    read.name,
                    where,
                    text or _first_words(part.text),
                    part.locations[0] if part.locations else None,
                    tag,
                )
            )
        return notes

    def _whole(self, system: str, head: str, notes: list[Note], ask: str) -> str:
        notes = self._fit(notes)
        listed = "\n".join(f"[{n.n}] {('(' + n.name + ', ' + n.where + ')')} {n.text}" for n in notes)
        self.on_progress(f"writing the whole from {len(notes)} note(s)")
        text = self._ask(system, f"{head}\n\nNotes:\n{listed}\n\n{ask}", SUMMARY_TOKENS)
        if not text:  # the model wrote nothing: the notes stand for the whole
            text = " ".join(f"{_one_line(n.text)} [{n.n}]" for n in notes)
        return self._cite(text, notes)

    def _fit(self, notes: list[Note]) -> list[Note]:
        """Notes that fit the window with the instructions: neighbours of one file combined (on the model)
        until they do; a combined note covers the places of both."""
        budget = self._notes_chars()
        while sum(len(n.text) + len(n.where) + len(n.name) + 8 for n in notes) > budget and len(notes) > 1:
            combined: list[Note] = []
            i = 0
            while i < len(notes):
                first = notes[i]
                second = notes[i + 1] if i + 1 < len(notes) and notes[i + 1].path == first.path else None
                if second is None:
                    combined.append(first)
                    i += 1
                    continue
                self.on_progress(f"combining the notes on {first.name} {first.where} and {second.where}")
                text = self._ask(COMBINE_SYSTEM, f"{first.text}\n\n{second.text}", NOTE_TOKENS) or first.text
                combined.append(
                    Note(0, first.path, first.name, _joined_where(first.where, second.where), text, first.location)
                )
                i += 2
            if len(combined) == len(notes):  # nothing left to combine: cut the longest texts instead
                share = max(80, budget // len(notes) - 40)
                combined = [Note(n.n, n.path, n.name, n.where, n.text[:share], n.location) for n in notes]
                notes = combined
                break
            notes = combined
        self.notes = [Note(k, n.path, n.name, n.where, n.text, n.location) for k, n in enumerate(notes, start=1)]
        return self.notes

    def _cite(self, text: str, notes: list[Note]) -> str:
        """Each sentence cites notes that exist; one that cites none gets the note it shares most words with."""
        by_n = {n.n: n for n in notes}
        out = []
        for sentence in _SENTENCE.split(" ".join(text.split())):
            numbers = [int(x) for m in _MARK.finditer(sentence) for x in m.group(1).split(",")]
            bare = _MARK.sub("", sentence).strip()
            if not bare.strip(" .,;:-"):
                continue
            kept = list(dict.fromkeys(x for x in numbers if x in by_n))
            if not kept:
                best = _closest(bare, notes)
                kept = [best.n] if best else []
            for x in kept:
                by_n[x].cited = True
            marks = "".join(f"[{x}]" for x in kept)
            end = re.search(r"[.!?]+$", bare)
            out.append(f"{bare[: end.start()]} {marks}{end.group(0)}" if end and marks else f"{bare} {marks}".rstrip())
        return " ".join(out)

    def _ask(self, system: str, user: str, tokens: int) -> str:
        self.calls += 1
        turn = self.model.client.stream(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_tokens=min(tokens, self.model.max_tokens),
            temperature=0.0,
        )
        return _unlooped(turn.content.strip())

    def _note(self, path: str, name: str, where: str, text: str, location: dict | None, tag: str = "") -> Note:
        return Note(0, path, name, f"{tag} {where}".strip() if tag else where, _one_line(text), location)

    @staticmethod
    def _focus(question: str | None) -> str:
        return f"The user asks: {question}\nNote what this part says about it, if anything.\n" if question else ""

    def _summary(self, kind: str, where: list[str], question: str | None, text: str, started: float) -> Summary:
        return Summary(
            kind,
            where,
            question,
            text,
            self.notes,
            self.parts_read,
            self.notices,
            self.model.label,
            time.perf_counter() - started,
        )


def _changes(a: _Read, b: _Read, notices: list[str] | None = None) -> list[tuple[str, dict | None, str]] | None:
    """The passages that differ between two versions, each with B's page ("changed on p. 4"), or None
    when the files share too little wording to be versions of one text. Bounded: see the module's note;
    ``notices`` hears when part of the files was not compared line by line."""
    lines_a, lines_b = _lines(a.text), _lines(b.text)
    keys_a, keys_b = [t for _, t in lines_a], [t for _, t in lines_b]
    head = 0
    while head < min(len(keys_a), len(keys_b)) and keys_a[head] == keys_b[head]:
        head += 1
    tail = 0
    while tail < min(len(keys_a), len(keys_b)) - head and keys_a[-1 - tail] == keys_b[-1 - tail]:
        tail += 1
    mid_a, mid_b = keys_a[head : len(keys_a) - tail], keys_b[head : len(keys_b) - tail]
    middle = len(mid_a) + len(mid_b)
    if len(mid_a) > MAX_DIFF_LINES or len(mid_b) > MAX_DIFF_LINES:
        if notices is not None:
            notices.append(
                f"{a.name} and {b.name} differ over {len(mid_a):,} and {len(mid_b):,} lines: only the "
                f"first {MAX_DIFF_LINES:,} of each were compared line by line (the notes on each part "
                "still cover the whole of both)"
            )
        mid_a, mid_b = mid_a[:MAX_DIFF_LINES], mid_b[:MAX_DIFF_LINES]
    matcher = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    # what the diffed lines share stands for the whole middle when it was cut
    same = head + tail + matched * middle / max(1, len(mid_a) + len(mid_b))
    total = len(keys_a) + len(keys_b)
    if total and 2 * same < VERSION_RATIO * total:
        return None
    changes = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        was = " ".join(t for _, t in lines_a[i1:i2])
        now = " ".join(t for _, t in lines_b[j1:j2])
        at = lines_b[j1][0] if j1 < len(lines_b) else len(b.text)
        location = _location_at(b, at)
        where = f"changed on {place_label([location])}" if location else "a change"
        if op == "delete":
            text = f"A had, B no longer has: {_cut(was)}"
        elif op == "insert":
            text = f"B adds: {_cut(now)}"
        else:
            text = f"A said: {_cut(was)} B says: {_cut(now)}"
        changes.append((where, location, text))
    return changes


def _lines(text: str) -> list[tuple[int, str]]:
    found, offset = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            found.append((offset, " ".join(line.split())))
        offset += len(line)
    return found


def _location_at(read: _Read, offset: int) -> dict | None:
    """The page (slide...) the character at ``offset`` is on, or the next one that has words."""
    after = [s for s in read.spans if s.end > offset]
    return dict(after[0].location) if after else None


def _closest(sentence: str, notes: list[Note]) -> Note | None:
    words = {w.lower() for w in _WORD.findall(sentence)}
    scored = [(len(words & {w.lower() for w in _WORD.findall(n.text)}), -n.n, n) for n in notes]
    best = max(scored, default=None, key=lambda s: s[:2])
    return best[2] if best and best[0] > 0 else None


def _joined_where(first: str, second: str) -> str:
    """'pp. 1–3' and 'pp. 4–6' as 'pp. 1–6' (a comparison's 'A ' kept in front); else 'X to Y'."""
    tag = first[:2] if re.match(r"[AB] ", first) else ""  # (?:[AB] )? always matches: its text or nothing
    low, high = re.findall(r"\d+", first)[:1], re.findall(r"\d+", second)[-1:]
    if re.match(tag + r"pp?\. ", first) and re.match(tag + r"pp?\. ", second) and low and high:
        return f"{tag}pp. {low[0]}–{high[0]}"
    return f"{first} to {second}"


def _unlooped(text: str, n: int = 4, times: int = 2) -> str:
    """A small model's text cut where it starts going round in a loop: at the word where an ``n``-word
    phrase comes back more than ``times`` times ("the report itself, the report itself, ...")."""
    words = text.split(" ")
    seen: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - n + 1):
        key = tuple(w.lower().strip(",.;:") for w in words[i : i + n])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > times:
            kept = " ".join(words[:i]).rstrip(" ,;:")
            return kept + ("" if kept.endswith((".", "!", "?")) else "…")
    return text


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _first_words(text: str, n: int = 240) -> str:
    flat = _one_line(text)
    return flat if len(flat) <= n else flat[:n].rsplit(" ", 1)[0] + "…"


def _cut(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] + "…"
