"""``binlake decode`` on a Table_map whose column names are not valid UTF-8 (a user's edit of
a real MariaDB binlog): every event is written, the names with their undecodable bytes as
``\\xNN`` escapes (docs/decode-format.md); and an event that JSON cannot carry costs that
event only, never the ones written before it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .corpus import CORPUS, require_corpus

MARIADB = "libs/rust_mysql_common/mariadb-bin.000001"  # MariaDB 10.5, FULL row metadata


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    from binlake.cli import main

    def go(*args: object) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        cap = capsys.readouterr()
        return rc, cap.out, cap.err

    return go


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("binlake: error: "), err
    return lines[0]


def bad_names_copy(tmp_path: Path) -> Path:
    """The user's edit: bytes 932-935 of the MariaDB corpus file (inside the column names of
    the Table_map at 848) set to 1b 26 c8 02."""
    raw = bytearray((CORPUS / MARIADB).read_bytes())
    raw[932:936] = bytes.fromhex("1b26c802")
    path = tmp_path / "mariadb-bin.000001"
    path.write_bytes(bytes(raw))
    return path


def test_decode_rows_with_undecodable_column_names(run: Any, tmp_path: Path) -> None:
    require_corpus()
    path = bad_names_copy(tmp_path)
    rc, out, _ = run("decode", "--rows", CORPUS / MARIADB)
    good = [json.loads(line) for line in out.splitlines()]
    assert [r["pos"] for r in good] == [612, 984]
    # the name "event_type" with 4 bytes replaced: \x1b & (valid UTF-8) \xc8 (not) \x02
    name = "even\x1b&\\xc8\x02pe"
    for args, status in ((["--no-verify"], 0), ([], 1)):  # (the edit breaks the CRC32 too)
        rc, out, err = run("decode", "--rows", *args, path)
        assert rc == status, err
        rows = [json.loads(line) for line in out.splitlines()]
        assert rows[0] == {**good[0], "file": path.name}  # the events before it are all there
        after = rows[1]["after"]
        assert list(after) == ["id", "topic", name, "event", "created"]
        assert after[name] == good[1]["after"]["event_type"]
        assert "Traceback" not in err
    assert one_error_line(err).startswith(f"binlake: error: {path} at byte 848: event "
                                          "checksum mismatch")
    rc, out, err = run("decode", "--no-verify", path)
    assert rc == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    (tm,) = [e for e in events if e["pos"] == 848]
    assert [c["name"] for c in tm["columns"]] == ["id", "topic", name, "event", "created"]
    rc, out, _ = run("decode", CORPUS / MARIADB)
    assert len(events) == len(out.splitlines())


def test_decode_keeps_the_events_around_one_it_cannot_write(
        run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever an event holds that JSON cannot carry, the events before and after it are
    written, and the error names the file and the event's offset."""
    import binlake.binlog.render as render

    require_corpus()
    real = render.event_dict

    def with_a_lone_surrogate(ev: Any) -> dict[str, Any]:
        d = real(ev)
        if ev.pos == 848:
            d["table"] = "\udcc8"
        return d

    rc, clean, _ = run("decode", CORPUS / MARIADB)
    monkeypatch.setattr(render, "event_dict", with_a_lone_surrogate)
    rc, out, err = run("decode", CORPUS / MARIADB)
    assert rc == 1
    assert one_error_line(err).startswith(f"binlake: error: {CORPUS / MARIADB} at byte 848: "
                                          "cannot write the event as JSON")
    assert out.splitlines() == [line for line in clean.splitlines()
                                if json.loads(line)["pos"] != 848]
