"""What shaped an item's traffic in the browser: its release and its driver's, headless or
not, GPU or software rendering, the viewport, the codecs its MediaSource plays, UC mode
and Grid (the machine's CPUs: :mod:`..system.machine`).

A player picks its bitrate from what the browser can decode and how fast it renders (a
virtual display or a missing GPU lowers it): a dataset that mixes such runs must say so.
The browser's facts are read once per browser process, from the browser itself (its user
agent says whether it is headless; WebGL's renderer names the GPU or the software that
stands in for one).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .session import driver_errors

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

FIELDS = (
    "browser",
    "driver",
    "headless",
    "rendering",
    "viewport",
    "codecs",
    "uc",
    "grid",
)
"""The browser's columns of the manifest, in order."""

CODECS = {
    "h264": 'video/mp4; codecs="avc1.42E01E"',
    "vp9": 'video/webm; codecs="vp9"',
    "av1": 'video/mp4; codecs="av01.0.05M.08"',
    "opus": 'audio/webm; codecs="opus"',
    "aac": 'audio/mp4; codecs="mp4a.40.2"',
}
"""The codecs a player chooses among, as MediaSource is asked about them."""

_SOFTWARE = ("swiftshader", "llvmpipe", "software", "softpipe")

_PAGE_JS = """
const codecs = arguments[0];
const media = window.MediaSource || window.ManagedMediaSource;
const played = {};
for (const [name, type] of Object.entries(codecs)) {
  played[name] = Boolean(media && media.isTypeSupported(type));
}
let renderer = "";
try {
  const gl = document.createElement("canvas").getContext("webgl");
  if (gl) {
    const info = gl.getExtension("WEBGL_debug_renderer_info");
    renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  }
} catch (e) { renderer = ""; }
return {agent: navigator.userAgent, renderer: renderer, codecs: played,
        viewport: innerWidth + "x" + innerHeight + "@" + devicePixelRatio};
"""

_seen: dict[str, dict[str, str]] = {}
"""The facts of each browser process this worker asked (by WebDriver session id)."""


def browser_facts(driver: WebDriver, *, uc: bool, grid: bool) -> dict[str, str]:
    """The browser's facts (:data:`FIELDS`), read once per browser process; a browser
    that cannot answer leaves them empty."""
    session = str(getattr(driver, "session_id", ""))
    if session in _seen:
        return dict(_seen[session])
    caps: dict[str, Any] = dict(getattr(driver, "capabilities", None) or {})
    chrome = caps.get("chrome") if isinstance(caps.get("chrome"), dict) else {}
    facts = {
        "browser": f"{caps.get('browserName', '')} {caps.get('browserVersion', '')}".strip(),
        "driver": str((chrome or {}).get("chromedriverVersion", "")).split(" ")[0],
        "uc": "yes" if uc else "no",
        "grid": "yes" if grid else "no",
    }
    page: dict[str, Any] = {}
    with contextlib.suppress(*driver_errors()):  # a browser gone: the facts stay empty
        page = driver.execute_script(_PAGE_JS, CODECS) or {}
    if page:
        facts["headless"] = "yes" if "Headless" in str(page.get("agent", "")) else "no"
        facts["rendering"] = rendering(str(page.get("renderer", "")))
        facts["viewport"] = str(page.get("viewport", ""))
        played = page.get("codecs") or {}
        facts["codecs"] = " ".join(
            f"{name}={'yes' if played.get(name) else 'no'}" for name in CODECS
        )
        _seen[session] = dict(facts)
    return facts


def rendering(renderer: str) -> str:
    """``gpu (NAME)``, ``software (NAME)``, or ``software (no WebGL)``: what draws pages."""
    if not renderer:
        return "software (no WebGL)"
    kind = "software" if any(s in renderer.lower() for s in _SOFTWARE) else "gpu"
    return f"{kind} ({renderer})"
