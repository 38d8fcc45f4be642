"""``python -m corpus serve NAME``: run one application of the corpus until Ctrl-C (or SIGTERM)."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from . import APPS, serve


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m corpus")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve one application until Ctrl-C")
    run.add_argument("name", choices=sorted(APPS))
    args = parser.parse_args()
    # `kill` and `timeout` stop it as Ctrl-C does: the application stops with it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with serve(args.name) as url:
        print(f"{args.name}: {url}/", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
