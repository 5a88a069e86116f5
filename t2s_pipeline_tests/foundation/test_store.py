"""The results store: one folder per run, typed tables, atomic replacement, concurrent writers."""

from __future__ import annotations

import errno
import multiprocessing
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.store import ResultsStore, StoreError
from t2s_pipeline.tables import TABLES, TableError


def _exact(item_id: str, match: bool | None) -> dict[str, object]:
    return {"item_id": item_id, "case_id": item_id.split("#")[0], "exact_match": match}


def test_replace_is_per_run_and_by_name(tmp_path: Path) -> None:
    """Columns match by name (any order); other runs are untouched; replacing is whole."""
    store = ResultsStore(tmp_path / "results")
    store.replace_run(
        "exact_matches", "r1", pd.DataFrame([_exact("a#0", True), _exact("b#0", False)])
    )
    store.replace_run(
        "exact_matches", "r2", pd.DataFrame([{"exact_match": True, "item_id": "c#0"}])
    )
    store.replace_run("exact_matches", "r1", pd.DataFrame([_exact("d#0", None)]))
    rows = store.read("exact_matches").sort_values("item_id")
    assert list(rows["run_id"]) == ["r2", "r1"] and list(rows["item_id"]) == ["c#0", "d#0"]
    assert list(rows.columns) == list(TABLES["exact_matches"].names)
    assert store.read("exact_matches", "r1")["exact_match"].isna().all()
    assert (tmp_path / "results" / "runs" / "r1" / "exact_matches.parquet").is_file()


def test_types_come_from_the_declaration_not_the_first_frame(tmp_path: Path) -> None:
    """A column that is NULL in the first run written keeps its declared type, so a later run
    with values reads back in the same type (the old store typed it from the first frame)."""
    store = ResultsStore(tmp_path / "results")
    store.replace_run(
        "output_scores", "r1", pd.DataFrame([{"item_id": "a#0", "candidate_rows": None}])
    )
    store.replace_run(
        "output_scores", "r2", pd.DataFrame([{"item_id": "a#0", "candidate_rows": 7}])
    )
    with store.connect() as con:
        described = {
            row[0]: row[1] for row in con.execute("DESCRIBE eval.output_scores").fetchall()
        }
    assert described["candidate_rows"] == "BIGINT"
    assert described["exact_match"] == "BOOLEAN" and described["cells_recall"] == "DOUBLE"
    assert store.read("output_scores", "r2")["candidate_rows"].tolist() == [7]


def test_an_undeclared_column_or_table_is_refused_by_name(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results")
    with pytest.raises(TableError, match="table exact_matches has no column bogus"):
        store.replace_run("exact_matches", "r1", pd.DataFrame([{"item_id": "a", "bogus": 1}]))
    with pytest.raises(TableError, match="no table 'nope' is declared"):
        store.read("nope")


def test_a_failed_replace_keeps_the_previous_rows(tmp_path: Path) -> None:
    """Nothing is lost when a write fails midway: the old file stays until the new one is whole."""
    store = ResultsStore(tmp_path / "results")
    store.replace_run(
        "exact_matches", "r1", pd.DataFrame([_exact("a#0", True), _exact("b#0", True)])
    )
    with pytest.raises(TableError, match="phrasing"):
        store.replace_run(
            "exact_matches", "r1", pd.DataFrame([{"item_id": "x", "phrasing": "two"}])
        )
    assert sorted(store.read("exact_matches", "r1")["item_id"]) == ["a#0", "b#0"]
    leftovers = [p.name for p in (tmp_path / "results" / "runs" / "r1").iterdir()]
    assert leftovers == ["exact_matches.parquet"]


def test_a_full_disk_names_enospc_and_the_path_and_keeps_the_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write onto a full filesystem: the error names ENOSPC and the file, and the earlier
    file of that table is intact. The store's temporary file is made a link to /dev/full, the
    kernel's device that answers every write with ENOSPC, so the failure is the real one."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    import t2s_pipeline.store as store_module

    store = ResultsStore(tmp_path / "results")
    store.replace_run("exact_matches", "r1", pd.DataFrame([_exact("a#0", True)]))
    folder = tmp_path / "results" / "runs" / "r1"

    class _Fixed:
        hex = "fixed"

    monkeypatch.setattr(store_module.uuid, "uuid4", lambda: _Fixed())
    os.symlink("/dev/full", folder / ".exact_matches.parquet.fixed.tmp")
    with pytest.raises(StoreError, match=r"ENOSPC.*exact_matches\.parquet") as raised:
        store.replace_run("exact_matches", "r1", pd.DataFrame([_exact("b#0", False)]))
    assert "intact" in str(raised.value)
    assert list(store.read("exact_matches", "r1")["item_id"]) == ["a#0"]
    assert not any(p.name.endswith(".tmp") for p in folder.iterdir())


def test_reading_what_does_not_exist_is_empty_with_the_declared_columns(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "missing")
    data = store.read("output_scores")
    assert data.empty and list(data.columns) == list(TABLES["output_scores"].names)
    assert store.run_ids() == []


def test_the_old_single_file_store_is_refused_with_the_migration_command(tmp_path: Path) -> None:
    old = tmp_path / "results.duckdb"
    duckdb.connect(str(old)).close()
    with pytest.raises(StoreError, match="t2s store migrate --from"):
        ResultsStore(old)


def test_fragments_accumulate_and_run_tables_replace(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results")
    row = {"model": "m", "prompt_hash": "p", "inputs_hash": "i", "category": "correct"}
    store.append("judge_cache", pd.DataFrame([row]))
    store.append("judge_cache", pd.DataFrame([{**row, "inputs_hash": "j"}]))
    assert len(store.read("judge_cache")) == 2
    store.replace_run("regressions", "c", pd.DataFrame([{"run_a": "a", "item_id": "x"}]))
    store.replace_run("regressions", "c", pd.DataFrame([{"run_a": "a", "item_id": "y"}]))
    assert list(store.read("regressions")["item_id"]) == ["y"]
    with pytest.raises(StoreError, match="is a fragments table"):
        store.replace_run("judge_cache", "c", pd.DataFrame())


def _write_run(root: str, run_id: str, n: int) -> None:
    store = ResultsStore(root)
    rows = [_exact(f"case-{i}#0", i % 2 == 0) for i in range(n)]
    for _ in range(20):  # replace the table over and over while the others do the same
        store.replace_run("exact_matches", run_id, pd.DataFrame(rows))


def test_concurrent_writers_of_different_runs_never_wait_or_collide(tmp_path: Path) -> None:
    """Eight processes each replace their own run's table twenty times at once; every run
    ends whole (the old single-file store allowed one writer process at a time)."""
    root = str(tmp_path / "results")
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_write_run, args=(root, f"run-{k}", 500 + k)) for k in range(8)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0] * 8
    data = ResultsStore(root).read("exact_matches")
    counts = data.groupby("run_id").size().to_dict()
    assert counts == {f"run-{k}": 500 + k for k in range(8)}


def _read_in_child(root: str, run_id: str, queue: multiprocessing.Queue[int]) -> None:
    queue.put(len(ResultsStore(root).read("exact_matches", run_id)))


def test_threads_and_a_forked_child_read_and_write_through_one_process_database(
    tmp_path: Path,
) -> None:
    """Reads and writes share one in-memory DuckDB per process, a cursor each: eight threads
    replacing and reading their own runs at once all see their own rows (each cursor its own
    registered frame), and a child forked after the database was opened reads with its own."""
    root = str(tmp_path / "results")
    store = ResultsStore(root)

    def work(k: int) -> list[int]:
        seen = []
        for round_ in range(15):
            rows = [_exact(f"t{k}-{i}#0", True) for i in range(10 + k + round_)]
            store.replace_run("exact_matches", f"t-{k}", pd.DataFrame(rows))
            seen.append(len(store.read("exact_matches", f"t-{k}")))
        return seen

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(8)))
    assert results == [[10 + k + r for r in range(15)] for k in range(8)]
    queue: multiprocessing.Queue[int] = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(
        target=_read_in_child, args=(root, "t-3", queue)
    )
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0 and queue.get(timeout=5) == 10 + 3 + 14


def test_every_declared_table_round_trips(tmp_path: Path) -> None:
    """Per table: a row of every declared column, written and read back, is the same row."""
    store = ResultsStore(tmp_path / "results")
    samples: dict[str, object] = {
        "VARCHAR": "text",
        "BIGINT": 42,
        "DOUBLE": 0.25,
        "BOOLEAN": True,
        "TIMESTAMP": pd.Timestamp("2026-12-04 10:00:00"),
        "BLOB": b"\x00\x01",
    }
    for name, declared in TABLES.items():
        row = {c.name: samples[c.type] for c in declared.columns if c.name != "run_id"}
        frame = pd.DataFrame([row])
        if declared.scope == "run":
            store.replace_run(name, "rt-1", frame)
            back = store.read(name, "rt-1")
        else:
            store.append(name, frame)
            back = store.read(name)
        restored = declared.from_frame(back)
        assert len(restored) == 1, name
        expected = {**row, **({"run_id": "rt-1"} if declared.scope == "run" else {})}
        assert {k: restored[0][k] for k in expected} == expected, name


def test_enospc_errno_is_the_one_named() -> None:
    """The error text is driven by the errno, not by the message's language."""
    from t2s_pipeline.store import _store_error

    assert "ENOSPC" in str(_store_error(OSError(errno.ENOSPC, "x"), Path("/r/t.parquet")))
    assert "ENOSPC" not in str(_store_error(OSError(errno.EACCES, "x"), Path("/r/t.parquet")))


def test_a_summary_is_computed_again_when_a_table_it_reads_is_replaced(tmp_path: Path) -> None:
    """Stages share one summary per run while its tables are unchanged; a replaced table (a
    rerun of one stage) gives a new summary, and writing a table it does not read does not."""
    store = ResultsStore(tmp_path / "results")
    rows = [_exact("a#0", True), _exact("b#0", False)]
    store.replace_run("exact_matches", "r1", pd.DataFrame(rows))
    first = summarise_run(store, "r1")
    assert first.families["exact"]["ex"].mean == 0.5
    store.replace_run("runs", "r1", pd.DataFrame([{"config_name": "x"}]))
    assert summarise_run(store, "r1") is first
    store.replace_run("exact_matches", "r1", pd.DataFrame([_exact("a#0", True)]))
    again = summarise_run(store, "r1")
    assert again is not first and again.families["exact"]["ex"].mean == 1.0
