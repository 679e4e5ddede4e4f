#!/usr/bin/env node
// node-sale.js - A peer for the bench: the atomic sale as a Node service would write it.
// One event loop, node:http, ioredis, and the project's own sale script
// (build/scripts/sale_atomic.lua: the same keys, the same ledger), one EVALSHA a sale
// (ioredis's defineCommand; no batching of sales). It takes deploy/up's flags, so that
// SERVICE_BIN=loadtest/peer/node-sale.js deploy/up --lock atomic starts it in the
// service's place; it reads --port, --bind, --name, --redis and --redis-password-file
// and passes over the rest. GET /health, GET /inventory/sale?item=I; anything else 404.
// ioredis comes from build/node (loadtest/bench: npm install --prefix build/node ioredis).
'use strict';
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

const root = path.resolve(__dirname, '..', '..');
const Redis = require(path.join(root, 'build', 'node', 'node_modules', 'ioredis'));

function flags(argv) {
    const o = { port: 8080, bind: '127.0.0.1', name: 'node', redis: '127.0.0.1:6379' };
    for (let i = 0; i < argv.length; i++) {
        const k = argv[i];
        if (!k.startsWith('--')) continue;
        const v = argv[i + 1];
        if (v === undefined || v.startsWith('--')) continue;
        o[k.slice(2)] = v;
        i++;
    }
    return o;
}

const o = flags(process.argv.slice(2));
const [host, port] = [o.redis.slice(0, o.redis.lastIndexOf(':')),
                      Number(o.redis.slice(o.redis.lastIndexOf(':') + 1))];
const password = o['redis-password-file'] ?
    fs.readFileSync(o['redis-password-file'], 'utf8').trim() : undefined;
const redis = new Redis({ host, port, password, lazyConnect: false });
redis.defineCommand('sale', {
    numberOfKeys: 3,
    lua: fs.readFileSync(path.join(root, 'build', 'scripts', 'sale_atomic.lua'), 'utf8'),
});

function answer(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json',
                            'Content-Length': Buffer.byteLength(text) });
    res.end(text);
}

async function sale(res, item, requestId) {
    let r;
    try {
        r = await redis.sale(`stock:{${item}}`, `sold:{${item}}`, `orders:{${item}}`,
                             o.name, 1, 0, requestId);
    } catch (e) {
        const code = String(e.message).split(' ')[0];   // the script's error's first word
        if (code === 'unknown_item' || code === 'bad_stock')
            return answer(res, code === 'unknown_item' ? 404 : 500, { ok: false, error: code });
        res.setHeader('Retry-After', '1');
        return answer(res, 503, { ok: false, error: 'redis_unavailable' });
    }
    if (r[0] === 1)
        return answer(res, 200, { ok: true, item, remaining: r[1], instance: o.name,
                                  lock: 'atomic', request_id: requestId });
    return answer(res, 409, { ok: false, error: 'sold_out', remaining: 0, request_id: requestId });
}

const server = http.createServer((req, res) => {
    let u;
    try {
        u = new URL(req.url, 'http://x');
    } catch (e) {
        return answer(res, 400, { ok: false, error: 'bad_request' });
    }
    if (req.method !== 'GET')
        return answer(res, 405, { ok: false, error: 'method_not_allowed' });
    if (u.pathname === '/health')
        return redis.ping().then(() => answer(res, 200, { ok: true }),
                                 () => answer(res, 503, { ok: false, error: 'redis_unavailable' }));
    if (u.pathname !== '/inventory/sale')
        return answer(res, 404, { ok: false, error: 'not_found' });
    const item = u.searchParams.get('item');
    if (!item || !/^[A-Za-z0-9_.-]{1,64}$/.test(item))
        return answer(res, 400, { ok: false, error: 'bad_item' });
    const given = req.headers['x-request-id'];
    sale(res, item, typeof given === 'string' && /^[\w.:=+/-]{1,64}$/.test(given) ?
         given : crypto.randomUUID());
});
server.keepAliveTimeout = 120000;
server.listen(Number(o.port), o.bind);
for (const sig of ['SIGINT', 'SIGTERM'])
    process.on(sig, () => {
        server.close(() => redis.quit().finally(() => process.exit(0)));
        server.closeIdleConnections();   // nginx's idle keep-alive connections
    });
