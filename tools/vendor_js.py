"""Bundle dom-accessibility-api (from its npm package in ``node_modules``) into the one
browser script ``pytest_netgent/browser/a11y.js``, which the page model prepends to its
own: the accessible names and roles browsers compute, by the library Testing Library and
Playwright's tests rely on, with no build step and nothing fetched at run time.

The package is CommonJS with no dependencies; each of its files becomes a function of a
small module table, loaded on first ``require``, the way Node would. Run it after the
README's first command installed the package; ``tests/test_aria.py`` checks that the
committed bundle is the one this makes.

    python tools/vendor_js.py            # write the bundle
    python tools/vendor_js.py --check    # exit 1 if the committed one differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "node_modules" / "dom-accessibility-api"
BUNDLE = ROOT / "pytest_netgent" / "browser" / "a11y.js"

LOADER = """\
const ngA11y = (function () {
  const sources = {
%(modules)s
  };
  const loaded = {};
  function resolve(from, name) {
    const parts = from.split("/").slice(0, -1);
    for (const part of name.replace(/\\.js$/, "").split("/")) {
      if (part === "..") parts.pop();
      else if (part !== ".") parts.push(part);
    }
    return parts.join("/");
  }
  function load(name) {
    if (!loaded[name]) {
      const module = {exports: {}};
      loaded[name] = module;
      sources[name](module, module.exports, (wanted) => load(resolve(name, wanted)));
    }
    return loaded[name].exports;
  }
  return load("index");
})();
"""


def bundle(package: Path = PACKAGE) -> str:
    """The bundle of the package installed at ``package``."""
    meta = json.loads((package / "package.json").read_text(encoding="utf-8"))
    dist = package / "dist"
    modules = []
    for path in sorted(dist.rglob("*.js")):
        name = path.relative_to(dist).with_suffix("").as_posix()
        code = "\n".join(
            line for line in path.read_text(encoding="utf-8").splitlines()
            if not line.startswith("//# sourceMappingURL=")
        )  # fmt: skip
        body = "\n".join("      " + line if line else "" for line in code.splitlines())
        modules.append(f"    {json.dumps(name)}: function (module, exports, require) {{\n"
                       f"{body}\n    }},")  # fmt: skip
    licence = "\n".join(
        ("// " + line).rstrip() for line in (package / "LICENSE.md").read_text().splitlines()
    )
    head = (
        f"// {meta['name']} {meta['version']} ({meta['repository']['url']}), bundled by\n"
        "// tools/vendor_js.py from its npm package: do not edit, run that again.\n"
        "//\n"
        f"{licence}\n"
    )
    return head + LOADER % {"modules": "\n".join(modules)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    if not (PACKAGE / "package.json").is_file():
        print(f"{PACKAGE} is missing: run the README's first command", file=sys.stderr)
        return 2
    text = bundle()
    if args.check:
        same = BUNDLE.is_file() and BUNDLE.read_text(encoding="utf-8") == text
        print("the bundle is up to date" if same else f"{BUNDLE} differs: run tools/vendor_js.py")
        return 0 if same else 1
    BUNDLE.write_text(text, encoding="utf-8")
    print(f"wrote {BUNDLE} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
