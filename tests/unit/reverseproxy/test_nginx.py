"""controllers.reverseproxy.nginx.render: golden texts, the original's exact
template, purity, and that no string field can add an nginx directive."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from controllers.reverseproxy.nginx import quote, render
from controllers.reverseproxy.validation import COMBINED_LOG_FORMAT, InvalidSpec, validate

# The prior-art page's ReverseProxy text, with its resolver placeholder filled in.
WHOAMI = """\
daemon off;
pid /tmp/nginx.pid;

worker_processes auto;
worker_rlimit_nofile 65535;

error_log /dev/stdout notice;
error_log /dev/stdout error;

events {
    multi_accept       on;
    worker_connections 1024;
}

http {
    client_body_temp_path /tmp/client_temp;
    proxy_temp_path       /tmp/proxy_temp_path;
    fastcgi_temp_path     /tmp/fastcgi_temp;
    uwsgi_temp_path       /tmp/uwsgi_temp;
    scgi_temp_path        /tmp/scgi_temp;
    log_format operator '$remote_addr - $remote_user [$time_local] "$request" $status \
$body_bytes_sent "$http_referer" "$http_user_agent"';
    access_log /dev/stdout operator;

    server {
        listen 8080;
        resolver 10.96.0.10 ipv6=off;

        location / {
            rewrite ^/foo(.*)$ /bar$1 break;

            proxy_read_timeout 15s;
            proxy_send_timeout 15s;
            proxy_connect_timeout 15s;

            proxy_ssl_server_name on;
            proxy_hide_header server;

            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header host whoami.dev.lin2ur.cn;
            proxy_set_header x-powered-by nginx-operator;

            proxy_pass "https://whoami.dev.lin2ur.cn";
        }

        location = /_/ping {
            access_log off;
            return 200 '.';
        }
    }

    server {
        listen 3001;

         location = /_/ping {
             access_log off;
             return 200 '.';
         }
    }
}"""

# The page's stream block; the http block before it is WHOAMI's minus its
# log lines and 8080 server.
DB_STREAM = """
stream {
    upstream servers {
        hash $remote_addr consistent;
        server db-0.db:5432 weight=2;
        server db-1.db:5432 max_conns=100;
    }
    resolver 10.96.0.10 ipv6=off;

    server {
        listen 8080 ;

        proxy_timeout 10m;

        proxy_pass servers;
    }
}"""


def test_golden(case: str, golden: Any) -> None:
    expected = golden.path(case, "nginx.conf")
    text = render(golden.load(case))
    if golden.may_update(case, "nginx.conf"):
        expected.write_text(text)
    assert text == expected.read_text()


def test_prior_art_texts_byte_for_byte(golden: Any) -> None:
    # The golden files are the page's texts; the literals guard the files themselves.
    assert golden.path("whoami", "nginx.conf").read_text() == WHOAMI
    assert render(golden.load("whoami")) == WHOAMI
    head = WHOAMI.split("\n    log_format")[0]
    probe = WHOAMI[WHOAMI.index("\n\n    server {\n        listen 3001;") :]
    assert golden.path("db", "nginx.conf").read_text() == head + probe + DB_STREAM
    db = render(golden.load("db"))
    assert db == head + probe + DB_STREAM
    assert not db.endswith("\n")


def minimal(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nginx.lin2ur.cn/v1",
        "kind": "ReverseProxy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"proxyPass": "http://up:8000", **spec},
    }


def tcp(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nginx.lin2ur.cn/v1",
        "kind": "TCPReverseProxy",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {"servers": [{"server": "db:5432"}], **spec},
    }


def test_defaults_of_the_webhook_and_the_crd() -> None:
    text = render(minimal(proxySetHeader={"X-A": "1"}))
    assert f"log_format operator '{COMBINED_LOG_FORMAT}';" in text
    assert "proxy_set_header host up:8000;" in text  # from proxyPass, with its port
    assert "proxy_set_header x-a 1;" in text  # keys lowercased
    assert text.count(" 15s;") == 3
    assert "worker_connections 1024;" in text
    assert "resolver" not in text  # only from spec.resolver, never the controller's
    # "" turns logging off; an explicit host wins
    off = render(minimal(logFormat="", proxySetHeader={"Host": "h"}))
    assert "    access_log off;\n\n    server {" in off and "log_format" not in off
    assert "proxy_set_header host h;" in off


def test_headers_sorted_by_key_after_the_fixed_upgrade_line() -> None:
    text = render(minimal(proxySetHeader={"b": "2", "a": "1", "A-b": "3"}))
    lines = [line.strip() for line in text.splitlines() if "proxy_set_header" in line]
    assert lines == [
        "proxy_set_header Upgrade $http_upgrade;",
        "proxy_set_header a 1;",
        "proxy_set_header a-b 3;",
        "proxy_set_header b 2;",
        "proxy_set_header host up:8000;",
    ]


def test_tcp_listen_and_server_lines() -> None:
    text = render(tcp(servers=[{"server": "a:1", "weight": 5, "maxConns": 7}], protocol="UDP"))
    assert "        server a:1 weight=5 max_conns=7;\n    }\n\n    server {" in text
    assert "listen 8080 udp;" in text
    assert "listen 8080 ;" in render(tcp())
    assert "hash" not in render(tcp(hash=""))


def test_render_is_pure() -> None:
    obj = minimal(proxySetHeader={"X-A": "1"}, rewrite=[{"regex": "^/a", "replacement": "/b"}])
    before = copy.deepcopy(obj)
    assert render(obj) == render(obj)
    assert obj == before
    # the name is not part of the config; a bare spec renders too
    assert render({"kind": "ReverseProxy", "spec": obj["spec"]}) == render(obj)
    assert render({"spec": {"servers": [{"server": "db:5432"}]}}) == render(tcp())


@pytest.mark.parametrize(
    "obj",
    [
        minimal(proxyPass="http://up:8000; return 200"),
        minimal(rewrite=[{"regex": "^/a", "replacement": "/b last; return 418"}]),
        minimal(proxyHideHeader=["server; return 200"]),
        minimal(proxySetHeader={"x-a; return 200": "v"}),
        minimal(proxySetHeader={"x-a": "line\nbreak"}),
        minimal(proxySetHeader={"x-a": "$nonexistent_variable"}),
        minimal(resolver=["1.1.1.1; return 200"]),
        minimal(logFormat="$status\n"),
        minimal(proxyReadTimeout="15s; return 200"),
        tcp(servers=[{"server": "127.0.0.1:5432; server 10.9.9.9:1"}]),
        tcp(hash="$remote_addr; return 200"),
        tcp(protocol="udp"),
    ],
)
def test_invalid_specs_are_refused(obj: dict[str, Any]) -> None:
    with pytest.raises(InvalidSpec) as err:
        render(obj)
    assert err.value.problems and all(p.startswith("spec.") for p in err.value.problems)


# --- no string field can add a directive -----------------------------------------------


def tokens(text: str) -> list[list[str]]:
    """nginx's tokenizer (ngx_conf_read_token) reduced to what matters here:
    the directives and block openings/closings of a config, each as its
    unescaped words. Raises ValueError where nginx would report a syntax error."""
    out: list[list[str]] = []
    words: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "#":
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif ch in ";{}":
            out.append([*words, ch])
            words = []
            i += 1
        elif ch in "\"'":
            j, word = i + 1, []
            while j < len(text) and text[j] != ch:
                if text[j] == "\\" and j + 1 < len(text) and text[j + 1] in "\"'\\":
                    j += 1
                word.append(text[j])
                j += 1
            if j >= len(text):
                raise ValueError("unterminated quote")
            words.append("".join(word))
            i = j + 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in ";{}\"'":
                j += 2 if text[j] == "\\" else 1
            words.append(text[i:j].replace("\\\\", "\\"))
            i = j
    if words:
        raise ValueError("unterminated directive")
    return out


ALPHABET = " ;{}\"'\\#$\t()[]^*.?/azAZ09-_=:,"


def test_random_strings_never_add_a_directive() -> None:
    """For 3,000 random strings in every free-text field: the object is
    refused, or the config has exactly the baseline's directives and the
    field's value comes back as one word, unchanged."""
    rng = random.Random(11)
    fields = {
        "header": lambda v: minimal(proxySetHeader={"x-v": v}),
        "regex": lambda v: minimal(rewrite=[{"regex": v, "replacement": "/r"}]),
        "replacement": lambda v: minimal(rewrite=[{"regex": "^/r", "replacement": v}]),
        "logFormat": lambda v: minimal(logFormat=v),
    }
    baseline = {f: tokens(render(make("plain"))) for f, make in fields.items()}
    rendered = 0
    for _ in range(3000):
        value = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 12)))
        for field, make in fields.items():
            obj = make(value)
            if validate(obj):
                continue
            got = tokens(render(obj))
            rendered += 1
            assert [len(d) for d in got] == [len(d) for d in baseline[field]], (field, value)
            assert [d[0] for d in got] == [d[0] for d in baseline[field]], (field, value)
            assert any(value in d for d in got), (field, value)
    assert rendered > 1000


def test_quote() -> None:
    assert quote("plain/$1") == "plain/$1"
    assert quote("") == '""'
    assert quote('a "b" \\c; {d} #e') == '"a \\"b\\" \\\\c; {d} #e"'
    assert tokens(f"x {quote(chr(92) + 'd+')};") == [["x", "\\d+", ";"]]
