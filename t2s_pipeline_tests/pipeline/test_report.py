"""`t2s report`: one run as a self-contained HTML file, read in a real browser (Chromium driven by
Playwright): charts drawn, the comparison's forest plot, every item, filters that work, and no
request leaving the file."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.cli import main
from t2s_pipeline.report import report_path

from .conftest import Project

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium. Started only after the runs: Playwright's sync API keeps an event
    loop on this thread, where the runs' own ``asyncio.run`` would then refuse to start."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs it with apt-get")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


def test_report_draws_charts_comparison_and_filterable_items(
    project: Project,
    instance: dg.DagsterInstance,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wide = run_config(project.config("wide"), project.settings, instance, checks=[])
    narrow = run_config(
        project.config("narrow", sut={"kind": "builtin", "tables_k": 1}, compare_to="wide"),
        project.settings,
        instance,
        checks=[],
    )
    store = project.settings.store()
    # Every run's compare step writes the report next to its tables.
    assert report_path(store, wide.run_id).is_file()
    assert report_path(store, narrow.run_id).is_file()

    out = project.root / "narrow.html"
    args = ["--results", project.settings.results_path, "--decisions",
            project.settings.decisions_dir, "--out", str(out)]  # fmt: skip
    assert main(["report", narrow.run_id, *args]) == 0
    assert f"compared with {wide.run_id}" in capsys.readouterr().out

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})  # type: ignore[attr-defined]
        _read_report(page, out, project.n_cases)


def _read_report(page: Any, out: Path, n_items: int) -> None:  # noqa: ANN401 (Playwright Page)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(out.as_uri())
    assert requests == [out.as_uri()]  # nothing fetched beyond the file itself

    dots = page.locator("svg[id^='family-'] circle.dot")
    assert dots.count() > 4
    for index in range(dots.count()):
        box = dots.nth(index).bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0
    assert page.locator("svg#ex-by-band circle.dot").count() >= 1
    bars = page.locator("svg#diagnosis-histogram rect.bar")
    assert bars.count() >= 1 and (bars.first.bounding_box() or {}).get("width", 0) > 0

    # Fewer tables offered: retrieval falls, drawn below zero in the forest plot and listed.
    forest = page.locator("svg#forest-plot")
    assert forest.locator("line.zero").count() == 1
    recall = forest.locator("circle.dot[data-label='retrieval / recall']")
    assert recall.count() == 1 and float(recall.get_attribute("data-mean") or 0) < 0
    assert "down" in (recall.get_attribute("class") or "")
    assert page.locator("table#regressions tbody tr").count() >= 1

    rows = page.locator("table#item-table tr.item")
    assert rows.count() == n_items
    count = page.locator("#item-count")
    assert count.inner_text() == f"{n_items} of {n_items} items"
    failing = page.locator("table#item-table tr.item.fail").count()
    assert 0 < failing < n_items
    page.locator("#failing-only").check()
    assert count.inner_text() == f"{failing} of {n_items} items"
    assert page.locator("table#item-table tr.item.pass").first.is_hidden()
    page.locator("#failing-only").uncheck()
    page.locator("#item-filter").fill("no-such-item-anywhere")
    assert count.inner_text() == f"0 of {n_items} items"
    page.locator("#item-filter").fill("")
    first = rows.first
    first.locator("summary").click()
    assert first.locator("pre").first.is_visible()  # the gold SQL, opened in place
    page.close()
    assert requests == [out.as_uri()]


def test_report_of_an_unknown_run_names_the_fix(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["--results", str(tmp_path / "results"), "--out", str(tmp_path / "r.html")]
    assert main(["report", "nope-12345678", *args]) == 2
    assert "t2s runs" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
