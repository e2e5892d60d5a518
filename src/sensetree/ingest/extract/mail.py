"""E-mail (.eml) through the standard library: the headers that matter for search, the body, attachment names."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator

from .base import Block, Job
from .charset import decode
from .html import html_to_text


def read_email(data: bytes, job: Job) -> Iterator[Block]:
    message = email.message_from_bytes(data, policy=email.policy.default)
    headers = [f"{name}: {message[name]}" for name in ("From", "To", "Cc", "Subject", "Date") if message[name]]
    if headers:
        yield "\n".join(headers)
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None:
        content = _part_text(body)
        yield html_to_text(content) if body.get_content_subtype() == "html" else content
    attachments = [part.get_filename() for part in message.walk() if part.get_filename()]
    if attachments:
        yield "Attachments: " + ", ".join(attachments)


def _part_text(part) -> str:
    try:
        return part.get_content()
    except LookupError:  # a charset Python does not know: let detection have a go
        return decode(part.get_payload(decode=True) or b"") or ""
