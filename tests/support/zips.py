"""Archives and documents as bytes for the extraction tests, and zips that lie about their members."""

from __future__ import annotations

import io
import zipfile


def docx_bytes(text: str) -> bytes:
    """A one-paragraph DOCX written by python-docx."""
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    """A deflated zip of ``members`` (name -> content)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def declare_member_size(data: bytes, member: str, size: int) -> bytes:
    """``data`` with ``member``'s uncompressed size rewritten to ``size`` in its local header
    (+22, name at +30) and its central directory entry (+24, name at +46); a Zip64 extra field,
    where there is one, keeps the real size."""
    patched, name = bytearray(data), member.encode()
    for signature, name_offset, size_offset in ((b"PK\x03\x04", 30, 22), (b"PK\x01\x02", 46, 24)):
        start = patched.find(signature)
        while start != -1:
            if patched[start + name_offset:start + name_offset + len(name)] == name:
                patched[start + size_offset:start + size_offset + 4] = size.to_bytes(4, "little")
            start = patched.find(signature, start + 4)
    return bytes(patched)
