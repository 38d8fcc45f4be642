"""The local applications make real traffic, measured from inside the browser, and take
any input the sites they imitate take (a login answers any password)."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from typing import Any

import pytest

from fixtures import VARIANTS, serve
from fixtures.shop import PRODUCTS
from pytest_netgent import NetgentBrowser

from .helpers import until

STATS_JS = """
const done = arguments[0];
window.meetCall.pc.getStats().then((report) => {
  const out = {};
  report.forEach((r) => {
    if (r.type === 'inbound-rtp') out['in_' + r.kind] = r.bytesReceived;
    if (r.type === 'outbound-rtp') out['out_' + r.kind] = r.bytesSent;
  });
  out.state = window.meetCall.pc.connectionState;
  done(out);
});
"""


def resources(driver: Any, part: str) -> list[str]:
    names: list[str] = driver.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name)"
    )
    return [n for n in names if part in n]


def test_vod_plays_adaptively_and_fetches_several_bitrates(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    netgent_browser.origins.add(base_url)
    driver.get(f"{base_url}/vod/watch/ocean-deep")
    assert until(driver, "return document.querySelector('video').currentTime > 1")
    driver.find_element("css selector", "#quality option[value='2']").click()  # 540p
    start = driver.execute_script("return document.querySelector('video').currentTime")
    time.sleep(3)
    video = driver.execute_script(
        "const v = document.querySelector('video'); const q = v.getVideoPlaybackQuality();"
        "return {t: v.currentTime, frames: q.totalVideoFrames, width: v.videoWidth,"
        " levels: [...new Set(window.vodPlayer.fragments.map((f) => f.level))]}"
    )
    assert video["t"] > start + 1.5  # playback advanced
    assert video["frames"] > 48  # decoded frames (24 fps)
    assert len(video["levels"]) >= 2  # segments of more than one bitrate
    segments = resources(driver, ".ts")
    assert {s.split("/")[-2] for s in segments} >= {"240p", "540p"}
    assert until(driver, "return document.querySelector('video').videoWidth === 960")


def test_vod_pause_and_seek(netgent_browser: NetgentBrowser, base_url: str) -> None:
    driver = netgent_browser.driver
    netgent_browser.origins.add(base_url)
    driver.get(f"{base_url}/vod/watch/space-race")
    assert until(driver, "return document.querySelector('video').currentTime > 0.5")
    driver.find_element("id", "pause").click()
    assert until(driver, "return document.querySelector('video').paused")
    assert driver.find_element("id", "status").text == "Paused"
    before = driver.execute_script("return document.querySelector('video').currentTime")
    driver.find_element("id", "skip").click()
    after = driver.execute_script("return document.querySelector('video').currentTime")
    assert after != before


def test_live_playlist_grows_during_playback_and_chat_updates(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    netgent_browser.origins.add(base_url)
    driver.get(f"{base_url}/live/channel/match-day")
    assert until(driver, "return document.querySelector('video').currentTime > 0.5")
    first = driver.execute_script("return window.livePlayer.playlists[0].endSN")
    time.sleep(4.5)
    state = driver.execute_script(
        "const p = window.livePlayer.playlists; const v = document.querySelector('video');"
        "return {last: p[p.length - 1].endSN, reloads: p.length, t: v.currentTime,"
        " chat: document.querySelectorAll('#chat-messages li').length}"
    )
    assert state["last"] >= first + 2  # new segments were published while playing
    assert state["reloads"] >= 3
    assert state["chat"] >= 3
    driver.find_element("id", "chat-input").send_keys("hello from the test\n")
    assert until(
        driver, "return document.querySelector('#chat-messages').textContent.includes('test')"
    )


def test_call_sends_and_receives_rtp(netgent_browser: NetgentBrowser, base_url: str) -> None:
    driver = netgent_browser.driver
    netgent_browser.origins.add(base_url)
    driver.get(f"{base_url}/meet/")
    driver.find_element("id", "display-name").send_keys("Ada")
    driver.find_element("id", "join-button").click()
    assert until(
        driver, "return window.meetCall && window.meetCall.pc.connectionState === 'connected'", 20
    )
    time.sleep(1)
    first = driver.execute_async_script(STATS_JS)
    time.sleep(2)
    second = driver.execute_async_script(STATS_JS)
    for key in ("in_audio", "in_video", "out_audio", "out_video"):
        assert second[key] > first[key] > 0, (key, first, second)
    assert "Guide (remote)" in driver.find_element("id", "participants").text
    driver.find_element("id", "mic-button").click()
    assert driver.find_element("id", "mic-button").text == "Unmute microphone"
    driver.find_element("id", "leave-button").click()
    assert until(driver, "return document.title.startsWith('Left')")


def test_feed_loads_more_pages_on_scroll_and_notifies(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    netgent_browser.origins.add(base_url)
    driver.get(f"{base_url}/social/login")
    driver.find_element("id", "username").send_keys("alice")
    driver.find_element("id", "password").send_keys("chirp-pass")
    driver.find_element("id", "login-button").click()
    assert until(driver, "return window.socialFeed && window.socialFeed.pages >= 1")
    pages = driver.execute_script("return window.socialFeed.pages")
    for _ in range(4):
        driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        time.sleep(0.4)
    assert until(driver, f"return window.socialFeed.pages >= {pages + 2}")
    assert len(resources(driver, "/social/api/feed?page=")) >= pages + 2
    assert len(resources(driver, "/social/img/")) >= 20  # the posts' images
    like = driver.find_elements("css selector", "button.like-button")[0]
    like.click()
    assert until(driver, "return document.querySelector('button.like-button')"
                    ".getAttribute('aria-pressed') === 'true'")  # fmt: skip
    assert until(driver, "return +document.querySelector('#notif-count').textContent >= 1")


def test_shop_pages_filters_sorting_and_search(base_url: str) -> None:
    def get(path: str) -> str:
        with urllib.request.urlopen(base_url + path) as answer:
            return str(answer.read().decode())

    assert len(PRODUCTS) == 300
    first = get("/shop/")
    assert "300 products, page 1 of 15" in first and first.count('class="product"') == 20
    cheap = get("/shop/?category=Kitchen&sort=price-asc")
    prices = [p.price for p in PRODUCTS if p.category == "Kitchen"]
    assert f"${min(prices):.2f}" in cheap.split('class="product"')[1]
    assert "page 1 of 3" in cheap
    found = get("/shop/?q=kettle")
    kettles = [p for p in PRODUCTS if "kettle" in p.name.lower()]
    assert f"{len(kettles)} products" in found
    assert "Next page" in get("/shop/?page=14") and "Next page" not in get("/shop/?page=15")
    assert PRODUCTS[41].name in get("/shop/product/42")


@pytest.mark.parametrize(
    "path",
    ["/vod/", "/vod/watch/ocean-deep", "/live/", "/live/channel/news-24", "/meet/",
     "/meet/room?name=x", "/social/login", "/shop/", "/shop/product/1"],
)  # fmt: skip
def test_changed_variant_has_other_markup_and_same_routes(path: str, changed_url: str) -> None:
    with serve("original") as original, urllib.request.urlopen(original.url + path) as answer:
        before = answer.read().decode()
    with urllib.request.urlopen(changed_url + path) as answer:
        after = answer.read().decode()
    ids = {part.split('"')[0] for part in before.split(' id="')[1:]}
    assert ids, path
    assert not any(f'id="{i}"' in after for i in ids if i not in ("main-video",)), path


def test_fixtures_serve_prints_every_app() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "fixtures", "serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(6)]
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
    apps = {line.split(":")[0] for line in lines}
    assert apps == {"wiki", "vod", "live", "meet", "social", "shop"}
    for line in lines:
        url = line.split(": ", 1)[1]
        assert url.startswith("http://127.0.0.1:")
    assert VARIANTS == ("original", "changed")


@pytest.mark.parametrize("path", ["/wiki/login", "/social/login"])
def test_the_local_logins_take_any_password(base_url: str, path: str) -> None:
    """The local apps are as robust as what they imitate: a non-ASCII password (or bytes
    that are not UTF-8) is a wrong password, not a server error."""
    import urllib.error
    import urllib.request

    for body in (b"username=researcher&password=p%C3%A4ss%E2%82%AC", b"password=\xff"):
        request = urllib.request.Request(f"{base_url}{path}", data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status in (200, 303, 401), (path, body, status)
