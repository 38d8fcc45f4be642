"""The page model: what reading a page as its users perceive it costs, three ways.

    python bench/page_model.py [--rounds N] [--quick]

On the local sites' pages (and a generated list of search results, 3,000 long; 300
with ``--quick``) each page is read, alternating, by

- the page model (``browser/aria.py``: ``aria.js`` walking the page in it, names and
  roles by dom-accessibility-api),
- the page summary synthesis has used until now (``synthesis/observation.py``), and
- Chromium's own accessibility tree (DevTools ``Accessibility.getFullAXTree``), the
  reference the page model is tested against (on the long list only without
  ``--quick``: it takes seconds there).

Prints each page's medians and the number of nodes each way, then last
``ratio page-model/observe: X`` (the sum of the page model's medians over the summary's).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures import serve  # noqa: E402
from pytest_netgent.browser.aria import snapshot  # noqa: E402
from pytest_netgent.browser.pool import BrowserPool  # noqa: E402
from pytest_netgent.browser.session import BrowserOptions, cdp  # noqa: E402
from pytest_netgent.synthesis.observation import observe  # noqa: E402

PAGES = ["/widgets/", "/wiki/", "/shop/", "/components/", "/components/frames", "/social/"]


def results(count: int) -> str:
    """A page of ``count`` search results, each a link and a line of text."""
    items = "".join(
        f"<li><a href='#r{i}'>Result {i}</a> <span>about result {i}</span></li>"
        for i in range(count)
    )
    return "data:text/html," + urllib.parse.quote(f"<h1>Results</h1><ul>{items}</ul>")


def timed(read: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    count = read()
    return time.perf_counter() - started, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="reads of each page (default 5)")
    parser.add_argument("--quick", action="store_true", help="one round, a shorter list (CI)")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    long_list = results(300 if args.quick else 3000)
    ours_total = observe_total = 0.0
    with serve("original") as server:
        pool = BrowserPool(BrowserOptions())
        driver = pool.driver
        try:
            for page in [*PAGES, "results"]:
                driver.get(long_list if page == "results" else server.url + page)
                time.sleep(0.5)  # the page's own scripts settle
                ways: dict[str, Callable[[], int]] = {
                    "page model": lambda: sum(1 for _ in snapshot(driver).nodes()),
                    "observe": lambda: len(observe(driver).elements),
                }
                if page != "results" or not args.quick:
                    ways["chromium tree"] = lambda: len(
                        cdp(driver, "Accessibility.getFullAXTree", {})["nodes"]
                    )
                times: dict[str, list[float]] = {way: [] for way in ways}
                counts: dict[str, int] = {}
                for _ in range(rounds):
                    for way, read in ways.items():
                        seconds, counts[way] = timed(read)
                        times[way].append(seconds)
                medians = {way: statistics.median(t) for way, t in times.items()}
                ours_total += medians["page model"]
                observe_total += medians["observe"]
                print(
                    f"{page}: "
                    + ", ".join(
                        f"{way} {medians[way] * 1000:.0f} ms ({counts[way]} nodes)" for way in ways
                    )
                )
        finally:
            pool.close()
    print(f"ratio page-model/observe: {ours_total / observe_total:.3f}")


if __name__ == "__main__":
    main()
