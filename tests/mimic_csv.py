"""Synthetic MIMIC-III NOTEEVENTS and MIMIC-IV-Note CSV content in the exact export layouts (no real MIMIC data),
shared by the reader, batch and tag-command tests."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

III_HEADER = ["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY",
              "DESCRIPTION", "CGID", "ISERROR", "TEXT"]
IV_HEADER = ["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"]

NOTE_1 = "Admission Date:  [**2151-7-16**]\r\nHistory: fever and pneumonia at [**Hospital1 18**].\r\n"
NOTE_2 = 'Pt said "no pain",\nthen, later, denied diabetes.'
NOTE_3 = "Radiology: no acute process."
# Python 3.10's csv writer refuses a NUL, later ones write it as is: on every version a stand-in no export holds is
# written in its place and replaced after.
_NUL_STAND_IN = "\ue000"


def _rows_csv(header_line: str, rows: list[list[str]]) -> str:
    buf = io.StringIO(newline="")
    buf.write(header_line)
    csv.writer(buf, lineterminator="\n").writerows([[f.replace("\x00", _NUL_STAND_IN) for f in r] for r in rows])
    return buf.getvalue().replace(_NUL_STAND_IN, "\x00")


def mimic3_csv(rows: list[tuple[str, str, str, str]]) -> str:
    """MIMIC-III NOTEEVENTS content for (ROW_ID, CATEGORY, ISERROR, TEXT) rows; header and text quoted as exported."""
    return _rows_csv(",".join(f'"{h}"' for h in III_HEADER) + "\n",
                     [[row_id, "22532", "167853", "2151-08-04", "", "", category, "Report", "", iserror, text]
                      for row_id, category, iserror, text in rows])


def mimic4_csv(rows: list[tuple[str, str, str]]) -> str:
    """MIMIC-IV-Note content for (note_id, note_type, text) rows."""
    return _rows_csv(",".join(IV_HEADER) + "\n",
                     [[note_id, "10000032", "22595853", note_type, "21", "2180-05-07 00:00:00", "2180-05-09 15:26:00",
                       text] for note_id, note_type, text in rows])


def write(path: Path, content: str, gz: bool = False) -> Path:
    data = content.encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def three_hundred_rows() -> list[tuple[str, str, str, str]]:
    return [(str(1000 + i), "Nursing/other", "", f"Seen today #{i}.\nfever, \"quoted\" and pain,\n2 lines")
            for i in range(300)]
