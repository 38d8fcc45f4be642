// Channel 1: Plyr's controls over a <video> that hls.js feeds from the live playlist.
// Plyr's sprite and blank video come from this origin, never from its CDN.
(function () {
  "use strict";
  const source = "/live/master.m3u8";
  const video = document.getElementById("player");
  const status = document.getElementById("status");
  const player = new Plyr(video, {
    iconUrl: "/static/plyr.svg",
    blankVideo: "/static/blank.mp4",
    controls: ["play-large", "play", "current-time", "mute", "volume", "fullscreen"],
    muted: true,
    invertTime: false,
  });
  if (window.Hls && Hls.isSupported()) {
    const hls = new Hls({ liveSyncDurationCount: 3 });
    hls.loadSource(source);
    hls.attachMedia(video);
    hls.on(Hls.Events.ERROR, function (event, data) {
      if (data.fatal) status.firstChild.textContent = "The stream stopped: " + data.details + ". ";
    });
  } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
    video.src = source;
  }
  player.on("playing", function () { status.firstChild.textContent = "Watching Channel 1. "; });
  player.on("pause", function () { status.firstChild.textContent = "Paused. "; });
  function viewers() {
    fetch("/api/viewers").then(function (r) { return r.json(); }).then(function (data) {
      document.getElementById("viewers").textContent = "Viewers: " + data.viewers;
    }).catch(function () {});
  }
  viewers();
  setInterval(viewers, 5000);
  window.channelPlayer = player;
})();
