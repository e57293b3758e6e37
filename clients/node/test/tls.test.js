'use strict';
// TLS and mutual TLS against a real `gangplan serve`, with certificates made by openssl.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { GangplanClient, grpc } = require('../client');
const { startServer, haveOpenssl, makeCerts } = require('./support');

const skip = haveOpenssl() ? false : 'the openssl command is not installed';
let certs;
let server;

before(async () => {
  if (skip) return;
  certs = makeCerts();
  server = await startServer({
    args: ['--tls-cert', certs.serverCert, '--tls-key', certs.serverKey, '--client-ca', certs.ca],
    env: { GRPC_VERBOSITY: 'NONE' }, // the refused handshakes below are expected
  });
});

after(async () => {
  if (server) await server.stop();
  if (certs) fs.rmSync(certs.dir, { recursive: true, force: true });
});

const cluster = { nodes: [{ name: 'n0', allocatable: { cpu: '32000', 'nvidia.com/gpu': '4' } }] };
const job = { pods: [{ namespace: 'default', name: 'p', requests: { cpu: '1000', 'nvidia.com/gpu': '1' } }] };

async function place(options) {
  const client = new GangplanClient(`127.0.0.1:${server.port}`, { retries: 0, timeoutMs: 5000, ...options });
  try {
    return await client.placeJob({ cluster, job });
  } finally {
    client.close();
  }
}

test('mutual TLS: a client certificate from the trusted CA is let in', { skip }, async () => {
  const read = (file) => fs.readFileSync(file);
  const answer = await place({ ca: read(certs.ca), cert: read(certs.clientCert), key: read(certs.clientKey) });
  assert.equal(answer.placed, true);
});

test('mutual TLS: no client certificate, or plaintext, is refused', { skip }, async () => {
  const unavailable = (err) => err.code === grpc.status.UNAVAILABLE;
  await assert.rejects(place({ ca: fs.readFileSync(certs.ca) }), unavailable);
  await assert.rejects(place({}), unavailable);
});

test('TLS checks the server against the given roots', { skip }, async () => {
  // `tls: true` alone trusts the system's roots, which do not include the test CA.
  await assert.rejects(place({ tls: true }), (err) => err.code === grpc.status.UNAVAILABLE);
});
