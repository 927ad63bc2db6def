"""Every command's --help ends with examples, and they run as given (issue 33, 7).

Each command of ``rankstore`` (and the group itself) is asked for ``--help``
through CliRunner: its text ends with an ``Example:``/``Examples:`` block.
Every ``rankstore`` line of that block is parsed by the command's own options
(a renamed option or a choice no longer offered fails here), and run as given
in a directory holding a ranked store at the default path (``rankstore.db``,
and ``site.db`` which some examples name), except the few listed in
``NOT_RUN`` with the reason they cannot run here.
"""

from __future__ import annotations

import os
import shlex
import shutil

import pytest
from click.testing import CliRunner

from rankstore.cli import cli

from conftest import run

COMMANDS = sorted(cli.commands)

# What an example needs that a test cannot give it: a site on the network, a crawl or file of one's own.
NOT_RUN = {
    "competitor.example": "a rival's site, not in the test store",
    "docs.example.co.uk": "a page of another site, not in the test store",
    "a.example": "sites not in the test store",
    "site.warc.gz": "a crawl of one's own",
    "recrawl.warc.gz": "a crawl of one's own",
    "mirror/": "a saved site of one's own",
    "edges.tsv.gz": "a graph of one's own",
    "crawl.warc.gz": "a crawl of one's own",
    "*.warc": "crawl files of one's own",
    "*.wat.gz": "Common Crawl's WAT files, from the network",
    "~/browsing": "a record of one's own browsing (pagerank-proxy --record)",
    "my.db": "a store of one's own browsing (its visits)",
    "cc-": "Common Crawl's files, from the network",
    "s3://": "Common Crawl's files, from the network",
    "https://": "a site of one's own, or from the network",
    "urls.txt": "URL lists of one's own",
    "competitors.txt": "a list of one's own targets (and watch exits 1 when they changed)",
    "seeds.txt": "URL lists of one's own",
    "spam.txt": "URL lists of one's own",
    "--engine spark": "a Spark installation",
    "--ranking trust": "a TrustRank of one's own seeds",
    "--ranking siterank": "a site ranking from a domain graph",
    "--what sites": "a site ranking from a domain graph",
    "pagerank@3": "three versions of a ranking",
    "cc-pagerank": "Common Crawl's ranks",
    "127.0.0.1:8000": "the docs as served on port 8000; the test serves them on a port of its own",
}


def _help(*args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--help"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _examples(text: str) -> list[str]:
    """The lines of the help's last block, which must be its examples: the text before ``Options:``."""
    described = text.split("\nOptions:")[0].rstrip()
    blocks = described.split("\n\n")
    heads = [i for i, block in enumerate(blocks) if block.strip().startswith(("Example:", "Examples:"))]
    assert heads, "no Example: block"
    assert heads[-1] == len(blocks) - 1 or all(block.startswith("      ") for block in blocks[heads[-1] + 1 :]), (
        "the examples are not the help's last block"
    )
    lines = "\n".join(blocks[heads[-1] :]).splitlines()[1:]
    return [line.strip() for line in lines if line.strip()]


def _commands(example: str) -> list[list[str]]:
    """The rankstore commands of an example line, without a redirection or a comment; `&&` chains several."""
    out = []
    for part in example.split("&&"):
        words = shlex.split(part, comments=True)
        if ">" in words:
            words = words[: words.index(">")]
        if words and words[0] == "rankstore":
            out.append(words[1:])
    return out


@pytest.mark.parametrize("name", [None, *COMMANDS])
def test_help_ends_with_examples_that_parse(name):
    args = [name] if name else []
    examples = _examples(_help(*args))
    commands = [words for line in examples for words in _commands(line)]
    assert commands, f"{name}: no `rankstore` example"
    for words in commands:
        command = cli.commands[words[0]]
        with command.make_context(words[0], words[1:], parent=cli.make_context("rankstore", [words[0]])):
            pass  # parsed by the command's own options: every name and choice is one it takes


@pytest.fixture(scope="module")
def home(python_doc_store, tmp_path_factory):
    """A directory with a ranked store (two versions of pagerank, and hostrank) at the default path and as
    site.db."""
    work = tmp_path_factory.mktemp("examples")
    path = str(work / "rankstore.db")
    shutil.copy(python_doc_store, path)
    run("rank", "--store", path, "-q")
    run("rank", "--store", path, "-q", "--damping", "0.8")  # a second version, with other parameters
    run("rank", "--level", "host", "--store", path, "-q")
    shutil.copy(path, work / "site.db")
    return work


def _runnable() -> list[tuple[str, str]]:
    out = []
    for name in COMMANDS:
        text = _help(name)
        if "Example" not in text:
            continue  # test_help_ends_with_examples_that_parse says so
        for line in _examples(text):
            if line.startswith("rankstore") and not any(need in line for need in NOT_RUN):
                out.append((name, line))
    return out


RUNNABLE = _runnable()


def test_most_commands_have_an_example_run_here():
    assert len({name for name, _ in RUNNABLE}) >= 8, sorted({name for name, _ in RUNNABLE})


@pytest.mark.parametrize("name, example", RUNNABLE)
def test_example_runs_as_given(home, monkeypatch, name, example):
    monkeypatch.chdir(home)
    monkeypatch.delenv("RANKSTORE", raising=False)
    for words in _commands(example):
        result = CliRunner().invoke(cli, words, catch_exceptions=False)
        assert result.exit_code == 0, f"{example}: {result.output}"
    for made in ("pagerank.png", "ranks.parquet", "links.parquet"):
        if made in example:
            assert os.path.getsize(home / made) > 0
