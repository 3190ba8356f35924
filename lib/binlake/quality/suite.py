"""The expectations: one short Great Expectations subclass per check, grouped by family.

Every check names the dataset it runs on (built by :mod:`binlake.quality.datasets`):

``events``    one row per event whose checksum or body failed (the stream facts)
``files``     one row per file, with the GTID header each file should have
``groups``    one row per event group (transactions, XA PREPARE / COMMIT / ROLLBACK groups,
              groups that never ended), plus the XAs the lake says were pending before the run
``findings``  verdicts of the single-file StreamChecker / GroupBuilder (positions with their
              relay-log and old-server exemptions, transaction_length, WL#4162, Xids)
``gtids``     one row per GTID of the stream, plus the first file's Previous_gtids / Gtid_list
``reconciliation``, ``mirrors``   (lake) expected vs landed row counts

Multi-row checks are ``UnexpectedRowsExpectation`` queries over ``{batch}``; single-column ones
are subclasses of the core column expectations.  ``meta`` carries the check's name, family and
severity: they show in Data Docs and in ``validation_results``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import great_expectations.expectations as gxe

from .names import ERROR, WARNING


@dataclass(frozen=True)
class Check:
    name: str  # family.check
    family: str
    severity: str
    dataset: str
    make: Callable[[], Any]  # () -> a GX Expectation

    def expectation(self) -> Any:
        exp = self.make()
        exp.meta = {"check": self.name, "family": self.family, "severity": self.severity}
        # GX's own severity (1.x FailureSeverity) says the same in Data Docs
        exp.severity = "critical" if self.severity == ERROR else "warning"
        return exp


# -- grammar (WL#4162) --------------------------------------------------------------------------

class ExpectValidTransactionBoundaries(gxe.UnexpectedRowsExpectation):
    description: str = ("WL#4162: no invalid boundary transition (e.g. an Xid/COMMIT without "
                        "BEGIN, a GTID inside an open transaction)")
    unexpected_rows_query: str = (
        "SELECT file, pos, message FROM {batch} "
        "WHERE kind = 'invalid_transition' AND severity = 'error'")


class ExpectNoTransactionOpenAtFileEnd(gxe.UnexpectedRowsExpectation):
    description: str = ("No transaction is left open at the end of a closed file (the newest, "
                        "still written file is exempt)")
    unexpected_rows_query: str = (
        "SELECT file, pos, message FROM {batch} "
        "WHERE kind = 'open_transaction_at_eof' AND severity = 'error'")


class ExpectEveryGroupToEnd(gxe.UnexpectedRowsExpectation):
    description: str = ("Every event group ends in Xid, COMMIT, ROLLBACK or XA_prepare, or is "
                        "a self-contained statement")
    unexpected_rows_query: str = (
        "SELECT file, begin_pos, end_pos, gtid, end_event FROM {batch} "
        "WHERE record = 'incomplete'")


# -- positions ------------------------------------------------------------------------------

class ExpectEventPositionsToChain(gxe.UnexpectedRowsExpectation):
    description: str = ("Within each file every event's next_pos is where the next event "
                        "starts: no gap, no overlap (relay logs and old position conventions "
                        "exempt, as binlake verify)")
    unexpected_rows_query: str = (
        "SELECT file, pos, kind, message FROM {batch} "
        "WHERE kind IN ('position_gap', 'position_overlap')")


class ExpectFilesToEndWithRotateOrStop(gxe.UnexpectedRowsExpectation):
    description: str = ("Every file but the newest ends with a Rotate or Stop event (a file "
                        "cut inside an event is the integrity family's)")
    unexpected_rows_query: str = (
        "SELECT file, ends_with, size FROM {batch} WHERE NOT newest AND error IS NULL "
        "AND coalesce(ends_with, '') NOT IN ('ROTATE', 'STOP')")


class ExpectRotateToNameTheNextFile(gxe.UnexpectedRowsExpectation):
    description: str = ("A file's closing Rotate names the file that follows it in the "
                        "archive")
    unexpected_rows_query: str = (
        "SELECT file, rotate_next, next_file FROM (SELECT file, ends_with, rotate_next, "
        "lead(file) OVER (PARTITION BY base ORDER BY seq, `index`) AS next_file FROM {batch}) "
        "WHERE ends_with = 'ROTATE' AND next_file IS NOT NULL AND rotate_next <> next_file")


class ExpectNoMissingFiles(gxe.UnexpectedRowsExpectation):
    description: str = "File sequence numbers have no holes (no file missing in the middle)"
    unexpected_rows_query: str = (
        "SELECT file, seq, previous_seq FROM (SELECT file, seq, "
        "lag(seq) OVER (PARTITION BY base ORDER BY seq, `index`) AS previous_seq FROM {batch} "
        "WHERE seq >= 0) WHERE previous_seq IS NOT NULL AND seq <> previous_seq + 1")


# -- integrity ------------------------------------------------------------------------------

class ExpectEventChecksumsToMatch(gxe.ExpectColumnValuesToNotBeInSet):
    description: str = ("Every event's CRC32 matches its bytes where the file carries "
                        "checksums")


class ExpectEventsToDecode(gxe.ExpectColumnValuesToBeNull):
    description: str = "Every event body decodes (no decode error other than a CRC32 mismatch)"


class ExpectFilesToBeReadToTheEnd(gxe.UnexpectedRowsExpectation):
    description: str = ("Every file reads to its end: not cut inside an event, a binlog with "
                        "a valid Format_description, no garbage event size")
    unexpected_rows_query: str = (
        "SELECT file, error_kind, error_offset, error FROM {batch} WHERE error IS NOT NULL")


class ExpectFilesClosedCleanly(gxe.UnexpectedRowsExpectation):
    description: str = ("Every file but the newest was closed cleanly (Format_description "
                        "in-use flag cleared); a crashed server leaves it set")
    unexpected_rows_query: str = (
        "SELECT file, in_use FROM {batch} WHERE in_use AND NOT newest")


class ExpectArchivedSha256ToMatch(gxe.ExpectColumnPairValuesToBeEqual):
    description: str = ("The sha256 of each archived object equals the one recorded at copy "
                        "time (files with nothing recorded pass)")


class ExpectUniqueXidsPerFile(gxe.UnexpectedRowsExpectation):
    description: str = ("No Xid value ends two groups of one file (crash recovery could not "
                        "tell them apart)")
    unexpected_rows_query: str = (
        "SELECT file, pos, message FROM {batch} WHERE kind = 'duplicate_xid'")


# -- GTID continuity --------------------------------------------------------------------------

# The gtids dataset carries, per row, the running maxima these compare with (datasets.py,
# _with_gtid_order): covered_to, the highest number before it in its sequence (per MySQL uuid
# and tag, per MariaDB domain; ordered by number, the first file's header first);
# highest_before, the highest before it of its MariaDB domain and server in binlog order.

class ExpectNoDuplicateGtids(gxe.UnexpectedRowsExpectation):
    description: str = ("No GTID appears twice in the archive, nor one already in the first "
                        "file's Previous_gtids / Gtid_list (per MySQL uuid and tag, per MariaDB "
                        "domain)")
    unexpected_rows_query: str = (
        "SELECT file, pos, gtid FROM {batch} WHERE origin = 'event' AND covered_to >= gno_start")


class ExpectNoMysqlGtidGaps(gxe.UnexpectedRowsExpectation):
    description: str = ("MySQL GTIDs: per uuid (and tag) the sequence numbers of the archive, "
                        "with the first file's Previous_gtids, have no holes")
    unexpected_rows_query: str = (
        "SELECT file, pos, gtid, covered_to + 1 AS missing_from, gno_start - 1 AS missing_to "
        "FROM {batch} WHERE flavor = 'mysql' AND origin = 'event' AND covered_to IS NOT NULL "
        "AND gno_start > covered_to + 1")


class ExpectNoMariadbGtidGaps(gxe.UnexpectedRowsExpectation):
    description: str = ("MariaDB GTIDs: per domain the seq_no have no holes (MariaDB does not "
                        "promise it: SET gtid_seq_no, filters, several servers per domain)")
    unexpected_rows_query: str = (
        "SELECT file, pos, gtid, covered_to + 1 AS missing_from, gno_start - 1 AS missing_to "
        "FROM {batch} WHERE flavor = 'mariadb' AND origin = 'event' AND covered_to IS NOT NULL "
        "AND gno_start > covered_to + 1")


class ExpectMariadbSeqNoToGrowPerServer(gxe.UnexpectedRowsExpectation):
    description: str = ("MariaDB GTIDs: per domain and server, seq_no grow in binlog order "
                        "(gtid_strict_mode's rule for one server)")
    unexpected_rows_query: str = (
        "SELECT file, pos, gtid, highest_before FROM {batch} WHERE flavor = 'mariadb' "
        "AND origin = 'event' AND highest_before > gno_start")


class ExpectGtidHeadersToFollow(gxe.ExpectColumnPairValuesToBeEqual):
    description: str = ("Each file's Previous_gtids (MySQL) / Gtid_list (MariaDB) equals the "
                        "previous file's plus the GTIDs that file contained")


# -- transaction_length -----------------------------------------------------------------------

class ExpectTransactionLengthToMatch(gxe.UnexpectedRowsExpectation):
    description: str = ("Where a MySQL 8 GTID event declares transaction_length, the group "
                        "spans exactly that many bytes")
    unexpected_rows_query: str = (
        "SELECT file, pos, detail, message FROM {batch} "
        "WHERE kind = 'transaction_length_mismatch' AND severity = 'error'")


# -- XA --------------------------------------------------------------------------------------

# The groups dataset carries xa_prev_record / xa_next_record (datasets.py, _with_xa_order):
# for an XA PREPARE or XA COMMIT/ROLLBACK group, the record of its XID's group before / after
# it among those groups, in binlog order.

class ExpectXaDecisionsToMatchAPrepare(gxe.UnexpectedRowsExpectation):
    description: str = ("Every XA COMMIT / XA ROLLBACK decides a pending PREPARE (of this run, "
                        "or pending in the lake from an earlier one)")
    unexpected_rows_query: str = (
        "SELECT file, begin_pos, xa_xid, status, xa_prev_record AS prev_record FROM {batch} "
        "WHERE record = 'xa_end' AND (xa_prev_record IS NULL OR xa_prev_record <> 'xa_prepare')")


class ExpectNoXidPreparedTwice(gxe.UnexpectedRowsExpectation):
    description: str = "No XA XID is prepared again while an earlier PREPARE of it is pending"
    unexpected_rows_query: str = (
        "SELECT file, begin_pos, xa_xid FROM {batch} "
        "WHERE record = 'xa_prepare' AND xa_prev_record = 'xa_prepare'")


def pending_age_query(max_age: float) -> str:
    return ("SELECT file, begin_pos, xa_xid, run_last_ts - ts AS age_seconds FROM {batch} "
            "WHERE record = 'xa_prepare' AND xa_next_record IS NULL "
            f"AND run_last_ts - ts > {float(max_age)}")


class ExpectNoLongPendingXa(gxe.UnexpectedRowsExpectation):
    description: str = ("No XA stays prepared (undecided) longer than xa_max_age seconds "
                        "before the last event of the run")
    unexpected_rows_query: str = pending_age_query(86400.0)


# -- reconciliation ----------------------------------------------------------------------------

class ExpectRowChangesToMatchDecodedRows(gxe.ExpectColumnPairValuesToBeEqual):
    description: str = ("Per transaction (order key), the row_changes rows (inserts/updates/"
                        "deletes) equal the applied rows of its decoded rows events")


class ExpectMirrorCountsToMatch(gxe.ExpectColumnPairValuesToBeEqual):
    description: str = ("Each mirror table holds as many rows as row_changes has inserts minus "
                        "deletes for its table and source")


# -- the catalogue --------------------------------------------------------------------------

def checks(*, xa_max_age: float = 86400.0) -> list[Check]:
    """Every check, in report order."""
    return [
        Check("grammar.valid_transitions", "grammar", ERROR, "findings",
              ExpectValidTransactionBoundaries),
        Check("grammar.no_open_transaction_at_file_end", "grammar", ERROR, "findings",
              ExpectNoTransactionOpenAtFileEnd),
        Check("grammar.every_group_ends", "grammar", ERROR, "groups", ExpectEveryGroupToEnd),
        Check("positions.next_pos_chain", "positions", ERROR, "findings",
              ExpectEventPositionsToChain),
        Check("positions.file_ends_with_rotate_or_stop", "positions", ERROR, "files",
              ExpectFilesToEndWithRotateOrStop),
        Check("positions.rotate_names_next_file", "positions", ERROR, "files",
              ExpectRotateToNameTheNextFile),
        Check("positions.no_missing_file", "positions", ERROR, "files", ExpectNoMissingFiles),
        Check("integrity.event_checksums", "integrity", ERROR, "events",
              lambda: ExpectEventChecksumsToMatch(column="checksum", value_set=["mismatch"])),
        Check("integrity.events_decode", "integrity", ERROR, "events",
              lambda: ExpectEventsToDecode(column="error")),
        Check("integrity.files_read_to_end", "integrity", ERROR, "files",
              ExpectFilesToBeReadToTheEnd),
        Check("integrity.files_closed_cleanly", "integrity", WARNING, "files",
              ExpectFilesClosedCleanly),
        Check("integrity.archived_sha256", "integrity", ERROR, "files",
              lambda: ExpectArchivedSha256ToMatch(column_A="sha256", column_B="recorded_sha256",
                                                  ignore_row_if="either_value_is_missing")),
        Check("integrity.unique_xids", "integrity", ERROR, "findings", ExpectUniqueXidsPerFile),
        Check("gtid.no_duplicates", "gtid", ERROR, "gtids", ExpectNoDuplicateGtids),
        Check("gtid.mysql_no_gaps", "gtid", ERROR, "gtids", ExpectNoMysqlGtidGaps),
        Check("gtid.mariadb_no_gaps", "gtid", WARNING, "gtids", ExpectNoMariadbGtidGaps),
        Check("gtid.mariadb_per_server_order", "gtid", ERROR, "gtids",
              ExpectMariadbSeqNoToGrowPerServer),
        Check("gtid.headers_follow", "gtid", ERROR, "files",
              lambda: ExpectGtidHeadersToFollow(column_A="gtid_header",
                                                column_B="expected_gtid_header",
                                                ignore_row_if="either_value_is_missing")),
        Check("transaction_length.matches", "transaction_length", ERROR, "findings",
              ExpectTransactionLengthToMatch),
        Check("xa.decisions_match_prepares", "xa", ERROR, "groups",
              ExpectXaDecisionsToMatchAPrepare),
        Check("xa.no_duplicate_prepare", "xa", ERROR, "groups", ExpectNoXidPreparedTwice),
        Check("xa.pending_age", "xa", WARNING, "groups",
              lambda: ExpectNoLongPendingXa(unexpected_rows_query=pending_age_query(xa_max_age))),
        Check("reconciliation.row_changes", "reconciliation", ERROR, "reconciliation",
              lambda: ExpectRowChangesToMatchDecodedRows(column_A="expected", column_B="actual")),
        Check("reconciliation.mirror_counts", "reconciliation", WARNING, "mirrors",
              lambda: ExpectMirrorCountsToMatch(column_A="expected", column_B="actual")),
    ]
