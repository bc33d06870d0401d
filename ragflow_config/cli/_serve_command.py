"""`serve`: the knowledge bases of a pipeline file over MCP (stdio or HTTP) and a JSON API."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ._arguments import duration, float_between, int_between
from ._output import EXIT_OK, UsageError, print_json
from ._parser import Commands

if TYPE_CHECKING:  # the handler imports the server: the CLI starts without it
    from ..server._serve import Serving

TOKEN_HELP = (
    "environment variable holding the bearer token every HTTP request must carry "
    "(default: RAGFLOW_SERVE_TOKEN; unset or empty: no token needed)"
)


def register(commands: Commands) -> None:
    serve = commands.add(
        "serve",
        _serve,
        "serve the knowledge bases of a pipeline file: MCP over stdio (--stdio) or MCP and a "
        "JSON API over HTTP, and keep them fresh (--refresh-every, --watch, POST "
        "/v1/knowledge-bases/NAME/refresh)",
    )
    serve.add_argument("file", type=Path, metavar="FILE", help="the pipeline file")
    serve.add_argument(
        "--stdio", action="store_true", help="speak MCP on stdin/stdout (for desktop MCP clients)"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: 127.0.0.1, this machine only)",
    )
    serve.add_argument(
        "--port",
        type=int_between(0, 65535),
        default=8765,
        help="port to bind (default: 8765; 0: any free port)",
    )
    serve.add_argument(
        "--kb", action="append", metavar="NAME", help="serve only this knowledge base; repeatable"
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages from this browser origin (https://app.example.com) call the server; "
        "repeatable",
    )
    serve.add_argument("--token-env", default=None, metavar="VARIABLE", help=TOKEN_HELP)
    serve.add_argument(
        "--ui",
        action="store_true",
        help="also serve the retrieval-testing page at /ui: search each knowledge base in any "
        "mode with every hit explained, and browse its documents and chunks (behind the same "
        "token, signed in once at /ui/login)",
    )
    serve.add_argument(
        "--refresh-every",
        type=duration(1, 30 * 24 * 3600),
        default=None,
        metavar="DURATION",
        help="run the pipeline file again in the server this often (30s, 5m, 1h), the first "
        "time at start: what changed in the sources is indexed with the server's own store "
        "client, and a changed chunker or parser builds beside the live collection and "
        "switches (HTTP only)",
    )
    serve.add_argument(
        "--watch",
        action="store_true",
        help="run the pipeline file again in the server when a file of a local source, or "
        "the file itself, changes (HTTP only)",
    )
    serve.add_argument(
        "--metrics-port",
        type=int_between(0, 65535),
        default=None,
        metavar="PORT",
        help="also serve GET /metrics on this port of 127.0.0.1, without the token, for a "
        "scraper on this machine (0: any free port); the main port keeps /metrics behind "
        "the token",
    )
    limit = partial(_add_limit, serve)
    limit(
        "--max-body-bytes", int_between(1024, 1 << 30), 64 * 1024, "largest request body accepted"
    )
    limit("--max-query-chars", int_between(1), 2000, "longest query accepted")
    limit(
        "--drain-seconds",
        float_between(0, 24 * 3600),
        30.0,
        "on SIGTERM, how long requests in flight may finish",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients may address the server by, besides the bound address, "
        "localhost and any IP address (others are refused: DNS rebinding); repeatable",
    )
    limit(
        "--store-timeout-seconds",
        float_between(0.1, 3600),
        10.0,
        "deadline of one request's store and model calls, retries included",
    )
    limit(
        "--max-searches-per-client",
        int_between(1, 1_000_000),
        4,
        "searches (and listings, MCP calls, /ui pages) one client address may have in flight; "
        "429 beyond",
    )
    limit(
        "--max-searches",
        int_between(1, 1_000_000),
        8,
        "such requests running at once; the next ones wait in a queue",
    )
    limit(
        "--max-queued-searches",
        int_between(0, 1_000_000),
        64,
        "such requests waiting at most; 429 beyond",
    )
    limit(
        "--max-connections",
        int_between(1, 1_000_000),
        1000,
        "open connections at most, lowered to fit ulimit -n",
    )
    limit(
        "--idle-seconds",
        float_between(0.1, 3600),
        5.0,
        "close a connection idle this long before or between requests",
    )
    limit(
        "--header-seconds",
        float_between(0.1, 3600),
        10.0,
        "answer 408 to a request whose headers take longer to arrive",
    )
    limit(
        "--body-seconds",
        float_between(0.1, 3600),
        30.0,
        "answer 408 to a request whose body takes longer to arrive",
    )
    serve.add_argument("--no-access-log", action="store_true", help="no log line per request")
    serve.add_argument(
        "--log-queries",
        action="store_true",
        help="put each query's text on its access log line (off by default: queries may be private)",
    )
    serve.add_argument(
        "--json",
        action="store_true",
        help='once listening, print {"serving": {"url", "mcp", "openapi", "knowledge_bases"}} '
        "on stdout instead of the line on stderr (HTTP only)",
    )


def _add_limit(
    serve: argparse.ArgumentParser,
    flag: str,
    kind: Callable[[str], float],
    default: float,
    text: str,
) -> None:
    """One of the server's limits: a count (N) or seconds (S), its default in its help."""
    metavar = "S" if flag.endswith("-seconds") else "N"
    serve.add_argument(
        flag, type=kind, default=default, metavar=metavar, help=f"{text} (default: {default:g})"
    )


def _serve(args: argparse.Namespace) -> int:
    from ..pipeline import Pipeline
    from ..server import DEFAULT_TOKEN_VARIABLE, ServeOptions, read_token, serve
    from ..server._settings import TokenError

    if args.json and args.stdio:
        raise UsageError("--json announces an HTTP server; with --stdio, stdout speaks MCP")
    if args.ui and args.stdio:
        raise UsageError("--ui serves a page over HTTP; with --stdio there is no HTTP server")
    if args.stdio and (args.refresh_every or args.watch):
        raise UsageError("--refresh-every and --watch refresh an HTTP server; not with --stdio")

    try:
        token = None if args.stdio else read_token(args.token_env or DEFAULT_TOKEN_VARIABLE)
    except TokenError as exc:  # the environment's configuration: exit 2
        raise UsageError(str(exc)) from None
    options = ServeOptions(
        host=args.host,
        port=args.port,
        metrics_port=args.metrics_port,
        token=token,
        max_body_bytes=args.max_body_bytes,
        max_query_chars=args.max_query_chars,
        drain_seconds=args.drain_seconds,
        access_log=not args.no_access_log,
        ui=args.ui,
        refresh_every_seconds=args.refresh_every,
        watch=args.watch,
        log_queries=args.log_queries,
        cors_origins=tuple(args.cors_origin),
        allowed_hosts=tuple(args.allowed_host),
        store_timeout_seconds=args.store_timeout_seconds,
        max_connections=args.max_connections,
        max_searches_per_client=args.max_searches_per_client,
        max_searches=args.max_searches,
        max_queued_searches=args.max_queued_searches,
        idle_seconds=args.idle_seconds,
        header_seconds=args.header_seconds,
        body_seconds=args.body_seconds,
    )
    if options.access_log:
        logging.getLogger("ragflow_config.server.access").setLevel(logging.INFO)
    logging.getLogger("ragflow_config.server.refresh").setLevel(logging.INFO)
    pipeline = Pipeline.load(args.file)
    if not args.stdio and token is None and not options.loopback:
        logging.getLogger("ragflow_config.server").warning(
            "serving on %s without a token: anyone who can reach this address can search; set %s",
            options.host,
            args.token_env or DEFAULT_TOKEN_VARIABLE,
        )
    if not args.stdio and options.every_address and not options.allowed_hosts:
        logging.getLogger("ragflow_config.server").warning(
            "serving on %s: a client that names the server by a host name rather than an "
            "address is refused (DNS rebinding) unless the name is given with --allowed-host",
            options.host,
        )
    with contextlib.suppress(KeyboardInterrupt):
        serve(
            pipeline,
            stdio=args.stdio,
            options=options,
            knowledge_bases=args.kb,
            announce=_announce_json if args.json else None,
        )
    return EXIT_OK


def _announce_json(serving: Serving) -> None:
    """The address as JSON on stdout, at once: a script waits for it to connect."""
    print_json({"serving": serving.as_dict()})
    sys.stdout.flush()
