"""Stream checks: GTID continuity, MySQL (per uuid and tag) and MariaDB (per domain).

MySQL GTIDs, per (uuid, tag)
    The first file's Previous_gtids is the starting set; the stream's GTIDs are added to it.
    * a gno already in the set -> ``GTID_DUPLICATE`` (error; warning in relay logs, where a
      receiver that reconnects fetches a partial transaction again);
    * a gno more than 1 above the highest so far opens a *pending* hole; holes still open at
      :meth:`StreamChecker.finish` -> ``GTID_GAP`` (error) with the missing range, at the
      event after the hole.  They are pending because a multi-threaded replica without
      ``replica_preserve_commit_order`` commits (and binlogs) transactions out of order and
      fills the hole a few events later; such a fill -> ``GTID_OUT_OF_ORDER`` (warning: legal,
      but a consumer that takes GTID order for commit order is misled);
    * the first GTID of a uuid not in the starting set starts that uuid's sequence wherever it
      is (a replica restored from a backup starts at the backup's position);
    * each later file's Previous_gtids must equal the previous file's Previous_gtids plus the
      GTIDs that file contained -> ``GTID_HEADER_MISMATCH``, detail ``{expected, found,
      missing, extra}``: error, except when the only difference is GTIDs the stream never had
      that lie below everything it has of their uuid (``SET GTID_PURGED`` on a server that had
      already opened its file), which is a warning.  The header's GTIDs join the set, so a
      missing file gives one header mismatch and not a gap at every later event.

MariaDB GTIDs, per domain (``domain_id-server_id-seq_no``; server_id is the event's)
    The first file's Gtid_list is the starting state.  MariaDB allocates seq_no per domain as
    the highest so far + 1, but does not promise a gap-free sequence: Kristian Nielsen's design
    notes for MariaDB GTID say it "does not enforce or rely on absence of holes in the sequence
    numbers", and a replica with replication filters, ``SET gtid_seq_no`` or a domain written
    by several servers all produce holes.  Monotonicity is required per server_id; between
    servers of one domain it is only enforced with ``gtid_strict_mode`` (off by default,
    rpl_gtid.cc ``rpl_binlog_state::update_nolock`` raises ER_GTID_STRICT_OUT_OF_ORDER when the
    new seq_no is not above the domain's last).  So:

    * seq_no already seen in the domain in this stream -> ``GTID_DUPLICATE`` (error);
    * seq_no more than 1 above the domain's highest -> ``GTID_GAP`` (warning);
    * seq_no below the domain's highest, not seen: from a server whose own last seq_no in the
      domain is higher -> ``GTID_OUT_OF_ORDER`` (error, per-server monotonicity broken); else
      (another server of the domain is behind) -> ``GTID_OUT_OF_ORDER`` (warning: only possible
      with gtid_strict_mode off, a misconfiguration MariaDB tolerates);
    * each later file's Gtid_list must equal the previous file's Gtid_list updated with the
      last GTID per (domain, server_id) of that file (``rpl_binlog_state`` keeps exactly that)
      -> ``GTID_HEADER_MISMATCH`` (error; a warning when the only difference is whole domains
      missing from the list, which ``FLUSH BINARY LOGS DELETE_DOMAIN_ID`` does).

Memory: one interval set per GTID source (one interval per hole in its GTID sequence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..binlog.event import Event
from .check_base import CheckerBase
from .findings import (
    ERROR,
    GTID_DUPLICATE,
    GTID_GAP,
    GTID_HEADER_MISMATCH,
    GTID_OUT_OF_ORDER,
    WARNING,
)
from .gtidset import GtidKey, IntervalSet, gtid_key_text, gtid_set_text

__all__ = ["GtidChecks"]


@dataclass
class _Hole:
    """A range of gnos the stream jumped over (MySQL), still waiting to be filled."""

    start: int
    end: int
    file: str
    pos: int
    gtid: str
    before: int  # the highest gno before the jump


class GtidChecks(CheckerBase):
    """GTID continuity (a mixin of :class:`~binlake.txn.checks.StreamChecker`, which calls
    :meth:`_init_gtids` once, :meth:`_next_file_gtids` at each new file, the event checks for
    GTID, Previous_gtids, MariaDB GTID and Gtid_list events, and :meth:`_report_gtid_gaps` at
    the end)."""

    def _init_gtids(self) -> None:
        # MySQL GTIDs
        self._gtid_state: dict[GtidKey, IntervalSet] = {}
        self._gtid_stream_min: dict[GtidKey, int] = {}
        self._holes: dict[GtidKey, list[_Hole]] = {}
        self._prev_header: dict[GtidKey, IntervalSet] | None = None
        self._prev_header_file: str | None = None
        self._prev_contained: dict[GtidKey, IntervalSet] = {}
        self._contained: dict[GtidKey, IntervalSet] = {}
        # MariaDB GTIDs
        self._dom_max: dict[int, int] = {}
        self._dom_seen: dict[int, IntervalSet] = {}
        self._server_last: dict[tuple[int, int], int] = {}
        self._prev_list: dict[tuple[int, int], int] | None = None
        self._prev_list_file: str | None = None
        self._prev_file_last: dict[tuple[int, int], int] = {}
        self._file_last: dict[tuple[int, int], int] = {}

    def _next_file_gtids(self) -> None:
        """A new file begins: what the file before contained becomes the expected headers' input."""
        self._prev_contained = self._contained
        self._contained = {}
        self._prev_file_last = self._file_last
        self._file_last = {}

    def _report_gtid_gaps(self) -> None:
        """After the last file: the MySQL holes nothing filled are gaps."""
        for key, holes in self._holes.items():
            for h in holes:
                missing = h.start if h.start == h.end else f"{h.start}-{h.end}"
                self._add(GTID_GAP, ERROR, h.file, h.pos,
                          {"uuid": key[0], "tag": key[1], "missing": [h.start, h.end],
                           "previous": h.before, "found": h.gtid},
                          f"GTID gap: after {gtid_key_text(key)}:{h.before} the stream "
                          f"continues with {h.gtid}; {gtid_key_text(key)}:{missing} never "
                          "appears (expected gno "
                          f"{h.before + 1}, found {h.gtid.rsplit(':', 1)[-1]})")
        self._holes = {}

    # -- MySQL GTIDs ----------------------------------------------------------------------------

    def _mysql_gtid(self, ev: Event, name: str) -> None:
        uuid = ev.data.get("uuid")
        gno = ev.data.get("gno")
        if not isinstance(uuid, str) or not isinstance(gno, int) or gno <= 0:
            return
        key: GtidKey = (uuid, ev.data.get("tag") or None)
        text = ev.data.get("gtid") or f"{gtid_key_text(key)}:{gno}"
        self._contained.setdefault(key, IntervalSet()).add(gno)
        low = self._gtid_stream_min.get(key)
        if low is None or gno < low:
            self._gtid_stream_min[key] = gno
        state = self._gtid_state.get(key)
        if state is None or not state:
            self._gtid_state[key] = IntervalSet([(gno, gno)])
            return
        top = state.max()
        assert top is not None
        relay = self._relay_from is not None
        if gno in state:
            self._add(GTID_DUPLICATE, WARNING if relay else ERROR, name, ev.pos,
                      {"gtid": text, "uuid": key[0], "tag": key[1], "gno": gno},
                      f"GTID {text} at {ev.pos} was already executed earlier in the stream "
                      "(or is in a Previous_gtids set): expected a new gno, found a repeated one"
                      + ("; in a relay log a receiver that reconnects fetches a transaction "
                         "again" if relay else ""))
            return
        if gno == top + 1:
            state.add(gno)
            return
        if gno > top + 1:
            state.add(gno)
            self._holes.setdefault(key, []).append(
                _Hole(top + 1, gno - 1, name, ev.pos, text, top))
            return
        # below the highest gno and not seen: fills a hole, out of order
        state.add(gno)
        filled = self._fill_hole(key, gno)
        self._add(GTID_OUT_OF_ORDER, WARNING, name, ev.pos,
                  {"gtid": text, "uuid": key[0], "tag": key[1], "gno": gno, "highest": top,
                   "hole_opened_at": None if filled is None else [filled.file, filled.pos]},
                  f"GTID {text} at {ev.pos} comes after gno {top} of the same uuid (expected "
                  f"{top + 1}): transactions were committed out of order (a multi-threaded "
                  "replica without replica_preserve_commit_order) or gtid_next was set by hand")

    def _fill_hole(self, key: GtidKey, gno: int) -> _Hole | None:
        holes = self._holes.get(key)
        if not holes:
            return None
        for i, h in enumerate(holes):
            if h.start <= gno <= h.end:
                parts = []
                if h.start < gno:
                    parts.append(_Hole(h.start, gno - 1, h.file, h.pos, h.gtid, h.before))
                if gno < h.end:
                    parts.append(_Hole(gno + 1, h.end, h.file, h.pos, h.gtid, h.before))
                holes[i:i + 1] = parts
                if not holes:
                    del self._holes[key]
                return h
        return None

    def _fill_holes_with(self, sets: dict[GtidKey, IntervalSet]) -> None:
        for key, iv in sets.items():
            holes = self._holes.get(key)
            if not holes:
                continue
            left: list[_Hole] = []
            for h in holes:
                whole = IntervalSet([(h.start, h.end)])
                for a, b in whole.difference(iv):
                    left.append(_Hole(a, b, h.file, h.pos, h.gtid, h.before))
            if left:
                self._holes[key] = left
            else:
                del self._holes[key]

    def _previous_gtids(self, ev: Event, name: str) -> None:
        uuid_sets = ev.data.get("uuid_sets")
        if not isinstance(uuid_sets, list):
            return
        header: dict[GtidKey, IntervalSet] = {}
        for entry in uuid_sets:
            key: GtidKey = (entry["uuid"], entry.get("tag") or None)
            header.setdefault(key, IntervalSet()).update(IntervalSet(entry["intervals"]))
        header = {k: v for k, v in header.items() if v}
        if self._prev_header is not None:
            self._compare_headers(ev, name, header)
        for key, iv in header.items():
            self._gtid_state.setdefault(key, IntervalSet()).update(iv)
        self._fill_holes_with(header)
        self._prev_header = header
        self._prev_header_file = name

    def _compare_headers(self, ev: Event, name: str, header: dict[GtidKey, IntervalSet]) -> None:
        assert self._prev_header is not None
        expected: dict[GtidKey, IntervalSet] = {k: v.copy() for k, v in self._prev_header.items()}
        for key, iv in self._prev_contained.items():
            expected.setdefault(key, IntervalSet()).update(iv)
        missing: dict[GtidKey, list[tuple[int, int]]] = {}
        extra: dict[GtidKey, list[tuple[int, int]]] = {}
        for key, iv in expected.items():
            d = iv.difference(header.get(key))
            if d:
                missing[key] = d
        for key, iv in header.items():
            d = iv.difference(expected.get(key))
            if d:
                extra[key] = d
        if not missing and not extra:
            return
        benign = not missing
        for key, d in extra.items():
            low = self._gtid_stream_min.get(key)
            if low is not None and d[-1][1] >= low:
                benign = False
        exp_text = gtid_set_text({k: list(v) for k, v in expected.items()})
        found_text = gtid_set_text({k: list(v) for k, v in header.items()})
        prev = self._prev_header_file
        parts = []
        if missing:
            parts.append(f"missing {gtid_set_text(missing)}")
        if extra:
            parts.append(f"extra {gtid_set_text(extra)}")
        message = (f"Previous_gtids of {name} at {ev.pos} does not follow from the files before "
                   f"it: expected {exp_text or '(empty)'} (Previous_gtids of {prev} plus the "
                   f"GTIDs in {prev}), found {found_text or '(empty)'}; {', '.join(parts)}")
        if benign:
            message += ("; the extra GTIDs precede everything the stream has of their uuid "
                        "(added outside the binlog, e.g. SET GTID_PURGED)")
        elif self._prev_error:
            message += f"; {prev} ended with a read error, its last GTIDs may be in the lost part"
        self._add(GTID_HEADER_MISMATCH, WARNING if benign else ERROR, name, ev.pos,
                  {"expected": exp_text, "found": found_text,
                   "missing": gtid_set_text(missing), "extra": gtid_set_text(extra),
                   "previous_file": prev},
                  message)

    # -- MariaDB GTIDs --------------------------------------------------------------------------

    def _mariadb_gtid(self, ev: Event, name: str) -> None:
        domain = ev.data.get("domain_id")
        seq = ev.data.get("seq_no")
        if not isinstance(domain, int) or not isinstance(seq, int):
            return
        server = ev.server_id
        text = f"{domain}-{server}-{seq}"
        self._file_last[(domain, server)] = seq
        seen = self._dom_seen.setdefault(domain, IntervalSet())
        top = self._dom_max.get(domain)
        own = self._server_last.get((domain, server))
        detail: dict[str, Any] = {"gtid": text, "domain_id": domain, "server_id": server,
                                  "seq_no": seq, "highest": top}
        if seq in seen:
            self._add(GTID_DUPLICATE, ERROR, name, ev.pos, detail,
                      f"GTID {text} at {ev.pos}: seq_no {seq} of domain {domain} was already "
                      "used earlier in the stream (expected a new seq_no, found a repeated one)")
        elif top is not None and seq > top + 1:
            self._add(GTID_GAP, WARNING, name, ev.pos,
                      {**detail, "missing": [top + 1, seq - 1]},
                      f"GTID {text} at {ev.pos}: domain {domain} jumps from seq_no {top} to "
                      f"{seq} (expected {top + 1}; {top + 1}"
                      + (f"-{seq - 1}" if seq - 1 > top + 1 else "")
                      + " not in the stream). MariaDB does not promise gap-free sequences "
                      "(replication filters, SET gtid_seq_no, several servers in one domain)")
        elif top is not None and seq < top:
            if own is not None and seq < own:
                self._add(GTID_OUT_OF_ORDER, ERROR, name, ev.pos, {**detail, "server_last": own},
                          f"GTID {text} at {ev.pos}: server {server} already logged seq_no "
                          f"{own} in domain {domain} (expected above {own}, found {seq}); "
                          "sequence numbers must grow per server")
            else:
                self._add(GTID_OUT_OF_ORDER, WARNING, name, ev.pos, detail,
                          f"GTID {text} at {ev.pos}: domain {domain} is already at seq_no {top} "
                          f"(expected above {top}, found {seq}): two servers write domain "
                          f"{domain}, possible only with gtid_strict_mode off")
        seen.add(seq)
        if top is None or seq > top:
            self._dom_max[domain] = seq
        if own is None or seq > own:
            self._server_last[(domain, server)] = seq

    def _gtid_list(self, ev: Event, name: str) -> None:
        gtids = ev.data.get("gtids")
        if not isinstance(gtids, list) or ev.data.get("list_flags"):
            return
        header: dict[tuple[int, int], int] = {}
        for g in gtids:
            header[(g["domain_id"], g["server_id"])] = g["seq_no"]
        if self._prev_list is not None:
            self._compare_lists(ev, name, header)
        for (domain, server), seq in header.items():
            self._dom_seen.setdefault(domain, IntervalSet()).add(seq)
            if seq > self._dom_max.get(domain, -1):
                self._dom_max[domain] = seq
            if seq > self._server_last.get((domain, server), -1):
                self._server_last[(domain, server)] = seq
        self._prev_list = header
        self._prev_list_file = name

    def _compare_lists(self, ev: Event, name: str, header: dict[tuple[int, int], int]) -> None:
        assert self._prev_list is not None
        expected = dict(self._prev_list)
        expected.update(self._prev_file_last)
        if header == expected:
            return
        missing = {k: v for k, v in expected.items() if k not in header}
        extra = {k: v for k, v in header.items() if k not in expected}
        differ = {k: (expected[k], v) for k, v in header.items()
                  if k in expected and expected[k] != v}
        header_domains = {d for d, _ in header}
        benign = not extra and not differ and all(d not in header_domains for d, _ in missing)

        def fmt(d: dict[tuple[int, int], int]) -> str:
            return ",".join(f"{a}-{b}-{s}" for (a, b), s in sorted(d.items())) or "(empty)"

        prev = self._prev_list_file
        parts = []
        if missing:
            parts.append(f"missing {fmt(missing)}")
        if extra:
            parts.append(f"extra {fmt(extra)}")
        if differ:
            parts.append("different " + ",".join(
                f"{a}-{b}: expected {e}, found {f}" for (a, b), (e, f) in sorted(differ.items())))
        message = (f"Gtid_list of {name} at {ev.pos} does not follow from the files before it: "
                   f"expected {fmt(expected)} (Gtid_list of {prev} updated with the last GTID "
                   f"per domain and server in {prev}), found {fmt(header)}; {'; '.join(parts)}")
        if benign:
            message += " (whole domains dropped: FLUSH BINARY LOGS DELETE_DOMAIN_ID)"
        elif self._prev_error:
            message += f"; {prev} ended with a read error, its last GTIDs may be in the lost part"
        self._add(GTID_HEADER_MISMATCH, WARNING if benign else ERROR, name, ev.pos,
                  {"expected": fmt(expected), "found": fmt(header), "missing": fmt(missing),
                   "extra": fmt(extra),
                   "different": {f"{a}-{b}": [e, f] for (a, b), (e, f) in differ.items()},
                   "previous_file": prev},
                  message)
