'use strict';
// Shared by the tests (no tests of its own): a real `gangplan serve` on 127.0.0.1 port 0,
// a byte-level flaky proxy that counts attempts, and throwaway certificates made by openssl.
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { grpc } = require('../client');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const GANGPLAN = process.env.GANGPLAN_BIN || path.join(ROOT, '.venv', 'bin', 'gangplan');

/**
 * Starts `gangplan serve` with extra `args` and `env`; resolves to {port, stop()} once the
 * server prints the address it is listening on.
 */
async function startServer({ args = [], env = {} } = {}) {
  const server = spawn(GANGPLAN, ['serve', '--host', '127.0.0.1', '--port', '0', '--metrics-port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, GANGPLAN_LOG_LEVEL: 'WARNING', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      await exited;
    }
  };
  try {
    const port = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('server did not start within 30 s')), 30000);
      readline.createInterface({ input: server.stdout }).on('line', (line) => {
        const match = /listening on 127\.0\.0\.1:(\d+)/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    return { port, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

const identity = (bytes) => bytes;

/**
 * A gRPC server that forwards every unary call of `paths` to `backend` byte for byte, after
 * failing the first `failures` attempts of each method with `code` (before forwarding, as
 * an overloaded or restarting server would). `attempts[path]` counts what arrived.
 */
async function flakyProxy(backend, paths, { failures = 1, code = grpc.status.UNAVAILABLE } = {}) {
  // The proxy's own channel must not retry: only the client under test does.
  const upstream = new grpc.Client(backend, grpc.credentials.createInsecure(), { 'grpc.enable_retries': 0 });
  const server = new grpc.Server();
  const attempts = {};
  const definition = {};
  const handlers = {};
  for (const methodPath of paths) {
    definition[methodPath] = {
      path: methodPath,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
    handlers[methodPath] = (call, callback) => {
      attempts[methodPath] = (attempts[methodPath] || 0) + 1;
      if (attempts[methodPath] <= failures) {
        callback({ code, details: 'flaky proxy' });
        return;
      }
      const metadata = new grpc.Metadata();
      for (const value of call.metadata.get('authorization')) metadata.add('authorization', value);
      upstream.makeUnaryRequest(methodPath, identity, identity, call.request, metadata, { deadline: call.getDeadline() },
        (err, response) => (err ? callback({ code: err.code, details: err.details, metadata: err.metadata }) : callback(null, response)));
    };
  }
  server.addService(definition, handlers);
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return {
    port,
    attempts,
    close: () => new Promise((resolve) => {
      upstream.close();
      server.tryShutdown(() => resolve());
    }),
  };
}

/** True when the openssl command line tool is on PATH (the TLS tests need it). */
function haveOpenssl() {
  return spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;
}

/**
 * A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files in a new
 * temporary folder: {dir, ca, serverCert, serverKey, clientCert, clientKey}.
 */
function makeCerts() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gangplan-node-certs-'));
  const at = (name) => path.join(dir, name);
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '1', '-subj', '/CN=gangplan test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  const extensions = {
    server: 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
    client: 'extendedKeyUsage=clientAuth\n',
  };
  for (const [who, ext] of Object.entries(extensions)) {
    fs.writeFileSync(at(`${who}.ext`), ext);
    openssl('req', ...ec, '-keyout', at(`${who}.key`), '-out', at(`${who}.csr`), '-subj', `/CN=${who}`);
    openssl('x509', '-req', '-in', at(`${who}.csr`), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial',
      '-out', at(`${who}.pem`), '-days', '1', '-extfile', at(`${who}.ext`));
  }
  return {
    dir,
    ca: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
  };
}

module.exports = { startServer, flakyProxy, haveOpenssl, makeCerts };
