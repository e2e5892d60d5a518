"""A small but real folder tree for end-to-end tests.

Every file is produced by the library a real user's application would use
(fpdf2, python-docx, openpyxl, ...), so the extractors meet genuine formats,
not mocks. Each file talks about a different, recognisable subject, so a search
test can tell which file a hit came from. The tree also holds the awkward
cases an indexer must survive: corrupt and binary files, odd folder names,
node_modules, hidden folders and a prefix-sibling pair (Docs/ vs DocsEvil/).

Everything is deterministic: fixed seeds, fixed dates, fixed MIME boundaries.
"""

from __future__ import annotations

import random
import unicodedata
from datetime import datetime, timezone
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

FIXED_DATE = datetime(2026, 1, 15, 9, 30, tzinfo=timezone.utc)


class Labelled:
    """Paths under a root for files a builder is about to write, by label; ``files`` is {label: path}."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.files: dict[str, Path] = {}

    def __call__(self, label: str, relative: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        self.files[label] = path
        return path


def build_corpus(root: Path) -> dict[str, Path]:
    """Write a small realistic tree under root and return {label: path}."""
    root = Path(root)
    place = Labelled(root)
    files = place.files

    _write_pdf(place("pdf", "reports/q3_revenue.pdf"))
    _write_corrupt_pdf(place("corrupt_pdf", "reports/broken.pdf"))
    _write_docx(place("docx", "contracts/tender_2026.docx"))
    _write_xlsx(place("xlsx", "finance/budget.xlsx"))
    _write_pptx(place("pptx", "slides/kickoff.pptx"))
    place("html", "web/page.html").write_text(HTML_PAGE, encoding="utf-8")
    place("markdown", "notes/meeting.md").write_text(MEETING_MINUTES, encoding="utf-8")
    place("code", "code/parser.py").write_text(PARSER_CODE, encoding="utf-8")
    place("csv", "data/people.csv").write_text(PEOPLE_CSV, encoding="utf-8")
    _write_epub(place("epub", "books/novel.epub"))
    place("email", "mail/invoice.eml").write_bytes(_invoice_email())
    place("latin1", "notes/latin1.txt").write_bytes(LATIN1_NOTES.encode("cp1252"))
    place("percent_dir", "100%_backup/old_notes.txt").write_text(OLD_NOTES, encoding="utf-8")
    place("apostrophe_dir", "O'Brien/letter.txt").write_text(OBRIEN_LETTER, encoding="utf-8")
    # Decomposed (NFD) on purpose, as macOS tends to write it: extraction must give NFC.
    place("unicode_name", "Ünïcödé/café_menu.txt").write_text(
        unicodedata.normalize("NFD", CAFE_MENU), encoding="utf-8"
    )
    place("node_modules_js", "node_modules/leftpad/index.js").write_text(LEFTPAD_JS, encoding="utf-8")
    place("node_modules_json", "node_modules/leftpad/package.json").write_text(LEFTPAD_PACKAGE, encoding="utf-8")
    place("node_modules_readme", "node_modules/leftpad/README.md").write_text(LEFTPAD_README, encoding="utf-8")
    place("node_modules_lib", "node_modules/leftpad/lib/repeat.js").write_text(LEFTPAD_REPEAT, encoding="utf-8")
    place("hidden", ".hidden/secret.txt").write_text(HIDDEN_SECRET, encoding="utf-8")
    place("binary", "assets/model.blend").write_bytes(b"BLENDER-v300" + random.Random(42).randbytes(6000))
    place("docs_inside", "Docs/inside.txt").write_text(DOCS_INSIDE, encoding="utf-8")
    place("docs_evil", "DocsEvil/evil.txt").write_text(DOCS_EVIL, encoding="utf-8")
    return files


# --------------------------------------------------------------------------
# Binary formats
# --------------------------------------------------------------------------

PDF_PAGES = (
    (
        "Hollowbrook Ltd - Quarterly Revenue Report, Q3 2025",
        "Hollowbrook Ltd closed the third quarter of 2025 with total revenue of EUR 4.82 million, "
        "an increase of 12.4 percent over Q3 2024. Growth came mainly from the industrial pumps "
        "division, whose sales rose to EUR 2.31 million, while the maintenance contracts business "
        "held steady at EUR 1.65 million. The retail spare-parts channel contributed EUR 0.86 million. "
        "Gross margin improved from 38.1 percent to 41.7 percent thanks to lower steel prices and "
        "the renegotiated freight agreement with Carrow Logistics. Operating expenses were EUR 1.29 "
        "million, slightly above plan because of the new Leeds warehouse.",
    ),
    (
        "Outlook for Q4 2025",
        "For the fourth quarter the board expects revenue between EUR 5.0 and 5.3 million. "
        "The order backlog stood at EUR 3.4 million on 30 September, the highest in the company's "
        "history. Risks include the delayed certification of the HB-900 pump and currency "
        "movements on exports to Norway. Net cash at quarter end was EUR 1.12 million and no "
        "new borrowing is planned. The dividend policy is unchanged.",
    ),
)


def _write_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title("Hollowbrook Ltd Q3 2025 revenue")
    for heading, body in PDF_PAGES:
        pdf.add_page()
        pdf.set_font("Helvetica", style="B", size=15)
        pdf.multi_cell(0, 9, heading)
        pdf.ln(3)
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, body)
    pdf.output(str(path))


def _write_corrupt_pdf(path: Path) -> None:
    path.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + random.Random(7).randbytes(3000))


TENDER_PARAGRAPHS = (
    "The Municipality of Eastmere invites tenders for the renovation of the Riverside Public "
    "Library, including the replacement of the roof, new accessible entrances and an upgraded "
    "heating system based on air-source heat pumps.",
    "The submission deadline is 14 March 2026 at 12:00 noon (local time). Tenders received after "
    "the deadline will not be considered. Bids must be submitted through the national e-procurement "
    "portal under reference EM-2026-031, together with proof of insurance and two references for "
    "comparable public buildings.",
    "Contracts will be awarded on the most economically advantageous tender: 60 percent price, "
    "30 percent technical quality and 10 percent environmental performance. Questions may be sent "
    "to procurement@eastmere.example until 28 February 2026.",
)
TENDER_LOTS = (
    ("Lot", "Description", "Estimated value"),
    ("1", "Roof replacement and insulation", "EUR 420,000"),
    ("2", "Accessible entrances and lift", "EUR 185,000"),
    ("3", "Heat pumps and heating distribution", "EUR 260,000"),
)


def _write_docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Public tender 2026 - Riverside Library renovation"
    document.core_properties.author = "Eastmere Procurement Office"
    document.core_properties.created = FIXED_DATE.replace(tzinfo=None)
    document.core_properties.modified = FIXED_DATE.replace(tzinfo=None)
    document.add_heading("Public Tender 2026: Riverside Library Renovation", level=1)
    for paragraph in TENDER_PARAGRAPHS:
        document.add_paragraph(paragraph)
    table = document.add_table(rows=0, cols=3)
    for row in TENDER_LOTS:
        cells = table.add_row().cells
        for cell, value in zip(cells, row):
            cell.text = value
    document.add_paragraph("Signed for the Municipality of Eastmere, Procurement Office.")
    document.save(str(path))


BUDGET_ROWS = (
    ("Department", "Q1", "Q2", "Q3", "Q4", "Owner"),
    ("Marketing", 12500, 14000, 9800, 16200, "Priya Natarajan"),
    ("Engineering", 48000, 51000, 53500, 55000, "Tomasz Kowalski"),
    ("Customer Support", 21000, 21000, 22500, 23000, "Amara Okafor"),
    ("Facilities", 8700, 8700, 9100, 12400, "Jonas Lindqvist"),
    ("Training", 3200, 4500, 2800, 6100, "Elena Marquez"),
)
HEADCOUNT_ROWS = (
    ("Team", "Employees", "Location", "Hiring plan"),
    ("Platform", 14, "Lisbon", "2 backend engineers"),
    ("Mobile", 6, "Kraków", "1 iOS developer"),
    ("Data", 5, "Lisbon", "none"),
    ("Sales", 9, "Dublin", "3 account executives"),
)


def _write_xlsx(path: Path) -> None:
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.properties.created = FIXED_DATE.replace(tzinfo=None)
    budget = workbook.active
    budget.title = "Budget 2026"
    for row in BUDGET_ROWS:
        budget.append(row)
    headcount = workbook.create_sheet("Headcount")
    for row in HEADCOUNT_ROWS:
        headcount.append(row)
    workbook.save(str(path))


SLIDES = (
    ("Project Atlas Kickoff", ["Migrating the billing platform to the cloud", "January 2026"]),
    (
        "Goals",
        [
            "Retire the 2009 mainframe billing system",
            "Cut invoice generation time from 6 hours to 20 minutes",
            "Zero downtime for customers during cut-over",
        ],
    ),
    (
        "Timeline and owners",
        [
            "February: data model frozen (owner: Ingrid Salo)",
            "April: parallel run of old and new billing",
            "June: decommission the mainframe",
        ],
    ),
)
SLIDE_NOTES = {3: "Remember to invite the security team to the April parallel-run review."}


def _write_pptx(path: Path) -> None:
    from pptx import Presentation

    presentation = Presentation()
    presentation.core_properties.created = FIXED_DATE.replace(tzinfo=None)
    presentation.core_properties.modified = FIXED_DATE.replace(tzinfo=None)
    for number, (title, bullets) in enumerate(SLIDES, start=1):
        layout = presentation.slide_layouts[0 if number == 1 else 1]
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = "\n".join(bullets)
        if number in SLIDE_NOTES:
            slide.notes_slide.notes_text_frame.text = SLIDE_NOTES[number]
    presentation.save(str(path))


CHAPTERS = (
    (
        "Chapter 1: The Storm",
        [
            "The storm reached Gannet Point a little after midnight. Maren Holt climbed the "
            "ninety-one steps of the lighthouse with a lantern in one hand and her father's "
            "logbook in the other, counting the seconds between each flash of lightning.",
            "Below her the sea threw itself against the rocks. Somewhere out there the mail boat "
            "Albatross was late, and the great lamp had been dark since the mechanism jammed at "
            "dusk. Maren wound the clockwork by hand until her arms shook, and at last the beam "
            "swept out over the water again.",
        ],
    ),
    (
        "Chapter 2: The Letter",
        [
            "In the morning the Albatross lay safe in the harbour, its captain asleep on a coil of "
            "rope. Among the wet sacks of post was a letter addressed to Maren in a hand she had "
            "not seen for eleven years: her mother's.",
            "She read it standing on the jetty, then again at the kitchen table, and a third time "
            "by the window of the lamp room, where the whole grey coast of Gannet Point lay "
            "spread out beneath her like a map.",
        ],
    ),
)


def _write_epub(path: Path) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("sensetree-test-lighthouse-0001")
    book.set_title("The Lighthouse Keeper's Daughter")
    book.set_language("en")
    book.add_author("Edith Rowan")
    chapters = []
    for number, (title, paragraphs) in enumerate(CHAPTERS, start=1):
        chapter = epub.EpubHtml(title=title, file_name=f"chapter_{number}.xhtml", lang="en")
        body = "".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
        chapter.content = f"<h1>{title}</h1>{body}"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(path), book)


INVOICE_IBAN = "FR7630006000011234567890189"
INVOICE_BODY = f"""Dear Ms Delacroix,

Please find attached invoice INV-2026-0117 for the consulting work delivered in March 2026
(data migration workshop, 6 days at EUR 950 per day).

Amount due: EUR 5,700.00
Due date: 30 April 2026

Please pay by bank transfer to:
Account holder: Northwind Supplies SARL
IBAN: {INVOICE_IBAN}
BIC: AGRIFRPP

Kind regards,
Hugo Marchetti
Accounts Receivable, Northwind Supplies
"""


def _invoice_email() -> bytes:
    message = EmailMessage()
    message["From"] = "Hugo Marchetti <billing@northwind-supplies.example>"
    message["To"] = "Claire Delacroix <claire.delacroix@eastmere.example>"
    message["Subject"] = "Invoice INV-2026-0117 for March consulting"
    message["Date"] = format_datetime(FIXED_DATE)
    message["Message-ID"] = "<inv-2026-0117@northwind-supplies.example>"
    message.set_content(INVOICE_BODY)
    html_body = "".join(f"<p>{line}</p>" for line in INVOICE_BODY.splitlines() if line)
    message.add_alternative(f"<html><body>{html_body}</body></html>", subtype="html")
    message.add_attachment(
        b"%PDF-1.4\n% invoice placeholder\n",
        maintype="application",
        subtype="pdf",
        filename="INV-2026-0117.pdf",
    )
    for number, part in enumerate(part for part in message.walk() if part.is_multipart()):
        part.set_boundary(f"sensetree-boundary-{number}")
    return message.as_bytes()


# --------------------------------------------------------------------------
# Text formats
# --------------------------------------------------------------------------

HTML_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Growing Tomatoes in a Small Garden</title>
  <style>body { font-family: Georgia, serif; } .ad { display: none; }</style>
  <script>var trackingPixel = "SCRIPT_TEXT_MUST_NOT_APPEAR"; console.log(trackingPixel);</script>
</head>
<body>
  <noscript>NOSCRIPT_TEXT_MUST_NOT_APPEAR</noscript>
  <h1>Growing Tomatoes in a Small Garden</h1>
  <p>Tomatoes need at least <b>six to eight hours</b> of direct sun a day. In a small garden,
     plant them against a south-facing wall, where the brick stores heat and releases it at night.</p>
  <p>Choose compact <em>determinate</em> varieties such as 'Tumbling Tom' or 'Balconi Red' for pots,
     and stake indeterminate varieties like 'Sungold' with a sturdy cane tied every 30 cm.</p>
  <h2>Watering and feeding</h2>
  <p>Water deeply and regularly at the base of the plant: irregular watering causes blossom end rot,
     the black patch at the bottom of the fruit. Once the first truss has set, feed weekly with a
     high-potash tomato fertiliser.</p>
  <ul>
    <li>Pinch out side shoots on cordon varieties.</li>
    <li>Remove the lower leaves once fruit starts to ripen.</li>
    <li>Watch for tomato blight in wet, warm August weather.</li>
  </ul>
  <script>document.write("ANOTHER_SCRIPT_MUST_NOT_APPEAR")</script>
</body>
</html>
"""

MEETING_MINUTES = """# Weekly sync – infrastructure team

**Date:** 12 January 2026
**Attendees:** Rosa Ibáñez, Kwame Mensah, Li Wei, Sven Olsen

## Decisions

1. The internal wiki moves from Confluence to a self-hosted Outline instance by the end of February.
2. Backups of the Postgres cluster switch from nightly dumps to continuous WAL archiving.
3. On-call rotation becomes weekly instead of daily, starting Monday 19 January.

## Discussion

Kwame reported that the staging Kubernetes cluster ran out of disk twice last week because of
unrotated container logs. Li proposed a 7-day retention policy in Loki; nobody objected.
Sven asked whether the WAL archive could live in the same object-storage bucket as the
application uploads. The team agreed to use a separate bucket with object lock enabled.

## Action items

- [ ] Rosa: export the Confluence spaces and test the import into Outline.
- [ ] Kwame: configure log rotation on the staging nodes.
- [ ] Li: write the runbook for restoring Postgres from the WAL archive.
- [ ] Sven: update the on-call calendar and notify the support desk.

Next meeting: Monday 19 January 2026, 10:00, room Fjord.
"""

PARSER_CODE = '''"""A tiny parser for key = value configuration files with [sections]."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SECTION = re.compile(r"^\\[(?P<name>[^\\]]+)\\]$")
ASSIGNMENT = re.compile(r"^(?P<key>[A-Za-z_][\\w.-]*)\\s*=\\s*(?P<value>.*)$")


class ConfigSyntaxError(ValueError):
    """Raised with the line number when a line is neither a section, a comment nor an assignment."""

    def __init__(self, line_number: int, line: str) -> None:
        super().__init__(f"line {line_number}: cannot parse {line!r}")
        self.line_number = line_number


@dataclass
class Section:
    name: str
    values: dict[str, str] = field(default_factory=dict)


def parse_config(text: str) -> dict[str, Section]:
    """Parse the text of a configuration file into its sections."""
    sections = {"default": Section("default")}
    current = sections["default"]
    for line_number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if match := SECTION.match(line):
            current = sections.setdefault(match["name"], Section(match["name"]))
        elif match := ASSIGNMENT.match(line):
            current.values[match["key"]] = _unquote(match["value"].strip())
        else:
            raise ConfigSyntaxError(line_number, raw_line)
    return sections


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\\"\\'":
        return value[1:-1]
    return value


if __name__ == "__main__":
    import sys

    for name, section in parse_config(open(sys.argv[1]).read()).items():
        print(f"[{name}]", section.values)
'''

PEOPLE_CSV = """name,email,city,role,start_date
Aiko Tanaka,aiko.tanaka@example.com,Osaka,Data engineer,2021-04-01
Bruno Ferreira,bruno.ferreira@example.com,Porto,Product manager,2019-09-16
Chloé Martin,chloe.martin@example.com,Lyon,UX designer,2022-01-10
Dmitri Volkov,dmitri.volkov@example.com,Tallinn,Site reliability engineer,2020-06-22
Esther Mwangi,esther.mwangi@example.com,Nairobi,Backend developer,2023-03-06
Farid Haddad,farid.haddad@example.com,Marseille,Security analyst,2018-11-19
Greta Lindgren,greta.lindgren@example.com,Uppsala,Technical writer,2021-08-30
Hamza Qureshi,hamza.qureshi@example.com,Manchester,Frontend developer,2022-10-03
Isabel Ortega,isabel.ortega@example.com,Valencia,Head of finance,2017-02-13
"""

LATIN1_NOTES = """Compte rendu de la réunion du comité des fêtes de Besançon

Présents : François Lefèvre, Hélène Dubois, Gaëlle Noël, Jérôme Béranger.

Le comité a décidé d'organiser la fête d'été le samedi 27 juin sur la place du marché. \
Gaëlle s'occupe de la buvette : café, thé, crêpes au sucre et crème brûlée. \
Jérôme réservera la scène auprès de la mairie ; le coût prévu est de 450 € hors taxes.

François rappelle que l'an dernier la fête a été interrompue par l'orage : « Prévoyons \
des barnums, même si la météo paraît clémente. » Hélène suggère un concours de pétanque \
ouvert à tous, avec des lots offerts par la boulangerie Œillet… Adopté à l'unanimité.

Prochaine réunion : jeudi 12 mars à 18 h 30, salle polyvalente. Ça promet d'être très animé !
"""

OLD_NOTES = """Old notes recovered from the 2019 laptop backup.

The garage door keypad code was changed in October 2019. The spare key for the allotment shed
is taped under the blue watering can. Remember to renew the caravan insurance with Harbourside
Mutual before 1 May; the policy number is HM-44-0921.

Phone numbers: plumber (Dave Pritchard) 0161 496 0733, electrician (Sparks & Sons) 0161 496 0219.
"""

OBRIEN_LETTER = """Dear Niamh,

Greetings from Galway! The cottage in Salthill is finally finished: new slate roof, a turf stove
in the kitchen and a view straight across the bay to the Burren. Seamus painted the front door
the same shade of green as Granny O'Brien's, and the neighbours say it is the brightest door on
the whole street.

We would love you to visit for the Galway Oyster Festival at the end of September. Bring your
walking boots: we want to climb Croagh Patrick if the weather holds.

With love,
Siobhán O'Brien
"""

CAFE_MENU = """Café Ünïcödé – menu du jour

Entrées : soupe à l'oignon gratinée, salade niçoise, smørrebrød au saumon fumé.
Plats : bœuf bourguignon, käsespätzle aux oignons frits, paella valenciana, pierogi ruskie.
Desserts : crème brûlée, tarte Tatin, Sachertorte, açaí bowl.
Boissons : café crème, thé à la menthe, limonade maison, Glühwein (en hiver seulement).

Ouvert du mardi au dimanche, de 8 h à 22 h. Réservation conseillée le week-end.
"""

LEFTPAD_JS = """'use strict';

const repeat = require('./lib/repeat');

module.exports = function leftPad(str, len, ch) {
  str = String(str);
  ch = ch === undefined || ch === '' ? ' ' : String(ch);
  const missing = len - str.length;
  return missing > 0 ? repeat(ch, missing) + str : str;
};
"""

LEFTPAD_REPEAT = """'use strict';

module.exports = function repeat(ch, times) {
  let out = '';
  while (times-- > 0) out += ch;
  return out;
};
"""

LEFTPAD_PACKAGE = """{
  "name": "leftpad",
  "version": "1.3.0",
  "description": "String left pad, vendored dependency that must never be indexed",
  "main": "index.js",
  "license": "WTFPL"
}
"""

LEFTPAD_README = """# leftpad

Pads a string on the left. This vendored copy lives inside node_modules and should be skipped
by any indexer as a single block.
"""

HIDDEN_SECRET = """Hidden folder note: the vault combination is 31-07-44 and the backup passphrase is
"purple-otter-lantern". This file lives in a dot-folder and must not show up in search results.
"""

DOCS_INSIDE = """Inside the Docs folder: the onboarding checklist for new volunteers at the Harbour Museum.
Collect your badge from reception, read the fire evacuation plan and shadow a guide for one tour.
"""

DOCS_EVIL = """DocsEvil folder, not Docs: this file only shares a name prefix with the Docs folder and must
not be treated as being inside it. Topic: the quarterly pest control schedule for the warehouse.
"""
