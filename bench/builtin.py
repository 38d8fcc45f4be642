"""How much of the example suites the builtin synthesiser resolves without an LLM.

Records every example workflow (every parameter set) from nothing with the builtin rules
tiered before a counting fake model, as ``--netgent-record`` does with an LLM
configured, and counts the synthesis steps (state selections, trigger definitions and
instructions) each resolved. Last line: ``builtin resolved: N/M``.

    python bench/builtin.py [--quick]

``--quick`` (CI) records the wiki's workflows only.
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

from llm_calls import CALL_FLAGS, PASSWORD, workflows  # noqa: E402
from oracle import OracleChatModel  # noqa: E402

from fixtures import serve  # noqa: E402
from pytest_netgent.browser.pool import BrowserPool  # noqa: E402
from pytest_netgent.browser.session import BrowserOptions  # noqa: E402
from pytest_netgent.replay.runner import NetgentBrowser, ReplaySettings  # noqa: E402
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser  # noqa: E402
from pytest_netgent.synthesis.llm import LLMSynthesiser  # noqa: E402
from pytest_netgent.synthesis.tiered import TieredSynthesiser  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the wiki's workflows only (CI)")
    args = parser.parse_args()
    os.environ.setdefault("NETWIKI_PASSWORD", PASSWORD)
    os.environ.setdefault("CHIRP_PASSWORD", "chirp-pass")  # fixtures/social.py's account
    work = Path(tempfile.mkdtemp(prefix="netgent-bench-"))
    builtin = llm = calls = 0
    rows = []
    try:
        shutil.copytree(ROOT / "example_suites", work / "example_suites")
        for cache in (work / "example_suites").rglob("__netgent__"):
            shutil.rmtree(cache)
        pool = BrowserPool(BrowserOptions(args=CALL_FLAGS))
        with serve("original") as server:
            browser = NetgentBrowser(
                pool, ReplaySettings(state_timeout=5, artifacts=work), server.url
            )
            for loaded in workflows(work / "example_suites" / ("wiki" if args.quick else "")):
                for param_id, params in loaded.workflow.parameter_sets():
                    model = OracleChatModel()
                    synth = TieredSynthesiser(BuiltinSynthesiser(), LLMSynthesiser(model))
                    result = browser.run(
                        loaded, params=params, record="all", synthesiser=synth, check=False
                    )
                    pool.reset(browser.origins)
                    if not result.passed:
                        raise SystemExit(f"{loaded.workflow.name}: {result.error}")
                    usage = synth.usage
                    builtin += usage.builtin_steps
                    llm += usage.llm_steps
                    calls += model.calls
                    name = loaded.workflow.name + (f"[{param_id}]" if param_id else "")
                    rows.append(f"  {name}: {usage.builtin_steps} builtin, {usage.llm_steps} LLM")
        pool.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("synthesis steps per item (state selection, triggers, instructions):")
    print("\n".join(rows))
    print(f"LLM calls: {calls}")
    print(f"builtin resolved: {builtin}/{builtin + llm}")


if __name__ == "__main__":
    main()
