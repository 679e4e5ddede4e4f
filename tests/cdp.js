// cdp.js - Opens a page in headless Chromium and watches it through the DevTools protocol
// (no npm package; a WebSocket client of its own, below: Debian's Node 18 has none).
//
//   node tests/cdp.js URL SECONDS OUT.json [SHOT.png] [WxH]
//
// Every second it reads window.live (the live page's counters, after its script ran),
// the DOM's #overlaps, and Chromium's own metrics (DOM nodes, JS heap); at the end a
// screenshot; with CDP_EVAL set, that expression's value too ("eval"). Writes {"samples":[{"s":1,"live":{..},"overlaps_dom":"3","nodes":..,
// "heap":..}, ..]} to OUT.json. Exits 1 when Chromium cannot be started or driven.
"use strict";
const { spawn } = require("child_process");
const crypto = require("crypto");
const http = require("http");
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

// A WebSocket client, just what the DevTools protocol needs (RFC 6455): text frames out,
// masked; frames in, unmasked, reassembled; onmessage({data}) per message.
function connectWs(wsUrl) {
  return new Promise((ok, no) => {
    const u = new URL(wsUrl);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, headers: {
      Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13",
      "Sec-WebSocket-Key": crypto.randomBytes(16).toString("base64") } });
    req.on("error", () => no(new Error("cannot connect to " + wsUrl)));
    req.on("upgrade", (res, sock) => {
      const ws = { onmessage: null };
      let buf = Buffer.alloc(0), parts = [];
      sock.on("data", (d) => {
        buf = Buffer.concat([buf, d]);
        for (;;) {
          if (buf.length < 2) return;
          let len = buf[1] & 0x7f, at = 2;
          if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); at = 4; }
          else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); at = 10; }
          if (buf.length < at + len) return;
          const fin = buf[0] & 0x80, op = buf[0] & 0x0f;
          parts.push(buf.subarray(at, at + len));
          buf = buf.subarray(at + len);
          if (op === 8) { sock.end(); return; }
          if (fin && op !== 9 && op !== 10) {
            const text = Buffer.concat(parts).toString("utf8");
            parts = [];
            if (ws.onmessage) ws.onmessage({ data: text });
          } else if (fin) { parts = []; }
        }
      });
      ws.send = (text) => {
        const body = Buffer.from(text, "utf8"), mask = crypto.randomBytes(4);
        const head = body.length < 126 ? Buffer.from([0x81, 0x80 | body.length])
          : body.length < 65536 ? Buffer.from([0x81, 0x80 | 126, body.length >> 8, body.length & 255])
          : Buffer.concat([Buffer.from([0x81, 0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(body.length)); return b; })()]);
        for (let i = 0; i < body.length; i++) body[i] ^= mask[i & 3];
        sock.write(Buffer.concat([head, mask, body]));
      };
      ws.close = () => sock.end();
      ok(ws);
    });
    req.end();
  });
}

async function drive(wsUrl) {
  const ws = await connectWs(wsUrl);
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
  let stop = false;   // SIGTERM: end after this second's sample (loadtest/evolution --live-check)
  process.on("SIGTERM", () => { stop = true; });
  for (let s = 1; s <= Number(seconds) && !stop; s++) {
    await new Promise((ok) => setTimeout(ok, 1000));
    const r = await page("Runtime.evaluate", {
      expression: "JSON.stringify({live: window.live || null, overlaps_dom: (document.getElementById('overlaps') || {}).textContent, status: (document.getElementById('status') || {}).textContent, via: (document.getElementById('via') || {}).textContent})",
      returnByValue: true,
    });
    const v = JSON.parse(r.result.value || "{}");
    if (process.env.CDP_EVAL) {   // one more expression of the caller's, e.g. the page's width
      const x = await page("Runtime.evaluate", { expression: process.env.CDP_EVAL, returnByValue: true });
      v.eval = x.result.value;
    }
    // Garbage collected first: the nodes and heap the page keeps, not what it let go of
    // and the collector has not taken yet (that comes and goes with its timing).
    await page("HeapProfiler.collectGarbage");
    const metrics = (await page("Performance.getMetrics")).metrics;
    const metric = (name) => (metrics.find((x) => x.name === name) || {}).value;
    samples.push({ s, live: v.live, overlaps_dom: v.overlaps_dom, status: v.status, via: v.via, eval: v.eval,
                   nodes: metric("Nodes"), heap: metric("JSHeapUsedSize") });
    fs.writeFileSync(out + ".tmp", JSON.stringify({ samples }));
    fs.renameSync(out + ".tmp", out);
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
