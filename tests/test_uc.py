"""How flags reach a browser in SeleniumBase's UC mode, which joins them with commas and
splits them there (the browsers themselves are started in test_replay, test_video,
test_components and test_webrtc)."""

from __future__ import annotations

import pytest

from pytest_netgent.browser.session import BrowserOptions
from pytest_netgent.browser.uc import _split
from pytest_netgent.errors import BrowserError


def test_flags_with_commas_are_given_whole_or_refused() -> None:
    args = BrowserOptions(
        window_size=(1280, 900),
        args=["--disable-features=Foo,Bar", "--lang=de", "--window-size=800,600"],
    ).chromium_args()
    plain, features, size = _split(args)
    assert size == (800, 600)  # the user's own flag comes last and wins
    assert {"Translate", "MediaRouter", "PasswordLeakDetection", "Foo", "Bar"} <= set(features)
    assert "--lang=de" in plain and "--no-sandbox" in plain
    assert not any("," in a or "headless" in a or "window-size" in a for a in plain), plain
    with pytest.raises(BrowserError, match=r"'--host-rules=MAP a b,MAP c d' holds a comma"):
        _split(["--host-rules=MAP a b,MAP c d"])
    with pytest.raises(BrowserError, match="not --window-size=WIDTH,HEIGHT"):
        _split(["--window-size=wide"])
