"""Gold cases: the typed model, loading and validation of ``cases/<domain>/``.

A domain folder holds ``domain.yaml`` (database, dialect, allowlisted schemas, pinned ``as_of``
and snapshot) and one YAML file per case. Loading never stops at the first bad file: every
problem is collected as a :class:`CaseProblem` naming the file, the field and the fix, and the
valid cases still load.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import string
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from t2s_pipeline.errors import CaseError
from t2s_pipeline.execution.registry import engine_named, engine_names

DIFFICULTIES: tuple[str, ...] = (
    "simple_aggregate",
    "filtered_aggregate",
    "multi_condition",
    "time_window",
    "top_k",
    "trap",
)
# Identifiers are YAML/file names, not SQL: a regular expression is the right tool here.
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_CASE_FIELDS = {
    "id",
    "question",
    "phrasings",
    "gold_sql",
    "difficulty",
    "traps",
    "tags",
    "expected_result",
    "db_id",
    "evidence",
}


@dataclass(frozen=True)
class CaseProblem:
    """One thing wrong with one file: what, where and how to fix it."""

    path: str
    field: str
    problem: str
    fix: str
    case_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.path} (case {self.case_id})" if self.case_id else self.path
        return f"{where}: field '{self.field}': {self.problem}. Fix: {self.fix}"


@dataclass(frozen=True)
class ExpectedResult:
    """A gold result frozen on the pinned snapshot by ``t2s cases freeze``."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class Case:
    """One gold triple: question (+ phrasings), gold SQL and metadata."""

    id: str
    question: str
    phrasings: tuple[str, ...]
    gold_sql: str
    difficulty: str
    traps: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    expected_result: ExpectedResult | None = None
    db_id: str | None = None
    evidence: str | None = None
    path: str = ""

    @property
    def questions(self) -> tuple[str, ...]:
        """Phrasing 0 is the main question, then the alternatives in file order."""
        return (self.question, *self.phrasings)


@dataclass(frozen=True)
class Domain:
    """What ``domain.yaml`` declares: where the data is and what may be read."""

    name: str
    folder: Path
    engine: str
    dialect: str
    database: str
    allowed_schemas: tuple[str, ...]
    as_of: str | None = None
    snapshot: str | None = None
    min_phrasings: int = 0

    def database_for(self, case: Case | None = None) -> str:
        """Database path or URL for a case: ``{db_id}`` in ``database`` names per-case files,
        and ``${NAME}`` is the environment variable ``NAME`` (a password stays out of the
        file, the store and the run id: only the resolved target holds it).

        Relative paths are resolved against the domain folder.
        """
        target = with_environment(self.database, self.folder / "domain.yaml")
        if "{db_id}" in target:
            if case is None or case.db_id is None:
                raise ValueError(f"domain {self.name} needs a db_id per case")
            target = target.replace("{db_id}", case.db_id)
        if "://" in target or Path(target).is_absolute():
            return target
        return str((self.folder / target).resolve())


class _Variables(string.Template):
    """``${NAME}`` only: a bare ``$`` (in a password or path) is left as it is."""

    delimiter = "$"
    idpattern = r"(?!)"  # config text, not SQL: a regular expression is the right tool here
    braceidpattern = r"[A-Za-z_][A-Za-z0-9_]*"


def with_environment(text: str, source: Path | str) -> str:
    """``text`` with every ``${NAME}`` replaced by the environment variable ``NAME``.

    >>> import os; os.environ["T2S_DOC_SECRET"] = "s3cret"
    >>> with_environment("mysql://r:${T2S_DOC_SECRET}@h/sales", "domain.yaml")
    'mysql://r:s3cret@h/sales'
    >>> with_environment("a$b", "domain.yaml")
    'a$b'
    """
    if "${" not in text:
        return text
    try:
        return _Variables(text).substitute(os.environ)
    except KeyError as missing:
        raise CaseError(
            str(source), "database", f"environment variable {missing.args[0]} is not set",
            f"export {missing.args[0]}=... before running (the secret stays out of the file)",
        ) from None  # fmt: skip
    except ValueError as error:
        raise CaseError(
            str(source), "database", f"cannot read the ${{...}} references: {error}",
            "write ${NAME} with letters, digits and _ only",
        ) from None  # fmt: skip


@dataclass(frozen=True)
class CaseSet:
    """The loaded domain: valid cases, problems found, and a content hash of the files."""

    domain: Domain
    cases: tuple[Case, ...]
    problems: tuple[CaseProblem, ...]
    content_hash: str

    def by_id(self) -> dict[str, Case]:
        return {case.id: case for case in self.cases}

    def counts_by_difficulty(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for case in self.cases:
            counts[case.difficulty] = counts.get(case.difficulty, 0) + 1
        return dict(sorted(counts.items()))


def load_domain(folder: Path | str) -> Domain:
    """Read ``domain.yaml``; raises :class:`t2s_pipeline.errors.CaseError` when it is invalid."""

    folder = Path(folder)
    path = folder / "domain.yaml"
    if not folder.is_dir():
        raise CaseError(
            str(folder), "-", "the case folder does not exist",
            "give a folder holding domain.yaml and case files, e.g. cases/erp",
        )  # fmt: skip
    if not path.exists():
        raise CaseError(str(path), "-", "the domain file is missing", "create domain.yaml")
    try:
        data = _read_yaml(path)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise CaseError(
            str(path), "-", f"not valid UTF-8 YAML ({error})", "fix the file's YAML syntax"
        ) from error
    if not isinstance(data, Mapping):
        raise CaseError(str(path), "-", "not a YAML mapping", "write key: value pairs")
    for key in ("engine", "dialect", "database", "allowed_schemas"):
        if key not in data:
            raise CaseError(str(path), key, "missing", f"add '{key}:' to the domain file")
    if data["engine"] not in engine_names():
        raise CaseError(
            str(path), "engine", f"unknown engine {data['engine']!r}",
            f"use one of {list(engine_names())} (other engines install as plugins, docs/engines.md)",
        )  # fmt: skip
    spoken = engine_named(str(data["engine"])).dialect
    if str(data["dialect"]) != spoken:
        # The guard's filter must read a statement exactly as the database will run it.
        raise CaseError(
            str(path), "dialect", f"{data['dialect']!r} does not match engine {data['engine']!r}",
            f"write 'dialect: {spoken}' (the filter must read SQL as the database does)",
        )  # fmt: skip
    if data.get("as_of") is not None and not isinstance(data["as_of"], dt.date):
        try:
            dt.date.fromisoformat(str(data["as_of"]))
        except ValueError:
            raise CaseError(
                str(path), "as_of", f"{data['as_of']!r} is not a date",
                "write the pinned date as YYYY-MM-DD",
            ) from None  # fmt: skip
    schemas = data["allowed_schemas"]
    if not isinstance(schemas, list) or not schemas:
        raise CaseError(
            str(path), "allowed_schemas", "must be a non-empty list", "list schema names"
        )
    return Domain(
        name=str(data.get("name", folder.name)),
        folder=folder,
        engine=str(data["engine"]),
        dialect=str(data["dialect"]),
        database=str(data["database"]),
        allowed_schemas=tuple(str(s) for s in schemas),
        as_of=_date_text(data.get("as_of")),
        snapshot=None if data.get("snapshot") is None else str(data["snapshot"]),
        min_phrasings=int(data.get("min_phrasings", 0)),
    )


def load_cases(folder: Path | str) -> CaseSet:
    """Load every case file of a domain; bad files become problems, the rest still load.

    A folder none of whose files changed since it was last loaded here gives that case set
    again without reading a file (see :data:`_LOADED`).

    >>> load_cases("cases/erp").domain.engine  # doctest: +SKIP
    'duckdb'
    """
    folder = Path(folder)
    key = (os.getcwd(), str(folder))  # the domain keeps the folder as given
    listing = _listing(folder)
    kept = _LOADED.get(key) if listing is not None else None
    if kept is not None and kept[0] == listing:
        return kept[1]
    case_set = _load_cases(folder)
    if listing is not None and listing == _listing(folder) and _settled(listing):
        if len(_LOADED) >= _KEPT_FOLDERS:
            _LOADED.clear()
        _LOADED[key] = (listing, case_set)
    return case_set


# Every step of a run loads the case set: reading and hashing every file again cost 0.2-0.3 s
# a step at 10,000 cases. A folder is kept with the stat record of each of its entries (name,
# inode, size, modification and change times in nanoseconds), as git's index keeps files, and
# given again while every record is the same. A file changed within _RACY_NS before it was
# read could change again within one tick of the file system's clock without a new record, so
# such a folder is not kept (git's "racily clean" rule).
Listing = tuple[tuple[str, int, int, int, int], ...]
_LOADED: dict[tuple[str, str], tuple[Listing, CaseSet]] = {}
_KEPT_FOLDERS = 16
_RACY_NS = 2_000_000_000


def _listing(folder: Path) -> Listing | None:
    """Each entry's stat record, by name; None when the folder cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            records = []
            for entry in entries:
                info = entry.stat()
                records.append(
                    (entry.name, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
                )
    except OSError:
        return None
    return tuple(sorted(records))


def _settled(listing: Listing) -> bool:
    """Whether no entry changed in the last :data:`_RACY_NS`."""
    newest = max((max(r[3], r[4]) for r in listing), default=0)
    return newest < time.time_ns() - _RACY_NS


def _load_cases(folder: Path) -> CaseSet:
    domain = load_domain(folder)
    cases: list[Case] = []
    problems: list[CaseProblem] = []
    digest = hashlib.sha256((folder / "domain.yaml").read_bytes())
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.yml")):  # would be skipped without a word otherwise
        problems.append(
            CaseProblem(
                str(path), "-", "ignored: case files end in .yaml", f"rename it {path.stem}.yaml"
            )
        )
    for path in sorted(folder.glob("*.yaml")):
        if path.name in ("domain.yaml", "labels.yaml"):
            continue
        content = path.read_bytes()
        digest.update(path.name.encode())
        digest.update(content)
        case, found = _parsed(path, content, domain.min_phrasings)
        problems.extend(found)
        if case is None:
            continue
        if case.id in seen:
            problems.append(
                CaseProblem(
                    str(path),
                    "id",
                    f"duplicate id {case.id!r}, also in {seen[case.id]}",
                    "give each case a unique id",
                    case.id,
                )  # fmt: skip
            )
            continue
        seen[case.id] = str(path)
        cases.append(case)
    return CaseSet(domain, tuple(cases), tuple(problems), digest.hexdigest())


# Every stage of a run loads the case set; a file whose bytes are unchanged is not parsed again.
# A long-lived process (the code server) starts afresh past _KEPT_FILES readings.
_PARSED: dict[tuple[str, bytes, int], tuple[Case | None, tuple[CaseProblem, ...]]] = {}
_KEPT_FILES = 100_000


def _parsed(
    path: Path, content: bytes, min_phrasings: int
) -> tuple[Case | None, list[CaseProblem]]:
    """:func:`parse_case` of ``content``, memoised on the path, the bytes and ``min_phrasings``."""
    key = (str(path), hashlib.sha256(content).digest(), min_phrasings)
    if key not in _PARSED:
        if len(_PARSED) >= _KEPT_FILES:
            _PARSED.clear()
        case, found = parse_case(path, min_phrasings, content)
        _PARSED[key] = (case, tuple(found))
    case, problems = _PARSED[key]
    return case, list(problems)


def parse_case(
    path: Path, min_phrasings: int = 0, content: bytes | None = None
) -> tuple[Case | None, list[CaseProblem]]:
    """Parse one case file (or its ``content`` when already read) into a :class:`Case`, or
    report why it cannot be one."""
    where = str(path)
    try:
        data = _read_yaml(path) if content is None else _yaml(content.decode("utf-8"))
    except yaml.YAMLError as error:
        return None, [CaseProblem(where, "-", f"not valid YAML ({error})", "fix the YAML syntax")]
    except UnicodeDecodeError as error:
        return None, [CaseProblem(where, "-", f"not UTF-8 text ({error})", "save it as UTF-8")]
    if not isinstance(data, Mapping):
        return None, [CaseProblem(where, "-", "not a YAML mapping", "write 'key: value' fields")]
    case_id = data.get("id")
    problems = [p for p in _field_problems(where, data, min_phrasings)]
    problems = [_with_case(p, case_id) for p in problems]
    if problems:
        return None, problems
    expected, problem = _expected(where, data.get("expected_result"))
    if problem is not None:
        return None, [_with_case(problem, case_id)]
    case = Case(
        id=str(data["id"]),
        question=str(data["question"]).strip(),
        phrasings=tuple(str(p).strip() for p in data.get("phrasings") or ()),
        gold_sql=str(data["gold_sql"]).strip(),
        difficulty=str(data["difficulty"]),
        traps=tuple(str(t) for t in data.get("traps") or ()),
        tags=tuple(str(t) for t in data.get("tags") or ()),
        expected_result=expected,
        db_id=None if data.get("db_id") is None else str(data["db_id"]),
        evidence=None if data.get("evidence") is None else str(data["evidence"]),
        path=where,
    )
    return case, []


def _field_problems(
    where: str, data: Mapping[str, Any], min_phrasings: int
) -> Iterable[CaseProblem]:
    for key in ("id", "question", "gold_sql", "difficulty"):
        if not isinstance(data.get(key), str) or not str(data.get(key)).strip():
            yield CaseProblem(where, key, "missing or not a non-empty string", f"add '{key}: ...'")
    case_id = data.get("id")
    if isinstance(case_id, str) and not _ID.match(case_id):
        yield CaseProblem(
            where, "id", f"{case_id!r} is not [a-z0-9-] (max 64, starting alphanumeric)",
            "use lower-case letters, digits and dashes",
        )  # fmt: skip
    difficulty = data.get("difficulty")
    if isinstance(difficulty, str) and difficulty not in DIFFICULTIES and ":" not in difficulty:
        # Imported benchmarks keep their own bands as "<benchmark>:<band>".
        yield CaseProblem(
            where, "difficulty", f"unknown difficulty {difficulty!r}",
            f"use one of {', '.join(DIFFICULTIES)}",
        )  # fmt: skip
    yield from _list_problems(where, data, "phrasings", min_phrasings)
    yield from _list_problems(where, data, "traps", 0)
    yield from _list_problems(where, data, "tags", 0)
    unknown = sorted(set(data) - _CASE_FIELDS)
    if unknown:
        yield CaseProblem(
            where, unknown[0], f"unknown field(s) {unknown}",
            f"remove them or use one of {sorted(_CASE_FIELDS)}",
        )  # fmt: skip


def _list_problems(
    where: str, data: Mapping[str, Any], key: str, minimum: int
) -> Iterable[CaseProblem]:
    value = data.get(key)
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        yield CaseProblem(where, key, "must be a list of non-empty strings", f"write '{key}: [..]'")
    elif len(value) < minimum:
        yield CaseProblem(
            where, key, f"has {len(value)} entries, the domain requires at least {minimum}",
            f"add {minimum - len(value)} more alternative wording(s)",
        )  # fmt: skip


def _expected(where: str, value: Any) -> tuple[ExpectedResult | None, CaseProblem | None]:
    if value is None:
        return None, None
    fix = "re-create it with `t2s cases freeze`"
    if not isinstance(value, Mapping) or set(value) != {"columns", "rows"}:
        return None, CaseProblem(where, "expected_result", "needs exactly columns and rows", fix)
    columns, rows = value["columns"], value["rows"]
    if not isinstance(columns, list) or not isinstance(rows, list):
        return None, CaseProblem(where, "expected_result", "columns and rows must be lists", fix)
    if any(not isinstance(r, list) or len(r) != len(columns) for r in rows):
        return None, CaseProblem(
            where, "expected_result.rows", "a row's length differs from the columns", fix
        )
    return ExpectedResult(tuple(str(c) for c in columns), tuple(tuple(r) for r in rows)), None


def _with_case(problem: CaseProblem, case_id: Any) -> CaseProblem:
    if isinstance(case_id, str):
        return CaseProblem(problem.path, problem.field, problem.problem, problem.fix, case_id)
    return problem


def _read_yaml(path: Path) -> Any:
    return _yaml(path.read_text(encoding="utf-8"))


def _yaml(text: str) -> Any:
    """Safe YAML through libyaml when PyYAML has it (about 10x faster than pure Python)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _date_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


@dataclass
class FreezeReport:
    written: list[str] = field(default_factory=list)
    failed: list[CaseProblem] = field(default_factory=list)


def expected_block(columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    """The YAML text of an ``expected_result`` block, values made YAML/JSON-safe."""
    data = {
        "expected_result": {
            "columns": [str(c) for c in columns],
            "rows": [[_plain(v) for v in row] for row in rows],
        }
    }
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)


def write_expected(path: Path, block: str) -> None:
    """Replace (or append) the trailing ``expected_result`` block of a case file, atomically.

    The block is always the last top-level key, so everything above it (comments included)
    is kept byte for byte.
    """
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next((i for i, line in enumerate(lines) if line.startswith("expected_result:")), None)
    head = "".join(lines if cut is None else lines[:cut])
    if head and not head.endswith("\n"):
        head += "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(head + block, encoding="utf-8")
    tmp.replace(path)


def _plain(value: Any) -> Any:

    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
