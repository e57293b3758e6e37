'use strict';
// Starts a real `gangplan serve` on 127.0.0.1 (port 0) and talks to it from Node.js.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const { GangplanClient, grpc } = require('../client');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const GANGPLAN = process.env.GANGPLAN_BIN || path.join(ROOT, '.venv', 'bin', 'gangplan');

let server;
let client;

before(async () => {
  server = spawn(GANGPLAN, ['serve', '--host', '127.0.0.1', '--port', '0', '--metrics-port', '0'], {
    cwd: ROOT,
    env: { ...process.env, GANGPLAN_TOKEN: 'node-test-token', GANGPLAN_LOG_LEVEL: 'WARNING' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start')), 30000);
    readline.createInterface({ input: server.stdout }).on('line', (line) => {
      const match = /listening on 127\.0\.0\.1:(\d+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  client = new GangplanClient(`127.0.0.1:${port}`, { token: 'node-test-token' });
});

after(async () => {
  if (client) client.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
});

const gpuNode = (name) => ({ name, allocatable: { cpu: '32000', 'nvidia.com/gpu': '4' } });
const job = (name, size, gpus) => ({
  gangs: [{ namespace: 'default', name, min_member: size }],
  pods: Array.from({ length: size }, (_, i) => ({
    namespace: 'default',
    name: `${name}-${i}`,
    gang: `default/${name}`,
    requests: { cpu: '1000', 'nvidia.com/gpu': String(gpus) },
  })),
});

test('PutSnapshot then PlaceJob places a gang', async () => {
  const put = await client.putSnapshot({ nodes: [gpuNode('n0'), gpuNode('n1')] }, 'node');
  assert.equal(put.snapshot_id, 'node');
  assert.equal(put.generation, '1');
  const answer = await client.placeJob({ snapshot: { id: 'node' }, job: job('train', 2, 4) });
  assert.equal(answer.placed, true);
  const nodes = answer.decision.placements.map((p) => p.node).sort();
  assert.deepEqual(nodes, ['n0', 'n1']);
  assert.equal(answer.decision.status, 'HEURISTIC');
});

test('an unschedulable gang is an answer with reasons', async () => {
  const answer = await client.placeJob({ snapshot: { id: 'node' }, job: job('big', 3, 4) });
  assert.equal(answer.placed, false);
  assert.match(answer.decision.gangs[0].reason, /Insufficient nvidia.com\/gpu/);
});

test('invalid input is INVALID_ARGUMENT with field violations', async () => {
  await assert.rejects(
    client.placeJob({ cluster: { nodes: [{ name: '' }] }, job: job('j', 1, 1) }),
    (err) => {
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
      assert.deepEqual(err.violations.map((v) => v.field), ['cluster.nodes[0].name']);
      return true;
    },
  );
});

test('a stale generation is FAILED_PRECONDITION', async () => {
  await assert.rejects(
    client.placeJob({ snapshot: { id: 'node', expected_generation: '7' }, job: job('j', 1, 1) }),
    (err) => err.code === grpc.status.FAILED_PRECONDITION,
  );
});

test('a wrong token is UNAUTHENTICATED', async () => {
  const stranger = new GangplanClient(client.stub.getChannel().getTarget().replace(/^dns:/, ''), {
    token: 'wrong',
  });
  try {
    await assert.rejects(stranger.putSnapshot({}, 'x'), (err) => err.code === grpc.status.UNAUTHENTICATED);
  } finally {
    stranger.close();
  }
});
