// cdp.js - Opens a page in headless Chromium and watches it through the DevTools protocol
// (no npm package: Node's own WebSocket, node --experimental-websocket on Node 20).
//
//   node --experimental-websocket tests/cdp.js URL SECONDS OUT.json [SHOT.png] [WxH]
//
// Every second it reads window.live (the live page's counters, after its script ran),
// the DOM's #overlaps, and Chromium's own metrics (DOM nodes, JS heap); at the end a
// screenshot. Writes {"samples":[{"s":1,"live":{..},"overlaps_dom":"3","nodes":..,
// "heap":..}, ..]} to OUT.json. Exits 1 when Chromium cannot be started or driven.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [url, seconds, out, shot, size] = process.argv.slice(2);
if (!url || !seconds || !out) {
  console.error("usage: cdp.js URL SECONDS OUT.json [SHOT.png] [WxH]");
  process.exit(2);
}
const [width, height] = (size || "1200x800").split("x").map(Number);
const chromium = process.env.CHROMIUM || "chromium";
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "cdp-"));
const browser = spawn(chromium, [
  "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-quic",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
  "--remote-debugging-port=0", "--user-data-dir=" + profile, "about:blank",
], { stdio: ["ignore", "ignore", "pipe"] });

function fail(msg) {
  console.error("cdp.js: " + msg);
  browser.kill("SIGKILL");
  fs.rmSync(profile, { recursive: true, force: true });
  process.exit(1);
}
const giveUp = setTimeout(() => fail("no answer from Chromium in time"), (Number(seconds) + 60) * 1000);

let stderr = "";
browser.stderr.on("data", (d) => {
  stderr += d;
  const m = stderr.match(/DevTools listening on (ws:\/\/\S+)/);
  if (m && !drive.started) { drive.started = true; drive(m[1]).catch((e) => fail(e.message)); }
});
browser.on("exit", (code) => { if (!drive.done) fail("Chromium exited (" + code + "): " + stderr.slice(-300)); });

async function drive(wsUrl) {
  const ws = new WebSocket(wsUrl);
  await new Promise((ok, no) => { ws.onopen = ok; ws.onerror = () => no(new Error("cannot connect to " + wsUrl)); });
  let id = 0;
  const waiting = new Map();
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.id && waiting.has(m.id)) {
      const { ok, no, method } = waiting.get(m.id);
      waiting.delete(m.id);
      m.error ? no(new Error(method + ": " + m.error.message)) : ok(m.result);
    }
  };
  const send = (method, params = {}, sessionId) => new Promise((ok, no) => {
    const msg = { id: ++id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    waiting.set(id, { ok, no, method });
    ws.send(JSON.stringify(msg));
  });
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const page = (m, p) => send(m, p, sessionId);
  await page("Page.enable");
  await page("Performance.enable");
  await page("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: width < 600 });
  await page("Page.navigate", { url });
  const samples = [];
  for (let s = 1; s <= Number(seconds); s++) {
    await new Promise((ok) => setTimeout(ok, 1000));
    const r = await page("Runtime.evaluate", {
      expression: "JSON.stringify({live: window.live || null, overlaps_dom: (document.getElementById('overlaps') || {}).textContent, status: (document.getElementById('status') || {}).textContent, via: (document.getElementById('via') || {}).textContent})",
      returnByValue: true,
    });
    const v = JSON.parse(r.result.value || "{}");
    const metrics = (await page("Performance.getMetrics")).metrics;
    const metric = (name) => (metrics.find((x) => x.name === name) || {}).value;
    samples.push({ s, live: v.live, overlaps_dom: v.overlaps_dom, status: v.status, via: v.via,
                   nodes: metric("Nodes"), heap: metric("JSHeapUsedSize") });
    fs.writeFileSync(out, JSON.stringify({ samples }));
  }
  if (shot) {
    const { data } = await page("Page.captureScreenshot", { format: "png" });
    fs.writeFileSync(shot, Buffer.from(data, "base64"));
  }
  drive.done = true;
  clearTimeout(giveUp);
  ws.close();
  browser.kill("SIGTERM");
  setTimeout(() => { browser.kill("SIGKILL"); fs.rmSync(profile, { recursive: true, force: true }); process.exit(0); }, 500);
}
