"""HTML to readable text: visible text only, paragraphs and lines kept (also used by EPUB and e-mail)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .base import Block, Job
from .charset import require_text

_SKIPPED_TAGS = frozenset(
    "head script style noscript template iframe object embed canvas svg math select button".split()
)
_PARAGRAPH_TAGS = frozenset(
    """
    p div section article main header footer nav aside h1 h2 h3 h4 h5 h6 ul ol dl table
    blockquote figure form fieldset details summary address hr body
    """.split()
)
_LINE_TAGS = frozenset("li tr dt dd caption figcaption option legend".split())
_SPACED_TAGS = frozenset("td th".split())
WHITESPACE = re.compile(r"\s+")


class _TextBuilder:
    """Collects inline text and breaks, and lays them out as lines and paragraphs."""

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._line: list[str] = []
        self._lines: list[str] = []

    def text(self, value: str) -> None:
        self._line.append(WHITESPACE.sub(" ", value))

    def line_break(self) -> None:
        line = "".join(self._line).strip()
        if line:
            self._lines.append(line)
        self._line = []

    def paragraph_break(self) -> None:
        self.line_break()
        if self._lines:
            self._blocks.append("\n".join(self._lines))
        self._lines = []

    def space(self) -> None:
        self._line.append(" ")

    def verbatim(self, value: str) -> None:
        self.paragraph_break()
        if value.strip():
            self._blocks.append(value.strip("\n"))

    def result(self) -> str:
        self.paragraph_break()
        return "\n\n".join(self._blocks)


def html_to_text(html: str, *, title: bool = True) -> str:
    """Visible text of a page, with paragraph breaks kept and its title first (unless the page repeats it)."""
    tree = LexborHTMLParser(html)
    builder = _TextBuilder()
    root = tree.body or tree.root
    # An explicit stack rather than recursion: hostile pages nest thousands deep.
    stack: list[LexborNode | Callable[[], None]] = [root] if root is not None else []
    while stack:
        item = stack.pop()
        if not isinstance(item, LexborNode):
            item()  # a pending closing break
        elif item.is_text_node:
            builder.text(item.text_content or "")
        elif item.is_element_node and item.tag not in _SKIPPED_TAGS:
            tag = item.tag
            if tag == "pre":
                builder.verbatim(item.text())
                continue
            if tag == "br":
                builder.line_break()
                continue
            closing = None
            if tag in _PARAGRAPH_TAGS:
                builder.paragraph_break()
                closing = builder.paragraph_break
            elif tag in _LINE_TAGS:
                builder.line_break()
                closing = builder.line_break
            elif tag in _SPACED_TAGS:
                closing = builder.space
            if closing is not None:
                stack.append(closing)
            stack.extend(reversed(list(item.iter(include_text=True))))
    text = builder.result()

    title_node = tree.css_first("title") if title else None
    heading = " ".join(title_node.text().split()) if title_node is not None else ""
    if heading and not text.startswith(heading):
        return f"{heading}\n\n{text}"
    return text


def read_html(data: bytes, job: Job) -> Iterator[Block]:
    yield html_to_text(require_text(data))
