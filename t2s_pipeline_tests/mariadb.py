"""A private MariaDB server for the tests: its own data folder, socket and loopback port.

The demo loads into databases named after its schemas (``sales``, ``hr``...), which would
replace a user's own; so the tests never touch a shared server. :func:`start_server` runs
``mariadb-install-db`` into a temporary folder and starts ``mariadbd`` on a free port with an
administrator ``t2s``; :func:`mariadb_unavailable_reason` says why it cannot (no server
installed). ``T2S_MYSQL_URL`` overrides it with a server of your own (its demo databases are
replaced).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql

ADMIN = "t2s"
START_TIMEOUT_S = 60.0


def server_binaries() -> tuple[str, str] | None:
    """``mariadbd`` and ``mariadb-install-db``, or None when MariaDB is not installed."""
    daemon = shutil.which("mariadbd") or (
        "/usr/sbin/mariadbd" if Path("/usr/sbin/mariadbd").exists() else None
    )
    install = shutil.which("mariadb-install-db")
    return (daemon, install) if daemon and install else None


def mariadb_unavailable_reason() -> str | None:
    """Why no MariaDB server can be started here, or None."""
    if os.environ.get("T2S_MYSQL_URL"):
        return None
    if server_binaries() is None:
        return "MariaDB is not installed (apt-get install mariadb-server), nor T2S_MYSQL_URL set"
    return None


@contextlib.contextmanager
def start_server(folder: Path) -> Iterator[str]:
    """A running MariaDB server with its data in ``folder``; yields the admin URL."""
    if os.environ.get("T2S_MYSQL_URL"):
        yield os.environ["T2S_MYSQL_URL"]
        return
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError(mariadb_unavailable_reason() or "MariaDB is not installed")
    daemon, install = binaries
    data, sock = folder / "data", folder / "mariadb.sock"
    user = getpass.getuser()
    subprocess.run(
        [install, f"--datadir={data}", f"--user={user}", "--auth-root-authentication-method=socket",
         "--skip-test-db"],
        check=True, capture_output=True, timeout=START_TIMEOUT_S,
    )  # fmt: skip
    port = _free_port()
    process = subprocess.Popen(
        [daemon, "--no-defaults", f"--datadir={data}", f"--socket={sock}", f"--port={port}",
         "--bind-address=127.0.0.1", f"--user={user}", "--skip-log-bin",
         f"--pid-file={folder / 'mariadb.pid'}", "--innodb-buffer-pool-size=64M"],
        stdout=subprocess.DEVNULL, stderr=(folder / "mariadb.log").open("wb"),
    )  # fmt: skip
    try:
        _create_admin(sock, process, folder)
        yield f"mysql://{ADMIN}:{ADMIN}@127.0.0.1:{port}/"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def _create_admin(sock: Path, process: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            log = (folder / "mariadb.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"mariadbd exited with {process.returncode}: {log}")
        try:
            conn = pymysql.connect(unix_socket=str(sock), user="root", autocommit=True)
            break
        except pymysql.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with conn.cursor() as cursor:
        for host in ("%", "localhost"):
            cursor.execute("CREATE USER %s@%s IDENTIFIED BY %s", (ADMIN, host, ADMIN))
            cursor.execute("GRANT ALL ON *.* TO %s@%s WITH GRANT OPTION", (ADMIN, host))
    conn.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
