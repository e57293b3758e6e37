'use strict';
/**
 * A small Node.js client of gangplan.v1.PlacementService, loaded from the .proto files at
 * run time with @grpc/proto-loader (no generated code).
 *
 *   const { GangplanClient } = require('./client');
 *   const client = new GangplanClient('127.0.0.1:50051', { token: 's3cret' });
 *   await client.putSnapshot({ nodes: [...] }, 'prod');
 *   const answer = await client.placeJob({ snapshot: { id: 'prod' }, job: {...} });
 *
 * Messages are plain objects with the proto's field names (snake_case kept); int64 fields
 * are strings, enums their names. Errors are the grpc-js ServiceError (`code`, `details`),
 * with `violations` ([{field, description}]) added for INVALID_ARGUMENT.
 *
 * Every RPC of the service has a method, plus `health(service)`. Only the calls that read
 * (PlaceJob, Preempt, Enqueue, ValidateQueues, PlanCapacity, Why, Defragment and the health check) are
 * retried, by gRPC's own retry policy, on UNAVAILABLE and RESOURCE_EXHAUSTED; snapshot writes
 * never are (see IDEMPOTENT below).
 */
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

// The package carries its own copy of the protos (`npm pack` copies them in, see
// package.json); in the repository they are read from ../../proto.
const PROTO_ROOT = [path.join(__dirname, 'proto'), path.resolve(__dirname, '..', '..', 'proto')].find(
  (dir) => fs.existsSync(path.join(dir, 'gangplan', 'v1', 'placement_service.proto')),
);
if (PROTO_ROOT === undefined) {
  throw new Error(`gangplan-client: gangplan/v1/placement_service.proto is in neither ${path.join(__dirname, 'proto')} nor ${path.resolve(__dirname, '..', '..', 'proto')}`);
}
const SERVICE = 'gangplan.v1.PlacementService';
// The calls that only read (server/servicer.py): PlaceJob, Preempt, Enqueue and
// ValidateQueues solve or check against the snapshot without changing it (Preempt proposes
// victims but evicts nothing) and PlanCapacity builds its own model of the snapshot plus the
// workload, so a second attempt after one that may have reached the server changes nothing.
// The snapshot writes are not: a retried PutSnapshot without an id stores a second snapshot
// and one with an id bumps the generation twice, a retried UpdateSnapshot whose first attempt
// landed fails its expected_generation check (without one, its removals are rejected as
// already gone), and a retried DeleteSnapshot reports NOT_FOUND for a delete that succeeded.
// The health check only reads too (a probe that must see the first failure passes
// retries: 0).
const IDEMPOTENT = ['PlaceJob', 'Preempt', 'Enqueue', 'ValidateQueues', 'PlanCapacity', 'Why', 'Defragment'];
const HEALTH_SERVICE = 'grpc.health.v1.Health';
const MAX_RETRIES = 4; // gRPC caps a retry policy's maxAttempts at 5 (gRFC A6)

const definition = protoLoader.loadSync(path.join(PROTO_ROOT, 'gangplan/v1/placement_service.proto'), {
  includeDirs: [PROTO_ROOT],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const loaded = grpc.loadPackageDefinition(definition);
const PlacementService = loaded.gangplan.v1.PlacementService;

// google.rpc.Status and BadRequest, decoded from the `grpc-status-details-bin` trailer.
const statusRoot = (() => {
  const root = new protobuf.Root();
  root.define('google.rpc').add(
    new protobuf.Type('Status')
      .add(new protobuf.Field('code', 1, 'int32'))
      .add(new protobuf.Field('message', 2, 'string'))
      .add(new protobuf.Field('details', 3, 'google.protobuf.Any', 'repeated')),
  );
  root.define('google.rpc.BadRequest')
    .add(new protobuf.Type('FieldViolation')
      .add(new protobuf.Field('field', 1, 'string'))
      .add(new protobuf.Field('description', 2, 'string')));
  root.lookup('google.rpc').add(
    new protobuf.Type('BadRequest').add(
      new protobuf.Field('field_violations', 1, 'google.rpc.BadRequest.FieldViolation', 'repeated'),
    ),
  );
  root.define('google.protobuf').add(
    new protobuf.Type('Any')
      .add(new protobuf.Field('type_url', 1, 'string'))
      .add(new protobuf.Field('value', 2, 'bytes')),
  );
  root.resolveAll();
  return root;
})();

function violationsOf(err) {
  const raw = err && err.metadata && err.metadata.get('grpc-status-details-bin');
  if (!raw || raw.length === 0) return [];
  const status = statusRoot.lookupType('google.rpc.Status').decode(raw[0]);
  const BadRequest = statusRoot.lookupType('google.rpc.BadRequest');
  const out = [];
  for (const detail of status.details) {
    if (detail.type_url.endsWith('/google.rpc.BadRequest')) {
      for (const v of BadRequest.decode(detail.value).field_violations) {
        out.push({ field: v.field, description: v.description });
      }
    }
  }
  return out;
}

// grpc.health.v1.Health/Check, whose proto is not gangplan's: the two messages by hand.
const HealthCheckRequest = new protobuf.Type('HealthCheckRequest').add(new protobuf.Field('service', 1, 'string'));
const HealthCheckResponse = new protobuf.Type('HealthCheckResponse').add(
  new protobuf.Field('status', 1, 'ServingStatus'),
);
HealthCheckResponse.add(
  new protobuf.Enum('ServingStatus', { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 }),
);
new protobuf.Root().define('grpc.health.v1').add(HealthCheckRequest).add(HealthCheckResponse).root.resolveAll();
const Health = grpc.makeGenericClientConstructor(
  {
    Check: {
      path: `/${HEALTH_SERVICE}/Check`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (message) => Buffer.from(HealthCheckRequest.encode(HealthCheckRequest.create(message)).finish()),
      responseDeserialize: (bytes) => HealthCheckResponse.toObject(HealthCheckResponse.decode(bytes), { enums: String, defaults: true }),
    },
  },
  'Health',
);

// gRPC's retry policy (gRFC A6 service config) for the idempotent calls only.
function serviceConfig(retries) {
  if (retries <= 0) return { methodConfig: [] };
  return {
    methodConfig: [
      {
        name: [
          ...IDEMPOTENT.map((method) => ({ service: SERVICE, method })),
          { service: HEALTH_SERVICE, method: 'Check' },
        ],
        retryPolicy: {
          maxAttempts: retries + 1,
          initialBackoff: '0.05s',
          maxBackoff: '1s',
          backoffMultiplier: 2,
          retryableStatusCodes: ['UNAVAILABLE', 'RESOURCE_EXHAUSTED'],
        },
      },
    ],
  };
}

class GangplanClient {
  /**
   * @param {string} target host:port
   * @param {{token?: string, tls?: boolean, ca?: Buffer, cert?: Buffer, key?: Buffer,
   *          timeoutMs?: number, retries?: number}} options
   *   token      sent as `authorization: Bearer <token>` (health needs none)
   *   tls        TLS with the system's roots; implied by `ca` (trusted roots, PEM) and by
   *              `cert` + `key` (client certificate and key, PEM: mutual TLS)
   *   timeoutMs  each call's deadline unless the call passes its own (10000); for the
   *              placement calls it is the server's solver budget
   *   retries    extra attempts of the idempotent calls, 0..4 (3); backoff from 50 ms,
   *              doubling up to 1 s, with gRPC's jitter
   */
  constructor(target, options = {}) {
    const retries = options.retries === undefined ? 3 : options.retries;
    if (!Number.isInteger(retries) || retries < 0 || retries > MAX_RETRIES) {
      throw new RangeError(`retries must be 0..${MAX_RETRIES}, not ${retries}`);
    }
    if (Boolean(options.cert) !== Boolean(options.key)) {
      throw new TypeError('mutual TLS needs both cert and key');
    }
    const credentials = options.tls || options.ca || options.cert
      ? grpc.credentials.createSsl(options.ca || null, options.key || null, options.cert || null)
      : grpc.credentials.createInsecure();
    const channelOptions = {
      'grpc.service_config': JSON.stringify(serviceConfig(retries)),
      'grpc.enable_retries': retries > 0 ? 1 : 0,
    };
    this.stub = new PlacementService(target, credentials, channelOptions);
    this.healthStub = new Health(target, credentials, channelOptions);
    this.timeoutMs = options.timeoutMs || 10000;
    this.metadata = new grpc.Metadata();
    if (options.token) this.metadata.set('authorization', `Bearer ${options.token}`);
  }

  call(method, request, timeoutMs, stub = this.stub) {
    const deadline = new Date(Date.now() + (timeoutMs || this.timeoutMs));
    return new Promise((resolve, reject) => {
      stub[method](request, this.metadata, { deadline }, (err, response) => {
        if (err) {
          err.violations = violationsOf(err);
          reject(err);
        } else {
          resolve(response);
        }
      });
    });
  }

  /** Stores `cluster` under `snapshotId` ('': the server picks one): {snapshot_id, generation}. */
  putSnapshot(cluster, snapshotId = '', timeoutMs) {
    return this.call('PutSnapshot', { cluster, snapshot_id: snapshotId }, timeoutMs);
  }

  /** request: {snapshot_id, expected_generation?, upsert_nodes?, remove_pods?, ...}: deltas. */
  updateSnapshot(request, timeoutMs) {
    return this.call('UpdateSnapshot', request, timeoutMs);
  }

  /** request: {snapshot: {id, expected_generation}} or {cluster}, plus job and options. */
  placeJob(request, timeoutMs) {
    return this.call('PlaceJob', request, timeoutMs);
  }

  /** As placeJob, plus the victims to evict (none are evicted: a proposal) and `reason`. */
  preempt(request, timeoutMs) {
    return this.call('Preempt', request, timeoutMs);
  }

  /** request as placeJob: whether each of the job's gangs may enter its queue. */
  enqueue(request, timeoutMs) {
    return this.call('Enqueue', request, timeoutMs);
  }

  /** Forgets a snapshot (NOT_FOUND when the id is unknown). */
  deleteSnapshot(snapshotId, timeoutMs) {
    return this.call('DeleteSnapshot', { snapshot_id: snapshotId }, timeoutMs);
  }

  /** request: {snapshot: {id}} or {cluster}: {valid, violations: [{queue, field, description}]}. */
  validateQueues(request, timeoutMs) {
    return this.call('ValidateQueues', request, timeoutMs);
  }

  /** request: {snapshot|cluster, job?, options?, gang, now?, default_runtime_seconds?}:
   *  {decision, placed, certificate, changes: [{kind, change, size}], start, generation}. */
  why(request, timeoutMs) {
    return this.call('Why', request, timeoutMs);
  }

  /** request: {snapshot|cluster, goal: {level?, count?, max_pods?, max_gangs?, shape?,
   *  protect_priority?, protect_namespaces?, protect_labels?, topology_keys?}, options?}:
   *  {freed, moves: [{pod, unit, from_node, to_node}], domain_cost, bound?, gap?, status};
   *  the deadline is the planner's time limit. Nothing is moved. */
  defragment(request, timeoutMs) {
    return this.call('Defragment', request, timeoutMs);
  }

  /** request: {snapshot|cluster (optional), workload, node_types, card_quota?, budget?,
   *  options?, value?}; the deadline is the planner's time limit. */
  planCapacity(request, timeoutMs) {
    return this.call('PlanCapacity', request, timeoutMs);
  }

  /** 'SERVING', 'NOT_SERVING', ... of the whole server ('') or one service; needs no token. */
  async health(service = '', timeoutMs) {
    const answer = await this.call('Check', { service }, timeoutMs, this.healthStub);
    return answer.status;
  }

  close() {
    this.stub.close();
    this.healthStub.close();
  }
}

module.exports = { GangplanClient, grpc, IDEMPOTENT, MAX_RETRIES };
