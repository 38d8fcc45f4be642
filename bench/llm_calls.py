"""LLM cost of recording and of healing, with a counting fake model.

Records every example workflow from nothing with the LLM synthesiser alone (no builtin
tier, so every step is a model call), then heals them on a copy of the local wiki whose
login form alone changed (other ids, labels and layout): only the state that uses it
should cost calls. Prints calls and tokens for each and last
``ratio heal/record calls: X``.

    python bench/llm_calls.py [--quick]

``--quick`` (CI) records and heals the wiki's workflows only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from oracle import OracleChatModel  # noqa: E402

from fixtures import live, meet, shop, social, vod, wiki  # noqa: E402
from fixtures.http import AppServer  # noqa: E402
from pytest_netgent.browser.pool import BrowserPool  # noqa: E402
from pytest_netgent.browser.session import BrowserOptions  # noqa: E402
from pytest_netgent.replay.runner import NetgentBrowser, ReplaySettings  # noqa: E402
from pytest_netgent.synthesis.llm import LLMSynthesiser  # noqa: E402
from pytest_netgent.workflow.spec import LoadedWorkflow, load_workflows  # noqa: E402

PASSWORD = "netgent-pass"


def workflows(folder: Path) -> list[LoadedWorkflow]:
    found = []
    for path in sorted(folder.rglob("*.netgent.yaml")):
        found += [d for d in load_workflows(path) if isinstance(d, LoadedWorkflow)]
    return found


def run_all(
    browser: NetgentBrowser, items: list[LoadedWorkflow], mode: str
) -> tuple[int, int, list[str]]:
    """Record every workflow (its first parameter set); calls, tokens, states changed."""
    calls = tokens = 0
    changed: list[str] = []
    for loaded in items:
        model = OracleChatModel()
        synth = LLMSynthesiser(model)
        params = loaded.workflow.parameter_sets()[0][1]
        result = browser.run(loaded, params=params, record=mode, synthesiser=synth, check=False)
        browser._pool.reset(browser.origins)
        if not result.passed:
            raise SystemExit(f"{loaded.workflow.name}: {result.error}")
        calls += model.calls
        tokens += model.input_tokens + model.output_tokens
        if result.record is not None:
            changed += [f"{loaded.workflow.name}/{n}" for n in result.record.synthesised]
            changed += [f"{loaded.workflow.name}/{n} (healed)" for n in result.record.healed]
    return calls, tokens, changed


# the browser flags of the project's ini (pyproject.toml): the call's fake devices
CALL_FLAGS = [
    "--use-fake-device-for-media-stream",
    "--use-fake-ui-for-media-stream",
    "--allow-loopback-in-peer-connection",
]


def serve(wiki_variant: str) -> AppServer:
    """Every local application, the wiki in ``wiki_variant``."""
    others = [m.make_app("original") for m in (vod, live, meet, social, shop)]
    return AppServer([wiki.make_app(wiki_variant), *others]).start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the wiki's workflows only (CI)")
    args = parser.parse_args()
    os.environ.setdefault("NETWIKI_PASSWORD", PASSWORD)
    os.environ.setdefault("CHIRP_PASSWORD", "chirp-pass")  # fixtures/social.py's account
    work = Path(tempfile.mkdtemp(prefix="netgent-bench-"))
    try:
        shutil.copytree(ROOT / "example_suites", work / "example_suites")
        for cache in (work / "example_suites").rglob("__netgent__"):
            shutil.rmtree(cache)
        items = workflows(work / "example_suites" / ("wiki" if args.quick else ""))
        # the same wiki, but its login form comes from the changed UI
        wiki.VARIANTS["login-changed"] = {
            **wiki.VARIANTS["original"],
            "login_form": wiki.VARIANTS["changed"]["login_form"],
        }
        pool = BrowserPool(BrowserOptions(args=CALL_FLAGS))
        try:
            server = serve("original")
            browser = NetgentBrowser(
                pool, ReplaySettings(state_timeout=5, artifacts=work), server.url
            )
            record_calls, record_tokens, recorded = run_all(browser, items, "all")
            server.stop()
            server = serve("login-changed")
            browser = NetgentBrowser(
                pool, ReplaySettings(state_timeout=5, artifacts=work), server.url
            )
            heal_calls, heal_tokens, healed = run_all(browser, items, "missing")
            server.stop()
        finally:
            pool.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    where = "example_suites/wiki" if args.quick else "example_suites"
    print(f"workflows: {len(items)} ({where}, first parameter set each)")
    print(
        f"record from nothing: {len(recorded)} states, {record_calls} LLM calls, "
        f"{record_tokens} tokens"
    )
    print(
        f"heal after a login-form change: {', '.join(healed) or 'nothing'}; "
        f"{heal_calls} LLM calls, {heal_tokens} tokens"
    )
    print(f"ratio heal/record calls: {heal_calls / record_calls:.3f}")


if __name__ == "__main__":
    main()
