"""The run registry: what each ``eval_run`` partition evaluates.

A partition key alone cannot say which configuration it came from once the file changes, so
registering a run writes its configuration next to the results store
(``.t2s/runs/<run_id>.json``). Sensors, the command line and the assets all read it from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from t2s_pipeline.cases import load_cases
from t2s_pipeline.config import RunConfig
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.sut.fingerprint import sut_fingerprint


@dataclass(frozen=True)
class RunSpec:
    """One registered run: its id, configuration and the case set it was registered against."""

    run_id: str
    config: RunConfig
    config_path: str
    config_hash: str
    case_set_hash: str
    sut_fingerprint: str = ""


def spec_for(config: RunConfig, config_path: Path | str, sut: str | None = None) -> RunSpec:
    """The run a configuration gives against the current state of its gold case set and SUT
    (``sut``: its fingerprint, read from the SUT when not given)."""
    case_set_hash = load_cases(config.cases).content_hash
    fingerprint = sut_fingerprint(config) if sut is None else sut
    return RunSpec(
        run_id=config.run_id(case_set_hash, fingerprint),
        config=config,
        config_path=str(config_path),
        config_hash=config.config_hash(),
        case_set_hash=case_set_hash,
        sut_fingerprint=fingerprint,
    )


def run_tags(spec: RunSpec) -> dict[str, str]:
    """What a run is, as Dagster run tags (the UI's run list filters on them).

    >>> from t2s_pipeline.config import RunConfig
    >>> config = RunConfig(name="mine", labels={"model": "m-1"})
    >>> tags = run_tags(RunSpec("mine-1", config, "configs/mine.yaml", "h", "c", "builtin:x"))
    >>> tags["t2s/config"], tags["t2s/sut_kind"], tags["t2s/label/model"]
    ('mine', 'builtin', 'm-1')
    """
    config = spec.config
    tags = {
        "t2s/config": config.name,
        "t2s/config_path": spec.config_path,
        "t2s/sut_kind": config.sut.kind,
        "t2s/sut": spec.sut_fingerprint or "unknown",
        "t2s/cases": config.cases,
    }
    for key, value in config.labels.items():
        safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in str(key))
        tags[f"t2s/label/{safe}"] = str(value)
    return tags


def register(spec: RunSpec, registry: Path) -> Path:
    """Record a run (idempotent); returns the file written."""
    registry.mkdir(parents=True, exist_ok=True)
    path = registry / f"{spec.run_id}.json"
    data = {
        "run_id": spec.run_id,
        "config": spec.config.model_dump(mode="json"),
        "config_path": spec.config_path,
        "config_hash": spec.config_hash,
        "case_set_hash": spec.case_set_hash,
        "sut_fingerprint": spec.sut_fingerprint,
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
    return path


def load_spec(run_id: str, registry: Path) -> RunSpec:
    """The registered run of a partition key; a clear error when it was never registered."""
    path = registry / f"{run_id}.json"
    if not path.exists():
        raise ConfigError(
            f"run {run_id!r} is not registered in {registry}. Fix: add runs by saving a "
            "configuration in configs/ (the config sensor adds its partition) or with "
            "`t2s run --config configs/<name>.yaml`; a partition added by hand in the UI runs "
            "only when it is the run id configs/<name>.yaml gives"
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    return RunSpec(
        run_id=data["run_id"],
        config=RunConfig.model_validate(data["config"]),
        config_path=data["config_path"],
        config_hash=data["config_hash"],
        case_set_hash=data["case_set_hash"],
        sut_fingerprint=data.get("sut_fingerprint", ""),
    )
