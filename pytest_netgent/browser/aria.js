// The page as its users perceive it, in one round trip: every element assistive
// technology would present (its role and accessible name as browsers compute them, by
// dom-accessibility-api, bundled in a11y.js), its value and states, the page's text
// under the element it belongs to, and its media (playing, time, height). deep.js and
// a11y.js are prepended; aria.py reads the answer.
//
// The walk follows the page as it is drawn: into shadow roots (open, and closed ones
// shadow.js kept) with slotted children where their slots are, and into frames this
// script may read; a frame of another site is listed, unread. What is not drawn
// (display: none, visibility: hidden, content-visibility), aria-hidden and inert parts
// are left out; an element drawn at opacity 0 (a seek bar shown on hover) is kept, as
// the accessibility tree keeps it.
//
// Called with [max nodes, milliseconds, refs]; answers {nodes, cut}: each node a small
// object (only what it has) with "p", the index of its parent (-1: the page). A page
// larger than either bound is cut there, and "cut" says how many elements were not read.
// refs ([[number, by, selector], ...]) are elements another reading of the page numbered:
// each found gets its number ("mmid"), and is listed even without a role of its own.
const [MAX_NODES, MAX_MS] = [arguments[0] || 5000, arguments[1] || 2000];
const REFS = new Map();
for (const [number, by, selector] of arguments[2] || []) {
  try {
    const result = ngFind(by, selector);
    if (result.found && result.found.length === 1) REFS.set(result.found[0], number);
  } catch (e) {
    // a selector this page cannot take (XPath into a shadow root): that element unnumbered
  }
}
const started = performance.now();
const nodes = [];
let cut = 0;

// Roles whose accessible name is their content: their text is said by their name.
const NAMED_BY_CONTENT = new Set(["button", "link", "heading", "tab", "option", "menuitem",
  "menuitemcheckbox", "menuitemradio", "treeitem", "cell", "gridcell", "columnheader",
  "rowheader", "checkbox", "radio", "switch", "tooltip"]);
const TEXT_INPUTS = new Set(["text", "search", "email", "url", "tel", "number", ""]);

function clean(text) {
  return (text || "").replace(/[\s\u00a0]+/g, " ").trim();
}

function drawn(el) {
  if (el.checkVisibility) return el.checkVisibility({checkVisibilityCSS: true});
  return el.getClientRects().length > 0;
}

function hidden(el) {
  return el.getAttribute("aria-hidden") === "true" || el.inert === true;
}

function deepActive() {
  let active = document.activeElement;
  while (active) {
    const inner = (active.shadowRoot && active.shadowRoot.activeElement) ||
      (ngIsFrame(active) && ngFrameDoc(active) && ngFrameDoc(active).activeElement);
    if (!inner || inner === active) return active;
    active = inner;
  }
  return active;
}
const ACTIVE = deepActive();

function roleOf(el) {
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

function valueOf(el, role) {
  const tag = el.localName;
  if (tag === "input") {
    if (el.type === "password") return el.value ? "(filled)" : "";  // a secret is never read
    if (["checkbox", "radio", "button", "submit", "reset", "image", "file", "hidden"]
      .includes(el.type)) return "";
    return el.value;
  }
  if (tag === "textarea") return el.value;
  if (tag === "select") {
    return Array.from(el.selectedOptions).map((o) => clean(o.label || o.text)).join(", ");
  }
  const text = el.getAttribute("aria-valuetext") || el.getAttribute("aria-valuenow");
  if (text) return text;
  if (role === "combobox") {
    const input = el.querySelector("input");
    return input ? input.value : "";
  }
  return "";
}

function statesOf(el, role) {
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
  if (el === ACTIVE) out.push("focused");
  if (attr("aria-busy") === "true") out.push("busy");
  if (el.required || attr("aria-required") === "true") out.push("required");
  if ((el.readOnly && ["input", "textarea"].includes(el.localName)) ||
      attr("aria-readonly") === "true") out.push("readonly");
  if ((el.matches && el.matches(":modal")) || attr("aria-modal") === "true") out.push("modal");
  if (attr("aria-invalid") && attr("aria-invalid") !== "false") out.push("invalid");
  return out;
}

function mediaOf(el) {
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

function describe(el, role, parent, frame) {
  const node = {p: parent, role: role};
  if (frame) node.frame = frame;
  if (REFS.has(el)) node.mmid = REFS.get(el);
  let name = "";
  try {
    name = clean(ngA11y.computeAccessibleName(el));
  } catch (e) {
    name = clean(el.getAttribute("aria-label") || el.title || "");
  }
  if (name) node.name = name.slice(0, 200);
  const value = valueOf(el, role);
  if (value && clean(value) !== name) node.value = clean(value).slice(0, 200);
  const states = statesOf(el, role);
  if (states.length) node.states = states;
  const level = role === "heading" && (Number(el.getAttribute("aria-level")) ||
    Number((/^h([1-6])$/.exec(el.localName) || [])[1]));
  if (level) node.level = level;
  const min = el.getAttribute("aria-valuemin") || (el.localName === "input" && el.min);
  const max = el.getAttribute("aria-valuemax") || (el.localName === "input" && el.max);
  if (["slider", "spinbutton", "progressbar", "meter"].includes(role)) {
    const low = min !== "" && min !== false && min !== null ? Number(min) :
      (el.type === "range" ? 0 : null);
    const high = max !== "" && max !== false && max !== null ? Number(max) :
      (el.type === "range" ? 100 : null);
    if (low !== null && high !== null) node.bounds = [low, high];
  }
  const placeholder = el.getAttribute("placeholder") || el.getAttribute("aria-placeholder");
  // shown only while the field is empty, as the page shows it
  if (placeholder && !value && clean(placeholder) !== name) node.placeholder = clean(placeholder);
  if (el.isContentEditable) node.editable = "richtext";
  else if (role === "textbox" || role === "searchbox" || role === "combobox") {
    if (el.localName === "textarea" ||
        (el.localName === "input" && TEXT_INPUTS.has(el.type))) node.editable = "plaintext";
  }
  if (el.hasAttribute("aria-describedby") || el.hasAttribute("aria-description")) {
    const text = clean(ngA11y.computeAccessibleDescription(el));
    if (text && text !== name) node.description = text.slice(0, 200);
  }
  if (role === "video" || role === "audio") node.media = mediaOf(el);
  return node;
}

// The children of `node` as drawn: a host's shadow root, a slot's assigned nodes.
function drawnChildren(node) {
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

// Depth first, in document order, without recursion (a deep page would overflow it):
// the stack holds [node, index of the node it belongs to, frame chain, whether its
// text is said by a name already].
const stack = [[document.body || document.documentElement, -1, "", false]];
while (stack.length) {
  const [node, parent, frame, named] = stack.pop();
  if (node.nodeType === 3) {
    const text = clean(node.data);
    if (text && !named) {
      const last = nodes[nodes.length - 1];
      if (last && last.role === "text" && last.p === parent) last.name += " " + text;
      else nodes.push({p: parent, role: "text", name: text});
    }
    continue;
  }
  if (node.nodeType !== 1 && node.nodeType !== 11) continue;
  let here = parent;
  let saidByName = named;
  if (node.nodeType === 1) {
    const tag = node.localName;
    if (tag === "script" || tag === "style" || tag === "noscript" || tag === "template" ||
        tag === "head") continue;
    if (hidden(node) || !drawn(node)) continue;
    if (nodes.length >= MAX_NODES || performance.now() - started > MAX_MS) {
      cut += 1;
      continue;
    }
    if ((tag === "label" && node.control) || tag === "caption" || tag === "legend")
      saidByName = true;  // the text that names a control, table or group: its name says it
    const role = roleOf(node) || (REFS.has(node) ? "generic" : null);
    if (role) {
      const entry = describe(node, role, parent, frame);
      nodes.push(entry);
      here = nodes.length - 1;
      saidByName = saidByName || (NAMED_BY_CONTENT.has(role) && Boolean(entry.name));
      if (role === "iframe") {
        const doc = ngFrameDoc(node);
        if (!doc) {
          entry.unread = "a frame of another site, in a process of its own";
        } else if (doc.body) {
          const chain = (frame ? frame + " >> " : "") + ngSelfSelector(node);
          stack.push([doc.body, here, chain, false]);
        }
        continue;
      }
      if (role === "textbox" && !node.isContentEditable) continue;  // its text is its value
      if (role === "combobox" && node.localName === "input") continue;
      if (node.localName === "select") {  // its options are drawn only while it is open
        for (const option of node.options) {
          nodes.push(describe(option, "option", here, frame));
        }
        continue;
      }
    }
  }
  const kids = drawnChildren(node);
  for (let i = kids.length - 1; i >= 0; i -= 1) stack.push([kids[i], here, frame, saidByName]);
}

// The CSS of a frame element among its siblings, for the chain of what is inside it.
function ngSelfSelector(el) {
  if (el.id) return "#" + CSS.escape(el.id);
  const same = Array.from(el.parentNode.children).filter((c) => c.localName === el.localName);
  return el.localName + (same.length > 1 ? ":nth-of-type(" + (same.indexOf(el) + 1) + ")" : "");
}

return {nodes: nodes, cut: cut};
