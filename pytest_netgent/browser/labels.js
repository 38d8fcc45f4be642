// Elements found by what a person reads on them: their text or their accessible name.
//
// Called with [kind, wanted]: "buttons" (a button, or role=button, whose whole text is
// one of wanted), "text" (any element whose whole text is one of wanted; the one to click
// on it), "shown" (whether an element whose whole text is wanted[0] is shown) and "named"
// (the page's enabled buttons with a name computed as the accessibility tree does for
// common markup). Text is compared as XPath's normalize-space() does. Shadow roots count
// as page; frames are left to the selectors that name them.
const [kind, wanted] = arguments;
const BUTTON = "button, [role='button']";
const CLICKABLE = "button, [role='button'], a[href], [role='link'], [role='tab'], " +
  "[role='menuitem'], [role='option'], label, summary, [onclick], [tabindex]";
const norm = (s) => (s || "").replace(/[\s\u00a0]+/g, " ").trim();

function shown(el) {
  if (!el.getClientRects().length) return false;
  const style = getComputedStyle(el);
  return style.visibility !== "hidden" && style.display !== "none" && Number(style.opacity) !== 0;
}

function scopes() {
  return ngScopes(document).filter((s) => s === document || s.nodeType === 11 &&
    s.ownerDocument === document);
}

// Every element whose whole text is `text`, innermost first; found from the text nodes
// that are part of it, so a long page costs one pass over its text, not one per element.
function withText(text) {
  const found = [];
  const seen = new Set();
  for (const scope of scopes()) {
    const walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const part = norm(node.data);
      if (!part || !text.includes(part)) continue;
      let el = node.parentElement;
      while (el && !seen.has(el)) {
        const whole = norm(el.textContent);
        if (whole.length > text.length) break;
        seen.add(el);
        if (whole === text) found.push(el);
        el = el.parentElement;
      }
    }
  }
  return found;
}

function enabled(el) {
  return !el.disabled && el.getAttribute("aria-disabled") !== "true";
}

function nameOf(el) {
  const root = el.getRootNode();
  const ids = (el.getAttribute("aria-labelledby") || "").split(/\s+/).filter(Boolean);
  const labelled = norm(ids.map((id) => {
    const ref = root.getElementById ? root.getElementById(id) : document.getElementById(id);
    return ref ? ref.textContent : "";
  }).join(" "));
  if (labelled) return labelled;
  const label = norm(el.getAttribute("aria-label"));
  if (label) return label;
  const content = contentName(el);
  if (content) return content;
  return norm(el.getAttribute("title"));
}

function contentName(node) {
  let out = "";
  for (const child of node.childNodes) {
    if (child.nodeType === 3) {
      out += child.data;
    } else if (child.nodeType === 1) {
      if (child.getAttribute("aria-hidden") === "true" || !shown(child) &&
          getComputedStyle(child).display === "none") continue;
      const label = child.getAttribute("aria-label");
      if (label) out += " " + label + " ";
      else if (child.tagName === "IMG") out += " " + (child.getAttribute("alt") || "") + " ";
      else out += " " + contentName(child) + " ";
    }
  }
  return norm(out);
}

function clickTarget(el) {
  for (let node = el; node; node = node.parentElement) {
    if (node.matches(CLICKABLE)) return node;
    if (norm(node.parentElement && node.parentElement.textContent) !== norm(el.textContent)) {
      break;
    }
  }
  return el;
}

if (kind === "buttons") {
  for (const text of wanted) {
    const hit = withText(norm(text)).find((el) => el.matches(BUTTON) && shown(el) &&
      enabled(el));
    if (hit) return [text, hit];
  }
  return null;
}
if (kind === "text") {
  for (const text of wanted) {
    const hit = withText(norm(text)).find(shown);
    if (hit) return [text, clickTarget(hit)];
  }
  return null;
}
if (kind === "shown") return withText(norm(wanted[0])).some(shown);
if (kind === "named") {
  const out = [];
  for (const scope of scopes()) {
    for (const el of scope.querySelectorAll(BUTTON)) {
      if (shown(el) && enabled(el)) out.push([nameOf(el), el]);
      if (out.length >= 300) return out;
    }
  }
  return out;
}
throw new Error("labels.js: unknown kind " + kind);
