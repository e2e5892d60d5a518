"""The assistant's pure parts, without a model or an index: tool calls written as text."""

from __future__ import annotations

import json

from sensetree.chat.text_calls import calls_as_text, parse_text_calls
from sensetree.models.llm import ToolCall


# tool calls written as text ----------------------------------------------------------
def test_text_calls_take_parameters_fences_and_several_tags():
    [call] = parse_text_calls('```json\n{"name": "list_directory", "parameters": {"path": "/r"}}\n```')
    assert call.name == "list_directory" and json.loads(call.arguments) == {"path": "/r"}
    two = parse_text_calls('<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>\n'
                           '<tool_call>{"name": "read_file", "arguments": "{\\"path\\": \\"b\\"}"}</tool_call>')
    assert [json.loads(c.arguments)["path"] for c in two] == ["a", "b"]
    assert parse_text_calls("") == [] and parse_text_calls("The harbour opens at nine.") == []


def test_a_text_call_cut_by_max_tokens_keeps_its_name_and_no_arguments():
    [call] = parse_text_calls('<tool_call>\n{"name": "search_files", "arguments": {"query": "harbour"}')
    assert (call.name, call.arguments) == ("search_files", "")
    [call] = parse_text_calls('{"name": "read_file", "arguments": {"path": "/r/a')  # the tags dropped
    assert (call.name, call.arguments) == ("read_file", "")
    assert parse_text_calls('{"query": "harbour", "path": "/r/a') == []


def test_calls_written_back_as_text_read_back_the_same():
    calls = [ToolCall("call_1", "read_file", '{"path": "/r/a.txt"}'), ToolCall("", "list_directory", "")]
    text = calls_as_text(calls)
    assert text.startswith("<tool_call>\n") and text.count("</tool_call>") == 2
    assert [(c.name, json.loads(c.arguments)) for c in parse_text_calls(text)] == [
        ("read_file", {"path": "/r/a.txt"}), ("list_directory", {})]
