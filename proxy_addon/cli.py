"""``pagerank-proxy``: mitmdump with the PageRank addon, set up from a few options.

The addon goes into mitmdump's chain of addons directly, where a script's
addons would be (``mitmdump -s proxy_addon/addon.py`` loads the same addon):
mitmproxy walks its chain at each of its events, about twenty a page, and a
script's addons sit three levels down, under the script loader, the script and
its module.

It also keeps mitmproxy from making the connection lines (four a page) that
the terminal would drop: see :func:`connection_log_level`.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import socket
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from proxy_addon.exposure import exposed_hosts, open_proxy_problem

if TYPE_CHECKING:  # the store's modules load with the addon, after the arguments are read
    from rankstore.store import LevelHead


def extra_settings(extra: list[str]) -> dict[str, str]:
    """The ``--set name=value`` options among mitmdump's extra arguments (both spellings)."""
    found: dict[str, str] = {}
    for flag, value in zip(extra, extra[1:] + [""]):
        spec = value if flag == "--set" else flag[len("--set=") :] if flag.startswith("--set=") else None
        if spec:
            name, _, setting = spec.partition("=")
            found[name] = setting
    return found


def mitmdump_args(
    store: str,
    listen_host: str,
    port: int,
    ranking: str,
    panel: int,
    extra: list[str],
    idle_timeout: int = 60,
    record: str = "",
    record_warc: bool = False,
    record_exclude: str | Sequence[str] = (),
    record_queries: bool = False,
    record_private: bool = False,
    proxyauth: str | None = None,
    insecure_pages: bool = False,
    no_auth: bool = False,
) -> list[str]:
    """mitmdump's arguments (the addon comes in with :func:`run`); an option that ``extra`` sets too is left
    to it (mitmproxy refuses an option set twice: the proxy would start without its store).  The recording
    options go only with a ``record`` directory; ``record_exclude`` sets the sequence an item at a time."""
    ours = {
        "rankstore": store,
        "pagerank_ranking": ranking,
        "pagerank_panel": str(panel),
        "pagerank_idle_timeout": str(idle_timeout),
        "connection_strategy": "lazy",
        "listen_host": listen_host,
        "listen_port": str(port),
    }
    pairs = list(ours.items())
    if record:
        patterns = [record_exclude] if isinstance(record_exclude, str) else list(record_exclude)
        pairs += [("pagerank_record", record), ("pagerank_record_warc", str(record_warc).lower())]
        pairs += [("pagerank_record_exclude", pattern) for pattern in patterns]
        pairs += [("pagerank_record_queries", str(record_queries).lower())]
        pairs += [("pagerank_record_private", str(record_private).lower())]
    if proxyauth is not None:
        pairs.append(("proxyauth", proxyauth))
    pairs.append(("pagerank_insecure_pages", str(insecure_pages).lower()))
    pairs.append(("pagerank_no_auth", str(no_auth).lower()))
    given = extra_settings(extra)
    settings = [item for name, value in pairs if name not in given for item in ("--set", f"{name}={value}")]
    return [*settings, *extra]


CONNECTION_LOGGER = "mitmproxy.proxy.server"  # a line at INFO as each client and server connection opens and closes


def connection_log_level(verbosity: str) -> int:
    """The level for mitmproxy's connection logger under a terminal verbosity (``termlog_verbosity``):
    the terminal's own where it shows no INFO line (``-q``: error), else none of its own (NOTSET).

    mitmproxy sets the root logger to DEBUG and also hands every record, at any level, to the event loop as
    an ``add_log`` event for each addon (a deprecated hook kept for scripts).  So under ``-q`` each
    connection line is still built, formatted and dispatched to every addon, only for the terminal to drop
    it: four a page with an origin that closes its connections, about as much of mitmproxy's time as this
    addon's own hooks (BENCHMARKS.md, "mitmproxy's connection log costs about as much as our addon").  With
    this level those lines are not made at all; a script's ``add_log`` hook or logging handler then sees
    none of them either, as the terminal shows none.
    """
    level = logging.getLevelName(verbosity.upper())  # the names termlog gives its handler's level
    return level if isinstance(level, int) and level > logging.INFO else logging.NOTSET


def add_addon(master) -> None:
    """Put the PageRank addon in a mitmproxy master's chain, just before the script loader: its hooks run
    where a script's addons would, before those of any script given after ``--``."""
    from proxy_addon.addon import PageRankProxy

    addon = PageRankProxy()
    master.addons.add(addon)  # loaded: its options exist before the command line's are set
    chain = master.addons.chain
    chain.remove(addon)
    chain.insert(chain.index(master.addons.get("scriptloader")), addon)


def run(arguments: list[str], announce: bool = False, no_auth: bool = False) -> None:
    """mitmdump with these arguments and the PageRank addon, as mitmproxy's own ``mitmdump()`` runs;
    ``announce``: say where it listens once it does and its addons have started without an error;
    ``no_auth``: listening beyond loopback without a password is meant (else refused: :mod:`.exposure`)."""
    from mitmproxy.tools import cmdline
    from mitmproxy.tools.dump import DumpMaster
    from mitmproxy.tools.main import run as run_master

    class Master(DumpMaster):
        def __init__(self, options) -> None:
            super().__init__(options)
            add_addon(self)
            options.subscribe(self._connection_lines, ["termlog_verbosity"])  # -q and --set alike

        def _connection_lines(self, options, updated) -> None:
            logging.getLogger(CONNECTION_LOGGER).setLevel(connection_log_level(options.termlog_verbosity))

        async def run(self) -> None:
            # every option is read by now, mitmproxy's config.yaml too (over our --set listen_host): the line
            # main() says for what it reads itself, for what only mitmdump's reading shows
            problem = open_proxy_problem(
                exposed_hosts(self.options.listen_host, self.options.mode), self.options.proxyauth, no_auth
            )
            if problem:
                print(f"pagerank-proxy: error: {problem}", file=sys.stderr)
                sys.exit(2)
            # every argument has been read by now (--port, -p, --mode ...@port, --set listen_port): mitmproxy's
            # own refusal of a port out of range or taken is two lines that suggest one of its options, not ours
            problem = _port_problem(self.options.listen_port)
            if problem:
                print(f"pagerank-proxy: error: {problem}", file=sys.stderr)
                sys.exit(2)
            taken = taken_address(self.options)
            if taken is not None:
                host, port = taken
                print(
                    f"pagerank-proxy: error: port {port} on {host or 'every address'} is taken "
                    "(another program listens there): choose another with --port",
                    file=sys.stderr,
                )
                sys.exit(1)
            await super().run()

        async def running(self) -> None:
            # called once mitmdump's arguments have parsed and its ports are bound; after the addons'
            # running hooks (the ranking read, the workers up), the proxy serves pages as they mean to
            await super().running()
            await asyncio.sleep(0)  # as mitmproxy's own check waits: an error logged by a task just queued
            check = self.addons.get("errorcheck")
            if announce and not (check is not None and check.logger.has_errored):  # else mitmdump exits 1 next
                print(banner(self.options, self._levels_only(), self._port()), flush=True)

        def _port(self) -> int:
            """The port the proxy listens on: the one it was given, or (given 0) the one the system chose."""
            server = self.addons.get("proxyserver")
            addresses = server.listen_addrs() if server is not None else []
            ports = [address[1] for address in addresses if len(address) > 1]
            return self.options.listen_port if self.options.listen_port in ports or not ports else ports[0]

        def _levels_only(self) -> list[LevelHead]:
            addon = self.addons.get("pagerankproxy")
            ranks = getattr(addon, "ranks", None)
            return ranks.levels_only() if ranks is not None else []

    def extra(args) -> dict:  # mitmdump's own: a filter given on the command line applies to its outputs
        if args.filter_args:
            spec = " ".join(args.filter_args)
            return {"save_stream_filter": spec, "readfile_filter": spec, "dumper_filter": spec}
        return {}

    # mitmproxy's run() also reads sys.argv (to hint at deprecated options when the arguments do not parse):
    # there it must find mitmdump's arguments, not pagerank-proxy's own (whose --port it would call deprecated)
    sys.argv[1:] = arguments
    # Ctrl-C (SIGINT) and SIGTERM stop mitmdump as it means to (its handlers call shutdown), and the proxy
    # exits 0: they are its ordinary way to stop (it serves until told to), the stop is whole (its workers
    # ended, the record closed), and it is what mitmdump, whose place it takes, says; 130 would call a clean
    # stop a failure to `pagerank-proxy && next` and to a service manager alike.  Its workers never see a
    # terminal's SIGINT: they run in a process group of their own (proxy_addon.pool), stopped by the proxy.
    run_master(Master, cmdline.mitmdump, arguments, extra)


def parser() -> argparse.ArgumentParser:
    """pagerank-proxy's command line (its own flags; what follows ``--`` goes to mitmdump)."""
    parser = argparse.ArgumentParser(
        prog="pagerank-proxy",
        description="A web proxy that puts the target's PageRank beside every link and shows each page's "
        "best backlinks (Page & Brin 1998, section 7.3). Its own pages: http://pagerank.proxy/",
        epilog="Example:\n  rankstore build site.warc.gz && rankstore rank\n"
        "  pagerank-proxy --store rankstore.db --port 8080\n"
        "  chromium --proxy-server=127.0.0.1:8080 http://example.com/\n"
        "  pagerank-proxy --record ~/browsed --record-exclude '*.bank.example'   (then: rankstore build ~/browsed)\n"
        "  pagerank-proxy --listen-host 0.0.0.0 --proxyauth me:secret   (for other machines: they give the password)\n"
        "For HTTPS, install mitmproxy's CA: browse to http://mitm.it through the proxy.\n"
        "Arguments after -- go to mitmdump as they are.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--store",
        default=os.environ.get("RANKSTORE", "rankstore.db"),
        help="the rankstore file (default: $RANKSTORE or rankstore.db)",
    )
    parser.add_argument(
        "--listen-host",
        default="127.0.0.1",
        help="address to listen on; beyond loopback (0.0.0.0, a LAN address, '' for every address) only with "
        "--proxyauth or --no-auth (default: 127.0.0.1 only)",
    )
    parser.add_argument(
        "--proxyauth",
        metavar="SPEC",
        help="mitmproxy's: clients must give a password: USER:PASS, @HTPASSWD_FILE, or ldap[s]:... "
        "(mitmdump --proxyauth); what lets the proxy listen beyond loopback",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="listen beyond loopback without a password: an open proxy that serves anyone who reaches it, "
        "with your store's pages (refused without this or --proxyauth)",
    )
    parser.add_argument(
        "--port", type=int, default=8080, help="port, 0 for any free one (named once listening; default: 8080)"
    )
    parser.add_argument(
        "--ranking", default="pagerank", help="which ranking of pages to show (default: pagerank; not a host ranking)"
    )
    parser.add_argument("--panel", type=int, default=10, help="backlinks in the page panel, 0 for none (default: 10)")
    parser.add_argument(
        "--insecure-pages",
        action="store_true",
        help="annotate your browser's pages of plain-http sites beyond loopback too (off by default: a browser "
        "sends those no Fetch Metadata, so the page's own script could fetch its annotated copy and read the bars)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=int,
        default=60,
        help="seconds an origin may take to send its response headers, and then an HTML page to arrive "
        "whole; past them the client gets a 504 (0: no deadline; default: 60)",
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        default="",
        help="record each HTML page the proxy annotates (URL, status, title, time, out-links) in DIR, for "
        "`rankstore build DIR`; off by default. Only pages you navigate to (no frame, fetch or image). Never "
        "recorded: the proxy's own pages, requests with an Authorization header, --record-exclude hosts, page "
        "URLs' query strings unless --record-queries, and query parameters that carry secrets (token, session, "
        "key, password, code, state, ...). Pages answered Cache-Control: no-store or private are recorded as "
        "visits alone (no title, links or WARC body) unless --record-private. DIR and its files are yours alone "
        "(0700, 0600)",
    )
    parser.add_argument(
        "--record-warc", action="store_true", help="with --record: keep the pages' responses as WARC in DIR too"
    )
    parser.add_argument(
        "--record-exclude",
        metavar="PATTERN",
        action="append",
        default=[],
        help="with --record: never record a host matching PATTERN (fnmatch, any case), HOST for every port or "
        "HOST:PORT for one, as `rankstore forget --host` names it (e.g. 127.0.0.1:8000); '*.bank.example' "
        "(or '.bank.example') also covers bank.example, as NO_PROXY does; repeatable",
    )
    parser.add_argument(
        "--record-queries",
        action="store_true",
        help="with --record: keep a page URL's query string (dropped by default: it may hold what you typed); "
        "parameters that carry secrets are dropped all the same",
    )
    parser.add_argument(
        "--record-private",
        action="store_true",
        help="with --record: record the title and links (and WARC body) of pages answered Cache-Control: "
        "no-store or private too",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    """The console script: :func:`_main`, quiet when Ctrl-C comes before mitmdump's event loop takes SIGINT
    (while the store is checked and the modules load): an interrupted start exits 130, as a shell reports a
    command that SIGINT ended, with no traceback.  Once the proxy serves, Ctrl-C is its ordinary stop: 0
    (:func:`run`)."""
    try:
        _main(argv)
    except KeyboardInterrupt:
        sys.exit(130)


def _main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    args = parser().parse_args(argv)
    problem = _port_problem(args.port) or _unknown_option_problem(extra)
    if problem:  # a usage error: one line of ours, not mitmproxy's two once it has started
        print(f"pagerank-proxy: error: {problem}", file=sys.stderr)
        sys.exit(2)
    problem = _exposure_problem(args, extra)
    if problem:  # a usage error, before the store is read
        print(f"pagerank-proxy: error: {problem}", file=sys.stderr)
        sys.exit(2)
    if not args.record and (args.record_warc or args.record_exclude or args.record_queries or args.record_private):
        print(
            "pagerank-proxy: error: --record-warc, --record-exclude, --record-queries and --record-private need "
            "--record DIR",
            file=sys.stderr,
        )
        sys.exit(2)
    problem = _exclude_problem(args.record_exclude)
    if problem:
        print(f"pagerank-proxy: error: {problem}", file=sys.stderr)
        sys.exit(2)
    given = extra_settings(extra)  # what mitmdump will use, for the checks
    store = given.get("rankstore", args.store)
    ranking = given.get("pagerank_ranking", args.ranking)
    problem = _store_problem(store, ranking, given)
    if problem:  # one line, before anything says "listening"
        print(f"pagerank-proxy: error: {problem}", file=sys.stderr)
        sys.exit(1)
    problem = _options_problem(store, ranking, args.panel, args.idle_timeout, given, args.record)
    if problem:  # mitmdump would say "listening", then print the addon's refusal with a traceback
        print(f"pagerank-proxy: error: {problem}", file=sys.stderr)
        sys.exit(2)
    asyncio.set_event_loop_policy(_QuietStopPolicy())
    # ... and a connection accepted as the loop stopped (Ctrl-C under load) leaves a coroutine never started
    # (asyncio's accepting it, or mitmproxy's handling it), which Python warns of in two lines as the loop or the
    # interpreter closes: nothing was lost, the client's connection closes with the proxy
    warnings.filterwarnings(
        "ignore",
        r"coroutine '(BaseSelectorEventLoop\._accept_connection2|ServerInstance\.handle_\w+)' was never awaited",
        RuntimeWarning,
    )
    run(
        mitmdump_args(
            args.store,
            args.listen_host,
            args.port,
            args.ranking,
            args.panel,
            extra,
            args.idle_timeout,
            args.record,
            args.record_warc,
            args.record_exclude,
            args.record_queries,
            args.record_private,
            proxyauth=args.proxyauth,
            insecure_pages=args.insecure_pages,
            no_auth=args.no_auth,
        ),
        announce=True,
        no_auth=args.no_auth,
    )


def taken_address(options) -> tuple[str, int] | None:
    """The (host, port) of a server mitmdump is set to start that another program listens on already, or None.

    Each TCP address is bound and listened on as asyncio will (``SO_REUSEADDR``;
    IPv6 sockets for IPv6 only), then let go: a port in use fails here as it
    would there.  Other failures (no such address, a port kept for root) are left
    for mitmproxy to report.
    """
    from mitmproxy.proxy.mode_specs import ProxyMode

    for spec in options.mode:
        mode = ProxyMode.parse(spec)
        port = mode.listen_port(options.listen_port)
        if mode.transport_protocol == "udp" or not port:  # no port of its own, or any free one
            continue
        host = mode.listen_host(options.listen_host)
        try:
            addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except OSError:
            continue
        for family, kind, protocol, _, address in addresses:
            try:
                with socket.socket(family, kind, protocol) as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    if family == socket.AF_INET6:
                        probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    probe.bind(address)
                    probe.listen(1)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    return host, port
    return None


def banner(options, levels_only: Sequence[LevelHead] = (), port: int | None = None) -> str:
    """Where the proxy listens, from what mitmdump made of every argument (``-p`` after ``--`` too), and what it
    shows: its page ranking, or (``levels_only``) the host and site rankings of a store that ranks no pages;
    ``port``: the one bound (``--port 0``: whichever was free), else the option's."""
    host = options.listen_host or "0.0.0.0"  # mitmproxy's empty host: every address
    host = f"[{host}]" if ":" in host else host  # an IPv6 address, as a URL writes it
    shown = f"ranking {options.pagerank_ranking}"
    if levels_only:
        shown = (
            "ranking "
            + " and ".join(f"{head.name} of {head.level}s" for head in levels_only)
            + ": the store ranks no pages"
        )
    return (
        f"pagerank-proxy: listening on http://{host}:{options.listen_port if port is None else port}/ "
        f"with {options.rankstore} ({shown}); its own pages at http://pagerank.proxy/"
    )


class _QuietStopPolicy(asyncio.DefaultEventLoopPolicy):
    """Event loops whose error handler is silent on cancelled tasks, and on tasks left once stopped.

    When mitmproxy stops, the tasks of the connections still open are
    cancelled (and those accepted at that moment left pending), and asyncio
    logs each one, with a traceback: a stop under load would print dozens.  mitmproxy puts back the loop's own handler
    when it stops, so it is set here, on the loop from the start.
    """

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        loop.set_exception_handler(_quiet_cancellations)
        return loop


def _quiet_cancellations(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    if "task" in context and not loop.is_running():  # a connection accepted as the loop stopped, left pending
        return
    loop.default_exception_handler(context)


def _options_problem(
    store: str, ranking: str, panel: int, idle_timeout: int, given: dict[str, str], record: str = ""
) -> str | None:
    """Why the addons would refuse their options (ours, or those set after ``--``), or None."""
    from mitmproxy import exceptions

    from proxy_addon import options
    from proxy_addon.deadlines import check_idle_timeout
    from proxy_addon.record import parse_record_settings

    def number(name: str, default: int) -> int:
        value = given.get(name)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise exceptions.OptionsError(f"{name} must be a whole number, not {value!r}") from None

    try:
        options.parse_settings(
            store,
            ranking,
            number("pagerank_max_body", options.MAX_BODY),
            number("pagerank_panel", panel),
            number("pagerank_max_links", options.MAX_LINKS),
            number("pagerank_large_page_rate", options.LARGE_PAGE_RATE),
            number("pagerank_inline_bytes", options.INLINE_BYTES),
        )
        check_idle_timeout(number("pagerank_idle_timeout", idle_timeout))
        number("pagerank_workers", 0)
        parse_record_settings(given.get("pagerank_record", record), False, (), False)
    except exceptions.OptionsError as error:
        return str(error)
    return None


def _port_problem(port: int) -> str | None:
    """Why a port cannot be listened on whatever the machine, or None (0: any free port)."""
    if not 0 <= port <= 65535:
        return f"--port must be between 0 (any free port) and 65535, not {port}"
    return None


def known_options() -> list[str]:
    """The names of the addon's options, as its ``load`` hook declares them to mitmproxy."""
    from types import SimpleNamespace

    from mitmproxy.addonmanager import Loader
    from mitmproxy.optmanager import OptManager

    from proxy_addon.addon import PageRankProxy

    manager = OptManager()
    PageRankProxy().load(Loader(SimpleNamespace(options=manager)))
    return sorted(manager.keys())


def _unknown_option_problem(extra: list[str]) -> str | None:
    """Why an option set after ``--`` is refused (:func:`~proxy_addon.options.unknown_option_problem`), or
    None; with a script of the user's (``-s``) left to the addon once the scripts have declared their options."""
    from proxy_addon.options import OUR_PREFIXES, unknown_option_problem

    if _flag_values(extra, "--scripts", "-s"):
        return None
    given = extra_settings(extra)
    if not any(name.startswith(OUR_PREFIXES) for name in given):
        return None
    known = known_options()
    for name in given:
        problem = unknown_option_problem(name, known)
        if problem:
            return problem
    return None


def _exclude_problem(patterns: list[str]) -> str | None:
    """Why a --record-exclude pattern cannot be read, or None."""
    from mitmproxy import exceptions

    from proxy_addon.record import exclude_patterns

    try:
        exclude_patterns(patterns)
    except exceptions.OptionsError as error:
        return str(error)
    return None


def _flag_values(extra: list[str], long: str, short: str = "") -> list[str]:
    """The values a flag of mitmdump's is given among its arguments, in order: ``--flag V``, ``--flag=V``, and
    ``-s V`` or ``-sV`` for its short form."""
    values = []
    for flag, value in zip(extra, extra[1:] + [""]):
        if flag == long or (short and flag == short):
            values.append(value)
        elif flag.startswith(long + "="):
            values.append(flag[len(long) + 1 :])
        elif short and flag.startswith(short) and not flag.startswith("--") and len(flag) > len(short):
            values.append(flag[len(short) :])
    return values


def _set_values(extra: list[str], name: str) -> list[str]:
    """The values ``--set NAME=V`` gives among mitmdump's arguments, in order (both spellings of ``--set``)."""
    specs = _flag_values(extra, "--set")
    return [spec.partition("=")[2] for spec in specs if spec.partition("=")[0] == name]


def _exposure_problem(args: argparse.Namespace, extra: list[str]) -> str | None:
    """Why the proxy must not listen where it is told, as mitmdump will read its arguments (its flags over
    ``--set``, the last of each), or None: beyond loopback with no password (:mod:`.exposure`).  What only
    mitmdump's own reading shows (its config.yaml, a flag abbreviated) is checked again once it has read them."""
    if args.no_auth and args.proxyauth is not None:
        return "--no-auth and --proxyauth contradict each other: give one"
    hosts = [*_set_values(extra, "listen_host"), *_flag_values(extra, "--listen-host")]
    modes = _flag_values(extra, "--mode", "-m") or _set_values(extra, "mode")
    proxyauth = [args.proxyauth, *_set_values(extra, "proxyauth"), *_flag_values(extra, "--proxyauth")]
    listen_host = hosts[-1] if hosts else args.listen_host
    return _proxyauth_problem(proxyauth[-1]) or open_proxy_problem(
        exposed_hosts(listen_host, modes), proxyauth[-1], args.no_auth
    )


def _proxyauth_problem(spec: str | None) -> str | None:
    """Why mitmproxy's proxyauth addon would refuse this spec (once listening, in a line of mitmdump's), or None;
    an LDAP spec is left to it (checking one means connecting to its server).  The spec is not repeated: it may
    hold a password."""
    if not spec or spec == "any" or spec.startswith("ldap"):
        return None
    if spec.startswith("@"):
        from mitmproxy import exceptions
        from mitmproxy.addons.proxyauth import Htpasswd

        try:
            Htpasswd(spec)
        except exceptions.OptionsError as error:
            return f"--proxyauth: {error}"
        return None
    if spec.count(":") != 1:
        return "--proxyauth must be USER:PASS (one colon), @HTPASSWD_FILE, any, or ldap[s]:..."
    return None


def _store_problem(store: str, ranking: str, given: dict[str, str] | None = None) -> str | None:
    """Why the proxy cannot serve from this store, or None (the default ranking may be missing from a store that
    ranks only hosts or sites: :func:`~proxy_addon.ranks.shown_ranking`)."""
    from proxy_addon.ranks import LevelChoice, shown_ranking
    from rankstore.store import Store, StoreError

    given = given or {}
    levels = LevelChoice(given.get("pagerank_host_ranking", ""), given.get("pagerank_site_ranking", ""))
    try:
        with Store(store, readonly=True) as opened:
            shown_ranking(opened, ranking, levels)
    except StoreError as error:
        return str(error)
    return None


if __name__ == "__main__":
    main()
