"""A real 20-page PDF report (fpdf2), one topic per page, for the whole-document summaries."""

from __future__ import annotations

from pathlib import Path

TOPICS = ("harbour dredging", "tide gauges", "ferry timetable", "fish market", "lighthouse repairs",
          "storm damage", "pier lighting", "mooring fees", "crane rental", "oil spill drill",
          "pilot boats", "cargo volumes", "cruise visits", "sea wall", "customs office",
          "berth allocation", "ice breaking", "marina expansion", "budget outlook", "board decisions")


def page_text(number: int, topic: str) -> str:
    sentences = [
        f"This page of the Saltmere harbour annual report is about {topic}.",
        f"In the year under review the harbour authority spent {number * 37 + 120} thousand euros on {topic}.",
        f"The committee for {topic} met {number + 2} times and published its minutes each quarter.",
        f"Staff noted that work on {topic} was delayed by weather for {number % 5 + 1} weeks in the winter.",
        f"For next year the plan for {topic} asks for a review by an outside engineer and a public hearing.",
    ]
    return " ".join(sentences * 2)


def write_report(path: Path, pages: int = 20) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Saltmere harbour annual report")
    for number in range(1, pages + 1):
        topic = TOPICS[(number - 1) % len(TOPICS)]
        pdf.add_page()
        pdf.set_font("Helvetica", style="B", size=15)
        pdf.multi_cell(0, 9, f"{number}. {topic.capitalize()}")
        pdf.ln(3)
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, page_text(number, topic))
    pdf.output(str(path))
    return path
