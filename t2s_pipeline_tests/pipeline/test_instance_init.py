"""Several ``t2s`` commands started at once on a new Dagster instance all get a working one."""

import subprocess
import sys
from pathlib import Path

# What `t2s run` does before it materialises: find the instance, then add its partition.
_FIRST_RUN = """
import sys
import dagster as dg
from t2s_pipeline.commands.runs import dagster_home
dagster_home()
dg.DagsterInstance.get().add_dynamic_partitions("eval_run", [sys.argv[1]])
"""


def test_concurrent_first_commands_share_one_new_instance(tmp_path: Path) -> None:
    # Unlocked, 4 of 15 such processes failed on this machine (`table alembic_version already
    # exists`, or two stamped versions that leave the instance unreadable).
    for attempt in range(3):
        home = tmp_path / f"home{attempt}"
        env = {"DAGSTER_HOME": str(home), "PATH": "/usr/bin:/bin"}
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _FIRST_RUN, f"run-{k}"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for k in range(4)
        ]
        outputs = [p.communicate(timeout=180)[0] for p in procs]
        failed = [out for p, out in zip(procs, outputs, strict=True) if p.returncode != 0]
        assert not failed, failed[0][-2000:]
        check = subprocess.run(
            [
                sys.executable,
                "-c",
                "import dagster as dg; print(sorted(dg.DagsterInstance.get()"
                ".get_dynamic_partitions('eval_run')))",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert check.stdout.strip() == str([f"run-{k}" for k in range(4)])
