"""Where a project lives: the folder every relative path of a run resolves against.

A project is a folder holding ``t2s.yaml`` (written by ``t2s init``) or a Dagster
``workspace.yaml``. It is, in order: ``T2S_PROJECT`` when set; else the nearest folder at or
above the configuration file (``--config``) holding one of the two; else the nearest one at or
above the current folder; else the current folder itself. The command line works from the
project's folder, so ``cases:``, ``sut.file``, ``.t2s/`` and a domain's relative ``database``
mean the same whichever folder the command was typed in; a path typed on the command line keeps
meaning what it meant where it was typed.

``t2s.yaml`` may name the gold case folder the Dagster code location shows (``cases:``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from t2s_pipeline.errors import ConfigError

PROJECT_FILE = "t2s.yaml"
MARKERS = (PROJECT_FILE, "workspace.yaml")
ENV = "T2S_PROJECT"


def find_root(start: Path | None = None) -> Path | None:
    """The project folder for ``start`` (a file or folder), or None when there is none.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     root = Path(tmp).resolve()
    ...     _ = (root / "t2s.yaml").write_text("cases: cases/shop")
    ...     (root / "configs").mkdir()
    ...     find_root(root / "configs" / "mine.yaml") == root
    True
    """
    env = os.environ.get(ENV)
    if env:
        root = Path(env).expanduser().resolve()
        if not root.is_dir():
            raise ConfigError(
                f"{ENV}={env}: no such folder. Fix: point {ENV} at the project folder "
                "(the one holding t2s.yaml), or unset it"
            )
        return root
    here = (start or Path.cwd()).absolute()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        if any((folder / marker).is_file() for marker in MARKERS):
            return folder
    return None


def read_project_file(root: Path) -> dict[str, Any]:
    """The project's ``t2s.yaml`` as a mapping ({} when the project has none)."""
    path = root / PROJECT_FILE
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error}). Fix the YAML syntax") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping such as 'cases: cases/<domain>'")
    unknown = sorted(set(data) - {"cases"})
    if unknown:
        raise ConfigError(f"{path}: field {unknown[0]!r} is unknown. Fix: t2s.yaml holds cases:")
    return data


def default_cases(root: Path | None = None) -> str:
    """The gold case folder of the project (``t2s.yaml`` ``cases:``; the demo's otherwise)."""
    data = read_project_file(root or Path.cwd())
    return str(data.get("cases", "cases/erp"))
