"""The shared binlog corpus (../shared/corpus, read-only, never copied into the repo).

MANIFEST.md was written by the corpus's curator with a throw-away scanner independent of
binlake: it gives, per file, the flavour/version, the checksum verdicts ("ok N, bad M"), the
number of events walked from offset 4, and flags such as TRUNCATED/CORRUPT/ENCRYPTED.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
MANIFEST = CORPUS / "MANIFEST.md"


@dataclass(frozen=True)
class CorpusFile:
    path: Path
    rel: str
    version: str
    size: int
    checksum: str
    events: int | None
    types: str
    notes: str

    @property
    def broken(self) -> bool:
        """Flagged as damaged or unreadable by design (so an error is the right answer)."""
        return bool(re.search(r"TRUNCATED|CORRUPT\b|ENCRYPTED|CRAFTED|NEGATIVE|NON-STANDARD",
                              self.notes))

    @property
    def bad_checksums(self) -> int:
        m = re.search(r"bad (\d+)", self.checksum)
        return int(m.group(1)) if m else 0

    @property
    def ok_checksums(self) -> int | None:
        m = re.search(r"ok (\d+)", self.checksum)
        return int(m.group(1)) if m else None


def corpus_files() -> list[CorpusFile]:
    if not MANIFEST.is_file():
        return []
    out = []
    for line in MANIFEST.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 9:
            continue
        rel = cells[0].strip("`")
        path = CORPUS / rel
        if not path.is_file():
            continue
        events = int(cells[5]) if cells[5].isdigit() else None
        out.append(CorpusFile(path, rel, cells[2], int(cells[3].replace(",", "")), cells[4],
                              events, cells[6], cells[8]))
    return out


def require_corpus() -> None:
    if not MANIFEST.is_file():
        pytest.skip("../shared/corpus is not present next to this checkout")
