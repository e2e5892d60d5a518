"""Filters said in words: "invoices from March 2025 pdf in Work" is the query "invoices" over PDFs
modified in March 2025 in the folder Work.

A pure stage: text, a clock and a folder lookup in; an ``Understood`` (or None: nothing read as a
filter) out. English, German, French and Spanish. What counts as a filter, and why:

- **File types**: the type nouns of the four languages, singular and plural ("spreadsheets",
  "Tabellen", "hojas de cálculo", "diapositives", "E-Mails"...) and the extensions people type
  ("pdf", "xlsx", "jpg"), mapped to the index's type names (``ingest.extract.registry.BY_TYPE``;
  a test keeps the two in step, since ``search`` may not import ``ingest``). Not code extensions
  ("go", "c", "less" are words) and not "notes", "text" or "document": those are topics.
- **Times**: relative ones ("last week", "letzte Woche", "la semaine dernière", "la semana pasada",
  "this month", "yesterday", "last 30 days") from a small table below; absolute ones (month names,
  years, dates) parsed by dateparser, imported on the first query that has one. Each gives a period
  [after, before), local time, narrowed by the word before it: "in/im/en/from" the period itself,
  "since/seit/depuis/desde" from its start on, "before/vor/avant/antes de" up to its start,
  "until/bis/jusqu'à/hasta" up to its end; "from 2019 to 2021" spans both. Periods: a named day,
  month or year is that calendar day, month or year; "this week/month/year" the calendar one now
  running; "last week/month/year" (and "past", "letzte", "dernière", "pasada") a rolling window
  from that day one unit ago until now, today included: in a search box it means "recently", and
  a calendar week read literally would hide Monday's file on Tuesday.
- **A folder**: "in Work", "im Ordner Projekte", "dans Travail", "en la carpeta Trabajo", read only
  when ``folders(name)`` finds such a folder under the roots; otherwise the words stay in the query.
  A name several folders have ("notes" in two projects) scopes to all of them, not the shallowest.
- **Several times** narrow each other where they overlap ("since 2019 before 2021"); where they do
  not ("in 2024 in 2025") they mean the span that covers both, never an empty period; where even
  that bounds nothing ("since 2025 before 2024") no time is read and the words stay in the query.

What only looks like a filter stays in the query (be conservative: the engine also compares the
filtered results with the unfiltered ones):

- A year alone needs a word that makes it a time ("in 2019", "seit 2019", "before 2020") or a type
  word beside it with nothing else on its other side ("photos 2019", "2019 pdfs"). "2019 tax return",
  "Steuererklärung 2019" and "tax return 2019 pdf" are about 2019 and were written in 2020: there the
  year is the topic. A month name alone needs such a word too ("since January";
  "mars" is also a planet, "may" a verb); a month with its year ("March 2025") needs none. A full
  date needs "since", "in", "before"...: alone or after "of/vom" it is the document's own date
  ("Urteil vom 2. April 2013", "minutes 2025-03-01"), which its file need not share.
- A singular type word or extension followed by another word modifies it: "pdf export settings",
  "email server configuration", "photo editing" are about the format. Only a following filter, a file
  noun ("pdf files") or a linking word ("email from Anna", "fotos de vacaciones") keeps it a filter.
  Plurals never modify ("emails Anna budget" is a filter). After "of/de/von" a type word is what the
  rest is about ("size of pdf", "configuración del correo"); after "to/into/as/nach/als/vers" it is a
  target format ("export to pdf", "save as pdf").
- A sentence (ending in . ? ! or nine words and more) is prose: its dates and places are its topic
  ("incidence rose since 1979.", "Urteil vom 2. April 2013"), unless it speaks in the first person
  ("what did I send Anna last week?"), when it asks about one's own files. Type words follow the
  rules above in prose too.
- A phrase in quotes is taken as written ('"pdf" export', '„letzte Woche“'): quotes are how a person,
  or the web app's chip that undoes one filter, says that words are the topic.
- The query never ends empty: when reading every filter would leave nothing (or only words like
  "and", "the", "files"), the type words stay in the query, and stay filters only when a time or a
  folder was said too ("photos from last week", "pdf in Work"); a lone "email" or "pdfs" is the topic.
  With only a time or folder left to read, nothing is read ("2019", "last week" alone: None).
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from ..store.terms import QUOTED
from .types import Filters


@dataclass(frozen=True)
class Understood:
    """What a query said besides its topic."""

    query: str  # the rest of the query (NFC), the filter words taken out, whitespace tidied
    types: tuple[str, ...]  # document types (the registry's BY_TYPE names)
    modified_after: float | None  # epoch seconds, inclusive (local time)
    modified_before: float | None  # epoch seconds, exclusive
    folder: str | None  # the first of the folders ``folders(name)`` gave for the name said
    said: tuple[str, ...]  # the words read as filters, as written ("pdf", "from March 2025", "in Work")
    folders: tuple[str, ...] = ()  # every folder of that name (the search scopes to all of them)

    @property
    def scope(self) -> str | list[str] | None:
        """What the search is scoped to: the folder, or every folder of the name said when there are several."""
        return list(self.folders) if len(self.folders) > 1 else self.folder

    def as_dict(self) -> dict:
        """JSON for the interfaces (an "understood: ..." line, chips that undo one filter)."""
        shown = {**asdict(self), "types": list(self.types), "said": list(self.said)}
        del shown["folders"]  # the answer's notice names them when there are several; the JSON stays as it was
        return shown

    def filters(self) -> Filters | None:
        """The types and the period as the search's ``Filters`` (the folder is a scope, not a filter)."""
        if not (self.types or self.modified_after is not None or self.modified_before is not None):
            return None
        return Filters(self.types, self.modified_after, self.modified_before)


def narrowed(given: Filters | None, said: Filters | None) -> Filters | None:
    """The filters a search runs with: those given as options, narrowed by those said in words (the
    types given win; the periods meet)."""
    if given is None or said is None:
        return given or said
    after = [t for t in (given.modified_after, said.modified_after) if t is not None]
    before = [t for t in (given.modified_before, said.modified_before) if t is not None]
    return Filters(given.doc_types or said.doc_types, max(after) if after else None, min(before) if before else None)


# --- file types ------------------------------------------------------------------------------------

_SHEETS = ("xlsx", "xls", "ods")
_SLIDES = ("pptx", "ppt", "odp")
_MAIL = ("email", "msg")
_WORD = ("docx", "doc")

# (types, singular words and extensions: these may modify a noun, plurals: these never do). Not the
# singulars that also name things in life or inside a document: presentation (a talk), image, picture,
# Bild (a figure), mail, correo (the post); their plurals are read. Nor classeur (a binder), workbook
# or planilla (a form), in either number.
_TYPE_TABLE: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("pdf",), "pdf", "pdfs"),
    (
        _SHEETS,
        (
            "spreadsheet|excel|excel sheet|excel-tabelle|excel-datei|tabelle|tabellenkalkulation|tableur"
            "|feuille de calcul|hoja de cálculo|hoja de calculo|xlsx|xlsm|xls|ods"
        ),
        (
            "spreadsheets|excel sheets|excel-tabellen|excel-dateien|tabellen|tableurs|feuilles de calcul"
            "|hojas de cálculo|hojas de calculo"
        ),
    ),
    (
        _SLIDES,
        "powerpoint|diapositive|diapositiva|pptx|ppt|odp",
        (
            "slides|presentations|powerpoints|präsentationen|folien|présentations|diapositives|diapos"
            "|presentaciones|diapositivas"
        ),
    ),
    (
        _MAIL,
        "email|e-mail|courriel|correo electrónico|correo electronico|eml",
        "emails|e-mails|mails|courriels|correos|correos electrónicos|correos electronicos",
    ),
    (
        _WORD,
        (
            "word document|word doc|word file|word-dokument|word-datei|document word|documento de word"
            "|documento word|docx"
        ),
        (
            "word documents|word docs|word files|word-dokumente|word-dateien|documents word|documentos de word"
            "|documentos word"
        ),
    ),
    (
        ("image",),
        "photo|screenshot|foto|jpg|jpeg|png|gif|tif|tiff|webp",
        "photos|images|pictures|pics|screenshots|fotos|bilder|bildern|imágenes|imagenes",
    ),
    (("epub",), "ebook|e-book|epub", "ebooks|e-books"),
    (("odt",), "odt", ""),
    (("csv",), "csv", ""),
    (("rtf",), "rtf", ""),
    (("notebook",), "ipynb|jupyter notebook", "jupyter notebooks"),
    (("text",), "txt", ""),
    (("json",), "json", ""),
    (("archive",), "zip", ""),
)


def _key(words: str) -> str:
    """One spelling for a type phrase however it was written ("E-Mail", "e mail", "email")."""
    return re.sub(r"[-\s]+", "", words.casefold())


_TYPES: dict[str, tuple[tuple[str, ...], bool]] = {
    _key(word): (types, plural)
    for types, singulars, plurals in _TYPE_TABLE
    for plural, words in ((False, singulars), (True, plurals))
    for word in words.split("|")
    if word
}


def _alternation(words: list[str]) -> str:
    """Longest first, so "hoja de cálculo" wins over a shorter word inside it; spaces and hyphens loose."""

    def loose(word: str) -> str:
        return r"[-\s]*".join(r"\s+".join(map(re.escape, part.split())) for part in word.split("-"))

    return "|".join(loose(w) for w in sorted(set(words), key=len, reverse=True))


_TYPE_WORDS = [w for _, singulars, plurals in _TYPE_TABLE for w in (singulars + "|" + plurals).split("|") if w]
_FILE_NOUN = r"(?:files?|documents?|docs|dateien|datei|dokumente?|fichiers?|archivos?|documentos?)"
_FILE_NOUN_PLURAL = re.compile(r"files|documents|docs|dateien|dokumente|fichiers|archivos|documentos", re.IGNORECASE)
_ARTICLE = r"(?:the|my|all|die|meine|alle|le|la|les|mes|tous\s+les|el|los|las|mis|todos\s+los|in|im|en)"
_TYPE_RE = re.compile(
    rf"(?<![\w.])(?:{_ARTICLE}\s+)?(?:(?P<noun_before>{_FILE_NOUN})\s+(?:(?:de|en)\s+)?)?[.*]*"
    rf"(?P<type>{_alternation(_TYPE_WORDS)})(?:[-\s]+(?P<noun_after>{_FILE_NOUN}))?(?![\w-])",
    re.IGNORECASE,
)
# Words after which a type word is the topic: "size of pdf", "export to pdf", "save as pdf", "convertir a
# pdf" (so also English "a pdf": a lost filter, not a lost topic).
_OF_OR_TO = {
    "of",
    "de",
    "del",
    "du",
    "des",
    "d'",
    "von",
    "vom",
    "to",
    "into",
    "as",
    "zu",
    "zum",
    "zur",
    "nach",
    "als",
    "vers",
    "a",
    "à",
}
# Words that may follow a singular type word without it modifying them: "email from Anna".
_LINKING = {
    "about",
    "on",
    "from",
    "with",
    "by",
    "of",
    "regarding",
    "and",
    "or",
    "über",
    "von",
    "vom",
    "mit",
    "betreffend",
    "und",
    "oder",
    "sur",
    "de",
    "du",
    "des",
    "d'",
    "avec",
    "par",
    "concernant",
    "et",
    "ou",
    "sobre",
    "del",
    "con",
    "acerca",
    "y",
    "o",
}
# What a query may hold without saying anything: the rest is empty when only these remain.
_FILLER = {
    "and",
    "or",
    "the",
    "a",
    "an",
    "all",
    "my",
    "of",
    "from",
    "in",
    "und",
    "oder",
    "der",
    "die",
    "das",
    "alle",
    "meine",
    "von",
    "im",
    "et",
    "ou",
    "le",
    "la",
    "les",
    "l'",
    "de",
    "du",
    "des",
    "mes",
    "tous",
    "y",
    "o",
    "el",
    "los",
    "las",
    "en",
    "mis",
    "todos",
    "files",
    "file",
    "documents",
    "dateien",
    "dokumente",
    "fichiers",
    "archivos",
    "documentos",
    "&",
    "+",
    ",",
    "/",
    "-",
    "–",
}

# --- times ----------------------------------------------------------------------------------------

_MONTHS = (
    "january february march april may june july august september october november december "
    "januar jänner februar märz mai juni juli oktober dezember "
    "janvier février fevrier mars avril juin juillet août aout septembre octobre novembre décembre decembre "
    "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre"
).split()
_MONTH_ABBREVIATIONS = (
    "jan feb mar apr jun jul aug sep sept oct nov dec mär okt dez janv févr avr juil déc ene abr ago dic".split()
)
_MONTH = rf"(?:{_alternation(_MONTHS)})"
_MONTH_ANY = rf"(?:{_alternation(_MONTHS)}|(?:{_alternation(_MONTH_ABBREVIATIONS)})\.?)"
_YEAR = r"(?:19[7-9][0-9]|20[0-9][0-9])"
_DAY = r"(?:[0-3]?[0-9](?:\.|er|st|nd|rd|th)?)"
# Absolute times: a month with its year reads as a time alone, the others need a connecting word.
_ABSOLUTE = (
    rf"(?P<date>{_YEAR}-[01][0-9]-[0-3][0-9]"  # 2025-03-01
    rf"|{_DAY}\s+(?:de\s+)?{_MONTH_ANY}\s+(?:de\s+)?{_YEAR}"  # 1 March 2025, 1er mars 2025
    rf"|{_MONTH_ANY}\s+{_DAY},?\s+{_YEAR})"  # March 1, 2025
    rf"|(?P<strong>{_MONTH_ANY}\s+(?:de\s+|del\s+)?{_YEAR})"  # March 2025, marzo de 2025
    rf"|(?P<month>{_MONTH}|{_YEAR}-[01][0-9])|(?P<year>{_YEAR})"  # 2025-03 alone may be a season: 2001-02
)
_IN = r"in|during|from|im|in\s+der|in\s+den|aus|während|en|pendant|durant|durante|von"
_IN_STRONG = r"of|de|del|du|vom"  # only before a month with its year: "facturas de marzo de 2025"
_SINCE = r"since|after|seit|ab|nach|depuis|après|apres|desde|después\s+de|despues\s+de|a\s+partir\s+de"
_BEFORE = r"before|prior\s+to|vor|avant|antes\s+de"
_UNTIL = r"until|till|up\s+to|bis|jusqu'à|jusqu'a|jusqu'en|hasta"
_YEAR_WORD = r"(?:(?:the\s+)?year|jahre?|l'an(?:née)?|el\s+año|el\s+ano)\s+"
_CONNECTIVE = (
    rf"(?:(?P<in>{_IN})|(?P<in_strong>{_IN_STRONG})|(?P<since>{_SINCE})|(?P<before>{_BEFORE})"
    rf"|(?P<until>{_UNTIL}))\s+(?:{_YEAR_WORD})?"
)
_ABSOLUTE_RE = re.compile(rf"(?<![\w.-])(?:{_CONNECTIVE})?(?:{_ABSOLUTE})(?![\w-]|\.[0-9])", re.IGNORECASE)
_RANGE_RE = re.compile(
    rf"(?<![\w.-])(?:from|between|von|zwischen|de|du|entre|desde)\s+(?P<first>{_MONTH_ANY}(?:\s+{_YEAR})?|{_YEAR})"
    rf"\s*(?:to|and|until|till|bis|und|à|au|et|jusqu'à|a|hasta|y|-|–)\s*"
    rf"(?P<last>{_MONTH_ANY}(?:\s+(?:de\s+)?{_YEAR})?|{_YEAR})(?![\w-])",
    re.IGNORECASE,
)

# Relative times, from this table rather than dateparser: it reads "last week" as a moment (now minus
# seven days) and misses "past week", "vergangene Woche", "la semaine passée" and "l'an dernier".
_UNITS = (
    r"days?|weeks?|months?|years?|tagen?|tage|wochen?|monate?n?|monats|jahre?s?|jahren|jours?|semaines?|mois"
    r"|années?|annees?|ans?|días?|dias?|semanas?|mes|meses|años?|anos?"
)


def _unit_group(i: int) -> str:
    return rf"(?P<unit{i}>{_UNITS})"


def _number_group(i: int) -> str:
    return rf"(?:(?P<n{i}>[0-9]{{1,3}})\s+)?"


_LAST = (
    rf"(?:in\s+)?(?:the\s+)?(?:last|past|previous)\s+{_number_group(1)}{_unit_group(1)}"
    rf"|(?:in\s+)?(?:de[rnm]\s+|die\s+|das\s+)?(?:letzte[nrsm]?|vergangene[nrsm]?|vorige[nrsm]?)\s+"
    rf"{_number_group(2)}{_unit_group(2)}"
    rf"|(?:(?:la|le|les|des|du)\s+|l')?{_number_group(3)}(?:derni[eè]re?s?|pass[ée]e?s?)\s+{_unit_group(3)}"
    rf"|(?:(?:la|le)\s+|l')?{_unit_group(4)}\s+(?:derni[eè]re?|pass[ée]e?)"
    rf"|(?:(?:la|el|los|las)\s+)?{_unit_group(5)}\s+pasad[oa]s?"
    rf"|(?:(?:la|el|los|las)\s+)?(?:últim[oa]s?|ultim[oa]s?)\s+{_number_group(6)}{_unit_group(6)}"
)
_THIS = (
    r"this\s+(?P<this>week|month|year)|(?:in\s+)?diese[nrsm]?\s+(?P<this2>woche|monat|jahr)"
    r"|(?:cette\s+(?P<this3>semaine|année|annee)|ce\s+(?P<this4>mois)(?:-ci)?)"
    r"|est[ae]\s+(?P<this5>semana|mes|año|ano)"
)
# French "hier" only as "d'hier" or "depuis hier": in German it is "here".
_DAYS = r"(?P<today>today|heute|aujourd'hui|hoy)|(?P<yesterday>yesterday|gestern|d'hier|(?<=depuis\s)hier|ayer)"
_RELATIVE_RE = re.compile(
    rf"(?<![\w'])(?:(?P<since>{_SINCE})\s+|(?P<before>{_BEFORE})\s+|(?P<until>{_UNTIL})\s+|(?:{_IN}|de)\s+)?"
    rf"(?:(?P<last>{_LAST})|{_THIS}|{_DAYS})(?![\w'’-])",
    re.IGNORECASE,
)

# --- folders --------------------------------------------------------------------------------------

_FOLDER_WORD = r"(?:folder|directory|ordner|verzeichnis|dossier|répertoire|carpeta|directorio)"
_NAME = r"(?:(?P<quoted>\"[^\"]+\"|'[^']+'|«\s*[^»]+?\s*»|“[^”]+”)|(?P<name>[\w][\w.&'-]*(?:\s+[\w][\w.&'-]*){0,2}))"
_FOLDER_RE = re.compile(
    rf"(?<![\w'])(?P<word>in|im|inside|under|unter|dans|en)\s+(?:(?:the|my|meinem|dem|le|mon|la|el|mi)\s+)?"
    rf"(?:(?P<explicit>{_FOLDER_WORD})\s+)?{_NAME}",
    re.IGNORECASE,
)
_NAMED_FOLDER_RE = re.compile(  # "in the Work folder", "im Projekte-Ordner"
    rf"(?<![\w'])(?:in|im|inside)\s+(?:(?:the|my|meinem|dem)\s+)?(?P<name>[\w][\w.&'-]*?)[-\s]+{_FOLDER_WORD}(?![\w-])",
    re.IGNORECASE,
)

_FIRST_PERSON = re.compile(
    r"(?<![\w'])(?:(?:(?-i:I)|i'[a-z]+|me|my|ich|mir|mich|meine?[mnrs]?|je|moi|mon|ma"
    r"|mes|yo|mis?)(?![\w'-])|j'(?=\w))",
    re.IGNORECASE,
)
# Words after which "I" is a numeral or a letter, not the writer: "type I", "haplogroup I", "World War I".
_NUMBERED = {
    "type",
    "class",
    "phase",
    "stage",
    "grade",
    "group",
    "haplogroup",
    "complex",
    "chapter",
    "part",
    "section",
    "article",
    "volume",
    "vol",
    "war",
    "schedule",
    "annex",
    "appendix",
    "form",
    "tier",
    "level",
    "category",
    "factor",
    "title",
    "book",
    "act",
    "site",
    "receptor",
    "collagen",
    "interferon",
    "louis",
    "henry",
    "elizabeth",
    "charles",
    "george",
    "james",
    "william",
    "edward",
}
_WORD_RE = re.compile(r"[\w'&+/–-]+|[^\w\s]")
# A phrase in quotes (store/terms.QUOTED) is taken as written, never as a filter: how a person (or a removed chip)
# says "pdf" is the topic.
_PLURAL_UNITS = {
    "days",
    "weeks",
    "months",
    "years",
    "tage",
    "tagen",
    "wochen",
    "monate",
    "monaten",
    "jahre",
    "jahren",
    "jours",
    "semaines",
    "années",
    "annees",
    "ans",
    "días",
    "dias",
    "semanas",
    "meses",
    "años",
    "anos",
}

_Span = tuple[int, int]
_Period = tuple[datetime | None, datetime | None]  # [after, before): None leaves that side open
_Dates = tuple[datetime, datetime | None]  # what a time says before its connecting word narrows it


@dataclass(frozen=True)
class _Relative:
    """A time from the table of relative ones ("last week", "seit gestern"): its match."""

    match: re.Match[str]


@dataclass(frozen=True)
class _Range:
    """Two absolute times that bound one period ("from 2019 to 2021"): their phrases for dateparser."""

    first: str
    last: str


@dataclass(frozen=True)
class _Absolute:
    """A day, month or year: its phrase for dateparser, and the word before it ("since"...) if any."""

    phrase: str
    direction: str | None


@dataclass
class _Reading:
    """One filter found in the text, before the rules decide whether it is read."""

    start: int
    end: int
    kind: str  # "time", "year" (a bare year: read only beside a type), "folder", "type"
    said: _Relative | _Range | _Absolute | None = None  # a time or a year as found (``_resolve`` reads it)
    period: _Period = (None, None)  # a time, once read
    names: tuple[str, ...] = ()  # a folder's name: its folders, best first; a type: the index's types
    plural: bool = False


def understand(query: str, *, now: datetime, folders: Callable[[str], list[str]] | None = None) -> Understood | None:
    """The filters a query says in words and the rest of it; None when nothing reads as a filter.

    ``now`` anchors "last week" and picks the year of "in March" (the latest March not after it);
    naive means local time. ``folders(name)`` gives the folders under the roots with that name
    (case-insensitive), best first; without it no folder is read.
    """
    text = unicodedata.normalize("NFC", query)
    now = now.astimezone().replace(tzinfo=None) if now.tzinfo else now
    found: list[_Reading] = []
    if not (_is_prose(text) and not _first_person(text)):
        found += _bounded(text, _times(text))
        if folders is not None:
            found += _folders(text, folders, found)
    found += _bounded(text, _types(text, found))
    quoted = [m.span() for m in QUOTED.finditer(text)]
    found = [r for r in found if not any(start <= r.start and r.end <= end for start, end in quoted)]
    read = [r for r in _apply_rules(text, found) if _resolve(r, now)]
    rest = _without(text, read)
    if _empty(rest):  # the query never ends empty: the type words stay, or nothing is read
        others = [r for r in read if r.kind != "type"]
        if len(others) == len(read):
            return None
        rest = _without(text, others)
        read = read if others else []
    if not read:
        return None
    period = _period([r.period for r in read if r.kind == "time"])
    if period is None:  # times that contradict each other ("since 2025 before 2024"): no time is read
        read = [r for r in read if r.kind != "time"]
        rest = _without(text, read)
        if not read or _empty(rest):
            return None
        period = (None, None)
    found_folders = next((r.names for r in read if r.kind == "folder"), ())
    return Understood(
        query=rest,
        types=tuple(dict.fromkeys(t for r in read if r.kind == "type" for t in r.names)),
        modified_after=period[0].timestamp() if period[0] else None,
        modified_before=period[1].timestamp() if period[1] else None,
        folder=found_folders[0] if found_folders else None,
        said=tuple(_tidy(text[r.start : r.end]) for r in read),
        folders=tuple(found_folders),
    )


def _period(periods: list[tuple[datetime | None, datetime | None]]) -> tuple[datetime | None, datetime | None] | None:
    """The one period several times said make: where they overlap, what they share ("since 2019 before
    2021"); where they do not ("in 2024 in 2025"), the span that covers them all, as a person listing
    two years means both. None when even that span bounds nothing ("since 2025 before 2024")."""
    if not periods:
        return None, None
    starts = [start for start, _ in periods if start is not None]
    ends = [end for _, end in periods if end is not None]
    after, before = (max(starts) if starts else None), (min(ends) if ends else None)
    if after is None or before is None or after < before:
        return after, before
    after = None if any(start is None for start, _ in periods) else min(starts)
    before = None if any(end is None for _, end in periods) else max(ends)
    return None if after is None and before is None else (after, before)


# --- finding ------------------------------------------------------------------------------------------


def _times(text: str) -> list[_Reading]:
    """Relative times, ranges, then absolute ones, each where no earlier one was found. Absolute ones
    keep their phrase: dateparser reads it only if the rules keep it (``_resolve``)."""
    found = [_Reading(m.start(), m.end(), "time", _Relative(m)) for m in _RELATIVE_RE.finditer(text)]
    for match in _RANGE_RE.finditer(text):
        if not _overlaps(match.span(), found):
            found.append(_Reading(match.start(), match.end(), "time", _Range(match["first"], match["last"])))
    for match in _ABSOLUTE_RE.finditer(text):
        if _overlaps(match.span(), found):
            continue
        direction = next((d for d in ("in", "since", "before", "until") if match[d]), None)
        if match["strong"]:
            found.append(_Reading(match.start(), match.end(), "time", _Absolute(match["strong"], direction)))
        elif match["date"]:  # a day needs "since", "in"...: alone or after "vom" it is the document's own date
            if direction:
                found.append(_Reading(match.start(), match.end(), "time", _Absolute(match["date"], direction)))
        elif match["year"]:  # "of 2019" reads "of" as no time word: a bare year
            start = match.start() if direction else match.start("year")
            found.append(
                _Reading(start, match.end(), "time" if direction else "year", _Absolute(match["year"], direction))
            )
        elif direction:  # a month name needs its connecting word: "since January", not "mars"
            found.append(_Reading(match.start(), match.end(), "time", _Absolute(match["month"], direction)))
    return found


def _resolve(reading: _Reading, now: datetime) -> bool:
    """Turn a kept time's phrase into its period [start, end); False when it has none."""
    if reading.kind != "time":
        return True
    said = reading.said
    period: _Dates | None
    if isinstance(said, _Relative):
        period = _relative(said.match, now)
        direction = next((d for d in ("since", "before", "until") if said.match[d]), "in")
    elif isinstance(said, _Range):
        first, last = _absolute(said.first, now), _absolute(said.last, now)
        period = (first[0], last[1]) if first and last and first[0] < last[1] else None
        direction = "in"
    elif isinstance(said, _Absolute):
        period, direction = _absolute(said.phrase, now), said.direction or "in"
    else:  # a time is always found with what was said
        return False
    if period is None:
        return False
    start, end = period
    periods: dict[str, _Period] = {
        "in": (start, end),
        "since": (start, None),
        "before": (None, start),
        "until": (None, end),
    }
    reading.period = periods[direction]
    return reading.period != (None, None)


def _relative(match: re.Match[str], now: datetime) -> _Dates | None:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if match["today"]:
        return today, today + timedelta(days=1)
    if match["yesterday"]:
        return today - timedelta(days=1), today
    this = next((v for k, v in match.groupdict().items() if k.startswith("this") and v), None)
    if this:
        unit = _unit(this)
        if unit == "week":
            start = today - timedelta(days=today.weekday())
            return start, start + timedelta(days=7)
        if unit == "month":
            start = today.replace(day=1)
            return start, _add_months(start, 1)
        start = today.replace(month=1, day=1)
        return start, _add_months(start, 12)
    groups = match.groupdict()
    word = next((v for k, v in groups.items() if k.startswith("unit") and v), "")
    number = next((v for k, v in groups.items() if k[:1] == "n" and k[1:].isdigit() and v), None)
    unit = _unit(word)
    if unit is None or number == "0" or (number is None and word.casefold() in _PLURAL_UNITS):
        return None  # "the last days of Pompeii" is a title, "the last 3 days" a time
    n = int(number or 1)
    if unit in ("day", "week"):
        return today - timedelta(days=n * (7 if unit == "week" else 1)), None
    return _add_months(today, -n * (1 if unit == "month" else 12)), None


def _unit(word: str) -> str | None:
    word = word.casefold()
    for unit, stems in (
        ("day", ("day", "tag", "jour", "día", "dia")),
        ("week", ("week", "woche", "semai", "seman")),
        ("month", ("month", "monat", "mois", "mes")),
        ("year", ("year", "jahr", "ann", "an", "año", "ano")),
    ):
        if word.startswith(stems):
            return unit
    return None


def _add_months(day: datetime, months: int) -> datetime:
    year, month = divmod(day.year * 12 + day.month - 1 + months, 12)
    year = min(max(year, 1), 9999)
    return day.replace(year=year, month=month + 1, day=min(day.day, calendar.monthrange(year, month + 1)[1]))


def _absolute(phrase: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The calendar day, month or year dateparser reads in ``phrase``; None when it reads none,
    or a year outside 1970..next year."""
    from dateparser.date import DateDataParser  # a slow import, paid by the first query with a date in it

    parser = DateDataParser(
        languages=["en", "de", "fr", "es"],
        settings={
            "RELATIVE_BASE": now,
            "PREFER_DATES_FROM": "past",
            "RETURN_TIME_AS_PERIOD": True,
            "PARSERS": ["absolute-time"],
        },
    )
    try:
        data = parser.get_date_data(phrase.strip())
    except Exception:  # a parser's surprise is a phrase not read, never a failed search
        return None
    day = data.date_obj
    if day is None or not 1970 <= day.year <= now.year + 1:
        return None
    day = day.replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    if data.period == "year":
        start = day.replace(month=1, day=1)
        return start, _add_months(start, 12)
    if data.period == "month":
        start = day.replace(day=1)
        return start, _add_months(start, 1)
    return day, day + timedelta(days=1)


def _folders(text: str, folders: Callable[[str], list[str]], taken: list[_Reading]) -> list[_Reading]:
    """The first folder said that ``folders`` knows, its longest name first ("in Tax Returns")."""
    for match in _NAMED_FOLDER_RE.finditer(text):
        found = _folder(match.start(), match.end(), match["name"], folders, taken)
        if found:
            return found
    for match in _FOLDER_RE.finditer(text):
        if match["quoted"]:
            found = _folder(match.start(), match.end(), match["quoted"][1:-1].strip(), folders, taken)
            if found:
                return found
            continue
        words = list(re.finditer(r"\S+", match["name"]))
        for word in reversed(words):
            name = match["name"][: word.end()].rstrip(".,;:!?")
            found = _folder(match.start(), match.start("name") + len(name), name, folders, taken)
            if found:
                return found
    return []


def _folder(
    start: int, end: int, name: str, folders: Callable[[str], list[str]], taken: list[_Reading]
) -> list[_Reading]:
    if not name or _overlaps((start, end), taken):
        return []
    try:
        hits = folders(name)
    except Exception:  # a lookup that fails reads nothing as a folder
        return []
    return [_Reading(start, end, "folder", names=tuple(hits))] if hits else []


def _types(text: str, taken: list[_Reading]) -> list[_Reading]:
    found = []
    for match in _TYPE_RE.finditer(text):
        span = match.span()
        if _overlaps(span, taken):  # the "in" before it may be a time's or a folder's: the word alone then
            span = (match.start("type"), match.end())
            if _overlaps(span, taken):
                continue
        entry = _TYPES.get(_key(match["type"]))
        if entry is None:  # matched only by a case fold the table does not spell ("ſlides")
            continue
        types, plural = entry
        noun = match["noun_before"] or match["noun_after"]
        found.append(
            _Reading(
                span[0], span[1], "type", names=types, plural=plural or bool(noun and _FILE_NOUN_PLURAL.fullmatch(noun))
            )
        )
    return found


# --- deciding ---------------------------------------------------------------------------------------


def _apply_rules(text: str, found: list[_Reading]) -> list[_Reading]:
    """The readings the rules in the module's docstring keep, in the text's order, lists of types
    joined ("pdfs and spreadsheets")."""
    starts = {r.start for r in found}
    types = [r for r in found if r.kind == "type" and _type_is_filter(text, r, starts)]
    ends = {r.end for r in found}
    for year in (r for r in found if r.kind == "year"):
        for kind in types:
            if _adjacent(year, kind, text) and _at_edge(text, year, kind.start < year.start, starts, ends):
                year.kind = "time"  # "photos 2019", "2019 pdfs"; not "tax return 2019 pdf"
    read = sorted((r for r in found if r.kind in ("time", "folder") or r in types), key=lambda r: r.start)
    return _join_type_lists(text, read)


def _type_is_filter(text: str, reading: _Reading, starts: set[int]) -> bool:
    before = text[: reading.start]
    words_before = _WORD_RE.findall(before)
    if words_before and words_before[-1].casefold() in _OF_OR_TO and before[-1:].isspace():
        return False  # "size of pdf", "export to pdf"
    if reading.plural:
        return True
    after = text[reading.end :]
    gap = len(after) - len(after.lstrip())
    if gap == 0 or not after.strip() or reading.end + gap in starts:
        return True  # the end, punctuation ("pdf, budget"), or another filter ("pdf March 2025")
    next_word = _WORD_RE.match(after, gap)  # always: the text goes on after the gap
    word = next_word.group().casefold() if next_word else ""
    return not word[:1].isalnum() or word in _LINKING  # "pdf export settings": a modifier, the topic


def _join_type_lists(text: str, read: list[_Reading]) -> list[_Reading]:
    """Two type readings joined by "and"/"or"/"," become one, the joining word with them."""
    joined: list[_Reading] = []
    for reading in read:
        last = joined[-1] if joined else None
        if (
            last is not None
            and last.kind == reading.kind == "type"
            and re.fullmatch(
                r"\s*(?:,|/|&|\+|and|or|und|oder|et|ou|y|o)?\s*", text[last.end : reading.start], re.IGNORECASE
            )
        ):
            names = tuple(dict.fromkeys((*last.names, *reading.names)))
            joined[-1] = _Reading(last.start, reading.end, "type", names=names, plural=True)
        else:
            joined.append(reading)
    return joined


# --- small helpers -----------------------------------------------------------------------------------


def _is_prose(text: str) -> bool:
    stripped = text.strip().rstrip("\"'»”)")
    return stripped.endswith((".", "?", "!", "…", "。", "？", "！")) or len(stripped.split()) >= 9


def _first_person(text: str) -> bool:
    """Whether a sentence speaks of its writer: "what did I send", "mes factures", "ich habe"."""
    for match in _FIRST_PERSON.finditer(text):
        before = text[: match.start()].split()
        if match.group() != "I" or not before or before[-1].casefold().strip(",;:(-") not in _NUMBERED:
            return True
    return False


def _bounded(text: str, readings: list[_Reading]) -> list[_Reading]:
    """The readings that are whole words. The patterns' lookarounds see letters and digits only; a
    combining mark belongs to the word too (Thai "ประจำปี2001-02": no space, and the vowel sign of ปี
    is no word character to ``re``)."""

    def inside(char: str) -> bool:
        return char.isalnum() or unicodedata.category(char).startswith("M")

    return [
        r
        for r in readings
        if not (r.start > 0 and inside(text[r.start - 1])) and not (r.end < len(text) and inside(text[r.end]))
    ]


def _overlaps(span: _Span, readings: list[_Reading]) -> bool:
    return any(span[0] < r.end and r.start < span[1] for r in readings)


def _at_edge(text: str, reading: _Reading, rightwards: bool, starts: set[int], ends: set[int]) -> bool:
    """Nothing but the text's end, punctuation or another filter on that side of ``reading``."""
    if rightwards:
        rest = text[reading.end :].lstrip(" \t")
        return not rest or not rest[0].isalnum() or len(text) - len(rest) in starts
    rest = text[: reading.start].rstrip(" \t")
    return not rest or not rest[-1].isalnum() or len(rest) in ends


def _adjacent(a: _Reading, b: _Reading, text: str) -> bool:
    gap = text[a.end : b.start] if a.end <= b.start else text[b.end : a.start]
    return not gap.strip(" \t,")


def _without(text: str, readings: list[_Reading]) -> str:
    kept, position = [], 0
    for reading in sorted(readings, key=lambda r: r.start):
        kept.append(text[position : reading.start])
        position = max(position, reading.end)
    kept.append(text[position:])
    return _tidy(" ".join(kept))


def _tidy(text: str) -> str:
    """Whitespace collapsed, and the commas or dashes a removed word leaves at either end dropped."""
    return re.sub(r"\s+(?=[?!.,;:]+$)", "", " ".join(text.split())).strip(" ,;:-–/&+")


def _empty(rest: str) -> bool:
    return all(word.casefold() in _FILLER for word in rest.split())
