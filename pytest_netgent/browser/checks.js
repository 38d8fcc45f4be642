// Evaluate every candidate state's checks in the page, in one WebDriver round trip.
//
// Called with execute_async_script(source, states, options): states is a list of
// {checks: [{type, params}], hold} with placeholders already substituted (hold: NetGent's
// check timeout in ms: no state declared after it fires on a younger page); options holds
//   exclude: {state, doc, href} or null: a state that just ran and may not fire again
//            while the page (document and URL) is unchanged,
//   wait_ms: how long to wait in the page for a state to match before answering,
//   poll_ms: the longest pause between evaluations while waiting,
//   fresh: no real page has loaded in this run yet (see START_PAGES),
//   rows: answer every check's result (for a report); false: only which states match,
//         a state's checks stopping at its first that fails (thousands of states).
//   adopted: [doc, n, recent]: the closed roots the page's HTML declared were handed over
//            (see declared.py) when the page had n custom elements without a root in sight
//            (recent: less than a second ago, not asked again whatever the number now).
// It re-evaluates on every DOM mutation (debounced) and at least every poll_ms, and
// answers as soon as an eligible state matches or wait_ms has passed, so waiting is
// event-driven with no fixed sleep and no extra round trips.
const FAR_MS = 200;
const states = arguments[0];
const options = arguments[1];
const done = arguments[arguments.length - 1];

if (!window.__netgentDoc) {
  window.__netgentDoc = Date.now().toString(36) + Math.random().toString(36).slice(2);
}
const doc = window.__netgentDoc;
const fnCache = window.__netgentFns || (window.__netgentFns = new Map());

// A browser's start pages. Before the run's first real page, a url check naming any of
// them holds on whichever of them this browser shows (NetGent's repositories begin with
// chrome://new-tab-page/, a reset browser here shows data:,); afterwards such a check
// means what it says.
const START_PAGES = new Set([
  "chrome://new-tab-page/", "chrome://newtab/", "about:blank", "about:newtab", "data:,",
]);

// NetGent's check_visibility: shown (display, visibility, opacity) and wholly inside
// the viewport.
function inViewport(el) {
  if (!el || el.nodeType !== 1) return false;
  const style = getComputedStyle(el);
  if (style.display === "none" || style.visibility === "hidden" || style.opacity === "0") {
    return false;
  }
  const r = el.getBoundingClientRect();
  const h = window.innerHeight || document.documentElement.clientHeight;
  const w = window.innerWidth || document.documentElement.clientWidth;
  return r.top >= 0 && r.left >= 0 && r.bottom <= h && r.right <= w;
}

// Visible as Playwright counts it: a box of some size, not display:none nor
// visibility:hidden (a transparent element counts).
function isBoxed(el) {
  if (!el || el.nodeType !== 1) return false;
  if (el.checkVisibility && !el.checkVisibility({checkVisibilityCSS: true})) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
}

// The document's text but for what no reader reads: its head, scripts, styles, templates.
function readable() {
  const skip = new Set(["HEAD", "SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"]);
  const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => {
      for (let el = node.parentElement; el; el = el.parentElement) {
        if (skip.has(el.tagName)) return NodeFilter.FILTER_REJECT;
      }
      return NodeFilter.FILTER_ACCEPT;
    },
  });
  const parts = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) parts.push(node.data);
  return parts.join(" ");
}

function isVisible(el) {
  if (!el || el.nodeType !== 1) return false;
  if (el.checkVisibility &&
      !el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
}

function normalise(url, ignore) {
  const u = new URL(url, location.href);
  if (ignore === true) u.search = "";
  else if (Array.isArray(ignore)) ignore.forEach((k) => u.searchParams.delete(k));
  return u.href;
}

function compare(actual, expected, match) {
  switch (match) {
    case "exact": return actual === expected;
    case "prefix": return actual.startsWith(expected);
    case "contains": return actual.includes(expected);
    case "pattern": return new RegExp(expected).test(actual);
    default: throw new Error("unknown 'match': " + match);
  }
}

// Whether a text check's text is in `actual`: as written, or with `ignore_case` in any
// case and with its spaces folded (as Playwright's get_by_text(exact=False) reads).
function holds(actual, p) {
  if (p.ignore_case !== true) return actual.includes(p.text);
  const fold = (t) => String(t).replace(/\s+/g, " ").toLowerCase();
  return fold(actual).includes(fold(p.text).trim());
}

// Whether the elements `found` are as many as the check asks: `count` exactly, or at
// least `at_least` (default 1).
function counted(found, p) {
  if (p.count !== undefined) return found.length === Number(p.count);
  return found.length >= (p.at_least !== undefined ? Number(p.at_least) : 1);
}

// A media check: some video or audio element of the page (or those `selector` finds)
// in the `state` asked (playing, paused, ended, buffering), at least `min_height` pixels
// of video high, and played on by `advanced` seconds since the check first looked at it
// in this document. [holds, why not].
function mediaHolds(p, doc) {
  const found = p.selector !== undefined ? ngFind("css selector", p.selector).found
    : ngDeepMedia();
  const media = found.filter((el) => el.localName === "video" || el.localName === "audio");
  if (!media.length) return [false, "no video or audio element"];
  const seen = window.__netgentMediaSeen || (window.__netgentMediaSeen = new Map());
  const key = JSON.stringify(p);
  const why = [];
  for (const [i, el] of media.entries()) {
    const m = ngMediaOf(el);
    if (p.state !== undefined && !m[p.state]) {
      why.push(el.localName + " " + (m.playing ? "playing" : m.ended ? "ended" : "paused"));
      continue;
    }
    if (p.min_height !== undefined && m.height < Number(p.min_height)) {
      why.push("video " + m.height + " px high");
      continue;
    }
    if (p.advanced !== undefined) {
      const first = seen.get(key + i);
      if (!first || first[0] !== doc || first[1] > el.currentTime) {
        seen.set(key + i, [doc, el.currentTime]);
        why.push("at " + m.time + " s, watching it advance");
        continue;
      }
      if (el.currentTime - first[1] < Number(p.advanced)) {
        why.push("advanced " + (Math.round((el.currentTime - first[1]) * 10) / 10) + " s");
        continue;
      }
    }
    return [true, ""];
  }
  return [false, why.join("; ")];
}

// Every video and audio element of the page, in shadow roots and frames of this site.
function ngDeepMedia() {
  const out = [];
  for (const scope of ngScopes(document, [])) {
    out.push(...scope.querySelectorAll("video, audio"));
  }
  return out;
}

function evaluate(first) {
  let unseen = false;  // a check failed that a closed root declared in the HTML could hold
  let bodyText = null;
  const text = () => (bodyText === null
    ? (bodyText = document.body ? document.body.innerText : "") : bodyText);
  let allText = null;
  const deepText = () => (allText === null ? (allText = ngDeepText()) : allText);
  let hasFar = null;
  const farFrame = () => (hasFar === null ? (hasFar = ngHasFarFrame()) : hasFar);
  const href = location.href;
  const rows = options.rows !== false;
  const results = [];
  const matched = [];
  const maybe = [];  // states that match if their checks in other-origin frames hold
  for (let i = 0; i < states.length; i++) {
    const checks = states[i].checks;
    const row = [];
    let all = true;
    const far = [];  // checks in frames of another origin: WebDriver looks there
    for (const [c, check] of checks.entries()) {
      if (!all && !rows) break;
      const p = check.params;
      let ok = false;
      let err = "";
      let failed = false;
      try {
        switch (check.type) {
          case "url": {
            const match = p.match || "exact";
            if (match === "exact" && options.fresh && START_PAGES.has(p.url) &&
                START_PAGES.has(href)) {
              ok = true;
              break;
            }
            const actual = p.ignore_query ? normalise(href, p.ignore_query) : href;
            const expected = match === "pattern" ? p.url
              : (p.ignore_query ? normalise(p.url, p.ignore_query) : p.url);
            ok = compare(actual, expected, match);
            break;
          }
          case "element": {
            const where = ngFind(p.by, p.selector);
            // first: only the first match counts, as Playwright's locator.first waits on it
            let found = p.first === true ? where.found.slice(0, 1) : where.found;
            if (p.text !== undefined) {
              found = found.filter((el) => (el.innerText || el.textContent || "").includes(p.text));
            }
            if (p.visible === false || p.check_visibility === false) ok = counted(found, p);
            else if (p.check_visibility === true) ok = counted(found.filter(inViewport), p);
            else ok = counted(found.filter(p.transparent === true ? isBoxed : isVisible), p);
            if (where.far !== undefined) {
              far.push(c);
              err = "inside a frame of another origin (link " + (where.far + 1) + ")";
            } else if (!ok) {
              unseen = unseen || where.unseen !== undefined;
              err = where.broken || (found.length ? "present but not visible" : "not found");
            }
            break;
          }
          case "text":
            // check_visibility: false also finds text that is not rendered; text in shadow
            // roots and frames is looked for only when the document's own does not hold it
            // ignore_case: as Playwright's get_by_text(exact=False) (NetGent's check_text)
            ok = p.check_visibility === false
              ? holds(p.ignore_case === true ? readable() : document.documentElement.textContent || "", p)
              : holds(text(), p) || holds(deepText(), p);
            unseen = unseen || !ok;
            if (!ok && p.check_visibility !== false && farFrame()) {
              far.push(c);  // it may be in a frame of another origin: WebDriver looks
              err = "not in the page; looking in its frames of another origin";
            }
            break;
          case "title":
            ok = compare(document.title, p.title, p.match || "contains");
            break;
          case "script": {
            let fn = fnCache.get(p.script);
            if (!fn) {
              fn = new Function("return (" + p.script + "\n);");
              fnCache.set(p.script, fn);
            }
            // a function (Playwright's wait_for_function, NetGent's check_javascript) is
            // called with its arg: the function itself is no answer
            const value = fn();
            const answer = typeof value === "function" ? value(p.arg) : value;
            if (answer && typeof answer.then === "function") {
              failed = true;  // a promise is no answer yet: the check does not hold
              err = "the script returned a promise: write it to return true or false";
              break;
            }
            ok = Boolean(answer);
            break;
          }
          case "role": {
            // by role and name, as users perceive the page (roles.js; a11y.js computes
            // roles and names as browsers do): not drawn, aria-hidden and inert parts
            // are not there
            const found = ngByRole(p);
            ok = counted(found, p);
            if (!ok) err = found.length ? found.length + " found" : "not found";
            break;
          }
          case "media":
            [ok, err] = mediaHolds(p, doc);
            break;
          case "always_true":  // NetGent's newer engine: a state that applies anywhere
            ok = true;
            break;
          default:
            err = "unknown check type " + check.type;
        }
      } catch (e) {
        ok = false;
        failed = true;  // a check that cannot be evaluated holds negated neither
        err = String(e && e.message || e);
      }
      const farHere = far[far.length - 1] === c;
      if (p.negate === true && !farHere && !failed) {  // WebDriver negates what it looks at
        ok = !ok;
        err = ok ? "" : "holds, and the check says it must not";
      }
      row.push(err ? [ok, err] : [ok]);
      all = all && (ok || farHere);
    }
    if (rows) results.push(row);
    const ex = options.exclude;
    const excluded = ex && ex.state === i && ex.doc === doc && ex.href === href;
    if (all && !excluded) {
      if (far.length) maybe.push([i, far]);
      else matched.push(i);
    }
  }
  // What went wrong with the page itself, told apart from a page that looks different:
  // Chromium's own error page (the server is down, the name does not resolve), or a
  // document the server answered with an error status.
  let netError = "";
  let status = 0;
  if (href.startsWith("chrome-error://")) {
    const code = document.querySelector(".error-code");
    netError = (code && code.textContent.trim()) || "the page could not be loaded";
  } else {
    const nav = performance.getEntriesByType && performance.getEntriesByType("navigation")[0];
    status = (nav && nav.responseStatus) || 0;
  }
  // the page's requests still unanswered, and those whose answer is still arriving, oldest
  // first (null: not watched in this page)
  const now = performance.now();
  const oldest = (requests) => requests ? Array.from(requests.values())
    .map(([method, url, since]) => [method, url, Math.round(now - since)])
    .sort((a, b) => b[2] - a[2]).slice(0, 3) : null;
  const pending = oldest(window.__netgentPending);
  const arriving = oldest(window.__netgentArriving);
  const leaving = window.__netgentLeaving ? Math.round(now - window.__netgentLeaving) : 0;
  // once per call: the custom elements that may hide a declared closed root (counted only
  // when a check failed that such a root could hold)
  const hosts = first && unseen && !matched.length ? ngUnseenHosts() : 0;
  const adopted = options.adopted;
  const handed = adopted && adopted[0] === doc && (adopted[1] === hosts || adopted[2]);
  return {doc, href, title: document.title, results, matched, maybe,
          ready: document.readyState, net_error: netError, status,
          hidden: document.visibilityState === "hidden", pending, arriving, leaving,
          unseen: hosts && !handed ? hosts : 0};
}

const started = performance.now();
let finished = false;
let stepped = false;
let timer = null;
let observer = null;

function finish(result) {
  if (finished) return;
  finished = true;
  if (observer) observer.disconnect();
  if (timer) clearTimeout(timer);
  // samples of the video quality sampler, if it runs in this page
  const qoe = window.__netgentQoe;
  if (qoe && qoe.take) {
    result.qoe = qoe.take();
    if (qoe.unsampled && window === window.top) result.unsampled = qoe.unsampled();
  }
  // and of the WebRTC sampler, in the page and its frames of the same site
  if (window.__netgentRtc) result.rtc = ngRtcTake(window, false);
  done(result);
}

function step() {
  if (finished) return;
  timer = null;
  let result;
  try {
    result = evaluate(!stepped);
    stepped = true;
  } catch (e) {
    finish({error: String(e && e.message || e)});
    return;
  }
  const elapsed = performance.now() - started;
  // NetGent tries its states in order, each check waiting up to its timeout: a state
  // declared after one whose timeout has not run out on this page (performance.now() is
  // the page's age) waits for it to match or run out, within this evaluation's wait.
  const first = result.matched.length ? result.matched[0] : -1;
  const age = performance.now();
  const held = first > 0 && states.slice(0, first).some((s) => (s.hold || 0) > age);
  // a state that may match needs WebDriver to look into a frame of another origin: the
  // page answers for it at most every FAR_MS, so a check there that does not hold yet (a
  // text the page does not show, beside an ad's frame) does not make every poll a round
  // trip through the frames
  const far = result.maybe.length && elapsed >= Math.min(FAR_MS, options.wait_ms);
  // closed roots the HTML declared may hold what failed: answered at once, to be handed
  // over (declared.py) before the page is asked again
  if ((result.matched.length && !held) || far || result.unseen || elapsed >= options.wait_ms) {
    if (held) result.matched = [];  // still held: the next evaluation decides
    finish(result);
    return;
  }
  const pause = Math.min(options.poll_ms, options.wait_ms - elapsed);
  timer = setTimeout(step, Math.max(0, pause));
}

if (options.wait_ms > 0 && typeof MutationObserver !== "undefined" && document.documentElement) {
  observer = new MutationObserver(() => {
    if (finished) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(step, 0);
  });
  observer.observe(document.documentElement,
    {subtree: true, childList: true, attributes: true, characterData: true});
}
step();
