"""Write Outlook .msg files for the tests (no Python library writes them).

A .msg is a Compound File (the OLE2 container of Office 97) holding one stream per
property, as [MS-OXMSG] lays them out; this writes the few that mail readers use,
in a minimal version-3 Compound File ([MS-CFB]): small streams in the mini stream,
the directory as a chain of right siblings.
"""

from __future__ import annotations

import struct
from datetime import datetime, timezone
from pathlib import Path

SECTOR, MINI, CUTOFF = 512, 64, 4096
FREE, END, FAT_SECTOR, NONE = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF
STORAGE, STREAM, ROOT = 1, 2, 5


def write_msg(path: Path, *, subject: str, body: str, sender: tuple[str, str], recipients: list[tuple[str, str]],
              attachments: list[tuple[str, bytes]], sent: datetime) -> None:
    """An e-mail message (IPM.Note) with a plain-text body, recipients and attachments by value."""
    counts = struct.pack("<8x4I8x", len(recipients), len(attachments), len(recipients), len(attachments))
    tree: dict[str, bytes | dict] = _properties(
        counts, {0x001A: "IPM.Note", 0x0037: subject, 0x1000: body, 0x0C1A: sender[0], 0x0C1F: sender[1]},
        fixed=[(0x0039, 0x0040, _filetime(sent))])
    for number, (name, address) in enumerate(recipients):
        tree[f"__recip_version1.0_#{number:08X}"] = _properties(
            bytes(8), {0x3001: name, 0x39FE: address, 0x3003: address}, fixed=[(0x0C15, 0x0003, struct.pack("<Q", 1))])
    for number, (name, data) in enumerate(attachments):
        tree[f"__attach_version1.0_#{number:08X}"] = _properties(
            bytes(8), {0x3707: name, 0x3704: name}, binary={0x3701: data},
            fixed=[(0x3705, 0x0003, struct.pack("<Q", 1))])  # attached by value
    path.write_bytes(_compound_file(tree))


def _properties(header: bytes, strings: dict[int, str], *, binary: dict[int, bytes] | None = None,
                fixed: list[tuple[int, int, bytes]]) -> dict[str, bytes]:
    """The streams of one object: a stream per variable-size property, and the property stream listing them all."""
    streams: dict[str, bytes] = {}
    listing = bytearray(header)
    variable = [(tag, 0x001F, value.encode("utf-16-le")) for tag, value in strings.items()]
    variable += [(tag, 0x0102, value) for tag, value in (binary or {}).items()]
    for tag, kind, data in variable:
        streams[f"__substg1.0_{tag:04X}{kind:04X}"] = data
        listing += struct.pack("<IIII", tag << 16 | kind, 0x6, len(data) + 2 * (kind == 0x001F), 0)
    for tag, kind, value in fixed:
        listing += struct.pack("<II", tag << 16 | kind, 0x6) + value
    streams["__properties_version1.0"] = bytes(listing)
    return streams


def _filetime(moment: datetime) -> bytes:
    since = moment.astimezone(timezone.utc) - datetime(1601, 1, 1, tzinfo=timezone.utc)
    return struct.pack("<Q", int(since.total_seconds() * 10_000_000))


def _compound_file(tree: dict) -> bytes:
    entries: list[dict] = [{"name": "Root Entry", "type": ROOT, "kids": []}]

    def add(folder: dict, parent: int) -> None:
        for name, value in folder.items():
            entries.append({"name": name, "type": STORAGE if isinstance(value, dict) else STREAM, "kids": []})
            index = len(entries) - 1
            entries[parent]["kids"].append(index)
            if isinstance(value, dict):
                add(value, index)
            else:
                entries[index]["data"] = value

    add(tree, 0)
    mini_stream, mini_fat = bytearray(), []
    big: list[tuple[dict, bytes]] = []
    for entry in entries:
        data = entry.get("data")
        if data is None:
            continue
        if len(data) < CUTOFF:
            entry["start"] = len(mini_stream) // MINI if data else END
            count = -(-len(data) // MINI)
            mini_fat += [len(mini_fat) + i + 1 for i in range(count - 1)] + [END] * bool(count)
            mini_stream += data + bytes(count * MINI - len(data))
        else:
            big.append((entry, data))

    def sectors(size: int) -> int:
        return -(-size // SECTOR)

    directory = sectors(len(entries) * 128)
    minifat = sectors(len(mini_fat) * 4)
    ministream = sectors(len(mini_stream))
    streams = [sectors(len(data)) for _, data in big]
    content = directory + minifat + ministream + sum(streams)
    fats = 1
    while fats * SECTOR // 4 < fats + content:
        fats += 1
    fat = [FAT_SECTOR] * fats
    starts = []
    for count in (directory, minifat, ministream, *streams):
        starts.append(len(fat) if count else END)
        fat += [len(fat) + i + 1 for i in range(count - 1)] + [END] * bool(count)
    fat += [FREE] * (fats * SECTOR // 4 - len(fat))
    dir_start, minifat_start, ministream_start, *stream_starts = starts
    for (entry, _), start in zip(big, stream_starts):
        entry["start"] = start
    entries[0]["start"], entries[0]["size"] = ministream_start, len(mini_stream)

    header = struct.pack("<8s16sHHHHH6sIIIIIIIII", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", bytes(16), 0x3E, 3, 0xFFFE,
                         9, 6, bytes(6), 0, fats, dir_start, 0, CUTOFF, minifat_start if minifat else END, minifat,
                         END, 0)
    header += struct.pack("<109I", *range(fats), *[FREE] * (109 - fats))
    body = struct.pack(f"<{len(fat)}I", *fat)
    body += _pad(b"".join(_entry(entry, entries) for entry in entries))
    body += _pad(struct.pack(f"<{len(mini_fat)}I", *mini_fat))
    body += _pad(bytes(mini_stream))
    body += b"".join(_pad(data) for _, data in big)
    return header + body


def _entry(entry: dict, entries: list[dict]) -> bytes:
    name = entry["name"].encode("utf-16-le") + b"\x00\x00"
    siblings = {kid: (entry["kids"][i + 1] if i + 1 < len(entry["kids"]) else NONE) for i, kid in enumerate(entry["kids"])}
    for kid, right in siblings.items():
        entries[kid]["right"] = right
    size = entry.get("size", len(entry.get("data", b"")))
    return struct.pack("<64sHBBIII16sIQQIQ", name, len(name), entry["type"], 1, NONE, entry.get("right", NONE),
                       entry["kids"][0] if entry["kids"] else NONE, bytes(16), 0, 0, 0,
                       entry.get("start", END if entry["type"] == STREAM else 0), size)


def _pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % SECTOR)
