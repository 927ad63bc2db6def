"""The docs by task (issue 33, 5): README's layout, its option tables held equal to the code's declarations,
every command it shows parsing, BENCHMARKS.md as one table of what stands per area, and docs/ARCHITECTURE.md
under 40,000 bytes, naming only modules, paths and files the repository has.

The option tables are written by tools/gen_options_table.py from mitmproxy's option manager (the addon's
``load``), pagerank-proxy's argparse parser and click's own objects; the test writes them again and compares.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import shlex
import sys

import click
import pytest

from proxy_addon import cli as proxy_cli
from proxy_addon import options as proxy_options
from rankstore.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
BENCHMARKS = os.path.join(ROOT, "BENCHMARKS.md")
ARCHITECTURE = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
OPTIONS = os.path.join(ROOT, "docs", "OPTIONS.md")
REGENERATE = "python tools/gen_options_table.py"

TWO_COMMANDS = """```sh
# 1. set up on a fresh machine and run the main job on the embedded default: serve
#    python3.11-doc on 127.0.0.1, crawl it with wget, build and rank the store, and
#    start the PageRank proxy in front of it (it prints the address to browse)
bash tools/setup.sh && .venv/bin/python tools/demo.py

# 2. set up and pass the tests
bash tools/setup.sh && .venv/bin/python -m pytest
```"""
# One section per thing a user does, in this order (others may come between)
TASKS = ["Quick start", "Browse through the proxy", "Load a crawl", "Rank", "Watch competitors", "SQL", "Spark",
         "Troubleshooting", "Options"]  # fmt: skip
BENCH_COLUMNS = ["command", "date", "commit", "ours", "peer", "ratio", "target"]


def _generator():
    path = os.path.join(ROOT, "tools", "gen_options_table.py")
    spec = importlib.util.spec_from_file_location("gen_options_table", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gen = _generator()


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def _headings(text: str, level: str = "## ") -> list[str]:
    return [line[len(level) :].strip() for line in text.splitlines() if line.startswith(level)]


def _code_lines(text: str) -> list[str]:
    """The lines of the ```sh blocks, joined where they continue with a backslash."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh"
            continue
        if inside:
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + line.strip()
            else:
                lines.append(line.strip())
    return lines


def _invocations(text: str, program: str) -> list[list[str]]:
    out = []
    for line in _code_lines(text):
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words and words[0] == program:
                out.append(words[1:])
    return out


# The option tables


def test_option_tables_are_what_the_code_declares():
    for path, text in gen.expected().items():
        name = os.path.relpath(path, ROOT)
        assert _read(path) == text, f"{name}'s option table differs from the code's options: run `{REGENERATE}`"


def test_check_mode_says_how_to_regenerate(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "OPTIONS.md"
    stale.write_text(_read(OPTIONS).replace("`pagerank_panel`", "`pagerank_panels`"), encoding="utf-8")
    monkeypatch.setattr(gen, "OPTIONS", str(stale))
    assert gen.main(["--check"]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert gen.main([]) == 0  # and writing it puts it right
    assert stale.read_text(encoding="utf-8") == _read(OPTIONS)


def test_proxy_table_follows_the_addon_and_the_flags(monkeypatch):
    table = gen.proxy_table()
    rows = {row.option: row for row in gen.proxy_rows()}
    # every option mitmproxy gets from the addon, and the flags of pagerank-proxy, each once
    flags = [a.option_strings[0] for a in proxy_cli.parser()._actions if a.option_strings and a.dest != "help"]
    assert sorted(row.flag for row in rows.values() if row.flag) == sorted(flags)
    assert rows["pagerank_panel"].flag == "--panel" and rows["rankstore"].flag == "--store"
    assert rows["listen_port"].flag == "--port"
    assert rows["pagerank_workers"].default == "the cores, at most 4"  # the same table on any machine
    assert "`8388608` (8 MiB)" in rows["pagerank_max_body"].default
    # mitmproxy's own options: its default first, for `mitmdump -s` users, then pagerank-proxy's where it differs
    assert rows["listen_host"].default == "mitmproxy's: every address (pagerank-proxy: `127.0.0.1`)"
    assert rows["listen_port"].default == "mitmproxy's: `8080`"
    # a changed default or a new option changes the table
    monkeypatch.setattr(proxy_options, "MAX_LINKS", 12345)
    assert "`12345`" in gen.proxy_table() and gen.proxy_table() != table


def test_rankstore_tables_follow_click(monkeypatch):
    commands = {command.name: command for command in gen.rankstore_commands()}
    assert sorted(commands) == sorted(cli.commands)
    for name, command in cli.commands.items():
        shown = [row.option for row in commands[name].rows]
        visible = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
        assert len(shown) == len(visible), name
        for param, row in zip(visible, shown):
            assert all(opt in row for opt in param.opts), (name, row)
    damping = next(row for row in commands["rank"].rows if "--damping" in row.option)
    assert damping.default == "`0.85`"
    assert commands["top"].rows[0].default == "`$RANKSTORE`, else `rankstore.db`"
    limit = next(p for p in cli.commands["top"].params if p.name == "limit")
    monkeypatch.setattr(limit, "default", 77)
    assert "`77`" in gen.rankstore_tables()


def test_hidden_options_stay_out():
    hidden = [p for p in cli.commands["info"].params if isinstance(p, click.Option) and p.hidden]
    assert hidden, "info's --json is hidden"
    info = next(command for command in gen.rankstore_commands() if command.name == "info")
    assert not any("--json" in row.option for row in info.rows)
    assert "| `--json" not in gen.rankstore_tables()


# README's layout


def test_readme_is_by_task_and_short():
    text = _read(README)
    assert len(text.encode()) < 12_000, f"README.md is {len(text.encode())} bytes: move detail to docs/ARCHITECTURE.md"
    assert text.split("\n```sh", 1)[0].startswith("# pagerank-proxy\n")  # what it is, then the two commands
    first_block = text[text.index("```sh") : text.index("```\n", text.index("```sh") + 5) + 3]
    assert first_block == TWO_COMMANDS
    headings = _headings(text)
    assert [h for h in headings if h in TASKS] == TASKS, headings
    assert headings[0] == "Quick start"


def test_readme_contents_name_every_section():
    text = _read(README)
    contents = text[text.index("**Contents**") : text.index("## Quick start")]
    anchors = re.findall(r"\]\(#([^)]+)\)", contents)
    slugs = [re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-") for heading in _headings(text)]
    assert anchors == slugs


@pytest.mark.parametrize("path", [README, OPTIONS])
def test_links_stay_inside_the_repository(path):
    text = _read(path)
    assert not re.search(r"<https?://", text), "an autolink out of the repository"
    for target in re.findall(r"\]\(([^)]+)\)", text):
        assert not re.match(r"[a-z]+:", target), target
        file = target.split("#")[0]
        if file:
            assert os.path.exists(os.path.join(os.path.dirname(path), file)), target


def test_no_words_a_newcomer_cannot_look_up():
    for path in (README, BENCHMARKS):
        text = _read(path)
        found = re.findall(r"\bissue \d+|\bseed \d{3}\b|\bseed notes?\b", text, flags=re.IGNORECASE)
        assert not found, f"{os.path.basename(path)}: {found}"


# Every command shown parses


def test_readme_rankstore_commands_parse():
    invocations = _invocations(_read(README), "rankstore")
    assert len(invocations) >= 30
    assert {words[0] for words in invocations} >= {"build", "rank", "backlinks", "intersect", "compare", "export"}
    for words in invocations:
        command = cli.commands[words[0]]
        with command.make_context(words[0], words[1:], parent=cli.make_context("rankstore", [words[0]])):
            pass  # parsed by the command's own options: every name and choice is one it takes


def test_readme_proxy_commands_parse():
    invocations = _invocations(_read(README), "pagerank-proxy")
    assert invocations
    parser = proxy_cli.parser()
    parser.exit_on_error = False
    for words in invocations:
        own = words[: words.index("--")] if "--" in words else words
        assert isinstance(parser.parse_args(own), argparse.Namespace)


# BENCHMARKS.md


def test_benchmarks_stand_per_area_in_one_table():
    text = _read(BENCHMARKS)
    assert len(text.encode()) < 25_000
    areas = text.split("\n## ")[1:]
    assert len(areas) >= 6
    for area in areas:
        name = area.splitlines()[0]
        heads = [line for line in area.splitlines() if line.startswith("| command |")]
        assert len(heads) == 1, f"{name}: {len(heads)} tables of what stands"
        assert [cell.strip() for cell in heads[0].strip("|").split("|")] == BENCH_COLUMNS, name
        rows = area.split(heads[0], 1)[1].splitlines()[2:]
        rows = [row for row in rows[: next((i for i, r in enumerate(rows) if not r.startswith("|")), len(rows))]]
        assert rows, name
        for row in rows:
            cells = [cell.strip() for cell in row.strip("|").split("|")]
            assert len(cells) == len(BENCH_COLUMNS), row
            command, date, commit, ours = cells[:4]
            assert command and ours, row
            assert re.search(r"20\d\d-\d\d", date) or date.startswith("before"), row
            assert re.fullmatch(r"[0-9a-f]{7,}( .*)?|not recorded|before .*", commit), row
        prose = area.split(heads[0], 1)[0] + "\n".join(area.split(heads[0], 1)[1].splitlines()[len(rows) + 2 :])
        assert "How it is measured" in prose or "how it is measured" in prose, name


def test_export_columns_are_said_in_options_md(monkeypatch):
    """Each export column's meaning, as rankstore.columns declares it, is in docs/OPTIONS.md's table."""
    from rankstore import columns

    text = open(os.path.join(ROOT, "docs", "OPTIONS.md"), encoding="utf-8").read()
    for table in [*columns.TABLE_COLUMNS.values(), *columns.SCORE_COLUMNS.values(), (columns.SPAM_MASS,)]:
        for column in table:
            assert f"| `{column.name}` | {column.kind} | {column.meaning} |" in text
    monkeypatch.setattr(columns, "SPAM_MASS", columns.Column("spam_mass", "float64", "a new meaning"))
    assert "a new meaning" in gen.export_columns()


# docs/ARCHITECTURE.md: the map is short and names only what exists

PACKAGES = ("rankstore", "proxy_addon", "tools", "tests")
# paths in the repository (files or folders), dotted module names (maybe with a name defined in the module),
# and bare file names in backticks
REPO_PATH = re.compile(r"\b(?:" + "|".join(PACKAGES) + r")/[\w./-]*[\w/]")
DOTTED = re.compile(r"\b(?:rankstore|proxy_addon)(?:\.[A-Za-z_]\w*)+")
# a package's module by its short name, as the modules table writes them: `store.levels`, `pages.gate`
SHORT_DOTTED = re.compile(r"`((?:store|sources|solver|crawl|pages|spark)(?:\.[A-Za-z_]\w*)+)`")
BARE_FILE = re.compile(r"(?<![\w/.])[A-Za-z_]\w*\.(?:pyi?|c|h)\b")
NOT_MODULES = {"db", "md", "toml", "txt", "json", "csv", "gz", "parquet", "warc"}  # rankstore.db is a file


def _files_by_name() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for top in PACKAGES:
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                found.setdefault(name, []).append(os.path.relpath(os.path.join(folder, name), ROOT))
    return found


def _defined(path: str) -> set[str]:
    """Every name a module defines or imports, at any depth (a class's methods too)."""
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _resolve_dotted(name: str) -> str | None:
    """None if the name is a module of the repository (or a name one defines), else why not."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        base = os.path.join(ROOT, *parts[:end])
        module = next((p for p in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(p)), None)
        if module is None:
            continue
        rest = parts[end:]
        missing = [part for part in rest if part not in _defined(module)]
        if missing:
            return f"{name}: {'.'.join(parts[:end])} defines no {missing[0]}"
        return None
    return f"{name}: no such module"


def architecture_misses(text: str) -> list[str]:
    """The modules, paths and files the text names that the repository lacks."""
    misses = []
    for path in sorted(set(REPO_PATH.findall(text))):
        if not os.path.exists(os.path.join(ROOT, path)):
            misses.append(f"{path}: no such path")
    for name in sorted(set(DOTTED.findall(text))):
        if name.rsplit(".", 1)[1] not in NOT_MODULES:
            why = _resolve_dotted(name)
            if why:
                misses.append(why)
    for name in sorted(set(SHORT_DOTTED.findall(text))):
        whys = [_resolve_dotted(f"{package}.{name}") for package in ("rankstore", "proxy_addon")]
        if all(whys):
            misses.append(f"{name}: neither {whys[0]} nor {whys[1]}")
    files = _files_by_name()
    for name in sorted(set(BARE_FILE.findall(text))):
        if name not in files:
            misses.append(f"{name}: no such file")
    return misses


def test_architecture_is_short():
    size = len(_read(ARCHITECTURE).encode())
    assert size < 40_000, f"docs/ARCHITECTURE.md is {size} bytes: the map stays under 40,000"


def test_architecture_names_only_modules_that_exist():
    text = _read(ARCHITECTURE)
    named = REPO_PATH.findall(text) + DOTTED.findall(text) + SHORT_DOTTED.findall(text) + BARE_FILE.findall(text)
    assert len(set(named)) >= 60, "the map names the modules it describes"
    misses = architecture_misses(text)
    assert not misses, "docs/ARCHITECTURE.md names what the repository lacks: " + "; ".join(misses)


def test_a_module_the_repository_lacks_is_caught():
    """The check itself: each kind of name, once real and once made up."""
    real = (
        "`rankstore/store/levels.py`, rankstore.store.levels, `levels.py`, proxy_addon.ranks.shown_ranking, "
        "`store.levels`, `pages.gate`, `_fastscan.c`, rankstore.db"
    )
    assert architecture_misses(real) == []
    made_up = (
        "`rankstore/store/level.py`, rankstore.store.levle, `level.py`, proxy_addon.ranks.shown_rankings, "
        "tools/bench_nothing.py, rankstore/nothing/, `store.levle`, `_fastscan.h`"
    )
    assert architecture_misses(made_up) == [
        "rankstore/nothing/: no such path",
        "rankstore/store/level.py: no such path",
        "tools/bench_nothing.py: no such path",
        "proxy_addon.ranks.shown_rankings: proxy_addon.ranks defines no shown_rankings",
        "rankstore.store.levle: rankstore.store defines no levle",
        "store.levle: neither rankstore.store.levle: rankstore.store defines no levle nor proxy_addon.store.levle: "
        "proxy_addon defines no store",
        "_fastscan.h: no such file",
        "level.py: no such file",
    ]
