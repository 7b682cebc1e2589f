// The related-objects example in JavaScript: the same rules, answers and error messages as the Rust guest
// (guests/configured/src/lib.rs), checked against the same fixtures by the host's conformance suite.
//
// A `ConfiguredApp` (`spec.image`, `spec.configMapName`, optional `spec.replicas`, default 1) runs one
// Deployment `<name>` whose pods mount the ConfigMap its spec names at `/etc/config`. `related` asks for
// that ConfigMap (a selector by name), so the host hands it over read-only in `request.related` and
// reconciles the parent again when it changes; the hash of its data goes into a pod-template annotation,
// so an edit rolls the pods. A missing ConfigMap is a state (`status.configMap: Missing`), not an error.
//
// componentize-js maps contract 0.2.0's `relating-reconciler` world (wit/reconciler.wit) onto plain JS:
// each export is an exported function, records are objects with lowerCamelCase fields (a `selector` is
// `{apiVersion, kind, namespace, names, labelSelector}`), an `option` is a value or `undefined`, and a
// `result` is the returned value or, for its `err` case, a thrown value.

import { emit } from 'reconcile:guest/log@0.2.0';

/** The annotation on the pod template that rolls the pods when the configuration changes. */
const HASH_ANNOTATION = 'example.com/config-hash';

export function related(parentJson) {
  return answer(() => {
    const spec = parse(parentJson, 'parent').spec ?? {};
    const namespace = typeof spec.configMapNamespace === 'string' ? spec.configMapNamespace : undefined;
    return [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace,
        names: [configMapName(spec)],
        labelSelector: undefined,
      },
    ];
  });
}

export function reconcile(req) {
  if (req.finalizing) {
    return { children: [], status: undefined, requeueAfterSeconds: undefined, finalized: true };
  }
  return answer(() => desired(req.parent, req.related));
}

/** An invalid input: its message is the guest's `err`. */
class Rejection extends Error {}

/** Runs `compute`, turning a rejection (or a bug) into the `err` the host reports on the parent. */
function answer(compute) {
  try {
    return compute();
  } catch (e) {
    const message = e instanceof Rejection ? e.message : `internal error: ${e}`;
    emit('warn', message);
    throw message;
  }
}

function desired(parentJson, relatedJson) {
  const parent = parse(parentJson, 'parent');
  const name = parent.metadata?.name;
  if (typeof name !== 'string') {
    throw new Rejection('parent has no metadata.name');
  }
  const spec = parent.spec ?? {};
  // A cluster-scoped parent has no namespace of its own: it names its Deployment's.
  const namespace = [parent.metadata.namespace, spec.namespace]
    .find((ns) => typeof ns === 'string' && ns !== '') ?? 'default';
  if (typeof spec.image !== 'string' || spec.image === '') {
    throw new Rejection('spec.image is required');
  }
  const configMap = configMapName(spec);
  let replicas = 1;
  if (spec.replicas !== undefined && spec.replicas !== null) {
    if (!Number.isInteger(spec.replicas) || spec.replicas < 0 || spec.replicas > 100) {
      throw new Rejection('spec.replicas must be an integer from 0 to 100');
    }
    replicas = spec.replicas;
  }
  const found = relatedJson
    .map((object) => parse(object, 'related'))
    .find((object) => object.kind === 'ConfigMap' && object.metadata?.name === configMap);
  const hash = found ? configHash(found) : 'missing';
  const labels = { 'app.kubernetes.io/name': 'configured', 'app.kubernetes.io/instance': name };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels, annotations: { [HASH_ANNOTATION]: hash } },
        spec: {
          containers: [
            {
              name: 'app',
              image: spec.image,
              volumeMounts: [{ name: 'config', mountPath: '/etc/config', readOnly: true }],
            },
          ],
          // Optional: the pods start without it, and roll once it exists.
          volumes: [{ name: 'config', configMap: { name: configMap, optional: true } }],
        },
      },
    },
  };
  const status = { configMap: found ? 'Found' : 'Missing', configHash: hash };
  return {
    children: [JSON.stringify(deployment)],
    status: JSON.stringify(status),
    requeueAfterSeconds: undefined,
    finalized: false,
  };
}

function configMapName(spec) {
  if (typeof spec.configMapName !== 'string' || spec.configMapName === '') {
    throw new Rejection('spec.configMapName is required');
  }
  return spec.configMapName;
}

function parse(text, what) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Rejection(`${what}: ${e.message}`);
  }
}

/**
 * The Rust guest's hash, bit for bit: 64-bit FNV-1a over the UTF-8 bytes of `[data, binaryData]` as
 * compact JSON with sorted keys (missing fields are `null`).
 */
function configHash(configMap) {
  const content = sortedJson([configMap.data ?? null, configMap.binaryData ?? null]);
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(content)) {
    hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0');
}

/**
 * Compact JSON with object keys in byte order, as serde_json writes its (ordered) maps. Not JSON.stringify
 * over re-sorted objects: JS puts integer-like keys ("9" before "10") first whatever the insertion order.
 */
function sortedJson(value) {
  if (Array.isArray(value)) {
    return `[${value.map(sortedJson).join(',')}]`;
  }
  if (value && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${sortedJson(value[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}
