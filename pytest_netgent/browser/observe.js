// Observe the page for synthesis, in one round trip: URL, title, headings, and every
// visible interactive element with its accessible name and stable, verified selectors,
// in the document, in its shadow roots (open, and closed ones shadow.js kept) and in its
// frames this script may read, at any depth. deep.js is prepended.
//
// Selectors are verified within the element's own scope (its document or shadow root),
// so ids repeated across roots are told apart; an element in a shadow root or a frame
// gets the chain of its hosts and frames in front ("ng-app >> ng-search >> input").
//
// Selectors are tried from most to least stable (a non-generated id, data-testid, name,
// aria-label, placeholder, link/button text, type, classes, position) and kept only if
// they match exactly this one element. Elements that repeat in a list (search results,
// feed items) also get a group selector matching every item, and their index in it.
const MAX = arguments[0] || 400;

function q(value) {
  return '"' + String(value).replace(/\\/g, "\\\\").replace(/"/g, '\\"') + '"';
}

function xq(value) {
  if (!value.includes("'")) return "'" + value + "'";
  if (!value.includes('"')) return '"' + value + '"';
  return "concat('" + value.split("'").join("', \"'\", '") + "')";
}

function visible(el) {
  if (el.checkVisibility && !el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}))
    return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
}

function clean(text) {
  return (text || "").replace(/\s+/g, " ").trim();
}

// A node's text as a name: its rendered text, else (an icon) its images' alt texts and
// inner aria-labels, as accessible-name computation reads them.
function textOf(node) {
  const text = clean(node.innerText);
  if (text) return text;
  return clean(Array.from(node.querySelectorAll("img[alt], svg[aria-label], [aria-label]"))
    .map((n) => n.getAttribute("alt") || n.getAttribute("aria-label")).join(" "));
}

function labelOf(el) {
  if (el.getAttribute("aria-label")) return clean(el.getAttribute("aria-label"));
  const root = el.getRootNode();  // ids refer within the element's own document or root
  const by = el.getAttribute("aria-labelledby");
  if (by) {
    const t = by.split(/\s+/).map((id) => root.getElementById(id))
      .filter(Boolean).map((n) => n.innerText).join(" ");
    if (clean(t)) return clean(t);
  }
  if (el.id) {
    const l = root.querySelector("label[for=" + q(el.id) + "]");
    if (l && textOf(l)) return textOf(l);
  }
  const wrap = el.closest("label");
  if (wrap && textOf(wrap)) return textOf(wrap);
  return "";
}

function nameOf(el) {
  const tag = el.tagName.toLowerCase();
  return labelOf(el) || clean(el.getAttribute("placeholder")) || clean(el.getAttribute("alt"))
    || clean(el.getAttribute("title"))
    || (tag === "input" && ["submit", "button"].includes(el.type) ? clean(el.value) : "")
    || (["input", "textarea", "select"].includes(tag) ? "" : textOf(el).slice(0, 80));
}



// Selectors of ``el`` verified in ``scope``, each behind ``prefix`` (its hosts' chain).
function selectorsOf(el, scope, prefix) {
  const tag = el.tagName.toLowerCase();
  const out = [];
  const add = (by, selector, stable) => {
    if (selector && out.every((s) => s.selector !== prefix + selector) &&
        !(by === "xpath" && scope.nodeType !== 9) && ngCount(by, selector, scope) === 1) {
      out.push({by, selector: prefix + selector, stable});
    }
  };
  if (el.id && !ngGenerated(el.id)) add("css selector", "#" + CSS.escape(el.id), true);
  for (const attr of ["data-testid", "data-test", "data-qa", "name", "aria-label",
                      "placeholder"]) {
    const v = el.getAttribute(attr);
    if (v && !ngGenerated(v)) add("css selector", tag + "[" + attr + "=" + q(v) + "]", true);
  }
  const text = clean(el.innerText);
  if (text && text.length <= 60) {
    if (tag === "a") add("link text", text, true);
    // a control by its words; any control, when nothing else names it (an item of a
    // list would otherwise be found by its place in the list); not a heading, whose
    // words are the page's content
    else if (["button", "summary", "label"].includes(tag) || el.getAttribute("role") ||
             (!out.some((s) => s.stable) && !/^h[1-6]$/.test(tag))) {
      const words = "[normalize-space()=" + xq(text) + "]";
      add("xpath", "//" + tag + words, true);
      // the outermost of nested elements with the same words (<span><span>x</span></span>)
      add("xpath", "//" + tag + words + "[not(ancestor::" + tag + words + ")]", true);
    }
  }
  if (tag === "input" && ["submit", "button", "reset"].includes(el.type) && el.value &&
      el.value.length <= 60)  // a button of a form, named by its label
    add("css selector", "input[type=" + q(el.type) + "][value=" + q(el.value) + "]", true);
  if (tag === "input" && el.type && el.type !== "text")
    add("css selector", "input[type=" + q(el.type) + "]", true);
  // within a form that has a stable id: the form's id and what the element is
  const form = el.form || el.closest("form");
  if (form && form.id && !ngGenerated(form.id)) {
    const what = tag === "input" && el.type ? "input[type=" + q(el.type) + "]" : tag;
    add("css selector", "#" + CSS.escape(form.id) + " " + what, true);
  }
  const cls = ngClassSelector(el);
  if (cls) add("css selector", cls, false);
  add("css selector", ngUniqueCss(el, scope), false);
  return out;
}

// A list of similar items (results, posts): the nearest ancestor that repeats among
// its siblings; the group selector matches this element's counterpart in every item.
function groupOf(el, scope, prefix) {
  let item = el;
  for (let depth = 0; item && item.parentElement && depth < 6; depth++) {
    const parent = item.parentElement;
    const part = ngClassSelector(item) || item.tagName.toLowerCase();
    const siblings = Array.from(parent.children).filter((c) => c.matches(part));
    // A list of one: a <ul>/<ol>, or a container named like a list holding only items
    const listLike = /^(UL|OL)$/.test(parent.tagName) || parent.getAttribute("role") === "list"
      || (siblings.length === parent.children.length
          && /(^|[-_ ])(list|results?|hits|items|feed|grid|cards|posts)($|[-_ ])/i.test(
            [parent.id, parent.className, parent.getAttribute("data-role")].join(" ")));
    if (siblings.length >= 2 || (listLike && item.parentElement === parent)) {
      const inner = item === el ? "" : " " + (ngClassSelector(el) || el.tagName.toLowerCase());
      const container = ngUniqueCss(parent, scope);
      const selector = container + " > " + part + inner;
      const all = Array.from(scope.querySelectorAll(selector));
      if (all.includes(el) && (all.length >= 2 || listLike)) {
        return {selector: prefix + selector, index: all.indexOf(el), size: all.length};
      }
    }
    item = parent;
  }
  return null;
}

function regionOf(el) {
  const r = el.closest("header, nav, main, footer, aside, form, [role=main], [role=navigation]");
  return r ? (r.getAttribute("role") || r.tagName.toLowerCase()) : "";
}

const INTERACTIVE = "a[href], button, input:not([type=hidden]), select, textarea, summary, " +
  "video, [role=button], [role=link], [role=checkbox], [role=tab], [role=menuitem], " +
  "[role=option], [role=searchbox], [role=textbox], [role=combobox], [contenteditable=true], " +
  "[onclick], [tabindex]:not([tabindex='-1'])";

// Every scope to look in: the document, then each shadow root and readable frame under
// it, with the chain that leads there and the offset of its viewport in the page's.
// Frames of another origin go to ``far`` (WebDriver observes them on its own).
function scopesOf(scope, prefix, dx, dy, out, far) {
  out.push({scope, prefix, dx, dy});
  const walker = (scope.ownerDocument || scope).createTreeWalker(scope, NodeFilter.SHOW_ELEMENT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const root = ngRootOf(node);
    const inner = ngIsFrame(node) ? ngFrameDoc(node) : null;
    if (ngIsFrame(node) && !inner && ngLoads(node) &&
        visible(node)) {
      const r = node.getBoundingClientRect();
      far.push({chain: prefix + ngUniqueCss(node, scope), x: Math.round(dx + r.x + node.clientLeft),
                y: Math.round(dy + r.y + node.clientTop)});
    }
    if (!root && !(inner && inner.documentElement)) continue;
    const link = prefix + ngUniqueCss(node, scope) + " >> ";
    if (root) scopesOf(root, link, dx, dy, out, far);
    if (inner && inner.documentElement) {
      const r = node.getBoundingClientRect();
      scopesOf(inner, link, dx + r.x + node.clientLeft, dy + r.y + node.clientTop, out, far);
    }
  }
  return out;
}

const frames = [];
const scopes = scopesOf(document, "", 0, 0, [], frames);
const elements = [];
const headings = [];
// Controls that are plain elements with a click handler (tab headers without a role,
// design-system chips): what shows a pointer where its container does not.
function pointerTargets(scope) {
  const out = [];
  const all = scope.querySelectorAll("div, span, li, img, svg, p, label, td, i");
  for (let i = 0; i < all.length && i < 3000; i++) {
    const el = all[i];
    if (el.matches(INTERACTIVE) || el.closest(INTERACTIVE) || el.querySelector(INTERACTIVE)) {
      continue;
    }
    if (getComputedStyle(el).cursor !== "pointer") continue;
    const parent = el.parentElement;
    if (parent && getComputedStyle(parent).cursor === "pointer") continue;
    out.push(el);
  }
  return out;
}

for (const {scope, prefix, dx, dy} of scopes) {
  for (const el of [...scope.querySelectorAll(INTERACTIVE), ...pointerTargets(scope)]) {
    if (elements.length >= MAX) break;
    if (!visible(el)) continue;
    const r = el.getBoundingClientRect();
    const tag = el.tagName.toLowerCase();
    const attrs = {};
    for (const a of ["id", "name", "type", "role", "href", "placeholder", "aria-label",
                     "aria-pressed", "aria-expanded", "aria-checked", "data-testid", "value",
                     "class"]) {
      const v = el.getAttribute(a);
      if (v !== null && v !== "") attrs[a] = v.slice(0, 120);
    }
    const options = tag === "select"
      ? Array.from(el.options).map((o) => ({text: clean(o.text), value: o.value})) : undefined;
    elements.push({
      mmid: elements.length + 1,
      tag,
      role: el.getAttribute("role") || "",
      name: nameOf(el),
      label: labelOf(el),
      text: clean(el.innerText).slice(0, 120),
      attrs,
      options,
      region: regionOf(el),
      // site chrome (header, navigation, footer) appears on every page of a site
      chrome: Boolean(el.closest("header, nav, footer, [role=banner], [role=navigation], " +
                                 "[role=contentinfo]")),
      selectors: selectorsOf(el, scope, prefix),
      group: groupOf(el, scope, prefix),
      within: prefix.replace(/ >> $/, ""),
      box: {x: Math.round(dx + r.x + r.width / 2), y: Math.round(dy + r.y + r.height / 2),
            width: Math.round(r.width), height: Math.round(r.height)},
    });
  }
  for (const h of scope.querySelectorAll("h1, h2, h3, [role=heading]")) {
    if (headings.length >= 30) break;
    if (!visible(h) || !clean(h.innerText)) continue;
    headings.push({
      tag: h.tagName.toLowerCase(),
      text: clean(h.innerText).slice(0, 120),
      selectors: selectorsOf(h, scope, prefix),
    });
  }
}

// Every audio and video element's playback state (media triggers are read from it).
const media = [];
for (const {scope, prefix} of scopes) {
  for (const m of scope.querySelectorAll("video, audio")) {
    media.push({
      tag: m.tagName.toLowerCase(), paused: m.paused, ended: m.ended, muted: m.muted,
      volume: m.volume, current_time: m.currentTime, started: m.played.length > 0,
      within: prefix.replace(/ >> $/, ""),
    });
  }
}

// Elements that carry a state in an attribute (a kernel "idle", a call "connected"),
// shown or not, with the words that say what they are: "The kernel is idle".
const statuses = [];
for (const el of document.querySelectorAll("[data-status], [data-state]")) {
  if (statuses.length >= 40) break;
  const attr = el.hasAttribute("data-status") ? "data-status" : "data-state";
  const words = [el.getAttribute("aria-label"), el.getAttribute("title"), el.getAttribute("class"),
    ...Array.from(el.querySelectorAll("[aria-label]"), (n) => n.getAttribute("aria-label")),
    clean(el.textContent).slice(0, 80)];
  statuses.push({selector: ngClassSelector(el) || ngUniqueCss(el, document), attr,
                 value: el.getAttribute(attr), label: clean(words.join(" ")).slice(0, 200)});
}

return {
  url: location.href,
  title: document.title,
  elements,
  headings,
  media,
  statuses,
  frames,
  // a line per block, as the page's own text has them: a text check holds within one
  text: ngDeepText().split("\n").map(clean).filter(Boolean).join("\n").slice(0, 4000),
};
