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
 */
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_ROOT = path.resolve(__dirname, '..', '..', 'proto');

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
  const protobuf = require('protobufjs');
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

class GangplanClient {
  /**
   * @param {string} target host:port
   * @param {{token?: string, ca?: Buffer, cert?: Buffer, key?: Buffer, timeoutMs?: number}} options
   */
  constructor(target, options = {}) {
    const credentials = options.ca
      ? grpc.credentials.createSsl(options.ca, options.key || null, options.cert || null)
      : grpc.credentials.createInsecure();
    this.stub = new PlacementService(target, credentials);
    this.timeoutMs = options.timeoutMs || 10000;
    this.metadata = new grpc.Metadata();
    if (options.token) this.metadata.set('authorization', `Bearer ${options.token}`);
  }

  call(method, request, timeoutMs) {
    const deadline = new Date(Date.now() + (timeoutMs || this.timeoutMs));
    return new Promise((resolve, reject) => {
      this.stub[method](request, this.metadata, { deadline }, (err, response) => {
        if (err) {
          err.violations = violationsOf(err);
          reject(err);
        } else {
          resolve(response);
        }
      });
    });
  }

  putSnapshot(cluster, snapshotId = '') {
    return this.call('PutSnapshot', { cluster, snapshot_id: snapshotId });
  }

  updateSnapshot(request) {
    return this.call('UpdateSnapshot', request);
  }

  /** request: {snapshot: {id, expected_generation}} or {cluster}, plus job and options. */
  placeJob(request, timeoutMs) {
    return this.call('PlaceJob', request, timeoutMs);
  }

  preempt(request, timeoutMs) {
    return this.call('Preempt', request, timeoutMs);
  }

  enqueue(request, timeoutMs) {
    return this.call('Enqueue', request, timeoutMs);
  }

  close() {
    this.stub.close();
  }
}

module.exports = { GangplanClient, grpc };
