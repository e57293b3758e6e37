'use strict';
// Starts a real `gangplan serve` on 127.0.0.1 (port 0) and talks to it from Node.js.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { GangplanClient, grpc } = require('../client');
const { startServer } = require('./support');

let server;
let client;

before(async () => {
  server = await startServer({ env: { GANGPLAN_TOKEN: 'node-test-token' } });
  client = new GangplanClient(`127.0.0.1:${server.port}`, { token: 'node-test-token' });
});

after(async () => {
  if (client) client.close();
  if (server) await server.stop();
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
  const cert = answer.decision.certificates['default/big'];
  assert.equal(cert.proven, true);
  assert.ok(['capacity', 'pods'].includes(cert.kind), cert.kind);
  assert.ok(answer.decision.gangs[0].reason.startsWith(cert.sentence));
});

test('Why gives the certificate, the changes and the start', async () => {
  const answer = await client.why({ snapshot: { id: 'node' }, job: job('huge', 9, 4), gang: 'default/huge' });
  assert.equal(answer.placed, false);
  assert.equal(answer.certificate.proven, true);
  assert.equal(answer.changes[0].kind, 'nodes');
  assert.ok(answer.start.text.length > 0);
});

test('Why reads a priority class runtime from the conf', async () => {
  const old = {
    namespace: 'default', name: 'old', node_name: 'w0', priority_class_name: 'train',
    creation_time: { seconds: String(Date.parse('2026-11-28T17:00:00Z') / 1000) },
    requests: { cpu: '1000', 'nvidia.com/gpu': '4' },
  };
  const answer = await client.why({
    cluster: { nodes: [gpuNode('w0')], pods: [old] },
    job: job('new', 1, 4),
    gang: 'default/new',
    now: { seconds: String(Date.parse('2026-11-28T18:00:00Z') / 1000) },
    options: {
      scheduler_conf: 'expectedRuntime:\n  priorityClasses:\n    train: 3h\n'
        + 'tiers:\n- plugins:\n  - name: gang\n  - name: predicates\n',
    },
  });
  assert.equal(answer.placed, false);
  assert.equal(new Date(Number(answer.start.at.seconds) * 1000).toISOString(), '2026-11-28T20:00:00.000Z');
  assert.deepEqual(answer.start.after, ['default/old']);
});

test('PlaceJob consolidates by moving a running pod', async () => {
  const running = ['c0', 'c1'].map((node, i) => ({
    namespace: 'default', name: `run-${i}`, node_name: node, priority: 50,
    requests: { cpu: '1000', 'nvidia.com/gpu': '2' },
  }));
  const answer = await client.placeJob({
    cluster: { nodes: [gpuNode('c0'), gpuNode('c1')], pods: running },
    job: job('big', 1, 3),
    options: { consolidate: true, workers: 1 },
  });
  assert.equal(answer.placed, true);
  assert.deepEqual(answer.decision.moves.map((m) => [m.pod, m.from_node, m.to_node]), [['default/run-0', 'c0', 'c1']]);
});

test('Why buys the cheapest node type of the request', async () => {
  const answer = await client.why({
    cluster: { nodes: [gpuNode('k0')] },
    job: job('wide', 3, 4),
    gang: 'default/wide',
    node_types: [
      { name: 'gpu4', cost: 10, allocatable: { cpu: '32000', 'nvidia.com/gpu': '4' } },
      { name: 'gpu8', cost: 15, allocatable: { cpu: '32000', 'nvidia.com/gpu': '8' } },
    ],
  });
  const nodes = answer.changes.filter((c) => c.kind === 'nodes').map((c) => c.change);
  assert.deepEqual(nodes, ['+1 gpu8 node(s) (cost 15)']);
});

test('Defragment frees the emptiest node, proven', async () => {
  const running = ['n0', 'n0', 'n0', 'n1'].map((node, i) => ({
    namespace: 'default', name: `run-${i}`, node_name: node,
    requests: { cpu: '1000', 'nvidia.com/gpu': '1' },
  }));
  const answer = await client.defragment({
    cluster: { nodes: [gpuNode('n0'), gpuNode('n1')], pods: running },
    goal: { max_pods: 1 },
    options: { engine: 'cpsat', workers: 1 },
  });
  assert.deepEqual(answer.freed, ['n1']);
  assert.equal(answer.status, 'OPTIMAL');
  assert.deepEqual(answer.moves.map((m) => [m.pod, m.to_node]), [['default/run-3', 'n0']]);
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

test('health answers SERVING without a token', async () => {
  const target = client.stub.getChannel().getTarget().replace(/^dns:/, '');
  const anonymous = new GangplanClient(target);
  try {
    assert.equal(await anonymous.health(), 'SERVING');
    assert.equal(await anonymous.health('gangplan.v1.PlacementService'), 'SERVING');
  } finally {
    anonymous.close();
  }
});

test('ValidateQueues names the field of a child over its parent', async () => {
  const answer = await client.validateQueues({
    cluster: {
      queues: [
        { name: 'parent', capability: { cpu: '4000' } },
        { name: 'child', parent: 'parent', capability: { cpu: '8000' } },
      ],
    },
  });
  assert.equal(answer.valid, false);
  assert.ok(answer.violations.some((v) => v.queue === 'child' && v.field.startsWith('spec.capability')));
});

test('PlanCapacity buys the cheapest nodes a gang needs', async () => {
  const answer = await client.planCapacity({
    snapshot: { id: 'node' },
    workload: job('grow', 4, 4),
    node_types: [{ name: 'gpu4', cost: 10, allocatable: { cpu: '32000', 'nvidia.com/gpu': '4' } }],
    options: { workers: 1, seed: 1 },
  }, 30000);
  assert.equal(answer.status, 'OPTIMAL');
  const added = answer.nodes.filter((n) => !n.existing);
  assert.deepEqual(added.map((n) => [n.node_type, n.count]), [['gpu4', 2]]);
  assert.equal(answer.placed_pods, 4);
});

test('DeleteSnapshot forgets a snapshot: then NOT_FOUND', async () => {
  await client.putSnapshot({ nodes: [gpuNode('x0')] }, 'gone');
  await client.deleteSnapshot('gone');
  await assert.rejects(
    client.placeJob({ snapshot: { id: 'gone' }, job: job('j', 1, 1) }),
    (err) => err.code === grpc.status.NOT_FOUND,
  );
});

test('the package ships the protos it loads', () => {
  const { execFileSync } = require('node:child_process');
  const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], {
    cwd: path.resolve(__dirname, '..'),
    encoding: 'utf8',
  }));
  const files = packed[0].files.map((f) => f.path).sort();
  assert.deepEqual(files.filter((f) => f.endsWith('.proto')), [
    'proto/gangplan/v1/cluster.proto',
    'proto/gangplan/v1/placement_service.proto',
  ]);
  assert.ok(files.includes('client.js'));
});

test('KAI-Scheduler time-based fair share: the queue with less usage goes first', async () => {
  const kai = (name, parent, usage) => ({
    name,
    parent,
    kai: {
      quota: { 'nvidia.com/gpu': 0, cpu: -1, memory: -1 },
      limit: { 'nvidia.com/gpu': -1, cpu: -1, memory: -1 },
      over_quota_weight: { 'nvidia.com/gpu': 1, cpu: 1, memory: 1 },
      usage: usage ? { 'nvidia.com/gpu': usage } : {},
    },
  });
  const jobs = ['a', 'b'].map((q) => {
    const j = job(`job-${q}`, 3, 2);
    j.gangs[0].queue = q;
    return j;
  });
  await client.putSnapshot(
    {
      nodes: [gpuNode('n0'), gpuNode('n1')],
      queues: [kai('dept', '', 0), kai('a', 'dept', 0.9), kai('b', 'dept', 0)],
      gangs: jobs.flatMap((j) => j.gangs),
      pods: jobs.flatMap((j) => j.pods),
    },
    'node-kai-usage',
  );
  const plain = 'tiers: [{plugins: [{name: gang}, {name: predicates}]}]';
  const placed = async (conf) => {
    const answer = await client.placeJob({
      snapshot: { id: 'node-kai-usage' },
      options: { engine: 'greedy', scheduler_conf: conf },
    });
    return answer.decision.gangs.filter((g) => g.placed).map((g) => g.gang);
  };
  assert.deepEqual(await placed(plain), ['default/job-a']);
  assert.deepEqual(
    await placed(`usageDBConfig: {usageParams: {windowSize: 168h}}\n${plain}`),
    ['default/job-b'],
  );
});

test('a PodDisruptionBudget allowing none keeps Preempt from its pods (pdb plugin)', async () => {
  const running = ['a', 'b'].map((name) => ({
    namespace: 'default',
    name,
    node_name: 'n0',
    priority: 1,
    labels: { app: 'web' },
    requests: { cpu: '2000' },
  }));
  const cluster = { nodes: [{ name: 'n0', allocatable: { cpu: '4000', pods: '110' } }], pods: running };
  const urgent = { pods: [{ namespace: 'default', name: 'urgent', priority: 100, requests: { cpu: '2000' } }] };
  const options = {
    engine: 'greedy',
    scheduler_conf: "actions: 'enqueue, allocate, preempt'\ntiers: [{plugins: [{name: gang}, {name: predicates}, {name: pdb}]}]",
  };
  const free = await client.preempt({ cluster, job: urgent, options });
  assert.equal(free.decision.victims.length, 1);
  const held = await client.preempt({
    cluster: {
      ...cluster,
      disruption_budgets: [{ name: 'web', selector: { match_labels: { app: 'web' } }, disruptions_allowed: 0 }],
    },
    job: urgent,
    options,
  });
  assert.equal(held.decision.victims.length, 0);
});

test('KAI-Scheduler queues: a gang over its queue limit waits, saying so', async () => {
  const kai = (name, parent, gpuLimit) => ({
    name,
    parent,
    kai: {
      quota: { 'nvidia.com/gpu': 0, cpu: -1, memory: -1 },
      limit: { 'nvidia.com/gpu': gpuLimit, cpu: -1, memory: -1 },
      over_quota_weight: { 'nvidia.com/gpu': 1, cpu: 1, memory: 1 },
    },
  });
  await client.putSnapshot(
    { nodes: [gpuNode('n0'), gpuNode('n1')], queues: [kai('dept', '', -1), kai('team', 'dept', 4)] },
    'node-kai',
  );
  const gang = (name, size) => {
    const j = job(name, size, 4);
    j.gangs[0].queue = 'team';
    return j;
  };
  const fits = await client.placeJob({ snapshot: { id: 'node-kai' }, job: gang('one', 1) });
  assert.equal(fits.placed, true);
  const over = await client.placeJob({ snapshot: { id: 'node-kai' }, job: gang('two', 2) });
  assert.equal(over.placed, false);
  assert.match(over.decision.gangs[0].reason, /queue team: .*limit/);
});

test('Kueue ClusterQueues: the answer names the flavor; a gang over the quota waits', async () => {
  const flavor = {
    name: 'a100',
    resources: [
      { name: 'cpu', nominal_quota: 64000 },
      { name: 'nvidia.com/gpu', nominal_quota: 4 },
    ],
  };
  await client.putSnapshot(
    {
      nodes: [gpuNode('n0'), gpuNode('n1')],
      queues: [
        {
          name: 'team',
          kueue: { kind: 'ClusterQueue', resource_groups: [{ covered_resources: ['cpu', 'nvidia.com/gpu'], flavors: [flavor] }] },
        },
        { name: 'default/main', parent: 'team', kueue: { kind: 'LocalQueue' } },
      ],
    },
    'node-kueue',
  );
  const gang = (name, size) => {
    const j = job(name, size, 4);
    j.pods.forEach((p) => {
      p.labels = { 'kueue.x-k8s.io/queue-name': 'main' };
    });
    return j;
  };
  const fits = await client.placeJob({ snapshot: { id: 'node-kueue' }, job: gang('one', 1) });
  assert.equal(fits.placed, true);
  assert.equal(fits.decision.flavor_assignments[0].flavors['nvidia.com/gpu'], 'a100');
  const over = await client.placeJob({ snapshot: { id: 'node-kueue' }, job: gang('two', 2) });
  assert.equal(over.placed, false);
  assert.match(over.decision.gangs[0].reason, /insufficient quota for nvidia.com\/gpu in flavor a100/);
});

test('KAI sub-groups each in a rack of their own: a sub-group no rack holds keeps its gang waiting', async () => {
  const nodes = [0, 1, 2, 3].map((i) => ({ ...gpuNode(`n${i}`), labels: { zone: 'z', rack: `r${i >> 1}` } }));
  const kai = job('kai', 4, 4);
  kai.pods.forEach((p, i) => {
    p.labels = { 'kai.scheduler/subgroup-name': i === 0 ? 'a' : 'b' };
  });
  const options = { engine: 'greedy' };
  const plain = await client.placeJob({ cluster: { nodes }, job: kai, options });
  assert.equal(plain.placed, true);
  kai.gangs[0].topology_sub_groups = ['a', 'b'].map((leaf) => ({
    name: leaf,
    label: 'kai.scheduler/subgroup-name',
    values: [leaf],
    levels: ['zone', 'rack'],
  }));
  const waits = await client.placeJob({ cluster: { nodes }, job: kai, options });
  assert.equal(waits.placed, false);
  assert.match(waits.decision.gangs[0].reason, /sub-group b/);
});

test("Volcano's minTaskMember: a task role short of its minimum keeps the gang waiting", async () => {
  const nodes = [gpuNode('n0'), gpuNode('n1')];
  const vc = job('vc', 3, 4);
  vc.gangs[0].min_member = 2;
  vc.pods.forEach((p, i) => {
    p.annotations = { 'volcano.sh/task-spec': i === 0 ? 'master' : 'worker' };
  });
  vc.pods[0].requests['nvidia.com/gpu'] = '8'; // the master fits on no node
  const options = { engine: 'greedy' };
  const plain = await client.placeJob({ cluster: { nodes }, job: vc, options });
  assert.equal(plain.placed, true);
  vc.gangs[0].min_task_member = { master: 1, worker: 1 };
  const waits = await client.placeJob({ cluster: { nodes }, job: vc, options });
  assert.equal(waits.placed, false);
  assert.match(waits.decision.gangs[0].reason, /task master/);
});
