"""HAR 1.2 cookies from what the browser reports of a request's and a response's cookies:
its Cookie and Set-Cookie headers, and the network service's own account of them
(``associatedCookies``, ``blockedCookies``).

SameSite, which HAR 1.2 predates, goes in ``_sameSite``; a Set-Cookie the browser refused
to keep stays in the response (it was on the wire) with the reasons in ``_blockedReasons``.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any


def request_cookies(associated: Any, header: str) -> list[dict[str, Any]]:
    """The cookies a request sent: the network service's ``associatedCookies`` (with all
    their attributes) but those it blocked, else the pairs of the Cookie ``header``."""
    if isinstance(associated, list):
        return [
            _stored(c.get("cookie") or {})
            for c in associated
            if isinstance(c, dict) and not c.get("blockedReasons")
        ]
    cookies = []
    for part in header.replace("\n", ";").split(";"):
        name, sep, value = part.strip().partition("=")
        if name or value:  # a pair without "=" is a value of no name, as browsers read it
            cookies.append({"name": name if sep else "", "value": value if sep else name})
    return cookies


def response_cookies(header: str, blocked: Any, now: float) -> list[dict[str, Any]]:
    """The cookies of a response's Set-Cookie ``header`` (one line each) received at ``now``
    (epoch seconds); ``blocked`` is the network service's ``blockedCookies``."""
    refused = {
        str(b.get("cookieLine")): [str(r) for r in b.get("blockedReasons") or []]
        for b in (blocked if isinstance(blocked, list) else [])
        if isinstance(b, dict)
    }
    cookies = []
    for line in header.split("\n"):
        cookie = _set_cookie(line, now)
        if cookie is not None:
            if refused.get(line):
                cookie["_blockedReasons"] = refused[line]
            cookies.append(cookie)
    return cookies


def _stored(cookie: dict[str, Any]) -> dict[str, Any]:
    """A HAR cookie from the DevTools ``Network.Cookie`` the browser keeps."""
    expires = float(cookie.get("expires") or -1)
    return _cookie(
        str(cookie.get("name", "")),
        str(cookie.get("value", "")),
        path=str(cookie.get("path") or ""),
        domain=str(cookie.get("domain") or ""),
        expires=None if cookie.get("session") or expires < 0 else expires,
        http_only=bool(cookie.get("httpOnly")),
        secure=bool(cookie.get("secure")),
        same_site=str(cookie.get("sameSite") or ""),
    )


def _set_cookie(line: str, now: float) -> dict[str, Any] | None:
    """A HAR cookie from one Set-Cookie line; ``None`` for a line with no name=value pair,
    which RFC 6265 ignores."""
    pair, *attributes = line.split(";")
    name, sep, value = pair.partition("=")
    if not sep:
        return None
    found: dict[str, str] = {}
    for attribute in attributes:
        key, _, val = attribute.partition("=")
        found[key.strip().lower()] = val.strip()
    expires = _http_date(found["expires"]) if "expires" in found else None
    if found.get("max-age", "").lstrip("-").isdigit():  # Max-Age wins over Expires
        seconds = int(found["max-age"])
        expires = now + seconds if seconds > 0 else 0.0
    return _cookie(
        name.strip(),
        value.strip(),
        path=found.get("path", ""),
        domain=found.get("domain", ""),
        expires=expires,
        http_only="httponly" in found,
        secure="secure" in found,
        same_site=found.get("samesite", "").capitalize(),
    )


def _cookie(
    name: str,
    value: str,
    *,
    path: str,
    domain: str,
    expires: float | None,
    http_only: bool,
    secure: bool,
    same_site: str,
) -> dict[str, Any]:
    """A HAR cookie; ``expires`` in epoch seconds, ``None`` for a session cookie."""
    cookie: dict[str, Any] = {"name": name, "value": value}
    if path:
        cookie["path"] = path
    if domain:
        cookie["domain"] = domain
    if expires is not None:
        with contextlib.suppress(OverflowError, OSError, ValueError):  # past year 9999
            stamp = datetime.fromtimestamp(expires, timezone.utc)
            cookie["expires"] = stamp.isoformat(timespec="milliseconds")
    cookie["httpOnly"] = http_only
    cookie["secure"] = secure
    if same_site:
        cookie["_sameSite"] = same_site
    return cookie


def _http_date(text: str) -> float | None:
    """Epoch seconds of a cookie's Expires date (RFC 1123, or the dashed Netscape form)."""
    try:
        when = parsedate_to_datetime(text.replace("-", " "))
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()
