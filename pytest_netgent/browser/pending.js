// Keeps, in every document of the tab, the page's requests still waiting for their
// server's answer (fetch and XMLHttpRequest, until the response headers arrive), so that
// a state that never matched because an API is slow is reported as a slow server rather
// than as UI drift; and those answered whose body is still arriving (an XMLHttpRequest
// until it ends, a fetch until the browser's resource timing has its entry), and when the
// page began to leave for the next one (its document not come yet), so that under a slow
// network condition the link is named, not the UI. Registered once per tab
// (Page.addScriptToEvaluateOnNewDocument).
(() => {
  if (window.__netgentPending) return;
  const pending = new Map();
  const arriving = new Map();
  window.__netgentPending = pending;
  window.__netgentArriving = arriving;
  let next = 0;
  window.addEventListener("beforeunload", () => { window.__netgentLeaving = performance.now(); });
  const answered = (id) => {
    const request = pending.get(id);
    pending.delete(id);
    if (request) arriving.set(id, request);
  };
  const done = (id) => {
    pending.delete(id);
    arriving.delete(id);
  };
  if (typeof PerformanceObserver === "function") {
    try {
      // a fetch's entry is added once its whole body has come, read or not
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          for (const [id, request] of arriving) {
            if (request[1] === entry.name) {
              arriving.delete(id);
              break;
            }
          }
        }
      }).observe({type: "resource"});
    } catch (e) { /* no resource timing here: answers count as arrived */ }
  }
  const nativeFetch = window.fetch;
  if (typeof nativeFetch === "function") {
    window.fetch = function (input, init) {
      const id = ++next;
      const method = (init && init.method) || (input && input.method) || "GET";
      const url = new URL((input && input.url) || String(input), location.href).href;
      pending.set(id, [String(method).toUpperCase(), url, performance.now()]);
      const signal = (init && init.signal) || (input && input.signal);
      if (signal && signal.addEventListener) signal.addEventListener("abort", () => done(id));
      const answer = nativeFetch.apply(this, arguments);
      // only http(s) answers get a resource timing entry to tell their end by
      const timed = typeof PerformanceObserver === "function" && /^https?:/.test(url);
      answer.then(() => (timed ? answered(id) : done(id)), () => done(id));
      return answer;
    };
  }
  const proto = window.XMLHttpRequest && XMLHttpRequest.prototype;
  if (proto) {
    const open = proto.open;
    const send = proto.send;
    proto.open = function (method, url) {
      this.__netgentRequest = [String(method).toUpperCase(),
                               new URL(String(url), location.href).href];
      return open.apply(this, arguments);
    };
    proto.send = function () {
      const id = ++next;
      const [method, url] = this.__netgentRequest || ["GET", ""];
      pending.set(id, [method, url, performance.now()]);
      const settle = () => { if (this.readyState >= 2) answered(id); };
      this.addEventListener("readystatechange", settle);
      this.addEventListener("loadend", () => done(id));
      return send.apply(this, arguments);
    };
  }
})();
