"""``t2s label``: a labelling sheet of a run's unlabelled items, and merging a filled sheet.

``t2s label RUN --out sheet.yaml`` writes one entry per item of the run that no label in the
domain's ``labels.yaml`` judges yet (a label for another candidate does not count): the
question, the gold and candidate SQL, a preview of both results and the findings, with blank
``primary``, ``also`` and ``reason`` for the reviewer. The deterministic category is never
written, so the reviewer reads the item, not the tool's verdict; ``--blind`` leaves the
findings out too. ``t2s label merge sheet.yaml`` adds the filled entries to ``labels.yaml``
(one label per item and candidate fingerprint; a relabel replaces the earlier label).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from t2s_pipeline.commands.runs import DEFAULT_RESULTS
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.judge.labels import (
    LABELS_FILE,
    Label,
    candidate_fingerprint,
    dump_labels,
    label_for,
    load_labels,
)
from t2s_pipeline.store import ResultsStore

SHEET_HEADER = """\
Labelling sheet for run {run_id}: {n} items. For each item read the question, the tables
the system was offered, both SQL texts and both results (first rows; n_rows counts them all),
then fill in, by the rule book of SPEC section 11:
  primary: the first category that holds, in the order harness_bug, correct, no_result,
           wrong_table, wrong_filter, wrong_grain, wrong_metric, presentation
           (ambiguous_question when the question honestly admits the candidate's reading)
  also:    every other category that holds, e.g. [wrong_metric]; [] when none
  reason:  one line saying why
Leave an item's primary empty to skip it. Merge with:
  t2s label merge {sheet} --into {labels}
"""
DEFAULT_ROWS = 5


class _SheetDumper(yaml.SafeDumper):
    """Multi-line text (SQL) as literal blocks; repeated results written out, not aliased."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SheetDumper.add_representer(str, _text)


def register(subparsers: argparse._SubParsersAction) -> None:
    label = subparsers.add_parser(
        "label", help="write a labelling sheet of a run's unlabelled items, or merge one"
    )
    label.add_argument(
        "target",
        nargs="+",
        help="RUN (write a sheet), `merge SHEET` (add a filled sheet to the labels), or "
        "`agreement RUN [RUN ...]` (the diagnosis against the labels, pooled over the runs)",
    )
    label.add_argument("--out", type=Path, help="where to write the sheet (default: stdout)")
    label.add_argument(
        "--only", choices=["failing"], help="failing: only items that are not an exact match"
    )
    label.add_argument(
        "--blind", action="store_true", help="leave the findings out too (label unaided)"
    )
    label.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="result rows shown")
    label.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    label.add_argument(
        "--into", type=Path, help="with `merge`: the labels file (default: the run's domain)"
    )
    label.set_defaults(func=_label)


def _label(args: argparse.Namespace) -> int:
    action, rest = args.target[0], args.target[1:]
    if action == "merge":
        if len(rest) != 1:
            raise ConfigError("t2s label merge needs one filled sheet: t2s label merge SHEET")
        return _merge(Path(rest[0]), args.into)
    store = ResultsStore(args.results)
    runs = rest if action == "agreement" else args.target
    for run_id in runs:
        if run_id not in store.run_ids():
            raise ConfigError(f"no run {run_id!r} in {args.results}; `t2s runs` lists them")
    if action == "agreement":
        if not runs:
            raise ConfigError("t2s label agreement needs runs: t2s label agreement RUN [RUN ...]")
        print(agreement_report(store, runs))
        return 0
    if len(runs) != 1:
        raise ConfigError("t2s label writes the sheet of one run: t2s label RUN --out FILE")
    run_id = runs[0]
    entries, labels_path = sheet_entries(
        store, run_id, failing_only=args.only == "failing", blind=args.blind, rows=args.rows
    )
    sheet = args.out or Path("-")
    header = SHEET_HEADER.format(run_id=run_id, n=len(entries), sheet=sheet, labels=labels_path)
    body = {"run": run_id, "labels_file": str(labels_path), "items": entries}
    text = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    text += yaml.dump(body, Dumper=_SheetDumper, sort_keys=False, allow_unicode=True, width=100)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        print(f"{len(entries)} items to label in {args.out}", file=sys.stderr)
    return 0


def agreement_report(store: ResultsStore, runs: list[str]) -> str:
    """The deterministic diagnosis against the labels judging these runs' answers, pooled:
    agreement, kappa, set Jaccard, the confusion matrix, and every disagreement."""
    from t2s_pipeline.judge.calibration import calibrate
    from t2s_pipeline.judge.inputs import (
        candidate_sql,
        deterministic_categories,
        deterministic_sets,
    )
    from t2s_pipeline.judge.labels import apply_labels

    human: dict[str, str] = {}
    human_sets: dict[str, frozenset[str]] = {}
    predicted: dict[str, str] = {}
    predicted_sets: dict[str, frozenset[str]] = {}
    reasons: dict[str, str] = {}
    for run_id in runs:
        cases_dir = Path(str(store.read("runs", run_id).iloc[0]["cases_dir"]))
        labels = load_labels(cases_dir / LABELS_FILE)
        answers = candidate_sql(store, run_id)
        applied = apply_labels(labels, answers)
        categories = deterministic_categories(store, run_id)
        sets = deterministic_sets(store, run_id)
        for item, primary in applied.categories.items():
            key = f"{run_id}/{item}"
            human[key], human_sets[key] = primary, applied.sets[item]
            predicted[key] = categories.get(item, "not_diagnosed")
            predicted_sets[key] = sets.get(item, frozenset({predicted[key]}))
            found = label_for(labels[item], answers.get(item))
            reasons[key] = found.reason if found else ""
    result = calibrate("deterministic", human, predicted, human_sets, predicted_sets)
    lines = [
        f"Labels judging {', '.join(runs)}: n={result.n}",
        f"primary agreement {_figure(result.agreement)}, kappa {_figure(result.kappa)}, "
        f"set Jaccard {_figure(result.jaccard)}",
        "",
        "Confusion (rows: label, columns: deterministic diagnosis)",
        "",
        result.matrix.to_markdown(),
        "",
        "Disagreements (label -> diagnosis):",
    ]
    wrong = sorted(k for k in human if human[k] != predicted[k])
    lines += [
        f"- {k}: {human[k]} -> {predicted[k]}; label also {sorted(human_sets[k] - {human[k]})}, "
        f"diagnosis set {sorted(predicted_sets[k])}; {reasons[k]}"
        for k in wrong
    ] or ["(none)"]
    set_only = sorted(
        k for k in human if human[k] == predicted[k] and human_sets[k] != predicted_sets[k]
    )
    lines += ["", "Same primary, other sets (label set -> diagnosis set):"]
    lines += [
        f"- {k}: {sorted(human_sets[k])} -> {sorted(predicted_sets[k])}" for k in set_only
    ] or ["(none)"]
    return "\n".join(lines)


def _figure(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def sheet_entries(
    store: ResultsStore, run_id: str, *, failing_only: bool, blind: bool, rows: int
) -> tuple[list[dict[str, Any]], Path]:
    """The sheet's entries for the run's unlabelled items, and the labels file they go to."""
    from t2s_pipeline.cases import load_cases

    run = store.read("runs", run_id).iloc[0]
    cases_dir = Path(str(run["cases_dir"]))
    labels_path = cases_dir / LABELS_FILE
    labels = load_labels(labels_path)
    cases = load_cases(cases_dir).by_id()
    items = store.read("items", run_id).sort_values("item_id")
    sql = _by(store.read("sut_responses", run_id), "item_id", "sql")
    diagnoses = store.read("diagnoses", run_id).set_index("item_id")
    offered = _by(store.read("retrieval_scores", run_id), "item_id", "offered_json")
    gold = _results(store.read("gold_results", run_id), rows)
    candidate = _results(store.read("candidate_results", run_id), rows)
    out: list[dict[str, Any]] = []
    for item in items.to_dict("records"):
        item_id, case_id = str(item["item_id"]), str(item["case_id"])
        answer = sql.get(item_id)
        if label_for(labels.get(item_id, ()), answer) is not None:
            continue
        if item_id not in diagnoses.index:
            continue
        diagnosis = diagnoses.loc[item_id]
        if failing_only and diagnosis["category"] == "correct":
            continue
        entry: dict[str, Any] = {
            "item": item_id,
            "candidate": candidate_fingerprint(answer),
            "question": str(item["question"]),
            "offered_tables": json.loads(offered.get(item_id) or "null"),
            "gold_sql": _sql(cases[case_id].gold_sql) if case_id in cases else None,
            "candidate_sql": _sql(answer) if answer else None,
            "gold_result": gold.get(case_id),
            "candidate_result": candidate.get(item_id),
        }
        if not blind:
            findings = json.loads(str(diagnosis.get("findings_json") or "[]"))
            entry["findings"] = [str(f["text"]) for f in findings]
        entry |= {"primary": None, "also": [], "reason": None}
        out.append(entry)
    return out, labels_path


def _sql(text: str) -> str:
    """Trailing spaces would force YAML out of its literal block style."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _by(frame: Any, key: str, column: str) -> dict[str, str | None]:
    if frame.empty:
        return {}
    return {
        str(k): (None if v is None or v != v else str(v))
        for k, v in zip(frame[key], frame[column], strict=True)
    }


def _results(frame: Any, rows: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in frame.itertuples(index=False):
        result: dict[str, Any] = {"status": str(row.status)}
        if row.status != "ok" and isinstance(row.reason, str):
            result["reason"] = row.reason
        result["columns"] = json.loads(str(row.columns_json))
        result["n_rows"] = int(row.n_rows)
        result["rows"] = [
            " | ".join(_cell(v) for v in r) for r in json.loads(str(row.preview_json))[:rows]
        ]
        out[str(row.key)] = result
    return out


def _cell(value: object) -> str:
    return "NULL" if value is None else str(value)


def _merge(sheet: Path, into: Path | None) -> int:
    """Add the sheet's filled entries to the labels file; print what was added and skipped."""
    try:
        data = yaml.safe_load(sheet.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{sheet}: cannot read the sheet ({error}). Fix the file") from error
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise ConfigError(f"{sheet}: no 'items' list. Fix: write it with `t2s label RUN --out`")
    target = into or Path(str(data.get("labels_file") or ""))
    if not str(target):
        raise ConfigError(f"{sheet}: no labels_file. Fix: pass --into cases/<domain>/labels.yaml")
    labels = dict(load_labels(target))
    added = replaced = skipped = 0
    for n, entry in enumerate(data["items"]):
        where = f"{sheet}: items[{n}]"
        if not isinstance(entry, dict) or "item" not in entry:
            raise ConfigError(f"{where}: not a sheet entry. Fix: keep the entries as written")
        if not entry.get("primary"):
            skipped += 1
            continue
        try:
            label = Label(
                primary=str(entry["primary"]),
                also=tuple(entry.get("also") or ()),
                reason=str(entry.get("reason") or ""),
                candidate=str(entry["candidate"]),
            )
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                f"{where} ({entry['item']}): field '{field}': {first['msg']}. "
                "Fix the entry and merge again"
            ) from error
        item = str(entry["item"])
        kept = tuple(e for e in labels.get(item, ()) if e.candidate != label.candidate)
        replaced += len(labels.get(item, ())) - len(kept)
        added += 1
        labels[item] = (*kept, label)
    dump_labels(target, labels, _header(target))
    load_labels(target)  # what was written reads back
    print(
        f"{added} labels merged into {target} ({replaced} replaced an earlier label, "
        f"{skipped} entries left blank)"
    )
    return 0


def _header(path: Path) -> str:
    """The comment block at the top of an existing labels file, kept across merges."""
    if not path.exists():
        return "Human labels (SPEC 11): docs/judge.md gives the format and the rule book."
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[2:] if line.startswith("# ") else line[1:])
    return "\n".join(lines)
