"""The hostile strings the tests throw at every door, in one list: queries that look like syntax,
text that is not text (lone surrogates, NUL, controls), direction marks, very long strings, and paths
that climb out of the roots or name nothing a system allows.

``QUERIES`` (by what each one is) is what a person or a model may type as a query; ``PATHS`` what
they may give as a file or folder; ``STRINGS`` all of them, for a parameter of either kind.
"""

from __future__ import annotations

QUERIES = {
    "empty": "",
    "whitespace": " \t\n \u3000 ",
    "10k characters": ("tender submission deadline " * 400)[:10_000],
    "one 10k word": "a" * 10_000,
    "only stop words": "the of and a to in is it",
    "only punctuation": "!!! ??? ... ,,, ;;; --- ***",
    "sql injection": "' OR 1=1 --",
    "sql comment": "x'; DROP TABLE chunks; --",
    "like wildcards": "%_%",
    "backslash": "\\",
    "double quote": '"',
    "unclosed phrase": '"unclosed phrase',
    "quoted path predicate": "a' AND path LIKE '%",
    "fts operators": "tender AND (roof OR NOT heating)",
    "fts syntax alone": "AND OR NOT ( ) * ~ ^ :",
    "fts field": "text:tender title:foo",
    "fts fuzzy and boost": "tender~2 roof^3 tend*",
    "fts must and must not": "+tender -roof",
    "json": '{"$where": "1"} [] null',
    "emoji": "😀🔥 🏳️‍🌈 👩‍💻",
    "rtl arabic": "مرحبا بالعالم الفاتورة",
    "rtl hebrew": "שלום עולם חשבונית",
    "mixed direction": "invoice \u202efdp.exe\u202c IBAN",
    "nul characters": "invoice\x00IBAN\x00",
    "only nul": "\x00\x00",
    "lone surrogates": "caf\udce9 \ud800 invoice",
    "zero width": "\u200b\u200c\u200d\ufeff",
    "combining marks only": "\u0301\u0308\u0323",
    "control characters": "\x1b[31mred\x1b[0m \x07\x08",
    "cjk": "入札の締め切り",
    "decomposed accents": "cafe\u0301 menu",
}

PATHS = {
    "relative climb": "../secret/s.txt",
    "deep relative climb": "relative/../../../etc/passwd",
    "absolute elsewhere": "/etc/passwd",
    "filesystem root": "/",
    "windows drive": "C:\\Windows\\win.ini",
    "windows drive with slashes": "C:/Users/someone/secret.txt",
    "unc share": "\\\\server\\share\\secret.txt",
    "url-encoded climb": "%2e%2e/secret/s.txt",
    "url-encoded separators": "..%2fsecret%2fs.txt",
    "nul in a path": "/tmp/re\x00ports/a.txt",
    "lone surrogate name": "/tmp/bad\udcffname.txt",
    "lone leading surrogate": "\ud800",
    "right-to-left override": "/tmp/invoice\u202efdp.exe",
    "device name": "NUL",
    "longer than any system allows": "/" + "d" * 40_000,
    "a name over 255 bytes": "/tmp/" + "n" * 300 + ".txt",
    "tilde": "~/.ssh/id_rsa",
    "proc": "/proc/self/environ",
    "dot": ".",
    "newline": "/tmp/two\nlines.txt",
}

STRINGS = list(QUERIES.values()) + list(PATHS.values())
