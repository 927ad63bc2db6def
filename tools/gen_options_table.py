#!/usr/bin/env python3
"""Write the option tables of docs/OPTIONS.md (the proxy's, each rankstore command's) from the code's declarations.

    python tools/gen_options_table.py          # rewrite the tables between their markers
    python tools/gen_options_table.py --check  # exit 1 when a file is not what this would write

The proxy's options are read as mitmproxy reads them: the addon's ``load`` hook is
given mitmproxy's own ``Loader``, over an empty option manager, and the
``pagerank-proxy`` flags come from its argparse parser (each flag's option found by
giving it a marked value and seeing which ``--set`` carries it).  The rankstore
commands' options are read from click's objects (``cli.commands`` and their
``params``).  Nothing here parses source text: a new option or a changed default
changes the tables, and tests/test_docs.py fails until they are written again.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

OPTIONS = os.path.join(ROOT, "docs", "OPTIONS.md")
PROXY_MARK = "proxy-options"
RANKSTORE_MARK = "rankstore-options"
REGENERATE = "python tools/gen_options_table.py"
# Core counts at which a default read from the machine is sampled (the workers' default follows the cores)
CORE_SAMPLES = (1, 2, 4, 8, 64)


@dataclass(frozen=True)
class OptionRow:
    """One line of a table: the option as typed, its default as text, and what it does."""

    option: str
    default: str
    meaning: str
    flag: str = ""  # the proxy's: the pagerank-proxy flag that sets it, if any


@dataclass(frozen=True)
class CommandOptions:
    """A rankstore command, what it is for and its options."""

    name: str
    summary: str
    usage: str
    rows: list[OptionRow]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _size(value: int) -> str:
    """An int default as written, with its size in KiB or MiB when it is a whole number of them."""
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if value >= size and value % size == 0:
            return f"`{value}` ({value // size} {unit})"
    return f"`{value}`"


def _default_text(values: dict[int, object]) -> str:
    """A default from its values at each sampled core count: one value, or how it follows the cores."""
    distinct = {tuple(v) if isinstance(v, list) else v for v in values.values()}  # a sequence's default: a list
    if len(distinct) == 1:
        value = next(iter(distinct))
        if isinstance(value, bool):
            return "on" if value else "off"
        if isinstance(value, int):
            return _size(value)
        return _code(str(value)) if value not in ("", ()) else "empty"
    highest = max(v for v in values.values() if isinstance(v, int))
    if all(value == min(cores, highest) for cores, value in values.items()):
        return f"the cores, at most {highest}"
    return ", ".join(f"{value} on {cores} cores" for cores, value in values.items())


def _addon_options(cores: int) -> dict[str, tuple[object, str]]:
    """name -> (default, help) of every option the PageRank addon adds, on a machine with this many cores."""
    from mitmproxy.addonmanager import Loader
    from mitmproxy.optmanager import OptManager

    from proxy_addon.addon import PageRankProxy

    manager = OptManager()
    with mock.patch("os.cpu_count", return_value=cores):
        PageRankProxy().load(Loader(SimpleNamespace(options=manager)))
    return {name: (option.default, option.help) for name, option in manager._options.items()}


@contextmanager
def _clean_environment() -> Iterator[None]:
    # the tables give the defaults a fresh shell gets, not the ones this shell's $RANKSTORE would make
    with mock.patch.dict(os.environ):
        os.environ.pop("RANKSTORE", None)
        yield


def _proxy_flags() -> dict[str, argparse.Action]:
    """The mitmdump option each pagerank-proxy flag sets -> the flag's argparse action."""
    from proxy_addon import cli

    with _clean_environment():
        parser = cli.parser()
    accepted = set(inspect.signature(cli.mitmdump_args).parameters)
    actions = [action for action in parser._actions if action.dest in accepted]
    marked = {action.dest: f"<{action.dest}>" for action in actions}
    arguments = cli.mitmdump_args(**marked, extra=[])
    settings = dict(value.partition("=")[::2] for flag, value in zip(arguments, arguments[1:]) if flag == "--set")
    by_value = {value: name for name, value in settings.items()}
    return {by_value[marked[action.dest]]: action for action in actions if marked[action.dest] in by_value}


def proxy_rows() -> list[OptionRow]:
    """The proxy's options: every option the addon declares (mitmdump ``--set`` name, default, help), with the
    pagerank-proxy flag that sets it; then the flags that set one of mitmproxy's own options (its core's, or
    its proxyauth addon's); then the flags that set none (option ``""``)."""
    samples = {cores: _addon_options(cores) for cores in CORE_SAMPLES}
    flags = _proxy_flags()
    rows = []
    for name, (_, meaning) in samples[CORE_SAMPLES[0]].items():
        default = _default_text({cores: options[name][0] for cores, options in samples.items()})
        flag = flags.pop(name, None)
        if flag is not None and flag.default != samples[CORE_SAMPLES[0]][name][0]:
            default += f" (pagerank-proxy: {_code(str(flag.default))})"
        rows.append(OptionRow(name, default, meaning, flag.option_strings[0] if flag else ""))
    from mitmproxy.addonmanager import Loader
    from mitmproxy.addons.proxyauth import ProxyAuth
    from mitmproxy.options import Options
    from mitmproxy.proxy.mode_specs import ProxyMode

    mitmproxy = Options()
    ProxyAuth().load(Loader(SimpleNamespace(options=mitmproxy)))
    for name, flag in flags.items():  # mitmproxy's own options that pagerank-proxy sets from a flag
        help_text = re.sub(r"\s*\(default: [^)]*\)$", "", flag.help or "")
        ours = mitmproxy.default(name)
        if name == "listen_host" and not ours:
            shown = "every address"
        elif name == "listen_port" and ours is None:  # the mode's own port
            ours = ProxyMode.parse("regular").default_port
            shown = _code(str(ours))
        elif ours is None:
            shown = "none"
        else:
            shown = _code(str(ours))
        default = f"mitmproxy's: {shown}"
        if flag.default != ours:
            default += f" (pagerank-proxy: {_code(str(flag.default))})"
        rows.append(OptionRow(name, default, help_text, flag.option_strings[0]))
    from proxy_addon import cli

    with _clean_environment():
        actions = cli.parser()._actions
    named = {row.flag for row in rows}
    for action in actions:  # pagerank-proxy's own, which set no option of mitmdump's (--no-auth)
        if action.option_strings and action.dest != "help" and action.option_strings[0] not in named:
            default = "off" if action.default is False else _code(str(action.default))
            rows.append(OptionRow("", default, action.help or "", action.option_strings[0]))
    return rows


def proxy_table() -> str:
    lines = ["| mitmdump `--set` | `pagerank-proxy` | default | what it does |", "|---|---|---|---|"]
    for row in proxy_rows():
        option = _code(row.option) or "none: pagerank-proxy's own"
        lines.append(f"| {option} | {_code(row.flag)} | {_cell(row.default)} | {_cell(row.meaning)} |")
    return "\n".join(lines)


def _click_default(param, context) -> str:
    import click

    if param.envvar:
        names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
        envs = ", ".join(f"`${name}`" for name in names)
        return f"{envs}, else {_code(str(param.default))}"
    if getattr(param, "is_flag", False) and not getattr(param, "secondary_opts", None):
        return "off"
    default = param.get_default(context, call=False)
    if default is None or default == () or default is getattr(click.core, "UNSET", object()):
        return ""
    if isinstance(default, (list, tuple)):
        return ", ".join(_code(str(item)) for item in default)
    return _code(str(default))


def rankstore_commands() -> list[CommandOptions]:
    """Each rankstore command's options, as click holds them (hidden ones left out, as --help leaves them)."""
    import click

    from rankstore.cli import cli

    commands = []
    with _clean_environment():
        for name, command in sorted(cli.commands.items()):
            context = click.Context(command, info_name=name)
            rows = []
            for param in command.params:
                if not isinstance(param, click.Option) or param.hidden:
                    continue
                record = param.get_help_record(context)
                typed = record[0] if record else ", ".join(param.opts)
                rows.append(OptionRow(typed, _click_default(param, context), param.help or ""))
            usage = " ".join(["rankstore", name, *command.collect_usage_pieces(context)])
            commands.append(CommandOptions(name, command.get_short_help_str(limit=300), usage, rows))
    return commands


def rankstore_tables() -> str:
    parts = []
    for command in rankstore_commands():
        parts.append(f"### rankstore {command.name}\n")
        parts.append(f"`{command.usage}`: {command.summary}\n")
        parts.append("| option | default | what it does |\n|---|---|---|")
        parts.extend(f"| `{_cell(row.option)}` | {_cell(row.default)} | {_cell(row.meaning)} |" for row in command.rows)
        parts.append("")
    parts.append(export_columns())
    return "\n".join(parts).rstrip("\n")


def export_columns() -> str:
    """What each column of ``rankstore export`` holds, as :mod:`rankstore.columns` declares it."""
    from rankstore import columns

    parts = ["### rankstore export's columns\n", "| `--what` | column | type | what it holds |", "|---|---|---|---|"]
    tables = [(f"scores, a {level} ranking", table) for level, table in columns.SCORE_COLUMNS.items()]
    tables.insert(1, ("scores, a TrustRank", (columns.SPAM_MASS,)))
    tables += list(columns.TABLE_COLUMNS.items())
    for what, table in tables:
        parts.extend(f"| {what} | `{c.name}` | {c.kind} | {_cell(c.meaning)} |" for c in table)
    return "\n".join(parts)


def fill(text: str, mark: str, body: str) -> str:
    """The text with what lies between ``<!-- mark:begin -->`` and ``<!-- mark:end -->`` replaced by body."""
    begin, end = f"<!-- {mark}:begin -->", f"<!-- {mark}:end -->"
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"expected one {begin} before one {end}")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    notice = f"<!-- generated from the code's declarations by `{REGENERATE}`: edit the code, not this table -->"
    return f"{head}{begin}\n{notice}\n\n{body}\n\n{end}{tail}"


def expected() -> dict[str, str]:
    """Each file this writes -> its text as the code declares it."""
    texts = {}
    with open(OPTIONS, encoding="utf-8") as file:
        texts[OPTIONS] = fill(fill(file.read(), PROXY_MARK, proxy_table()), RANKSTORE_MARK, rankstore_tables())
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file differs from what would be written")
    args = parser.parse_args(argv)
    stale = []
    for path, text in expected().items():
        with open(path, encoding="utf-8") as file:
            if file.read() == text:
                continue
        stale.append(os.path.relpath(path, ROOT))
        if not args.check:
            with open(path, "w", encoding="utf-8") as file:
                file.write(text)
    if args.check and stale:
        print(f"out of date: {', '.join(stale)} (run `{REGENERATE}`)", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
