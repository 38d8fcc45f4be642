// Keeps, in every document of the tab, the page's requests still waiting for their
// server's answer (fetch and XMLHttpRequest, until the response headers arrive), so that
// a state that never matched because an API is slow is reported as a slow server rather
// than as UI drift. Registered once per tab (Page.addScriptToEvaluateOnNewDocument).
(() => {
  if (window.__netgentPending) return;
  const pending = new Map();
  window.__netgentPending = pending;
  let next = 0;
  const nativeFetch = window.fetch;
  if (typeof nativeFetch === "function") {
    window.fetch = function (input, init) {
      const id = ++next;
      const method = (init && init.method) || (input && input.method) || "GET";
      const url = (input && input.url) || String(input);
      pending.set(id, [String(method).toUpperCase(), new URL(url, location.href).href,
                       performance.now()]);
      const answer = nativeFetch.apply(this, arguments);
      const settle = () => pending.delete(id);
      answer.then(settle, settle);
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
      const settle = () => { if (this.readyState >= 2) pending.delete(id); };
      this.addEventListener("readystatechange", settle);
      this.addEventListener("loadend", () => pending.delete(id));
      return send.apply(this, arguments);
    };
  }
})();
