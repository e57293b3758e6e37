'use strict';
// Only the idempotent calls are retried: a flaky proxy in front of a real `gangplan serve`
// fails the first attempts of each method and counts every attempt that reached it.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { GangplanClient, grpc, IDEMPOTENT, MAX_RETRIES } = require('../client');
const { startServer, flakyProxy } = require('./support');

const TOKEN = 'retry-test-token';
const SERVICE = '/gangplan.v1.PlacementService/';
const HEALTH = '/grpc.health.v1.Health/Check';
const WRITES = ['PutSnapshot', 'UpdateSnapshot', 'DeleteSnapshot'];
const PATHS = [...WRITES, ...IDEMPOTENT].map((m) => SERVICE + m).concat([HEALTH]);

let server;
let backend;

before(async () => {
  server = await startServer({ env: { GANGPLAN_TOKEN: TOKEN } });
  backend = `127.0.0.1:${server.port}`;
  const direct = new GangplanClient(backend, { token: TOKEN });
  try {
    await direct.putSnapshot({ nodes: [{ name: 'n0', allocatable: { cpu: '32000', 'nvidia.com/gpu': '4' } }] }, 's');
  } finally {
    direct.close();
  }
});

after(async () => {
  if (server) await server.stop();
});

const pod = (name) => ({ namespace: 'default', name, requests: { cpu: '1000', 'nvidia.com/gpu': '1' } });
const job = { gangs: [{ namespace: 'default', name: 'j', min_member: 1 }], pods: [{ ...pod('j-0'), gang: 'default/j' }] };

// One call of each idempotent RPC on the stored snapshot `s`, and how to tell it worked.
const reads = (client) => ({
  PlaceJob: async () => assert.equal((await client.placeJob({ snapshot: { id: 's' }, job })).placed, true),
  Preempt: async () => assert.equal((await client.preempt({ snapshot: { id: 's' }, job })).placed, true),
  Enqueue: async () => {
    const answer = await client.enqueue({ snapshot: { id: 's' }, job });
    assert.deepEqual(answer.admissions.map((a) => a.admitted), [true]);
  },
  ValidateQueues: async () => assert.equal((await client.validateQueues({ snapshot: { id: 's' } })).valid, true),
  PlanCapacity: async () => {
    const answer = await client.planCapacity({ snapshot: { id: 's' }, workload: job, node_types: [], options: { workers: 1 } }, 20000);
    assert.equal(answer.placed_pods, 1);
  },
  Why: async () => assert.equal((await client.why({ snapshot: { id: 's' }, job, gang: 'default/j' }, 20000)).placed, true),
  Defragment: async () => assert.deepEqual((await client.defragment({ snapshot: { id: 's' }, goal: {} }, 20000)).freed, []),
});

async function withProxy(options, clientOptions, body) {
  const proxy = await flakyProxy(backend, PATHS, options);
  const client = new GangplanClient(`127.0.0.1:${proxy.port}`, { token: TOKEN, ...clientOptions });
  try {
    await body(client, proxy.attempts);
  } finally {
    client.close();
    await proxy.close();
  }
}

test('the idempotent calls are retried until they succeed', async () => {
  await withProxy({ failures: 2 }, { retries: 2 }, async (client, attempts) => {
    const calls = reads(client);
    assert.deepEqual(Object.keys(calls).sort(), [...IDEMPOTENT].sort());
    for (const call of Object.values(calls)) await call();
    assert.deepEqual(attempts, Object.fromEntries(IDEMPOTENT.map((m) => [SERVICE + m, 3])));
  });
});

test('snapshot writes are never retried', async () => {
  await withProxy({ failures: 1 }, { retries: MAX_RETRIES }, async (client, attempts) => {
    const unavailable = (err) => err.code === grpc.status.UNAVAILABLE;
    await assert.rejects(client.putSnapshot({ nodes: [] }, 'w'), unavailable);
    await assert.rejects(client.updateSnapshot({ snapshot_id: 's', remove_nodes: ['n0'] }), unavailable);
    await assert.rejects(client.deleteSnapshot('s'), unavailable);
    assert.deepEqual(attempts, Object.fromEntries(WRITES.map((m) => [SERVICE + m, 1])));
    // Repeated by the caller, a write goes through once: the failed attempt never landed.
    assert.equal((await client.putSnapshot({ nodes: [] }, 'w')).generation, '1');
    await client.deleteSnapshot('w');
  });
});

test('the health check is retried unless retries is 0', async () => {
  await withProxy({ failures: 1 }, { retries: 1 }, async (client, attempts) => {
    assert.equal(await client.health(), 'SERVING');
    assert.equal(attempts[HEALTH], 2);
  });
  await withProxy({ failures: 1 }, { retries: 0 }, async (probe, attempts) => {
    await assert.rejects(probe.health(), (err) => err.code === grpc.status.UNAVAILABLE);
    assert.equal(attempts[HEALTH], 1);
  });
});

for (const retries of [0, 1, MAX_RETRIES]) {
  test(`retries: ${retries} makes at most ${retries + 1} attempts`, async () => {
    await withProxy({ failures: 100 }, { retries }, async (client, attempts) => {
      await assert.rejects(client.validateQueues({ snapshot: { id: 's' } }), (err) => err.code === grpc.status.UNAVAILABLE);
      assert.equal(attempts[`${SERVICE}ValidateQueues`], retries + 1);
    });
  });
}

test('RESOURCE_EXHAUSTED is retried; an answer from the server is not', async () => {
  await withProxy({ failures: 1, code: grpc.status.RESOURCE_EXHAUSTED }, { retries: 1 }, async (client, attempts) => {
    await reads(client).PlaceJob();
    await assert.rejects(client.preempt({ snapshot: { id: 'missing' }, job }), (err) => err.code === grpc.status.NOT_FOUND);
    assert.equal(attempts[`${SERVICE}PlaceJob`], 2);
    assert.equal(attempts[`${SERVICE}Preempt`], 2); // the retried overload, then NOT_FOUND
  });
});

test('bad options are a clear error', () => {
  assert.throws(() => new GangplanClient('127.0.0.1:1', { retries: MAX_RETRIES + 1 }), /retries must be 0\.\.4, not 5/);
  assert.throws(() => new GangplanClient('127.0.0.1:1', { retries: -1 }), /retries must be 0\.\.4/);
  assert.throws(() => new GangplanClient('127.0.0.1:1', { cert: Buffer.from('x') }), /needs both cert and key/);
});
