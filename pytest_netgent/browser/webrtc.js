// WebRTC quality sampler: every peer connection the page makes, its getStats() once a
// second, one sample per RTP stream (inbound and outbound, audio and video).
//
// Installed by start_webrtc_tracking in the current page and, through the DevTools
// protocol, before the scripts of every page loaded after it, so the page's own
// RTCPeerConnection calls go through it. Samples wait in window.__netgentRtc until the
// engine takes them (each tick does). The connections are also NetGent's
// window.__netgentPeerConnections.
(function (interval) {
  "use strict";
  if (window.__netgentRtc || !window.RTCPeerConnection) return;
  const connections = [];
  const Native = window.RTCPeerConnection;
  function Tracked(...args) {
    // new.target: a page's own subclass of RTCPeerConnection keeps its methods
    const connection = Reflect.construct(Native, args, new.target || Tracked);
    connections.push(connection);
    return connection;
  }
  Tracked.prototype = Native.prototype;
  Object.setPrototypeOf(Tracked, Native);
  window.RTCPeerConnection = Tracked;
  if (window.webkitRTCPeerConnection) window.webkitRTCPeerConnection = Tracked;
  Object.defineProperty(window, "__netgentPeerConnections", {value: connections});

  const pending = [];
  const previous = new Map();  // stream key: its last bytes, frames and time
  const num = (v) => (typeof v === "number" && isFinite(v) ? v : null);

  function rate(key, bytes, frames, at) {
    const last = previous.get(key);
    previous.set(key, {bytes, frames, at});
    if (!last || at <= last.at) return [null, null];
    const seconds = (at - last.at) / 1000;
    const bits = bytes === null || last.bytes === null ? null : (bytes - last.bytes) * 8 / seconds;
    const fps = frames === null || last.frames === null ? null : (frames - last.frames) / seconds;
    return [bits, fps];
  }

  async function sampleOne(index, connection, t) {
    const report = await connection.getStats();
    const stats = new Map();
    report.forEach((s) => stats.set(s.id, s));
    let pairRtt = null;
    report.forEach((s) => {
      if (s.type === "candidate-pair" && s.nominated && num(s.currentRoundTripTime) !== null) {
        pairRtt = s.currentRoundTripTime;
      }
    });
    report.forEach((s) => {
      if (s.type !== "inbound-rtp" && s.type !== "outbound-rtp") return;
      const inbound = s.type === "inbound-rtp";
      const remote = stats.get(s.remoteId) || {};
      const source = stats.get(s.mediaSourceId) || {};
      const bytes = num(inbound ? s.bytesReceived : s.bytesSent);
      const frames = num(inbound ? s.framesDecoded : s.framesEncoded);
      const [bitrate, fps] = rate(index + "/" + s.id, bytes, frames, num(s.timestamp) || t);
      pending.push({
        t,
        page: location.href,
        connection: index,
        connection_state: connection.connectionState,
        direction: inbound ? "inbound" : "outbound",
        kind: s.kind || s.mediaType || null,
        ssrc: num(s.ssrc),
        track: s.trackIdentifier || source.trackIdentifier || null,
        bytes,
        packets: num(inbound ? s.packetsReceived : s.packetsSent),
        bitrate_bps: bitrate === null ? null : Math.round(bitrate),
        packets_lost: num(inbound ? s.packetsLost : remote.packetsLost),
        jitter: num(inbound ? s.jitter : remote.jitter),
        rtt: num(remote.roundTripTime) !== null ? remote.roundTripTime : pairRtt,
        frames,
        frames_per_second: num(s.framesPerSecond) !== null ? s.framesPerSecond :
          (fps === null ? null : Math.round(fps * 100) / 100),
        width: num(s.frameWidth) !== null ? s.frameWidth : num(source.width),
        height: num(s.frameHeight) !== null ? s.frameHeight : num(source.height),
      });
    });
  }

  let busy = false;
  async function sample() {
    if (busy) return;
    busy = true;
    const t = Date.now();
    try {
      for (const [index, connection] of connections.entries()) {
        if (connection.connectionState === "closed") continue;
        try { await sampleOne(index, connection, t); } catch (e) { /* closed meanwhile */ }
      }
    } finally {
      busy = false;
    }
  }

  const timer = setInterval(sample, interval);
  window.__netgentRtc = {
    timer,
    connections,
    take() { return pending.splice(0); },
    async stop() {
      clearInterval(timer);
      await sample();
      return pending.splice(0);
    },
  };
})(INTERVAL);
