"""A citation points at the sentence that supports the claim: its characters in the file's text (the
text the preview shows), found back from the sentence as the model was shown it (whitespace joined,
perhaps cut), within its chunk; the chunk's span, ``exact`` False, when the sentence cannot be found."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sensetree.chat import Agent
from sensetree.chat.evidence import split_sentences
from sensetree.explorer import find_quote
from sensetree.models.llm import ChatTurn
from sensetree.handlers.files import explorer as explorer_of

WORD = st.text("abcdeéxyz0123.,;:()-", min_size=1, max_size=8)
SPACE = st.sampled_from([" ", "  ", "\n", " \n ", "\t", "\n\n"])


def _flat(text: str) -> str:
    return " ".join(text.split())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(WORD, SPACE), min_size=1, max_size=60), st.data())
def test_a_sentence_cut_from_a_text_is_found_back_whatever_its_whitespace(pieces, data):
    text = "".join(w + s for w, s in pieces)
    i = data.draw(st.integers(0, len(pieces) - 1))
    j = data.draw(st.integers(i + 1, len(pieces)))
    words = [w for w, _ in pieces[i:j]]
    quote = data.draw(st.sampled_from([" ".join(words), "\n".join(words), "  ".join(words) + " "]))
    start = sum(len(w) + len(s) for w, s in pieces[:i])
    found = find_quote(text, quote)
    assert found is not None
    assert _flat(text[found[0]:found[1]]) == _flat(quote)
    assert found[0] <= start  # the first place it is, never past the sentence's own
    # searched from where it is (its chunk's start), it is found there
    inside = find_quote(text, quote, start)
    assert inside is not None and inside[0] == start


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(WORD, SPACE), min_size=8, max_size=60), st.data())
def test_a_sentence_cut_short_for_the_prompt_is_still_found(pieces, data):
    text = "".join(w + s for w, s in pieces)
    i = data.draw(st.integers(0, len(pieces) - 2))
    flat = " ".join(w for w, _ in pieces[i:])
    cut = data.draw(st.integers(1, len(flat)))
    quote = flat[:cut].rstrip() + "…"  # prompt.cut and excerpt() end a cut text with an ellipsis
    start = sum(len(w) + len(s) for w, s in pieces[:i])
    found = find_quote(text, quote, start)
    assert found is not None and found[0] == start
    assert _flat(text[found[0]:found[1]]) == _flat(quote[:-1])


def test_a_quote_that_is_not_in_the_text_is_not_found_and_a_changed_middle_is_found_by_its_ends():
    text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen."
    assert find_quote(text, "the vault code is 1234") is None
    assert find_quote(text, "") is None and find_quote(text, "…") is None
    changed = "one two three four five six SEVEN eight nine ten eleven twelve thirteen fourteen."
    assert find_quote(text, changed) == (0, len(text))


FILLER = "\n\n".join(f"Paragraph {k} of the harbour notes says little about boats, tides, ropes or gulls number {k}."
                     for k in range(40))
HARBOUR = (FILLER + "\n\nThe ferry to Skye leaves at 10:40\nfrom pier   3 on weekdays.\nParking costs four pounds a day.\n")
BUDGET = "The 2026 budget for the community hall is 48,000 euros. The treasurer, Ines Duarte, signs payments."


class ScriptedModel:
    """A chat model that writes one set answer (the spans are what is tested, not the model)."""

    def __init__(self, answer: str):
        self.answer = answer

    def stream(self, messages, tools=None, tool_choice="auto", max_tokens=512, temperature=0.2, on_text=None):
        if on_text:
            on_text(self.answer)
        return ChatTurn(content=self.answer, chunks=1)


def test_ask_json_gives_each_citation_the_span_of_its_supporting_sentence_in_the_file(tmp_path, make_engine,
                                                                                     write_tree):
    files = write_tree(tmp_path / "docs", {"harbour.txt": HARBOUR, "budget.txt": BUDGET})
    engine = make_engine(tmp_path / "data", tmp_path / "docs")
    try:
        agent = Agent(engine, ScriptedModel("The ferry to Skye leaves at 10:40 from pier 3. "
                                            "The hall's budget is 48,000 euros."))
        answer = json.loads(json.dumps(agent.answer("When does the ferry to Skye leave?").as_dict()))
        by_path = {s["path"]: s for s in answer["sources"]}
        harbour, budget = by_path[str(files["harbour.txt"])], by_path[str(files["budget.txt"])]
        first, second = answer["citations"]
        assert first["cited"] == [harbour["n"]] and second["cited"] == [budget["n"]]
        assert answer["answer"][first["at"][0]:first["at"][1]].startswith("The ferry to Skye")
        assert answer["answer"][second["at"][0]:second["at"][1]].endswith("].")
        explorer = explorer_of(engine)
        for citation, path, said in ((first, harbour["path"], "The ferry to Skye leaves at 10:40 from pier 3 on weekdays."),
                                     (second, budget["path"], "The 2026 budget for the community hall is 48,000 euros.")):
            (span,) = citation["spans"]
            assert span["exact"] is True and span["path"] == path and span["n"] == citation["cited"][0]
            preview = explorer.preview(path, span["chunk_index"], (span["span"]["start"], span["span"]["end"]))
            assert _flat(preview["text"][span["span"]["start"]:span["span"]["end"]]) == said
            assert preview["start"] <= span["span"]["start"] < span["span"]["end"] <= preview["end"]
            assert preview["mark"] == span["span"]
        # a sentence the file no longer has: its chunk's span, not exact
        chunk = first["spans"][0]["chunk_index"]
        (gone,) = explorer.quote_spans(harbour["path"], [(chunk, "The ferry sank in 1912 off the point.")])
        preview = explorer.preview(harbour["path"], chunk)
        assert (gone.start, gone.end, gone.exact) == (preview["start"], preview["end"], False)
        assert explorer.preview(harbour["path"], chunk, (10, 10**9))["mark"] == {"start": 10, "end": len(preview["text"])}
        assert "mark" in preview and preview["mark"] is None
        assert split_sentences("The ferry to Skye leaves at 10:40\nfrom pier   3.") == [
            "The ferry to Skye leaves at 10:40 from pier 3."]  # what the model is shown is whitespace joined
    finally:
        engine.close()


def test_a_heading_joined_to_a_later_sentence_by_a_cut_excerpt_is_found_by_that_sentence():
    """An excerpt cut to its best sentences joins a heading without a full stop to the sentence after the one
    it dropped: the quote is placed on that sentence, its longest run of words the text holds."""
    text = ("Outlook for Q4 2025\nFor the fourth quarter the board expects revenue between EUR 5.0 and 5.3 million. "
            "The order backlog stood\nat EUR 3.4 million on 30 September, the highest in the company's history.")
    quote = ("Outlook for Q4 2025 The order backlog stood at EUR 3.4 million on 30 September, the highest in the "
             "company's history.")
    start, end = find_quote(text, quote)
    assert text[start:end].startswith("The order backlog stood") and text[start:end].endswith("history.")
