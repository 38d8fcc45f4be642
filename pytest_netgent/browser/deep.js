// Reaching into shadow roots and frames: the helpers checks.js and observe.js share (they
// are prepended to each script, so they define functions only).
//
// A selector may name a chain: CSS selectors of shadow hosts and frames, then the element's
// own selector, joined by " >> ", e.g. "ng-app >> ng-search >> input[name=q]" or
// "iframe#player >> button.play". Each link is looked up inside what the link before it
// holds: a frame's document (<iframe>, <frame>) or a host's shadow root, open or closed
// (closed roots are known when shadow.js ran before the page's scripts). A link that
// matches several hosts looks inside each. Links before the last are CSS; the last uses
// the check's or action's "by" (XPath only outside shadow roots: it cannot reach in).

const NG_CHAIN = /\s+>>\s+/;

function ngLinks(selector) {
  return String(selector).split(NG_CHAIN);
}

function ngIsFrame(el) {
  return el.tagName === "IFRAME" || el.tagName === "FRAME";
}

// The shadow root of a host, open or closed (closed: kept by shadow.js), or null.
function ngRootOf(host) {
  if (host.shadowRoot) return host.shadowRoot;
  const view = host.ownerDocument && host.ownerDocument.defaultView;
  const closed = view && view.__netgentRoots;
  return (closed && closed.get(host)) || null;
}

// Whether a frame element loads a page of its own (not about:blank, data: or nothing).
function ngLoads(frame) {
  return !/^(about:|data:|javascript:|$)/.test(frame.src);
}

// What a frame element shows, when this script may read it (same origin), else null.
function ngFrameDoc(frame) {
  try {
    return frame.contentDocument || null;
  } catch (e) {
    return null;
  }
}

function ngQuery(scope, by, selector) {
  const doc = scope.nodeType === 9 ? scope : scope.ownerDocument;
  switch (by) {
    case "css selector":
      return Array.from(scope.querySelectorAll(selector));
    case "id":
      return Array.from(scope.querySelectorAll("#" + CSS.escape(selector)));
    case "name":
      return Array.from(scope.querySelectorAll("[name=\"" + CSS.escape(selector) + "\"]"));
    case "class name":
      return Array.from(scope.querySelectorAll("." + CSS.escape(selector)));
    case "tag name":
      return Array.from(scope.querySelectorAll(selector));
    case "xpath": {
      if (scope.nodeType !== 9) throw new Error("XPath cannot reach inside a shadow root: " +
        "give this link as a CSS selector");
      const snap = doc.evaluate(selector, doc, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE,
        null);
      const out = [];
      for (let i = 0; i < snap.snapshotLength; i++) out.push(snap.snapshotItem(i));
      return out;
    }
    case "link text":
      return Array.from(scope.querySelectorAll("a")).filter(
        (a) => a.innerText.trim() === selector);
    case "partial link text":
      return Array.from(scope.querySelectorAll("a")).filter(
        (a) => a.innerText.includes(selector));
    default:
      throw new Error("unknown 'by': " + by);
  }
}

// The elements a (possibly chained) selector names, or {broken: why} naming the link at
// fault, or {far: n} when link n is a frame this script may not read (another origin:
// the caller looks inside it through WebDriver).
function ngFind(by, selector) {
  const links = ngLinks(selector);
  if (links.length === 1) return {found: ngQuery(document, by, selector)};
  let scopes = [document];
  for (let i = 0; i < links.length - 1; i++) {
    const hosts = [];
    for (const scope of scopes) hosts.push(...ngQuery(scope, "css selector", links[i]));
    const where = "link " + (i + 1) + " (" + JSON.stringify(links[i]) + ")";
    if (!hosts.length) return {found: [], broken: where + " is not on the page"};
    scopes = [];
    for (const host of hosts) {
      if (ngIsFrame(host)) {
        const inner = ngFrameDoc(host);
        if (inner) scopes.push(inner);
        else if (ngLoads(host)) return {found: [], far: i};
      } else {
        const root = ngRootOf(host);
        if (root) scopes.push(root);
      }
    }
    if (!scopes.length) {
      // its root may be a closed one the page's HTML declared (DevTools hands it over)
      return {found: [], unseen: i, broken: where + " is neither a frame with a document " +
        "nor a shadow host (no shadow root)"};
    }
  }
  const found = [];
  for (const scope of scopes) found.push(...ngQuery(scope, by, links[links.length - 1]));
  return {found};
}

// Every shadow root and readable frame document under a scope, depth first.
function ngScopes(scope, out) {
  out = out || [];
  out.push(scope);
  const walker = (scope.ownerDocument || scope).createTreeWalker(scope, NodeFilter.SHOW_ELEMENT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const root = ngRootOf(node);
    if (root) ngScopes(root, out);
    if (ngIsFrame(node)) {
      const inner = ngFrameDoc(node);
      if (inner && inner.documentElement) ngScopes(inner, out);
    }
  }
  return out;
}

// The text a person sees, shadow roots and readable frames included.
function ngDeepText() {
  const parts = [];
  for (const scope of ngScopes(document)) {
    if (scope.nodeType === 9) {
      if (scope.body) parts.push(scope.body.innerText);
    } else {
      for (const child of scope.childNodes) {
        if (child.nodeType === 3) parts.push(child.textContent);
        else if (child.nodeType === 1 && !/^(STYLE|SCRIPT|TEMPLATE)$/.test(child.tagName)) {
          parts.push(child.innerText);
        }
      }
    }
  }
  return parts.join("\n");
}

// The WebRTC samples waiting in a window and in its frames of the same site, at any
// depth (stop: their samplers stopped too); frames of another site are read through
// WebDriver (webrtc.py).
function ngRtcTake(win, stop) {
  const out = [];
  let rtc;
  try {
    rtc = win.__netgentRtc;
  } catch (e) {
    return out;  // a frame of another site
  }
  if (rtc && rtc.take) {
    if (stop) clearInterval(rtc.timer);
    out.push(...rtc.take());
  }
  for (let i = 0; i < win.frames.length; i++) out.push(...ngRtcTake(win.frames[i], stop));
  return out;
}

// NetGent's WebRTC totals of a window's peer connections and of its frames of the same
// site, at any depth (a promise: getStats answers later); frames of another site are
// read through WebDriver (webrtc.py) and added.
async function ngRtcTotals(win) {
  const totals = {connection_count: 0, bytes_received: 0, bytes_sent: 0,
    packets_received: 0, packets_sent: 0, packets_lost: 0, frames_decoded: 0,
    frames_encoded: 0, jitter_seconds_max: 0, connection_states: []};
  const n = (v) => Number(v || 0);
  const windows = [];
  const gather = (w) => {
    try {
      windows.push(w.__netgentPeerConnections || []);
    } catch (e) {
      return;  // a frame of another site
    }
    for (let i = 0; i < w.frames.length; i++) gather(w.frames[i]);
  };
  gather(win);
  for (const connection of windows.flat()) {
    totals.connection_count += 1;
    totals.connection_states.push(connection.connectionState);
    let report;
    try { report = await connection.getStats(); } catch (e) { continue; }  // closed meanwhile
    report.forEach((s) => {
      if (s.type === "inbound-rtp") {
        totals.bytes_received += n(s.bytesReceived);
        totals.packets_received += n(s.packetsReceived);
        totals.packets_lost += n(s.packetsLost);
        totals.frames_decoded += n(s.framesDecoded);
        totals.jitter_seconds_max = Math.max(totals.jitter_seconds_max, n(s.jitter));
      } else if (s.type === "outbound-rtp") {
        totals.bytes_sent += n(s.bytesSent);
        totals.packets_sent += n(s.packetsSent);
        totals.frames_encoded += n(s.framesEncoded);
      }
    });
  }
  return totals;
}

// How many custom elements (a name with "-") of the page have no shadow root a script
// here sees: each may hold a closed root its HTML declared (<template shadowrootmode=
// "closed">), which only DevTools reaches (declared.py hands those over).
function ngUnseenHosts() {
  let n = 0;
  for (const scope of ngScopes(document)) {
    for (const el of scope.querySelectorAll("*")) {
      if (el.localName.includes("-") && !ngRootOf(el)) n++;
    }
  }
  return n;
}

// Whether the page has a frame this script may not read (another origin), anywhere.
function ngHasFarFrame() {
  return ngFarFrames().length > 0;
}

// Selectors that find one element in its own scope (observe.js builds on them).

function ngGenerated(token) {
  // React/Emotion/styled-components ids and hashes: digits runs, hex, ":r1:", "css-1x2y"
  return /\d{3,}|\b[0-9a-f]{8,}\b|^:r|^(css|sc|jsx|ember|ext-gen)-|[a-z]+\d+[a-z]+\d/i
    .test(token) || token.length > 40;
}

// How many elements of ``scope`` (a document or a shadow root) ``selector`` matches.
function ngCount(by, selector, scope) {
  try {
    return ngQuery(scope, by, selector).length;
  } catch (e) {
    return 0;
  }
}

function ngClassSelector(el) {
  const tag = el.tagName.toLowerCase();
  const classes = Array.from(el.classList).filter((c) => !ngGenerated(c)).slice(0, 3);
  return classes.length ? tag + classes.map((c) => "." + CSS.escape(c)).join("") : "";
}

function ngUniqueCss(el, scope) {
  const tag = el.tagName.toLowerCase();
  if (el.id && !ngGenerated(el.id)) {
    const s = "#" + CSS.escape(el.id);
    if (ngCount("css selector", s, scope) === 1) return s;
  }
  const path = [];
  let node = el;
  const top = scope.nodeType === 9 ? scope.documentElement : null;
  while (node && node.nodeType === 1 && node !== top) {
    let part = ngClassSelector(node) || node.tagName.toLowerCase();
    if (node.id && !ngGenerated(node.id) &&
        ngCount("css selector", "#" + CSS.escape(node.id), scope) === 1) {
      path.unshift("#" + CSS.escape(node.id));  // an id repeated in its root is no anchor
      break;
    }
    const parent = node.parentElement;
    if (parent) {
      const same = Array.from(parent.children).filter((c) => c.matches(part));
      if (same.length > 1) part += ":nth-of-type(" +
        (Array.from(parent.children).filter((c) => c.tagName === node.tagName)
          .indexOf(node) + 1) + ")";
    }
    path.unshift(part);
    const s = path.join(" > ");
    if (ngCount("css selector", s, scope) === 1) return s;
    node = parent;
  }
  const s = path.join(" > ");
  return ngCount("css selector", s, scope) === 1 ? s : tag;
}

// Frames of another origin anywhere in the page (in shadow roots and readable frames too),
// each as the chain that leads to it: WebDriver enters them, a page script cannot.
function ngFarFrames() {
  const out = [];
  const walk = (scope, prefix) => {
    const walker = (scope.ownerDocument || scope).createTreeWalker(scope, NodeFilter.SHOW_ELEMENT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const root = ngRootOf(node);
      if (ngIsFrame(node)) {
        const inner = ngFrameDoc(node);
        const link = prefix + ngUniqueCss(node, scope);
        if (inner && inner.documentElement) walk(inner, link + " >> ");
        else if (!inner && ngLoads(node)) out.push(link);
      }
      if (root) walk(root, prefix + ngUniqueCss(node, scope) + " >> ");
    }
  };
  walk(document, "");
  return out;
}
