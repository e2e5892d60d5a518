"""E-mail: .eml through the standard library, Outlook .msg through python-oxmsg.

Either way: the headers that matter for search, the body (plain text preferred),
and the names of the attachments.
"""

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
    attachments = [name for part in message.walk() if (name := part.get_filename())]
    if attachments:
        yield "Attachments: " + ", ".join(attachments)


def read_msg(data: bytes, job: Job) -> Iterator[Block]:
    from oxmsg import Message

    message = Message.load(data)
    recipients = ", ".join(
        f"{r.name} <{r.email_address}>" if r.name and r.name != r.email_address else r.email_address
        for r in message.recipients
        if r.email_address or r.name
    )
    date = message.sent_date
    headers = [
        ("From", message.sender),
        ("To", recipients),
        ("Subject", message.subject),
        ("Date", date.strftime("%a, %d %b %Y %H:%M:%S %z").strip() if date else None),
    ]
    lines = [f"{name}: {value}" for name, value in headers if value]
    if lines:
        yield "\n".join(lines)
    body = message.body
    if not (body and body.strip()) and message.html_body:
        body = html_to_text(message.html_body)
    if body:
        yield body
    names = [a.file_name for a in message.attachments if a.file_name]
    if names:
        yield "Attachments: " + ", ".join(names)


def _part_text(part) -> str:
    try:
        return part.get_content()
    except LookupError:  # a charset Python does not know: let detection have a go
        return decode(part.get_payload(decode=True) or b"") or ""
