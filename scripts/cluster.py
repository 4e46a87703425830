"""Start, check and stop a local Spark standalone cluster with a Spark Thrift Server.

start   Spark master, one worker, then the Thrift server submitted to the master with the
        Iceberg runtime, the S3A jars and the `s3` target's catalog and buckets (start
        them first: `lakehouse-services start`); each step waits for a real readiness
        signal (the master's JSON listing the worker ALIVE, `select 1` through the Thrift
        server), never a sleep
status  each component's process, port and readiness; exit 1 when one is not healthy
stop    terminate every process group, wait, then verify no process and no port is left

Everything binds to 127.0.0.1. State and logs live in data/cluster/
(git-ignored; LAKEHOUSE_CLUSTER_DIR moves it), ports come from ClusterSettings
(LAKEHOUSE_*_PORT variables). Then: `lakehouse dbt --target cluster build`.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.lakehouse.embedded import jvm_options
from dbt.adapters.lakehouse.object_store import ServiceError
from scripts.cli import parser_from_doc
from scripts.spark_config import (
    LOG4J_CONFIG,
    PROJECT_DIR,
    ClusterSettings,
    DataPaths,
    cluster_spark_conf,
    metastore_conf,
)

# Thrift's client logs every refused connection at ERROR: expected while polling for readiness.
logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)

COMPONENTS = ("master", "worker", "thrift")  # start order; stop is the reverse
START_TIMEOUT_S = 240.0
PROPERTIES_FILE = "thrift-server.properties"  # the Thrift server's settings while it starts
STOP_TIMEOUT_S = 45.0


class ClusterError(RuntimeError):
    """A component failed to start or to stop; the message names it and quotes its log."""


@dataclass(frozen=True)
class Health:
    component: str
    ok: bool
    detail: str


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _state_file(cluster: ClusterSettings) -> Path:
    return cluster.run / "state.json"


def _read_state(cluster: ClusterSettings) -> dict[str, Any]:
    path = _state_file(cluster)
    return json.loads(path.read_text()) if path.is_file() else {"pids": {}}


def _write_state(cluster: ClusterSettings, pids: dict[str, int]) -> None:
    state = {"pids": pids, "settings": {k: str(v) for k, v in asdict(cluster).items()}}
    _state_file(cluster).write_text(json.dumps(state, indent=2))


def _log(cluster: ClusterSettings, component: str) -> Path:
    return cluster.logs / f"{component}.log"


def _tail(path: Path, lines: int = 30) -> str:
    if not path.is_file():
        return f"(no log at {path})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# -- readiness checks ----------------------------------------------------------------------


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def http_json(url: str, timeout: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def master_state(cluster: ClusterSettings, timeout: float = 60.0) -> dict[str, Any]:
    """The master's own JSON view: workers with their state, running applications."""
    return http_json(f"http://{cluster.host}:{cluster.master_webui_port}/json", timeout)


def alive_workers(cluster: ClusterSettings, timeout: float = 60.0) -> list[dict[str, Any]]:
    workers = master_state(cluster, timeout).get("workers", [])
    return [w for w in workers if w.get("state") == "ALIVE"]


def metastore_namespaces(cluster: ClusterSettings) -> list[str]:
    """A real metastore call through pyiceberg's Hive client: proves the service answers."""
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("lakehouse_metastore", type="hive", uri=cluster.metastore_uri)
    return [".".join(ns) for ns in catalog.list_namespaces()]


def thrift_query(cluster: ClusterSettings, sql: str) -> list[tuple[Any, ...]]:
    """Run one statement through the Thrift server (what dbt's thrift method does)."""
    from pyhive import hive

    from dbt.adapters.lakehouse.thrift_results import fetchall

    user = getpass.getuser()
    connection = hive.connect(host=cluster.host, port=cluster.thrift_port, username=user)
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        return fetchall(cursor) if cursor.description else []
    finally:
        connection.close()


def thrift_executors(cluster: ClusterSettings) -> list[dict[str, Any]]:
    """Executors of the Thrift server's application, from its driver's REST API."""
    base = f"http://{cluster.host}:{cluster.thrift_ui_port}/api/v1/applications"
    applications = http_json(base, timeout=60)  # a busy driver answers slowly
    if not applications:
        return []
    return http_json(f"{base}/{applications[0]['id']}/allexecutors", timeout=60)


def _check(component: str, cluster: ClusterSettings) -> bool:
    if component == "metastore":
        metastore_namespaces(cluster)
        return True
    if component == "master":
        master_state(cluster, timeout=5)
        return True
    if component == "worker":
        return len(alive_workers(cluster, timeout=5)) >= 1
    return thrift_query(cluster, "select 1") == [(1,)]


def _ready(component: str, cluster: ClusterSettings, timeout: float = 30.0) -> bool:
    """One readiness probe, bounded: Thrift clients have no timeout of their own, and a server
    that accepts a connection but never answers must not hang `start` or `status`."""
    outcome: list[bool] = []

    def probe() -> None:
        try:
            outcome.append(_check(component, cluster))
        except Exception:
            outcome.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(outcome and outcome[0])


# -- processes -------------------------------------------------------------------------------


def _environment(cluster: ClusterSettings) -> dict[str, str]:
    from dbt.adapters.lakehouse.java_runtime import export_java_home

    export_java_home()
    return {
        **os.environ,
        **cluster.to_env(),  # the metastore service reads its settings back from these
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": cluster.host,  # every web UI and RPC endpoint binds here
        "SPARK_MASTER_HOST": cluster.host,
        "SPARK_LOG_DIR": str(cluster.logs),
        "SPARK_PID_DIR": str(cluster.run),
        "SPARK_WORKER_DIR": str(cluster.run / "work"),
        "SPARK_DAEMON_MEMORY": "512m",
        # the machine's JIT and collector (LAKEHOUSE_JIT, LAKEHOUSE_GC), as every JVM of a run
        "SPARK_DAEMON_JAVA_OPTS": f"{cluster.marker} -Duser.timezone=UTC {jvm_options()}",
        "TZ": "UTC",
        "PYTHONPATH": str(PROJECT_DIR),
    }


def _command(component: str, cluster: ClusterSettings) -> list[str]:
    bin_dir = spark_home() / "bin"
    if component == "metastore":
        marker = cluster.marker.removeprefix("-D")  # argparse would read "-D..." as an option
        return [sys.executable, "-m", "scripts.cluster", "serve-metastore", marker]
    if component == "master":
        return [
            str(bin_dir / "spark-class"),
            "org.apache.spark.deploy.master.Master",
            *("--host", cluster.host, "--port", str(cluster.master_port)),
            *("--webui-port", str(cluster.master_webui_port)),
        ]
    if component == "worker":
        return [
            str(bin_dir / "spark-class"),
            "org.apache.spark.deploy.worker.Worker",
            *("--host", cluster.host, "--port", str(cluster.worker_port)),
            *("--webui-port", str(cluster.worker_webui_port)),
            *("--cores", str(cluster.worker_cores), "--memory", cluster.worker_memory),
            *("--work-dir", str(cluster.run / "work")),
            cluster.master_url,
        ]
    command = [
        str(bin_dir / "spark-submit"),
        *("--master", cluster.master_url),
        *("--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"),
        *("--properties-file", str(_write_properties(cluster))),
    ]
    return [
        *command,
        *("--hiveconf", f"hive.server2.thrift.port={cluster.thrift_port}"),
        *("--hiveconf", f"hive.server2.thrift.bind.host={cluster.host}"),
        "spark-internal",
    ]


def _write_properties(cluster: ClusterSettings) -> Path:
    """The Thrift server's settings as a file only its owner reads: they carry the REST
    catalog's credential, which `--conf` on the command line would show to every user
    (`ps`). spark-submit reads the class paths and driver memory from it too."""
    path = cluster.run / PROPERTIES_FILE
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        for key, value in cluster_spark_conf(cluster).items():
            out.write(f"{key}={_escaped(value)}\n")
    return path


def _escaped(value: str) -> str:
    """A value as java.util.Properties reads it back (backslashes, then line breaks)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _launch(component: str, cluster: ClusterSettings) -> subprocess.Popen[bytes]:
    """Start one component in its own process group (stop kills the group: JVM children too)."""
    log = _log(cluster, component).open("ab")
    try:
        return subprocess.Popen(
            _command(component, cluster),
            cwd=cluster.run,
            env=_environment(cluster),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        log.close()


def _wait(
    what: str,
    check: Callable[[], bool],
    timeout: float,
    process: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
) -> float:
    """Poll `check` until it holds; fail early when the process died. Returns seconds waited."""
    started = time.monotonic()
    delay = 0.2
    while not check():
        if process is not None and process.poll() is not None:
            tail = _tail(log) if log else ""
            raise ClusterError(f"{what}: process exited with {process.returncode}\n{tail}")
        if time.monotonic() - started > timeout:
            tail = _tail(log) if log else ""
            raise ClusterError(f"{what}: not ready after {timeout:.0f} s\n{tail}")
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)
    return time.monotonic() - started


def start_metastore(cluster: ClusterSettings) -> subprocess.Popen[bytes]:
    """Only the metastore service (for embedded sessions in several processes to share one
    catalog: LAKEHOUSE_METASTORE_URI); stop it by killing its process group."""
    for folder in (cluster.logs, cluster.run, cluster.warehouse, cluster.metastore):
        folder.mkdir(parents=True, exist_ok=True)
    process = _launch("metastore", cluster)
    log = _log(cluster, "metastore")
    _wait("metastore", lambda: _ready("metastore", cluster), START_TIMEOUT_S, process, log)
    return process


def start(cluster: ClusterSettings, log: Callable[[str], None] = print) -> dict[str, int]:
    """Start every component in order, each only once the previous one is ready."""
    if any(h.ok for h in status(cluster) if h.component != "stragglers"):
        raise ClusterError(f"a cluster already runs from {cluster.root}: stop it first")
    busy = {name: port for name, port in cluster.ports().items() if port_open(cluster.host, port)}
    if busy:
        raise ClusterError(f"ports already in use on {cluster.host}: {busy}")
    check_storage()
    for folder in (cluster.logs, cluster.run / "work", cluster.warehouse):
        folder.mkdir(parents=True, exist_ok=True)
    pids: dict[str, int] = {}
    try:
        for component in COMPONENTS:
            process = _launch(component, cluster)
            pids[component] = process.pid
            _write_state(cluster, pids)
            waited = _wait(
                component,
                lambda c=component: _ready(c, cluster),
                START_TIMEOUT_S,
                process,
                _log(cluster, component),
            )
            log(f"{component:<10} ready in {waited:5.1f} s (pid {process.pid})")
    except BaseException:
        stop(cluster, log=log)
        raise
    finally:  # read by the server as it started (or not at all): its credential leaves the disk
        (cluster.run / PROPERTIES_FILE).unlink(missing_ok=True)
    return pids


def check_storage() -> None:
    """The store and catalog answer with the environment's keys and the buckets exist, or
    `start` stops here naming the fix (ServiceError), before any JVM starts."""
    from dbt.adapters.lakehouse.object_store import ServiceSettings, check_before_session

    paths = DataPaths.for_target("s3")
    check_before_session(ServiceSettings.from_env(paths.root), paths.landing)


def _group_alive(pgid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # reap our own child: a zombie looks alive
        os.waitpid(pgid, os.WNOHANG)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cluster_processes(cluster: ClusterSettings) -> list[tuple[int, str]]:
    """Every live process whose command line carries this cluster's marker."""
    pattern = re.compile(re.escape(cluster.marker.removeprefix("-D")) + r"(\s|\x00|$)")
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and pattern.search(cmdline):
            found.append((int(proc.name), cmdline.replace("\x00", " ")[:160]))
    return found


def stop(cluster: ClusterSettings, log: Callable[[str], None] = print) -> None:
    """SIGTERM each process group (reverse start order), SIGKILL what outlives the timeout,
    then prove that no process of this cluster and none of its ports is left."""
    pids: dict[str, int] = _read_state(cluster).get("pids", {})
    ours = _marked_groups(cluster)  # a stale state file must not make us signal a reused pid
    for component in reversed(COMPONENTS):
        pgid = pids.get(component)
        if pgid is None or not _group_alive(pgid) or pgid not in ours:
            continue
        os.killpg(pgid, signal.SIGTERM)
        try:
            _wait(f"stop {component}", lambda g=pgid: not _group_alive(g), STOP_TIMEOUT_S)
        except ClusterError:
            log(f"{component:<10} ignored SIGTERM: killing")
            os.killpg(pgid, signal.SIGKILL)
            _wait(f"kill {component}", lambda g=pgid: not _group_alive(g), 10)
        log(f"{component:<10} stopped (pid {pgid})")
    for pid, cmdline in cluster_processes(cluster):  # e.g. executors left by a killed worker
        log(f"straggler {pid} killed: {cmdline}")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _wait("processes gone", lambda: not cluster_processes(cluster), 10)
    _wait("ports free", lambda: not _busy_ports(cluster), 20)
    _state_file(cluster).unlink(missing_ok=True)


def _marked_groups(cluster: ClusterSettings) -> set[int]:
    groups = set()
    for pid, _ in cluster_processes(cluster):
        with contextlib.suppress(ProcessLookupError):
            groups.add(os.getpgid(pid))
    return groups


def _busy_ports(cluster: ClusterSettings) -> dict[str, int]:
    return {name: port for name, port in cluster.ports().items() if port_open(cluster.host, port)}


def status(cluster: ClusterSettings) -> list[Health]:
    pids: dict[str, int] = _read_state(cluster).get("pids", {})
    ports = {
        "master": cluster.master_port,
        "worker": cluster.worker_port,
        "thrift": cluster.thrift_port,
    }
    report = []
    for component in COMPONENTS:
        pid = pids.get(component)
        alive = pid is not None and _group_alive(pid)
        ready = alive and _ready(component, cluster)
        detail = f"pid {pid if alive else '-'}, {cluster.host}:{ports[component]}, " + (
            "ready" if ready else "not ready" if alive else "not running"
        )
        report.append(Health(component, ready, detail))
    own = set(pids.values())
    strays = [(p, c) for p, c in cluster_processes(cluster) if not _in_groups(p, own)]
    report.append(Health("stragglers", not strays, f"{len(strays)} process(es) outside the state"))
    return report


def _in_groups(pid: int, groups: set[int]) -> bool:
    try:
        return os.getpgid(pid) in groups
    except ProcessLookupError:
        return True


# -- the metastore service -------------------------------------------------------------------


def serve_metastore(cluster: ClusterSettings) -> None:
    """Run the Hive Metastore Thrift service on 127.0.0.1 only, in a JVM driven over py4j.

    Hive 2.3.9's `HiveMetaStore` main binds every interface (0.0.0.0) with no option to
    change it, so its handler and Thrift server are assembled here around a loopback socket,
    from the Hive jars inside pyspark. The JVM dies with this process (die_on_exit).
    """
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    jars = spark_home() / "jars"
    java_options = [
        cluster.marker,
        "-Xmx512m",
        "-Duser.timezone=UTC",
        *jvm_options().split(),
        f"-Dderby.system.home={cluster.metastore}",
        f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}",  # warnings and errors, to stderr
    ]
    port = launch_gateway(
        classpath=f"{jars}/*",
        javaopts=java_options,
        die_on_exit=True,
        redirect_stderr=sys.stderr,  # this process's stderr is the component's log file
        cwd=str(cluster.metastore),
    )
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=True))
    jvm = gateway.jvm
    conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
    for key, value in metastore_conf(cluster).items():
        conf.set(key, value)
    from dbt.adapters.lakehouse.embedded_session import create_metastore_lock_tables

    create_metastore_lock_tables(jvm, metastore_conf(cluster)["javax.jdo.option.ConnectionURL"])
    handler = jvm.org.apache.hadoop.hive.metastore.HiveMetaStore.newRetryingHMSHandler(
        "lakehouse-metastore", conf, False
    )
    processor = jvm.org.apache.hadoop.hive.metastore.TSetIpAddressProcessor(handler)
    address = jvm.java.net.InetSocketAddress(cluster.host, cluster.metastore_port)
    thrift = jvm.org.apache.thrift
    args = (
        thrift.server.TThreadPoolServer.Args(thrift.transport.TServerSocket(address))
        .processor(processor)
        .protocolFactory(thrift.protocol.TBinaryProtocol.Factory())
        .transportFactory(thrift.transport.TTransportFactory())
        .minWorkerThreads(4)
        .maxWorkerThreads(64)
    )
    print(f"metastore serving on {cluster.metastore_uri}", flush=True)
    thrift.server.TThreadPoolServer(args).serve()  # blocks until the process is terminated


# -- command line ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("lakehouse-cluster", __doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("start", help="start master, worker and Thrift server")
    sub.add_parser("status", help="health of every component")
    sub.add_parser("stop", help="stop everything and verify nothing is left")
    serve = sub.add_parser("serve-metastore", help="(internal) run the metastore service")
    serve.add_argument("marker", help="the cluster marker, so stop can find this process")
    args = parser.parse_args(argv)
    cluster = ClusterSettings.from_env()

    if args.command == "serve-metastore":
        serve_metastore(cluster)
        return 0
    try:
        if args.command == "start":
            started = time.monotonic()
            start(cluster)
            print(f"cluster ready in {time.monotonic() - started:.0f} s from {cluster.root}")
            print(f"  master UI  http://{cluster.host}:{cluster.master_webui_port}")
            print(f"  driver UI  http://{cluster.host}:{cluster.thrift_ui_port}")
            print(f"  thrift     {cluster.host}:{cluster.thrift_port} (dbt --target cluster)")
            landing = DataPaths.for_target("s3").landing
            print(f"  storage    the s3 target's catalog and buckets; landing zone {landing}")
            return 0
        if args.command == "stop":
            stop(cluster)
            print("cluster stopped: no process and no port left")
            return 0
    except (ClusterError, ServiceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report = status(cluster)
    for health in report:
        print(f"{health.component:<10} {'ok ' if health.ok else 'BAD'} {health.detail}")
    return 0 if all(h.ok for h in report) else 1


if __name__ == "__main__":
    sys.exit(main())
