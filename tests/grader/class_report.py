# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The class at a glance, and the class's points for a gradebook.

After a batch (local, or the merge of a Slurm run), from the class CSV and each student's
grade.json (written beside their report.txt):

- `summary_lines()`: per lesson, how many students got full points, part of them, none, or had
  no file (missing), and the cases most lost, each with the first failure message;
- `write_page()`: the same as <out>/class.html, a static page (no script, no network) with a small
  histogram of points per lesson and a row per student linking to their report.txt;
- `read_roster()` and `write_lms()`: with --roster FILE (a CSV: student folder, LMS id), the
  points as two-column CSVs that an LMS imports (<out>/lms/total.csv and one per lesson, each
  `<id column>,<points>`), the id column named as in the roster's header.

Every text of a student's (folder names, failure messages) goes through printable() before it is
shown; the page escapes it for HTML as well.
"""

from __future__ import annotations

import csv
import dataclasses
import html
import json
from pathlib import Path

import report_csv
import text_safety
from course_layout import safe_name
from scoring import LOST, MISSING, Grade

GRADE_JSON = "grade.json"  # per student, beside report.txt: what the class page reads
FAILURES = ("failed", "crashed", "timed_out")  # a case lost by the code that ran (not a missing lesson)
MOST_LOST = 3  # cases listed per lesson


def printable(text) -> str:
    """text_safety.printable on one line (tabs kept): the class page's and the terminal's cells."""
    return text_safety.printable(str(text), keep="\t")


# ----------------------------------------------------------------------------- one student's record

def grade_record(grade: Grade) -> dict:
    """What the class page needs of one grade: each lesson's points and every case it lost."""
    return {"student": grade.student, "earned": grade.earned, "possible": grade.possible, "ungraded": grade.ungraded,
            "lessons": [{"lesson": lesson.lesson.slug, "earned": lesson.earned, "possible": lesson.possible,
                         "ungraded": lesson.ungraded, "problem": lesson.problem_status, "status": lesson.status(),
                         "lost": [{"case": r.case.name, "points": r.case.points, "status": r.status,
                                   "message": r.summary} for r in lesson.results if r.status in LOST]}
                        for lesson in grade.lessons]}


# ----------------------------------------------------------------------------- the class

@dataclasses.dataclass
class Student:
    name: str
    row: dict  # the CSV row, by column
    record: dict | None  # grade.json, when the folder has one

    def lesson(self, slug: str) -> dict | None:
        if self.record:
            return next((entry for entry in self.record["lessons"] if entry["lesson"] == slug), None)
        if self.row.get(slug, "") == "":
            return None
        status = self.row.get(slug + report_csv.STATUS, "")
        return {"lesson": slug, "earned": int(self.row[slug]), "possible": None, "status": status,
                "problem": MISSING if status.startswith("missing") else "", "lost": []}


def read_class(csv_path: Path, out: Path) -> tuple[list[str], list[Student]]:
    """(lesson slugs, students) from the class CSV and the students' folders in `out`."""
    with csv_path.open(newline="") as source:
        reader = csv.DictReader(source)
        columns = reader.fieldnames or []
        rows = list(reader)
    slugs = [name for name in columns[1:] if name + report_csv.STATUS in columns]
    students = []
    for row in rows:
        name = text_safety.from_csv_cell(row["student"])  # the folder's name, as csv_cell guarded it
        path = out / safe_name(name) / GRADE_JSON
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            record = None
        students.append(Student(name, row, record))
    return slugs, students


def category(entry: dict | None) -> str:
    """full, partial, zero, missing, ungraded (nothing gradable here) or not graded."""
    if entry is None:
        return "not graded"
    if entry.get("problem") == MISSING:
        return "missing"
    if entry.get("possible") == 0:
        return "ungraded"
    if entry["earned"] == 0:
        return "zero"
    if entry.get("possible") is not None and entry["earned"] >= entry["possible"]:
        return "full"
    return "partial" if entry.get("possible") is not None else "some"


CATEGORIES = ("full", "partial", "zero", "missing", "ungraded", "not graded", "some")


@dataclasses.dataclass
class LessonView:
    slug: str
    possible: int | None
    counts: dict[str, int]
    points: list[int]  # each graded student's points (missing: 0 too)
    most_lost: list[tuple[str, int, int, str]]  # (case, points, students, first failure message)


def lesson_views(slugs: list[str], students: list[Student]) -> list[LessonView]:
    views = []
    for slug in slugs:
        entries = [student.lesson(slug) for student in students]
        counts = {name: 0 for name in CATEGORIES}
        for entry in entries:
            counts[category(entry)] += 1
        possibles = [entry["possible"] for entry in entries if entry and entry.get("possible") is not None]
        lost: dict[str, list] = {}
        for student, entry in zip(students, entries):
            for case in (entry or {}).get("lost", []):
                if case["status"] in FAILURES:
                    found = lost.setdefault(case["case"], [case["points"], 0, case["message"], student.name])
                    found[1] += 1
        ranked = sorted(lost.items(), key=lambda item: (-item[1][1] * max(item[1][0], 1), item[0]))
        views.append(LessonView(slug, max(possibles) if possibles else None,
                                {name: number for name, number in counts.items() if number or name in CATEGORIES[:4]},
                                [entry["earned"] for entry in entries if entry is not None],
                                [(case, points, number, message) for case, (points, number, message, _) in
                                 ranked[:MOST_LOST]]))
    return views


def summary_lines(csv_path: Path, out: Path) -> list[str]:
    """The class at a glance, for the terminal after a batch."""
    slugs, students = read_class(csv_path, out)
    lines = [f"Class at a glance ({len(students)} students; full/partial/zero points, missing file):"]
    width = max([len(slug) for slug in slugs] + [6])
    for view in lesson_views(slugs, students):
        counts = "  ".join(f"{name} {number}" for name, number in view.counts.items())
        lines.append(f"  {view.slug.ljust(width)}  {counts}")
        for case, points, number, message in view.most_lost:
            text = f'      lost by {number}: "{case}" ({points} pt): {message}'
            lines.append(printable(report_csv.clip(text, 200)))
    return lines


# ----------------------------------------------------------------------------- the page

COLOURS = {"full": "#2e7d32", "partial": "#f9a825", "zero": "#c62828", "missing": "#757575",
           "ungraded": "#90a4ae", "not graded": "#000000", "some": "#f9a825"}


def histogram_svg(view: LessonView) -> str:
    """Bars of how many students earned each number of points (0 .. possible), and one for the
    missing, as inline SVG."""
    top = view.possible if view.possible is not None else max(view.points or [0])
    bins = [(str(points), sum(1 for p in view.points if p == points)) for points in range(top + 1)]
    missing = view.counts.get("missing", 0)
    bins[0] = ("0", bins[0][1] - missing) if bins else ("0", 0)
    bins.append(("missing", missing))
    tallest = max([number for _, number in bins] + [1])
    bar, gap, height = 22, 4, 60
    parts = []
    for index, (name, number) in enumerate(bins):
        x = index * (bar + gap)
        h = round(height * number / tallest)
        colour = COLOURS["missing"] if name == "missing" else COLOURS["full"] if name == str(top) and top else \
            COLOURS["zero"] if name == "0" else COLOURS["partial"]
        parts.append(f'<rect x="{x}" y="{height - h + 12}" width="{bar}" height="{h}" fill="{colour}">'
                     f'<title>{html.escape(name)} pt: {number} students</title></rect>'
                     f'<text x="{x + bar / 2}" y="{height + 24}" font-size="9" text-anchor="middle">'
                     f'{"–" if name == "missing" else html.escape(name)}</text>'
                     f'<text x="{x + bar / 2}" y="{height - h + 10}" font-size="9" text-anchor="middle">{number}</text>')
    width = len(bins) * (bar + gap)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 28}" role="img" '
            f'aria-label="points of {html.escape(view.slug)}">' + "".join(parts) + "</svg>")


def write_page(csv_path: Path, out: Path, title: str) -> Path:
    """<out>/class.html."""
    slugs, students = read_class(csv_path, out)
    views = lesson_views(slugs, students)
    esc = lambda text: html.escape(printable(text))  # noqa: E731
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>",
             "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;vertical-align:top}"
             ".full{background:#e8f5e9}.partial{background:#fff8e1}.zero{background:#ffebee}"
             ".missing,.not-graded{background:#eeeeee}.ungraded{background:#eceff1}.lessons{display:flex;"
             "flex-wrap:wrap;gap:18px}.lesson{border:1px solid #ddd;padding:8px;width:330px}"
             "small{color:#555}</style></head><body>",
             f"<h1>{esc(title)}</h1>",
             f"<p>{len(students)} students. Per lesson: how many earned each number of points (the bar "
             "marked – is the students without the lesson's file), and the cases most lost with the first "
             f"failure message. CSV: <code>{esc(csv_path.name)}</code>.</p>", '<div class="lessons">']
    for view in views:
        counts = ", ".join(f"{name} {number}" for name, number in view.counts.items())
        parts.append(f'<div class="lesson" id="{esc(view.slug)}"><h3>{esc(view.slug)}'
                     f' <small>({view.possible if view.possible is not None else "?"} pt)</small></h3>'
                     f"{histogram_svg(view)}<p>{esc(counts)}</p>")
        if view.most_lost:
            parts.append("<ol>" + "".join(f"<li><b>{esc(case)}</b> ({points} pt) lost by {number}: "
                                          f"<small>{esc(report_csv.clip(message, 240))}</small></li>"
                                          for case, points, number, message in view.most_lost) + "</ol>")
        parts.append("</div>")
    parts.append("</div><h2>Students</h2><table><tr><th>student</th><th>total</th>"
                 + "".join(f"<th>{esc(slug)}</th>" for slug in slugs) + "<th>problem</th></tr>")
    for student in students:
        link = f'<a href="{html.escape(safe_name(student.name))}/report.txt">{esc(student.name)}</a>'
        total = f"{esc(student.row.get('total', ''))}/{esc(student.row.get('possible', ''))}" \
            if student.row.get("total", "") != "" else "–"
        cells = []
        for slug in slugs:
            entry = student.lesson(slug)
            kind = category(entry).replace(" ", "-")
            shown = "–" if entry is None else f"{entry['earned']}" + (
                f"/{entry['possible']}" if entry.get("possible") is not None else "")
            cells.append(f'<td class="{kind}" title="{esc(entry["status"] if entry else "")}">{shown}</td>')
        parts.append(f"<tr><td>{link}</td><td>{total}</td>{''.join(cells)}"
                     f"<td><small>{esc(student.row.get('problem', ''))}</small></td></tr>")
    parts.append("</table></body></html>\n")
    page = out / "class.html"
    page.write_text("\n".join(parts))
    return page


# ----------------------------------------------------------------------------- the gradebook

class RosterError(Exception):
    """A roster that cannot be read (usage error)."""


def read_roster(path: Path) -> tuple[str, dict[str, str]]:
    """(the id column's name, {student folder: LMS id}) from a CSV whose first column is the
    student's folder name and whose second is their id in the LMS. A first row whose second cell
    is not an id of the rows below names the columns (e.g. `student,SIS User ID`); without one the
    id column is called `id`."""
    try:
        with path.open(newline="") as source:
            rows = [row for row in csv.reader(source) if row and any(cell.strip() for cell in row)]
    except (OSError, UnicodeDecodeError) as error:
        raise RosterError(f"--roster {path}: {error}") from error
    if not rows or any(len(row) < 2 for row in rows):
        raise RosterError(f"--roster {path}: every line needs two columns: student folder, LMS id")
    column = "id"
    if rows[0][0].strip().lower() in ("student", "folder", "name", "student folder"):
        column, rows = rows[0][1].strip() or "id", rows[1:]
    roster: dict[str, str] = {}
    for row in rows:
        folder, ident = row[0].strip(), row[1].strip()
        if folder in roster and roster[folder] != ident:
            raise RosterError(f"--roster {path}: {folder} has two ids ({roster[folder]}, {ident})")
        roster[folder] = ident
    return column, roster


def write_lms(csv_path: Path, roster_path: Path, out: Path) -> tuple[list[Path], list[str]]:
    """<out>/lms/total.csv and <out>/lms/<lesson>.csv: `<id column>,<points>` for every student of
    the roster who was graded. Returns the files and the warnings (who is left out, and why)."""
    column, roster = read_roster(roster_path)
    slugs, students = read_class(csv_path, out)
    folder = out / "lms"
    graded = [student for student in students if student.row.get("total", "") != ""]
    warnings = [f"{printable(s.name)}: not graded ({printable(s.row.get('problem', ''))}): left out of the "
                "export (the LMS keeps what it has)" for s in students if s.row.get("total", "") == ""]
    warnings += [f"{printable(s.name)}: not in the roster: left out of the export" for s in graded
                 if s.name not in roster]
    names = {student.name for student in students}
    warnings += [f"{printable(name)} (id {printable(ident)}): in the roster, no submission: left out of the export"
                 for name, ident in roster.items() if name not in names]
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, key in [("total", "total")] + [(slug, slug) for slug in slugs]:
        rows = [[roster[s.name], s.row[key]] for s in graded if s.name in roster]
        path = folder / f"{safe_name(name)}.csv"
        report_csv.write_table(path, [column, name], rows)
        written.append(path)
    return written, warnings
