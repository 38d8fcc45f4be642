"""HAR 1.2 from the browser's network events (the DevTools protocol's ``Network`` domain,
read through ChromeDriver's performance log).

Entries carry the request and response headers and cookies, sizes on the wire, timings
and the server address; WebSocket messages go under Chromium's ``_webSocketMessages``.
Bodies are not kept (their bytes are in the pcap).

A response that put no byte of its own on the wire says where it came from in
``_fromCache``: ``memory``, ``disk`` or ``prefetch`` (the browser's caches, which also fill
``cache.beforeRequest``) or ``service-worker``. Such an entry has no body or transfer size
and no network phase in its timings; a cache hit's whole time is ``receive`` ("read from
the server or cache", as HAR 1.2 puts it). A revalidated response (a 304 behind a cached
200) did cross the wire and is not one of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..system.redaction import redact_values
from ..system.version import __version__
from .cookies import request_cookies, response_cookies

Redact = Callable[[str], str]


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")


def _header(raw: Any, name: str) -> str:
    """The value of header ``name`` (any case; repeated ones joined by newlines)."""
    if not isinstance(raw, dict):
        return ""
    return "\n".join(str(v) for k, v in raw.items() if str(k).lower() == name)


def _headers(raw: Any) -> list[dict[str, str]]:
    if not isinstance(raw, dict):
        return []
    out = []
    for name, value in raw.items():
        for line in str(value).split("\n"):  # repeated headers arrive joined by newlines
            out.append({"name": str(name), "value": line})
    return out


def _status_text(extra: dict[str, Any]) -> str:
    """The reason phrase of the raw header text the network service reported, if any."""
    first = str(extra.get("headersText") or "").split("\r\n", 1)[0]
    parts = first.split(" ", 2)
    return parts[2] if len(parts) == 3 and parts[0].startswith("HTTP/") else ""


def _http_version(protocol: str) -> str:
    return {"h2": "HTTP/2", "h3": "HTTP/3", "http/1.0": "HTTP/1.0"}.get(
        protocol.lower(), "HTTP/1.1" if protocol else ""
    )


class _Request:
    def __init__(self, params: dict[str, Any]) -> None:
        self.id = str(params.get("requestId", ""))
        self.request: dict[str, Any] = dict(params.get("request") or {})
        self.wall = float(params.get("wallTime") or 0.0)
        self.start = float(params.get("timestamp") or 0.0)
        self.type = str(params.get("type") or "")
        self.loader = str(params.get("loaderId") or "")
        """The document that sent it; none for a worker's request."""
        self.extra_request: dict[str, Any] = {}
        self.response: dict[str, Any] = {}
        self.extra_response: dict[str, Any] = {}
        self.data_length = 0
        self.encoded = 0
        self.end = 0.0
        self.error = ""
        self.redirect_to = ""
        self.from_memory = False
        """``Network.requestServedFromCache`` came: the renderer's memory cache answered."""

    def entry(self) -> dict[str, Any]:
        res = self.response
        source = _cache_source(res, self.from_memory, self.encoded) if res else ""
        started = _iso(self.wall)
        if source in _BROWSER_CACHES:
            # a memory cache hit repeats the first fetch's ResourceTiming: nothing of it
            # happened this time
            timings = _cache_timings(self.start, self.end)
        else:
            timings = _timings(res.get("timing") or {}, self.start, self.end)
        entry: dict[str, Any] = {
            "startedDateTime": started,
            "time": _total(timings),
            "request": self._request(),
            "response": self._response(source),
            "cache": {},
            "timings": timings,
            "_resourceType": self.type.lower(),
            "_transferSize": 0 if source else self.encoded,
            "_requestId": self.id,
        }
        if source:
            entry["_fromCache"] = source
        if source in _BROWSER_CACHES:
            etag = _header(self.extra_response.get("headers") or res.get("headers"), "etag")
            entry["cache"]["beforeRequest"] = {
                "lastAccess": started,  # the entry's last use before this one is unknown
                "eTag": etag,
                "hitCount": 0,
            }
        if res.get("fromServiceWorker"):
            entry["_fromServiceWorker"] = True
            if res.get("serviceWorkerResponseSource"):
                entry["_serviceWorkerResponseSource"] = str(res["serviceWorkerResponseSource"])
        if res.get("remoteIPAddress"):
            entry["serverIPAddress"] = str(res["remoteIPAddress"]).strip("[]")
        if res.get("connectionId") is not None:
            entry["connection"] = str(res["connectionId"])
        return entry

    def _request(self) -> dict[str, Any]:
        req = self.request
        url = str(req.get("url", ""))
        # the network service's headers are the ones sent (with Cookie); the renderer's
        # are what it asked for
        headers = self.extra_request.get("headers") or req.get("headers") or {}
        post = req.get("postData")
        request: dict[str, Any] = {
            "method": req.get("method", "GET"),
            "url": url,
            "httpVersion": _http_version(str(self.response.get("protocol", ""))),
            "cookies": request_cookies(
                self.extra_request.get("associatedCookies"), _header(headers, "cookie")
            ),
            "headers": _headers(headers),
            "queryString": [
                {"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query, True)
            ],
            "headersSize": -1,
            "bodySize": len(post.encode("utf-8")) if isinstance(post, str) else 0,
        }
        if isinstance(post, str):
            request["postData"] = {"mimeType": _header(headers, "content-type"), "text": post}
        return request

    def _response(self, source: str) -> dict[str, Any]:
        res = self.response
        # A worker's or service worker's own fetches are answered in the worker's session:
        # the page's log may hold only the network service's extra info for them
        extra = self.extra_response
        headers = extra.get("headers") or res.get("headers") or {}
        version = _http_version(str(res.get("protocol", "")))
        # HTTP/1's header block is on the wire as the network service reports it; HTTP/2
        # and 3 compress theirs, so their size is unknown
        text = str(extra.get("headersText") or "")
        headers_size = len(text.encode()) if text and version.startswith("HTTP/1") else -1
        if source:
            body_size = 0
        elif not res:
            body_size = -1
        elif headers_size < 0:
            body_size = self.encoded
        else:  # a redirect's own bytes are never reported
            body_size = self.encoded - headers_size if self.encoded >= headers_size else -1
        response: dict[str, Any] = {
            "status": int(res.get("status") or extra.get("statusCode") or 0),
            "statusText": str(res.get("statusText") or _status_text(extra)),
            "httpVersion": version,
            "cookies": response_cookies(
                _header(headers, "set-cookie"), extra.get("blockedCookies"), self.wall
            ),
            "headers": _headers(headers),
            "content": {
                "size": self.data_length,
                "mimeType": str(
                    res.get("mimeType") or _header(headers, "content-type").split(";")[0].strip()
                ),
            },
            "redirectURL": self.redirect_to,
            "headersSize": -1 if source else headers_size,
            "bodySize": body_size,
        }
        if self.error:
            response["_error"] = self.error
        elif not res and not extra and not self.redirect_to:
            response["_error"] = UNANSWERED if self.loader else UNSEEN
        return response


UNANSWERED = "no response before the item ended"
"""``_error`` of a page's request with no answer (neither headers nor a failure) by the
time the item's events were read."""
UNSEEN = "sent by a worker: its response, if any, is in the worker's own log"
"""``_error`` of a worker's request with no answer in the page's log: a response that
crossed the network is there (the network service reports it), a cache hit is not."""

_BROWSER_CACHES = ("memory", "disk", "prefetch")
"""The browser's own caches, as ``_fromCache`` names them."""


def _cache_source(res: dict[str, Any], from_memory: bool, transfer: int) -> str:
    """Where a response that put no byte of its own on the wire came from (see the module's
    docstring); "" for one that came over the network."""
    if from_memory:
        return "memory"
    if res.get("fromPrefetchCache"):
        return "prefetch"
    # Chromium says "from disk cache" of a revalidated response too, whose 304 crossed the
    # wire, and of an early hint's preload, which was fetched
    if res.get("fromDiskCache") and not res.get("fromEarlyHints") and transfer == 0:
        return "disk"
    if res.get("fromServiceWorker"):
        return "service-worker"
    return ""


_PHASES = ("blocked", "dns", "connect", "send", "wait", "receive")
"""The timings an entry's ``time`` adds up (those not -1): ``ssl`` is not one, HAR 1.2
counts it inside ``connect`` (as Chromium's ``connectStart``-``connectEnd`` does)."""


def _total(timings: dict[str, float]) -> float:
    return round(sum(timings[k] for k in _PHASES if timings.get(k, -1) > 0), 3)


def _cache_timings(start: float, end: float) -> dict[str, float]:
    """HAR timings (ms) of a response the browser read from its cache: no network phase,
    the whole time ``receive``."""
    elapsed = round((end - start) * 1000, 3) if end > start > 0 else 0.0
    return {
        "blocked": -1.0,
        "dns": -1.0,
        "connect": -1.0,
        "ssl": -1.0,
        "send": 0.0,
        "wait": 0.0,
        "receive": elapsed,
    }


def _timings(timing: dict[str, Any], start: float, end: float) -> dict[str, float]:
    """HAR timings (ms) from a ``ResourceTiming``; -1 for phases that did not happen."""

    def span(a: str, b: str) -> float:
        x, y = float(timing.get(a, -1)), float(timing.get(b, -1))
        return round(y - x, 3) if x >= 0 and y >= 0 else -1.0

    if not timing:
        total = round((end - start) * 1000, 3) if end > start > 0 else 0.0
        return {"send": 0.0, "wait": total, "receive": 0.0}
    base = float(timing.get("requestTime", start))
    send_end = float(timing.get("sendEnd", 0.0))
    headers_end = float(timing.get("receiveHeadersEnd", send_end))
    blocked = float(timing.get("dnsStart", -1))
    if blocked < 0:
        blocked = float(timing.get("connectStart", -1))
    if blocked < 0:
        blocked = float(timing.get("sendStart", 0.0))
    receive = (end - base) * 1000 - headers_end if end > 0 else 0.0
    return {
        "blocked": round(max(blocked, 0.0), 3),
        "dns": span("dnsStart", "dnsEnd"),
        "connect": span("connectStart", "connectEnd"),
        "ssl": span("sslStart", "sslEnd"),
        "send": max(span("sendStart", "sendEnd"), 0.0),
        "wait": round(max(headers_end - send_end, 0.0), 3),
        "receive": round(max(receive, 0.0), 3),
    }


class _Socket:
    def __init__(self, params: dict[str, Any]) -> None:
        self.url = str(params.get("url", ""))
        self.messages: list[dict[str, Any]] = []
        self.request_headers: dict[str, Any] = {}
        self.response: dict[str, Any] = {}
        self.wall = 0.0
        self.start = 0.0


_EXTRA_INFO = {
    "Network.requestWillBeSentExtraInfo": "extra_request",
    "Network.responseReceivedExtraInfo": "extra_response",
}
"""The network service's extra info events and the request field each fills."""


def build_har(
    events: Iterable[dict[str, Any]], title: str = "", redact: Redact = str
) -> dict[str, Any]:
    """A HAR document from DevTools ``Network.*`` events (``{"method", "params"}``), in
    the order the browser sent them; every string passes through ``redact``."""
    reader = _Reader()
    for event in events:
        reader.read(event)
    entries = reader.entries()
    started = entries[0]["startedDateTime"] if entries else _iso(0)
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "pytest-netgent", "version": __version__},
            "pages": [
                {
                    "id": "page_1",
                    "startedDateTime": started,
                    "title": title,
                    "pageTimings": {},
                }
            ],
            "entries": [{"pageref": "page_1", **e} for e in entries],
        }
    }
    redacted: dict[str, Any] = redact_values(har, redact)
    return redacted


class _Reader:
    """The browser's network events, read in order into requests and WebSockets."""

    def __init__(self) -> None:
        self.requests: dict[str, _Request] = {}
        """Requests still loading, by request id."""
        self.done: list[_Request] = []
        self.finished: dict[str, _Request] = {}
        """Requests that finished, by id: their extra info may still come."""
        self.early: dict[str, dict[str, dict[str, Any]]] = {}
        """Extra info that came before its request, by request id and field."""
        self.sockets: dict[str, _Socket] = {}
        self.offset: float | None = None
        """Offset between the protocol's monotonic timestamps and the wall clock."""

    def read(self, event: dict[str, Any]) -> None:
        method = str(event.get("method", ""))
        params: dict[str, Any] = event.get("params") or {}
        rid = str(params.get("requestId", ""))
        if method == "Network.requestWillBeSent":
            self._sent(rid, params)
        elif method in _EXTRA_INFO:
            self._extra(rid, _EXTRA_INFO[method], params)
        elif method.startswith("Network.webSocket"):
            self._socket(method, rid, params)
        elif rid in self.requests:
            self._progress(method, rid, params)

    def entries(self) -> list[dict[str, Any]]:
        """Every request's and WebSocket's entry, by start time; requests still loading
        when the item ended too."""
        entries = [r.entry() for r in [*self.done, *self.requests.values()]]
        entries += [_socket_entry(sock, self.offset) for sock in self.sockets.values()]
        entries.sort(key=lambda e: str(e["startedDateTime"]))
        return entries

    def _sent(self, rid: str, params: dict[str, Any]) -> None:
        if params.get("wallTime") and params.get("timestamp"):
            self.offset = float(params["wallTime"]) - float(params["timestamp"])
        url = str((params.get("request") or {}).get("url", ""))
        previous = self.requests.pop(rid, None)
        if previous is not None and params.get("redirectResponse"):
            previous.response = params["redirectResponse"]
            previous.redirect_to = url
            previous.end = float(params.get("timestamp") or 0.0)
            self.done.append(previous)
        if url.startswith(("http://", "https://")):
            request = self.requests[rid] = _Request(params)
            # the network service's extra info may come before the request itself
            for name, extra in self.early.pop(rid, {}).items():
                setattr(request, name, extra)

    def _extra(self, rid: str, name: str, params: dict[str, Any]) -> None:
        # ... or after it finished: it is kept either way
        owner = self.requests.get(rid) or self.finished.get(rid)
        if owner is None:
            self.early.setdefault(rid, {})[name] = params
        elif rid in self.requests or not getattr(owner, name):
            setattr(owner, name, params)

    def _progress(self, method: str, rid: str, params: dict[str, Any]) -> None:
        request = self.requests[rid]
        if method == "Network.requestServedFromCache":
            request.from_memory = True
        elif method == "Network.responseReceived":
            request.response = params.get("response") or {}
        elif method == "Network.dataReceived":
            request.data_length += int(params.get("dataLength") or 0)
            request.encoded += int(params.get("encodedDataLength") or 0)
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            self.finished[rid] = self.requests.pop(rid)
            request.end = float(params.get("timestamp") or 0.0)
            if method == "Network.loadingFinished":
                request.encoded = int(params.get("encodedDataLength") or request.encoded)
            else:
                request.error = str(params.get("errorText") or "failed")
                if params.get("canceled"):
                    request.error += " (canceled)"
            self.done.append(request)

    def _socket(self, method: str, rid: str, params: dict[str, Any]) -> None:
        if method == "Network.webSocketCreated":
            self.sockets[rid] = _Socket(params)
            return
        sock = self.sockets.get(rid)
        if sock is None:
            return
        if method == "Network.webSocketWillSendHandshakeRequest":
            sock.wall = float(params.get("wallTime") or 0.0)
            sock.start = float(params.get("timestamp") or 0.0)
            sock.request_headers = (params.get("request") or {}).get("headers") or {}
        elif method == "Network.webSocketHandshakeResponseReceived":
            sock.response = params.get("response") or {}
        elif method in ("Network.webSocketFrameSent", "Network.webSocketFrameReceived"):
            frame = params.get("response") or {}
            stamp = float(params.get("timestamp") or 0.0)
            sock.messages.append(
                {
                    "type": "send" if method.endswith("Sent") else "receive",
                    "time": round(stamp + (self.offset or 0.0), 3),
                    "opcode": int(frame.get("opcode") or 1),
                    "data": str(frame.get("payloadData") or ""),
                }
            )


def _socket_entry(sock: _Socket, offset: float | None) -> dict[str, Any]:
    wall = sock.wall or (sock.start + (offset or 0.0))
    res = sock.response
    return {
        "startedDateTime": _iso(wall),
        "time": 0,
        "request": {
            "method": "GET",
            "url": sock.url,
            "httpVersion": "HTTP/1.1",
            "cookies": request_cookies(None, _header(sock.request_headers, "cookie")),
            "headers": _headers(sock.request_headers),
            "queryString": [],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": int(res.get("status") or 0),
            "statusText": str(res.get("statusText") or ""),
            "httpVersion": "HTTP/1.1",
            "cookies": response_cookies(_header(res.get("headers"), "set-cookie"), None, wall),
            "headers": _headers(res.get("headers")),
            "content": {"size": 0, "mimeType": ""},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
        "_resourceType": "websocket",
        "_webSocketMessages": sock.messages,
    }


_ANSWERS = {
    "Network.responseReceived",
    "Network.responseReceivedExtraInfo",
    "Network.loadingFinished",
    "Network.loadingFailed",
}
"""The events that say a request had its answer (its headers, or its end)."""


def unanswered(events: Iterable[dict[str, Any]]) -> dict[str, float]:
    """The web requests in ``events`` with no answer yet (sent, and neither their
    response's headers nor their end has come): the wall-clock time each was sent, by
    request id."""
    waiting: dict[str, float] = {}
    for event in events:
        method = str(event.get("method", ""))
        params: dict[str, Any] = event.get("params") or {}
        rid = str(params.get("requestId", ""))
        if method == "Network.requestWillBeSent":
            if str((params.get("request") or {}).get("url", "")).startswith("http"):
                waiting[rid] = float(params.get("wallTime") or 0.0)
        elif method in _ANSWERS:
            waiting.pop(rid, None)
    return waiting


def network_events(log: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``Network.*`` events of ChromeDriver's performance log entries."""
    events = []
    for entry in log:
        try:
            message = json.loads(entry["message"])["message"]
        except (KeyError, TypeError, ValueError):
            continue
        if str(message.get("method", "")).startswith("Network."):
            events.append(message)
    return events
