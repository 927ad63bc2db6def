"""Sites: a host's registered domain (the Public Suffix List's eTLD+1, private section included), numbered."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from rankstore.cli import cli
from rankstore.store import Store
from rankstore.urls import site_of


@pytest.mark.parametrize(
    "host, site",
    [
        ("www.example.com", "example.com"),
        ("example.com", "example.com"),
        ("www.example.com:8080", "example.com"),  # a site has no port
        ("a.b.example.co.uk", "example.co.uk"),
        ("user.github.io", "user.github.io"),  # the list's private section: each user's pages are a site
        ("a.b.user.github.io", "user.github.io"),
        ("a.b.c.blogspot.com", "c.blogspot.com"),
        ("www.xn--fiqs8s", "www.xn--fiqs8s"),  # 中国 is an IDN TLD: www.中国 is registered under it
        ("a.b.xn--55qx5d.cn", "b.xn--55qx5d.cn"),  # 公司.cn is a public suffix of two labels
        ("foo.bar.unknowntld", "bar.unknowntld"),  # an unlisted TLD counts as one label, as browsers do
        # no registered domain: the host stands as its own site, port and all
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.1:8701", "127.0.0.1:8701"),
        ("[::1]:8080", "[::1]:8080"),
        ("localhost", "localhost"),
        ("localhost:8000", "localhost:8000"),
        ("co.uk", "co.uk"),
        ("github.io", "github.io"),
        ("intranet", "intranet"),
    ],
)
def test_a_hosts_site_is_its_registered_domain(host, site):
    assert site_of(host) == site


def _edges(tmp_path, text: str) -> str:
    path = tmp_path / "edges.tsv"
    path.write_text(text)
    return str(path)


def test_a_build_numbers_each_hosts_site_once_in_order_of_first_appearance(tmp_path):
    path = str(tmp_path / "s.db")
    edges = _edges(
        tmp_path,
        "https://www.example.co.uk/\thttps://shop.example.co.uk/a\n"
        "https://shop.example.co.uk/a\thttps://user.github.io/\n"
        "https://user.github.io/\thttp://127.0.0.1:8701/\n",
    )
    assert CliRunner().invoke(cli, ["build", edges, "--store", path, "-q"]).exit_code == 0
    with Store(path) as store:
        sites = [(b.names, b.hosts) for b in store.sites.site_batches()]
        assert sites == [(("example.co.uk", "user.github.io", "127.0.0.1:8701"), (2, 1, 1))]
        hosts = store.hosts.host_names(range(1, store.hosts.host_count() + 1))
        by_host = dict(zip((hosts[i + 1] for i in range(len(hosts))), store.sites.host_sites().tolist()))
        assert by_host == {"www.example.co.uk": 1, "shop.example.co.uk": 1, "user.github.io": 2, "127.0.0.1:8701": 3}
    # a later build adds sites after the known ones, which keep their numbers
    more = _edges(tmp_path, "https://blog.user.github.io/\thttps://other.example.co.uk/\n")
    assert CliRunner().invoke(cli, ["build", more, "--store", path, "-q"]).exit_code == 0
    with Store(path) as store:
        # blog.user.github.io and other.example.co.uk belong to known sites: no new one
        assert [b.names for b in store.sites.site_batches()] == [("example.co.uk", "user.github.io", "127.0.0.1:8701")]
        assert store.sites.site_id("user.github.io") == 2 and store.sites.host_sites().tolist()[-2:] == [2, 1]


def test_an_upgrade_to_schema_8_numbers_the_sites_of_the_hosts_it_has(tmp_path):
    path = str(tmp_path / "s.db")
    edges = _edges(tmp_path, "https://a.example.com/\thttps://b.example.com/\nhttps://b.example.com/\thttps://x.org/\n")
    assert CliRunner().invoke(cli, ["build", edges, "--store", path, "-q"]).exit_code == 0
    with sqlite3.connect(path) as db:  # as schema 7 left it: no sites
        db.execute("DROP VIEW current_scores")
        db.execute("DROP TABLE sites")
        db.execute("DROP TABLE host_sites")
        db.execute("DELETE FROM meta WHERE key = 'sites_hosts'")
        db.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    with Store(path) as store:
        assert [b.names for b in store.sites.site_batches()] == [("example.com", "x.org")]
        assert store.sites.host_sites().tolist() == [1, 1, 2]
        assert store.db.execute("SELECT count(*) FROM current_scores").fetchone()[0] == 0


def test_sites_and_hosts_named_without_pages_are_numbered_after_the_known_ones(tmp_path):
    path = str(tmp_path / "s.db")
    edges = _edges(tmp_path, "https://a.example.com/\thttps://x.org/\n")
    assert CliRunner().invoke(cli, ["build", edges, "--store", path, "-q"]).exit_code == 0
    with Store(path) as store:
        with store.transaction():
            assert store.sites.ensure_sites(["x.org", "new.net", "new.net", "example.com"]).tolist() == [2, 3, 3, 1]
            assert store.hosts.ensure_hosts(["x.org", "www.other.co.uk"]).tolist() == [2, 3]
        assert [b.names for b in store.sites.site_batches()] == [("example.com", "x.org", "new.net", "other.co.uk")]
        assert store.sites.host_sites().tolist() == [1, 2, 4]
