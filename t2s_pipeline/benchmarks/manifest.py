"""``benchmark.json``: which case each benchmark question became, in gold-file order.

Prediction files refer to questions by position (Spider: line number; BIRD: the key of a JSON
object), so the import records the order next to the cases. The file is JSON, not YAML, so the
case loader never mistakes it for a case.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from t2s_pipeline.errors import ConfigError

FILE = "benchmark.json"


@dataclass(frozen=True)
class ManifestEntry:
    """One question: its position in the gold file, its case id and database."""

    index: int
    case_id: str
    db_id: str


@dataclass(frozen=True)
class Manifest:
    """What one import wrote into a case folder."""

    benchmark: str
    sources: dict[str, str]
    entries: tuple[ManifestEntry, ...]

    def by_index(self) -> dict[int, ManifestEntry]:
        return {entry.index: entry for entry in self.entries}


def write_manifest(folder: Path, manifest: Manifest) -> Path:
    """Write ``benchmark.json`` into the case folder."""
    path = folder / FILE
    data = {
        "benchmark": manifest.benchmark,
        "sources": manifest.sources,
        "entries": [asdict(entry) for entry in manifest.entries],
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def read_manifest(folder: Path) -> Manifest:
    """The import record of a case folder; an error says how to get one."""
    path = folder / FILE
    fix = "Fix: pass the folder written by `t2s import spider|bird` (re-import to recreate it)"
    if not path.exists():
        raise ConfigError(f"{path}: no import record in {folder}. {fix}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = tuple(ManifestEntry(**entry) for entry in data["entries"])
        return Manifest(str(data["benchmark"]), dict(data["sources"]), entries)
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ConfigError(f"{path}: not a valid import record ({error}). {fix}") from None
