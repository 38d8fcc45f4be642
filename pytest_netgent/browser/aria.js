// The page as its users perceive it, in one round trip: every element assistive
// technology would present (its role and accessible name as browsers compute them, by
// dom-accessibility-api, bundled in a11y.js), its value and states, the page's text
// under the element it belongs to, and its media (playing, time, height). deep.js,
// a11y.js and roles.js (what each element is) are prepended; aria.py reads the answer.
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

const ACTIVE = ngDeepActive();

function describe(el, role, parent, frame) {
  const node = {p: parent, role: role};
  if (frame) node.frame = frame;
  if (REFS.has(el)) node.mmid = REFS.get(el);
  const name = ngNameOf(el);
  if (name) node.name = name.slice(0, 200);
  const value = ngValueOf(el, role);
  if (value && ngClean(value) !== name) node.value = ngClean(value).slice(0, 200);
  const states = ngStatesOf(el, role, ACTIVE);
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
  if (placeholder && !value && ngClean(placeholder) !== name) {
    node.placeholder = ngClean(placeholder);
  }
  if (el.isContentEditable) node.editable = "richtext";
  else if (role === "textbox" || role === "searchbox" || role === "combobox") {
    if (el.localName === "textarea" ||
        (el.localName === "input" && NG_TEXT_INPUTS.has(el.type))) node.editable = "plaintext";
  }
  if (el.hasAttribute("aria-describedby") || el.hasAttribute("aria-description")) {
    const text = ngClean(ngA11y.computeAccessibleDescription(el));
    if (text && text !== name) node.description = text.slice(0, 200);
  }
  if (role === "video" || role === "audio") node.media = ngMediaOf(el);
  return node;
}

// Depth first, in document order, without recursion (a deep page would overflow it):
// the stack holds [node, index of the node it belongs to, frame chain, whether its
// text is said by a name already].
const stack = [[document.body || document.documentElement, -1, "", false]];
while (stack.length) {
  const [node, parent, frame, named] = stack.pop();
  if (node.nodeType === 3) {
    const text = ngClean(node.data);
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
    if (ngA11yHidden(node) || !ngDrawn(node)) continue;
    if (nodes.length >= MAX_NODES || performance.now() - started > MAX_MS) {
      cut += 1;
      continue;
    }
    if ((tag === "label" && node.control) || tag === "caption" || tag === "legend")
      saidByName = true;  // the text that names a control, table or group: its name says it
    const role = ngRoleOf(node) || (REFS.has(node) ? "generic" : null);
    if (role) {
      const entry = describe(node, role, parent, frame);
      nodes.push(entry);
      here = nodes.length - 1;
      saidByName = saidByName || (NG_NAMED_BY_CONTENT.has(role) && Boolean(entry.name));
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
  const kids = ngDrawnChildren(node);
  for (let i = kids.length - 1; i >= 0; i -= 1) stack.push([kids[i], here, frame, saidByName]);
}

return {nodes: nodes, cut: cut};
