// What an element is to its users: its role and accessible name (computed as browsers
// compute them, by dom-accessibility-api: a11y.js's ngA11y), its value, its states and,
// for a video or audio element, its playback. deep.js and a11y.js are prepended.
//
// Read by aria.js (the page model a prompt shows), and by checks.js and the actions
// (ngByRole): a check or a locator by role and name finds what the model saw.

// Roles whose accessible name is their content: their text is said by their name.
const NG_NAMED_BY_CONTENT = new Set(["button", "link", "heading", "tab", "option", "menuitem",
  "menuitemcheckbox", "menuitemradio", "treeitem", "cell", "gridcell", "columnheader",
  "rowheader", "checkbox", "radio", "switch", "tooltip"]);
const NG_TEXT_INPUTS = new Set(["text", "search", "email", "url", "tel", "number", ""]);

function ngClean(text) {
  return String(text === undefined || text === null ? "" : text).replace(/[\s\u00a0]+/g, " ").trim();
}

function ngDrawn(el) {
  if (el.checkVisibility ? el.checkVisibility({checkVisibilityCSS: true})
    : el.getClientRects().length > 0) return true;
  // no box of its own (only these pay for the style read): a display: contents wrapper (a
  // popover's), whose children have theirs; a canvas's fallback content (a data grid's
  // table), what assistive technology reads of what the canvas draws, while it is drawn
  const style = getComputedStyle(el);
  if (style.display === "contents") return true;
  const canvas = el.localName === "canvas" ? null : el.closest("canvas");
  return Boolean(canvas) && style.display !== "none" && style.visibility !== "hidden" &&
    ngDrawn(canvas);
}

// Left out of what users perceive: aria-hidden and inert parts.
function ngA11yHidden(el) {
  return el.getAttribute("aria-hidden") === "true" || el.inert === true;
}

// The element that has the focus, inside shadow roots and frames of this site.
function ngDeepActive() {
  let active = document.activeElement;
  while (active) {
    const inner = (active.shadowRoot && active.shadowRoot.activeElement) ||
      (ngIsFrame(active) && ngFrameDoc(active) && ngFrameDoc(active).activeElement);
    if (!inner || inner === active) return active;
    active = inner;
  }
  return active;
}

// The element's role (null: none a user would be told of).
function ngRoleOf(el) {
  const tag = el.localName;
  if (tag === "video" || tag === "audio") return tag;
  if (ngIsFrame(el)) return "iframe";
  if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable))
    return el.getAttribute("role") || "textbox";
  if (tag === "input" && el.type === "password") return "textbox";  // no ARIA role of its own
  const role = ngA11y.getRole(el);
  if (role === "paragraph" || role === "generic" || role === "none" || role === "presentation")
    return (el.tabIndex >= 0 && el.hasAttribute("tabindex")) ? "generic" : null;
  return role;
}

function ngNameOf(el) {
  try {
    return ngClean(ngA11y.computeAccessibleName(el));
  } catch (e) {
    return ngClean(el.getAttribute("aria-label") || el.title || "");
  }
}

function ngValueOf(el, role) {
  const tag = el.localName;
  if (tag === "input") {
    if (el.type === "password") return el.value ? "(filled)" : "";  // a secret is never read
    if (["checkbox", "radio", "button", "submit", "reset", "image", "file", "hidden"]
      .includes(el.type)) return "";
    return el.value;
  }
  if (tag === "textarea") return el.value;
  if (tag === "select") {
    return Array.from(el.selectedOptions).map((o) => ngClean(o.label || o.text)).join(", ");
  }
  const text = el.getAttribute("aria-valuetext") || el.getAttribute("aria-valuenow");
  if (text) return text;
  if (role === "combobox") {
    const input = el.querySelector("input");
    return input ? input.value : "";
  }
  return "";
}

// The states a user is told of; `active` is the focused element (ngDeepActive()).
function ngStatesOf(el, role, active) {
  const out = [];
  const attr = (name) => el.getAttribute(name);
  const checked = el.localName === "input" && ["checkbox", "radio"].includes(el.type)
    ? (el.indeterminate ? "mixed" : String(el.checked)) : attr("aria-checked");
  if (checked === "true") out.push("checked");
  else if (checked === "mixed") out.push("mixed");
  if ((el.localName === "option" && el.selected) || attr("aria-selected") === "true")
    out.push("selected");
  const expanded = attr("aria-expanded") ||
    (el.localName === "summary" && el.parentElement && el.parentElement.localName ===
      "details" ? String(el.parentElement.open) : null) ||
    (el.localName === "select" && !el.multiple && el.size <= 1 ? "false" : null);
  if (expanded === "true") out.push("expanded");
  else if (expanded === "false") out.push("collapsed");
  if (attr("aria-pressed") === "true") out.push("pressed");
  if (ngA11y.isDisabled(el) || attr("aria-disabled") === "true") out.push("disabled");
  if (el === active) out.push("focused");
  if (attr("aria-busy") === "true") out.push("busy");
  if (el.required || attr("aria-required") === "true") out.push("required");
  if ((el.readOnly && ["input", "textarea"].includes(el.localName)) ||
      attr("aria-readonly") === "true") out.push("readonly");
  if ((el.matches && el.matches(":modal")) || attr("aria-modal") === "true") out.push("modal");
  if (attr("aria-invalid") && attr("aria-invalid") !== "false") out.push("invalid");
  return out;
}

// What a state a check may ask for means, said of an element (its role, its states as
// ngStatesOf reads them). A negative state asks for an element that can have the
// positive one: "unpressed" is a toggle button not pressed (aria-pressed="false"), never
// a plain button; "unchecked" a checkbox, radio or switch; "unselected" a tab, option,
// row or cell one can select.
const NG_CHECKABLE = new Set(["checkbox", "radio", "switch", "menuitemcheckbox",
  "menuitemradio"]);
const NG_SELECTABLE = new Set(["option", "tab", "row", "gridcell", "treeitem", "cell"]);
const NG_STATE_TESTS = {
  checked: (s) => s.includes("checked"),
  unchecked: (s, el, role) => (NG_CHECKABLE.has(role) || el.hasAttribute("aria-checked")) &&
    !s.includes("checked") && !s.includes("mixed"),
  mixed: (s) => s.includes("mixed"),
  selected: (s) => s.includes("selected"),
  unselected: (s, el, role) => (NG_SELECTABLE.has(role) || el.hasAttribute("aria-selected")) &&
    !s.includes("selected"),
  expanded: (s) => s.includes("expanded"),
  collapsed: (s) => s.includes("collapsed"),
  pressed: (s) => s.includes("pressed"),
  unpressed: (s, el) => el.getAttribute("aria-pressed") === "false",
  disabled: (s) => s.includes("disabled"),
  enabled: (s) => !s.includes("disabled"),
  focused: (s) => s.includes("focused"),
  busy: (s) => s.includes("busy"),
  required: (s) => s.includes("required"),
  readonly: (s) => s.includes("readonly"),
  modal: (s) => s.includes("modal"),
  invalid: (s) => s.includes("invalid"),
};

function ngMediaOf(el) {
  return {
    playing: !el.paused && !el.ended && el.readyState > 2,
    paused: el.paused,
    ended: el.ended,
    time: Math.round(el.currentTime * 10) / 10,
    duration: isFinite(el.duration) ? Math.round(el.duration * 10) / 10 : null,
    height: el.videoHeight || 0,
    buffering: !el.paused && el.readyState < 3,
    muted: el.muted,
  };
}

// The children of `node` as drawn: a host's shadow root, a slot's assigned nodes.
function ngDrawnChildren(node) {
  if (node.nodeType === 1) {
    const root = ngRootOf(node);
    if (root) return Array.from(root.childNodes);
    if (node.localName === "slot") {
      const assigned = node.assignedNodes({flatten: true});
      if (assigned.length) return assigned;
    }
  }
  return Array.from(node.childNodes);
}

// The CSS of a frame element among its siblings, for the chain of what is inside it.
function ngSelfSelector(el) {
  if (el.id) return "#" + CSS.escape(el.id);
  const same = Array.from(el.parentNode.children).filter((c) => c.localName === el.localName);
  return el.localName + (same.length > 1 ? ":nth-of-type(" + (same.indexOf(el) + 1) + ")" : "");
}

function ngSame(actual, expected, match) {
  const a = ngClean(actual);
  const e = ngClean(expected);
  switch (match || "exact") {
    case "exact": {
      const [x, y] = [Number(a), Number(e)];
      return a === e || (a !== "" && e !== "" && !isNaN(x) && !isNaN(y) && x === y);
    }
    case "contains": return a.toLowerCase().includes(e.toLowerCase());
    case "pattern": return new RegExp(expected).test(a);
    default: throw new Error("unknown 'match': " + match);
  }
}

// Most elements a role check or locator reads: a page larger than that is refused, by
// name, rather than read for seconds at every look.
const NG_MOST_ELEMENTS = 20000;

// The drawn elements of the page (shadow roots, slots, frames of this site included) in
// document order, each with the name of the heading it falls under when `headings`.
function ngDrawnElements(headings) {
  const out = [];
  let read = 0;
  let heading = "";
  const stack = [document.body || document.documentElement];
  while (stack.length) {
    const node = stack.pop();
    if (node.nodeType !== 1 && node.nodeType !== 11) continue;
    if (node.nodeType === 1) {
      if (++read > NG_MOST_ELEMENTS) {
        throw new Error("the page has more than " + NG_MOST_ELEMENTS + " elements, more " +
          "than a role check or locator reads: use an element check or a selector");
      }
      const tag = node.localName;
      if (tag === "script" || tag === "style" || tag === "template" || tag === "head") continue;
      if (ngA11yHidden(node) || !ngDrawn(node)) continue;
      if (headings && /^h[1-6]$/.test(tag)) heading = ngNameOf(node);
      out.push([node, heading]);
      if (ngIsFrame(node)) {
        const doc = ngFrameDoc(node);
        if (doc && doc.body) stack.push(doc.body);
        continue;
      }
    }
    const kids = ngDrawnChildren(node);
    for (let i = kids.length - 1; i >= 0; i -= 1) stack.push(kids[i]);
  }
  return out;
}

// Whether `el` lies within a region, group, row, dialog... named `within`, or under a
// heading of that name.
function ngWithin(el, heading, within) {
  if (ngSame(heading, within, "exact")) return true;
  let node = el.parentNode || (el.host);
  while (node) {
    if (node.nodeType === 11) node = node.host;
    else if (node.nodeType === 9) node = node.defaultView && node.defaultView.frameElement;
    else {
      if (ngRoleOf(node) && ngSame(ngNameOf(node), within, "exact")) return true;
      node = node.parentNode;
    }
  }
  return false;
}

// The elements of the page a user would call a `q.role` named `q.name` (compared by
// q.match: exact, contains, pattern), within `q.within`, in the states `q.state` (one
// or a list), with the value `q.value` (by q.value_match) and showing `q.text`.
function ngByRole(q) {
  const states = q.state === undefined ? [] : [].concat(q.state);
  for (const s of states) {
    if (!NG_STATE_TESTS[s]) {
      throw new Error("unknown state " + JSON.stringify(s) + "; use one of " +
        Object.keys(NG_STATE_TESTS).join(", "));
    }
  }
  const active = states.includes("focused") ? ngDeepActive() : null;
  const out = [];
  for (const [el, heading] of ngDrawnElements(q.within !== undefined)) {
    const role = ngRoleOf(el);
    if (role !== q.role) continue;
    if (q.name !== undefined && !ngSame(ngNameOf(el), q.name, q.match)) continue;
    if (states.length) {
      const has = ngStatesOf(el, role, active);
      if (!states.every((s) => NG_STATE_TESTS[s](has, el, role))) continue;
    }
    if (q.value !== undefined) {
      const value = el.isContentEditable ? el.innerText : ngValueOf(el, role);
      if (!ngSame(value, q.value, q.value_match)) continue;
    }
    if (q.text !== undefined && !(el.innerText || el.textContent || "").includes(q.text))
      continue;
    if (q.within !== undefined && !ngWithin(el, heading, q.within)) continue;
    out.push(el);
  }
  return out;
}
