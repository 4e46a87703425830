"""A warm engine for the modeller's loop: `lakehouse dev-server` keeps one process with dbt
imported and the target's Spark session started, and `lakehouse dev <dbt arguments>` runs a
dbt command in it. A cold `dbt run -s <model>` pays dbt's import, the JVM's start and a
cold JIT every time; a command in the kept process pays its parse and its statements.

The server listens on 127.0.0.1 (a free port) and writes the port with a random token into
`dev-server.json` in the target's data folder, readable by its owner only; a client presents
the token, so another user of the machine cannot run commands in the developer's session.
Commands run one at a time, in the order they arrive: the session is one engine, as a cold
`dbt` process is. The embedded target's Derby metastore admits one process, so while the
server runs, a cold `dbt` on the same data folder waits for it (stop it with Ctrl-C).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import socketserver
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

STATE_FILE = "dev-server.json"
# dbt's own exit codes: 0 success, 1 a node or test failed, 2 dbt could not run the command
NO_SERVER = 2


@dataclass(frozen=True)
class ServerAddress:
    port: int
    token: str

    @classmethod
    def read(cls, state: Path) -> ServerAddress | None:
        try:
            fields = json.loads(state.read_text())
        except (OSError, ValueError):
            return None
        return cls(int(fields["port"]), str(fields["token"]))

    def write(self, state: Path) -> None:
        state.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(state, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            json.dump({"port": self.port, "token": self.token, "pid": os.getpid()}, out)


# A command: its dbt arguments and a callable that sends one line of output to the client;
# returns dbt's exit code.
Invoke = Callable[[list[str], Callable[[str], None]], int]


def dbt_in_session(spark, target: str, extra_args: tuple[str, ...] = ()) -> Invoke:
    """Run dbt in this process on `spark`, the session dbt-spark's `session` method reuses
    (getOrCreate), and forward dbt's info, warning and error messages as they come."""
    from dbt.cli.main import dbtRunner

    def invoke(args: list[str], send: Callable[[str], None]) -> int:
        if "--target" in args or "-t" in args:
            send(f"the dev server runs target {target!r}: leave --target out")
            return NO_SERVER

        def forward(event) -> None:  # called from dbt's worker threads
            if event.info.level in ("info", "warn", "error"):
                send(str(event.info.msg))

        try:
            result = dbtRunner(callbacks=[forward]).invoke([*args, "--target", target, *extra_args])
        finally:
            # a cold dbt process ends with its session; this one outlives the command, so a
            # run stopped before its on-run-end must not leave the next command on its branch
            spark.conf.unset("spark.wap.branch")
        if result.success:
            return 0
        return 2 if result.exception is not None else 1

    return invoke


class _Handler(socketserver.StreamRequestHandler):
    server: DevServer

    def handle(self) -> None:
        try:
            request = json.loads(self.rfile.readline())
            token, args = request["token"], list(request["args"])
        except (ValueError, KeyError, TypeError):
            return
        if not secrets.compare_digest(str(token), self.server.address.token):
            self._send("error wrong token: this server belongs to another session")
            return
        self._send(f"exit {self.server.invoke(args, lambda line: self._send('out ' + line))}")

    def _send(self, line: str) -> None:
        try:
            self.wfile.write((line.replace("\n", "\n    ") + "\n").encode())
            self.wfile.flush()
        except OSError:  # the client went away: the command still runs to its end
            pass


class DevServer(socketserver.TCPServer):
    """One command at a time on 127.0.0.1; `address` (port and token) is written to `state`
    for the clients and removed when the server stops."""

    allow_reuse_address = True

    def __init__(self, state: Path, invoke: Invoke) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state, self.invoke = state, invoke
        self.address = ServerAddress(self.server_address[1], secrets.token_hex(16))
        self.address.write(state)

    def server_close(self) -> None:
        super().server_close()
        if ServerAddress.read(self.state) == self.address:  # not a newer server's file
            self.state.unlink(missing_ok=True)


def run_command(state: Path, args: list[str], out=sys.stdout) -> int:
    """The client: run `args` in the server whose address is in `state`, print its output as
    it comes, return dbt's exit code."""
    address = ServerAddress.read(state)
    if address is None:
        print(f"no dev server for this data folder ({state} is missing): start one with"
              " `lakehouse dev-server` in another terminal", file=sys.stderr)  # fmt: skip
        return NO_SERVER
    try:
        connection = socket.create_connection(("127.0.0.1", address.port), timeout=10)
    except OSError as refused:
        print(f"the dev server in {state} does not answer ({refused}): it has stopped; start"
              " it again with `lakehouse dev-server`", file=sys.stderr)  # fmt: skip
        return NO_SERVER
    with connection:
        connection.settimeout(None)  # a command takes as long as it takes
        connection.sendall((json.dumps({"token": address.token, "args": args}) + "\n").encode())
        for raw in connection.makefile("r", encoding="utf-8"):
            kind, _, text = raw.rstrip("\n").partition(" ")
            if kind == "exit":
                return int(text)
            if kind == "error":
                print(text, file=sys.stderr)
                return NO_SERVER
            print(text, file=out, flush=True)
    print("the dev server closed the connection before the command ended", file=sys.stderr)
    return NO_SERVER


def state_file(target: str) -> Path:
    from scripts.spark_config import DataPaths

    return DataPaths.for_target(target).root / STATE_FILE


def serve(target: str) -> int:
    """`lakehouse dev-server`: start the target's session, then serve until Ctrl-C."""
    from scripts.session import get_spark
    from scripts.spark_config import PROJECT_DIR, dbt_env

    os.environ.update(dbt_env(target))
    os.chdir(PROJECT_DIR)
    spark = get_spark(target)

    def stop(*_) -> None:  # `kill` stops it as Ctrl-C does: the address file goes with it
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    with DevServer(state_file(target), dbt_in_session(spark, target)) as server:
        print(f"==> dev server ready for target {target} on 127.0.0.1:{server.address.port};"
              " run `lakehouse dev <dbt arguments>`, Ctrl-C stops it", flush=True)  # fmt: skip
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("==> dev server stopped", flush=True)
    return 0
