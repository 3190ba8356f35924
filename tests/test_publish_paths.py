"""Which way ``binlake publish`` goes (lake/publish.py, ``publish_or_discard``): the catalog
alone when it finished every table, Spark (started only then) for what it left, Spark for
everything when the catalog cannot be reached through pyiceberg.  The ways themselves run on
real lakes in test_multi_source_nightly.py, test_lake_kill.py, test_s3_warehouse.py and
test_cluster.py; here, with both replaced, only the choice between them."""

from __future__ import annotations

from typing import Any

import pytest

from binlake.config import Settings
from binlake.lake import publish as P


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {"spark_started": 0, "spark_finished": []}

    def finish(spark: Any, settings: Any, branch: str, keep: bool) -> list[str]:
        assert spark == "spark"
        seen["spark_finished"].append((branch, keep))
        return seen.get("spark_tables", [])

    monkeypatch.setattr(P, "_finish", finish)
    return seen


def _session(seen: dict[str, Any]) -> Any:
    def start() -> str:
        seen["spark_started"] += 1
        return "spark"
    return start


def test_all_in_the_catalog_starts_no_spark(calls: dict[str, Any],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P, "publish_in_catalog", lambda s, b, k: (["a", "files"], []))
    assert P.publish_or_discard(Settings(), "night1", True, _session(calls)) == \
        (["a", "files"], False)
    assert calls["spark_started"] == 0 and calls["spark_finished"] == []


def test_tables_left_go_to_spark(calls: dict[str, Any],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P, "publish_in_catalog", lambda s, b, k: (["a"], ["b", "files"]))
    calls["spark_tables"] = ["b", "files"]
    assert P.publish_or_discard(Settings(), "night1", False, _session(calls)) == \
        (["a", "b", "files"], True)
    assert calls["spark_started"] == 1 and calls["spark_finished"] == [("night1", False)]


@pytest.mark.parametrize("route", ["hadoop", "unreachable"])
def test_no_catalog_route_goes_all_to_spark(route: str, calls: dict[str, Any],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def in_catalog(settings: Any, branch: str, keep: bool) -> Any:
        if route == "hadoop":
            return None
        raise ConnectionError("no such catalog server")

    monkeypatch.setattr(P, "publish_in_catalog", in_catalog)
    calls["spark_tables"] = ["a", "files"]
    assert P.publish_or_discard(Settings(), "night1", True, _session(calls)) == \
        (["a", "files"], True)
    assert calls["spark_started"] == 1


def test_a_bad_branch_name_starts_nothing(calls: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="bad branch name"):
        P.publish_or_discard(Settings(), "main", True, _session(calls))
    assert calls["spark_started"] == 0


def test_hadoop_catalog_has_no_pyiceberg_route() -> None:
    assert P.publish_in_catalog(Settings(catalog_type="hadoop"), "night1") is None
