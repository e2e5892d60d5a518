"""What the disk and clients hand us, made safe to pass on: property tests of the terminal escaping
(issue 24, defect 20) and of listing folders whose entries have any bytes for a name (defect 17)."""

from __future__ import annotations

import json
import os
import tempfile
import unicodedata

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from rich.text import Text

from sensetree.engine import Engine
from sensetree.ingest.walker import is_hidden
from sensetree.interfaces.terminal import escape
from sensetree.safe_text import clean_json, cleaned, has_surrogates, printable, without_surrogates
from sensetree.errors import SenseTreeError
from sensetree.operations import AddRootParams, FileParams, SimilarParams
from sensetree.handlers.files import explorer as explorer_of

BIDI = set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Text with what names and snippets may hold: controls, escapes, markup, surrogates, bidi overrides.
ODD_TEXT = st.lists(st.one_of(st.characters(), st.sampled_from(["\x1b", "[", "]", "\\", "\r", "\n", "\x9b", "\ud800",
                                                                 "\udcff", "\u202e", "[bold]", "[/]", "\x1b[31m"]))
                    ).map("".join)


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cs") or char in BIDI


@given(ODD_TEXT)
def test_printable_text_holds_no_control_character(text):
    shown = printable(text)
    assert not any(_unsafe(c) for c in shown)
    shown.encode("utf-8")  # a terminal, a JSON answer and a log line can all take it
    if not any(_unsafe(c) for c in text):
        assert shown == text  # ordinary names are shown as they are


@given(ODD_TEXT)
def test_running_text_keeps_its_lines(text):
    shown = printable(text, lines=True)
    assert shown.count("\n") == text.count("\n") and shown.count("\t") == text.count("\t")
    assert not any(_unsafe(c) for c in shown if c not in "\n\t")


@given(ODD_TEXT)
def test_escaped_markup_prints_the_name_itself(text):
    """Inside markup as the CLI prints it, a name can neither apply markup of its own nor close or open the
    markup around it, and rich shows no control character. (rich reads a backslash before ``[`` as an escape,
    so a name with ``\\[`` may show one backslash less; every other name is shown exactly.)"""
    rendered = Text.from_markup(f"[bold]{escape(text)}[/] [dim]x[/]")
    assert rendered.plain.endswith(" x") and not any(_unsafe(c) for c in rendered.plain)
    assert {str(span.style) for span in rendered.spans} <= {"bold", "dim"}
    assert rendered.spans[-1].start == len(rendered.plain) - 1 and str(rendered.spans[-1].style) == "dim"
    if "\\" not in text:
        assert rendered.plain == printable(text) + " x"


def test_surrogates_become_the_replacement_character():
    assert without_surrogates("a\ud800b\udcff") == "a\ufffdb\ufffd"
    assert printable("\x1b[31mred") == "\\x1b[31mred" and printable("\u202etxt.exe") == "\\u202etxt.exe"


# Names as the OS takes them: any bytes but '/' and NUL.
NAME = st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b".."))
KIND = st.sampled_from(["file", "folder", "loop", "dangling", "link_out"])


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    base = tmp_path_factory.mktemp("odd")
    root = base / "root"
    root.mkdir()
    engine = Engine(base / "data")
    engine.run(AddRootParams(str(root)))
    yield explorer_of(engine), root, base, engine
    engine.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(NAME, KIND), min_size=1, max_size=8, unique_by=lambda item: item[0]))
def test_a_folder_of_any_names_is_listed_without_failing(explorer, entries):
    """Every entry that is not hidden is listed, once, with a name JSON can carry; one that cannot be
    read or indexed (a link loop, a name that is not UTF-8) says why; links out of the root are left out."""
    view, root, base, _ = explorer
    folder = os.fsencode(tempfile.mkdtemp(dir=root))
    expected = []
    for raw, kind in entries:
        path = os.path.join(folder, raw)
        try:
            if kind == "file":
                with open(path, "wb") as file:
                    file.write(b"text")
            elif kind == "folder":
                os.mkdir(path)
            elif kind == "loop":
                os.symlink(path, path)
            elif kind == "dangling":
                os.symlink(os.path.join(folder, b"nowhere-" + raw[:8].replace(b"/", b"_")), path)
            else:
                os.symlink(os.fsencode(base), path)
        except OSError:  # a file system that refuses the name (not UTF-8 on APFS, too long)
            assume(False)
        name = os.fsdecode(raw)
        if not is_hidden(name) and kind != "link_out":
            expected.append((without_surrogates(name), kind, _utf8(raw)))
    listing = view.listing(os.fsdecode(folder))
    json.dumps(listing.as_dict(), ensure_ascii=False).encode("utf-8")  # servable as it is
    shown = sorted((e.name, e.error) for e in listing.entries)
    assert sorted(name for name, _ in shown) == sorted(name for name, *_ in expected)
    for name, kind, valid in expected:  # two undecodable names may show alike: any entry of that name will do
        problems = [error for shown_name, error in shown if shown_name == name]
        if kind == "loop":
            assert any(error and "cannot be read" in error for error in problems)
        elif not valid:
            assert any(error and "not valid UTF-8" in error for error in problems)
        elif kind in ("file", "folder"):
            assert None in problems


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=NAME, is_dir=st.booleans())
def test_file_and_similar_answer_any_name_in_words(explorer, raw, is_dir):
    """Issue 42: a name that is not UTF-8 made ``file`` and ``similar`` fail with an internal
    UnicodeEncodeError; each now answers (a detail, or an error of its own kind) with the name shown safely."""
    _, root, _, engine = explorer
    path = os.path.join(os.fsencode(tempfile.mkdtemp(dir=root)), raw)
    try:
        os.mkdir(path) if is_dir else open(path, "wb").close()
    except OSError:
        assume(False)
    name = os.fsdecode(path)
    for params in (FileParams(name), SimilarParams(name)):
        try:
            answer = engine.run(params)
        except SenseTreeError as exc:
            str(exc).encode("utf-8")  # a message any interface can show
            if not _utf8(raw):
                assert "not valid UTF-8" in str(exc), str(exc)
            elif isinstance(params, SimilarParams) and is_dir and not is_hidden(os.fsdecode(raw)):
                assert "is a folder" in str(exc), str(exc)
        else:
            assert isinstance(params, FileParams) and _utf8(raw)
            json.dumps(answer.as_dict(), ensure_ascii=False).encode("utf-8")


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


SHORT_ODD_TEXT = st.lists(st.sampled_from(["a", "\ud800", "\udcff", "\ud83d\ude00", "\n", '"', "\\", "é"]),
                          max_size=6).map("".join)
JSON_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), SHORT_ODD_TEXT),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(SHORT_ODD_TEXT, inner, max_size=3)), max_leaves=8)


@settings(max_examples=60)
@given(JSON_VALUES)
def test_a_json_message_with_lone_surrogates_is_read_as_an_http_body_is(value):
    """What ``sensetree mcp`` reads from a client: each lone surrogate as U+FFFD, the rest as it was, and
    the message still one line that a strict reader takes."""
    message = json.dumps(value)  # a lone surrogate written as its escape, as a client may send it
    read = clean_json(message)
    assert "\n" not in read
    sent = json.loads(message)  # two halves side by side are one character (U+1F600), not two lone ones
    assert json.loads(read.encode("utf-8")) == cleaned(sent)  # strict UTF-8: no lone surrogate is left
    if not any(has_surrogates(text) for text in _texts(sent)):
        assert json.loads(read) == sent
    assert clean_json("{not json") == "{not json"


def _texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)
