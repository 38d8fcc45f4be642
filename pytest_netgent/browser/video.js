// Video quality sampler: every INTERVAL ms, one sample per <video> on the page.
//
// Installed by the start_video_sampling action in the current page and, through the
// DevTools protocol, in every page loaded until stop_video_sampling. Samples wait in
// window.__netgentQoe until the engine takes them (each engine tick does); a page that is
// left hands its pending samples to the next page of the same site through sessionStorage.
// The top document samples the videos of its shadow roots and of its frames of the same
// site itself; in a frame of another site (installed there through WebDriver) the sampler
// posts its samples to the top document each interval, which adds them to its own tick.
(function (interval) {
  "use strict";
  /* deep.js */
  const KEY = "netgent.qoe";
  const old = window.__netgentQoe;
  if (old && old.timer) return;  // already sampling this page
  let reachable = true;  // whether the top document reads this one itself
  try {
    reachable = Boolean(window.top.document);
  } catch (e) {
    reachable = false;
  }
  if (window !== window.top && reachable) return;  // the top's sampler reads this frame
  const pending = [];
  try {
    const carried = JSON.parse(sessionStorage.getItem(KEY) || "[]");
    if (Array.isArray(carried)) pending.push(...carried);
    sessionStorage.removeItem(KEY);
  } catch (e) { /* no storage on data: pages; nothing carried */ }
  const stalls = new WeakMap();
  const names = new WeakMap();
  let counter = 0;
  const far = new Map();  // each frame of another site: its videos' numbers here, its latest
  window.addEventListener("message", (event) => {
    const batch = event.data && event.data.__netgentQoe;
    if (!Array.isArray(batch) || window !== window.top) return;
    const known = far.get(event.source) || {numbers: new Map(), latest: []};
    for (const entry of batch) {
      if (entry.video === null) continue;
      if (!known.numbers.has(entry.video)) known.numbers.set(entry.video, counter++);
      entry.video = known.numbers.get(entry.video);
    }
    known.latest = batch.filter((entry) => entry.video !== null);
    far.set(event.source, known);
  });

  function watch(video) {
    if (stalls.has(video)) return;
    stalls.set(video, 0);
    names.set(video, counter++);
    // "waiting": playback stopped because the next frame is not there (a stall);
    // the first one, before playback ever started, is start-up delay, not a stall.
    video.addEventListener("waiting", () => {
      if (video.currentTime > 0) stalls.set(video, stalls.get(video) + 1);
    });
  }

  function ahead(video) {
    const t = video.currentTime;
    const ranges = video.buffered;
    for (let i = 0; i < ranges.length; i++) {
      if (ranges.start(i) <= t + 0.1 && t <= ranges.end(i)) return ranges.end(i) - t;
    }
    return 0;
  }

  // A page with YouTube's player API: its "Stats for Nerds" and video data.
  function player() {
    const p = document.getElementById("movie_player");
    if (!p || typeof p.getStatsForNerds !== "function") return null;
    const out = {};
    try { out.stats_for_nerds = p.getStatsForNerds(); } catch (e) { /* not ready */ }
    try {
      if (typeof p.getVideoData === "function") out.video_data = p.getVideoData();
    } catch (e) { /* not ready */ }
    return out;
  }

  function sample() {
    const now = Date.now();
    // every <video> a person sees: in the document, in its shadow roots (open, and closed
    // ones shadow.js kept) and in its frames of this site, at any depth (deep.js)
    const videos = [];
    for (const scope of ngScopes(document)) videos.push(...scope.querySelectorAll("video"));
    const extra = player();
    const entries = [];
    for (const known of far.values()) {  // the latest of each frame of another site
      for (const entry of known.latest.splice(0)) entries.push({...entry, t: now});
    }
    // a tick without a video still counts (the stats log writes one line per interval)
    if (!videos.length && !entries.length) {
      entries.push({t: now, page: location.href, video: null, player: extra});
    }
    videos.forEach((video) => {
      watch(video);
      const quality = video.getVideoPlaybackQuality ? video.getVideoPlaybackQuality() : null;
      entries.push({
        t: now,
        page: location.href,
        video: names.get(video),
        element: video.id ? "#" + video.id : "video",
        playback_time: Math.round(video.currentTime * 1000) / 1000,
        paused: video.paused,
        ended: video.ended,
        ready_state: video.readyState,
        width: video.videoWidth,
        height: video.videoHeight,
        buffered_ahead: Math.round(ahead(video) * 1000) / 1000,
        decoded_frames: quality ? quality.totalVideoFrames : null,
        dropped_frames: quality ? quality.droppedVideoFrames : null,
        stalls: stalls.get(video),
        playback_rate: video.playbackRate,
        player: extra,
      });
    });
    if (window !== window.top) {
      window.top.postMessage({__netgentQoe: entries}, "*");  // the top's tick takes them
      return;
    }
    pending.push(...entries);
    if (pending.length > 10000) pending.splice(0, pending.length - 10000);
  }

  const state = {
    timer: setInterval(sample, interval),
    // frames of another site whose sampler has not been heard from (added since the
    // engine last started it in the page's frames): each engine tick asks
    unsampled() {
      let count = 0;
      for (const scope of ngScopes(document)) {
        for (const frame of scope.querySelectorAll("iframe, frame")) {
          if (ngFrameDoc(frame) || !ngLoads(frame)) continue;
          if (!far.has(frame.contentWindow)) count++;
        }
      }
      return count;
    },
    take() { return pending.splice(0); },
    stop() {
      clearInterval(state.timer);
      state.timer = null;
      sample();
      for (const source of far.keys()) source.postMessage({__netgentQoeStop: true}, "*");
      return pending.splice(0);
    },
  };
  window.addEventListener("message", (event) => {
    if (event.data && event.data.__netgentQoeStop && event.source === window.top) state.stop();
  });
  window.__netgentQoe = state;
  window.addEventListener("pagehide", () => {
    if (!state.timer) return;
    sample();
    try { sessionStorage.setItem(KEY, JSON.stringify(pending)); } catch (e) { /* gone */ }
  });
  sample();
})(INTERVAL);
