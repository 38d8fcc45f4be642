// Keeps the closed shadow roots a document's scripts attach, so that checks and page
// observation reach inside them as a person's eyes do (a closed root is closed to the
// page's other scripts, not to what the user sees). Runs before the page's own scripts
// (Page.addScriptToEvaluateOnNewDocument), in every frame of the tab. Open roots need
// nothing: element.shadowRoot gives them.
(() => {
  if (window.__netgentRoots) return;
  const roots = new WeakMap();
  Object.defineProperty(window, "__netgentRoots", {value: roots, enumerable: false});
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function attachShadow(init) {
    const root = attach.call(this, init);
    if (init && init.mode === "closed") roots.set(this, root);
    return root;
  };
})();
