// The seed's MyApp controller logic in JavaScript: the same rules, answers and error messages as the Rust
// guest (guests/myapp/src/lib.rs), checked against the same fixtures by the host's conformance suite.
//
// A `MyApp` (`spec.replicas`, default 1; `spec.image`, default `nginx:alpine`) wants one Deployment
// `<name>-deploy` running that image, and reports `status.phase`: `Created` until the observed Deployment
// has as many ready replicas as asked, then `Ready`.
//
// componentize-js maps the contract (wit/v0.1.0/reconciler.wit: this guest stays on contract 0.1.0) onto plain JS: the `log` interface is a module
// named after it, the `request`/`response` records are objects with lowerCamelCase fields, an `option` is a
// value or `undefined`, and a `result` is the returned value or, for its `err` case, a thrown value.

import { emit } from 'reconcile:guest/log@0.1.0';

const DEFAULT_REPLICAS = 1;
const DEFAULT_IMAGE = 'nginx:alpine';
const MAX_REPLICAS = 2147483647;

export function reconcile(req) {
  if (req.finalizing) {
    // Nothing to clean up beyond what the host prunes; a bad spec must not block deletion.
    return { children: [], status: undefined, requeueAfterSeconds: undefined, finalized: true };
  }
  try {
    return desired(req.parent, req.children);
  } catch (e) {
    const message = e instanceof Rejection ? e.message : `internal error: ${e}`;
    emit('warn', message);
    throw message;
  }
}

/** An invalid input: its message is the guest's `err`. */
class Rejection extends Error {}

function desired(parentJson, childrenJson) {
  const parent = parse(parentJson, 'parent');
  const name = field(field(parent, 'metadata'), 'name');
  if (typeof name !== 'string' || name === '') {
    throw new Rejection('parent has no metadata.name');
  }
  if (utf8Length(name) > 63) {
    // The name is also the `app` label value, which Kubernetes caps at 63 characters.
    throw new Rejection(
      `metadata.name "${name}" is longer than 63 characters, too long for the app label`,
    );
  }
  const namespace = field(field(parent, 'metadata'), 'namespace');
  const { replicas, image } = spec(parent);

  const deployName = `${name}-deploy`;
  const ready = observedReadyReplicas(childrenJson, deployName);
  const status = {
    phase: ready === replicas ? 'Ready' : 'Created',
    replicas,
    readyReplicas: ready ?? 0,
  };
  const deployment = deploymentFor(name, typeof namespace === 'string' ? namespace : undefined,
    deployName, replicas, image);
  return {
    children: [JSON.stringify(deployment)],
    status: JSON.stringify(status),
    requeueAfterSeconds: undefined,
    finalized: false,
  };
}

/** `spec.replicas` and `spec.image`, with their defaults; an absent or `null` field takes its default. */
function spec(parent) {
  const spec = field(parent, 'spec');
  if (spec === undefined || spec === null) {
    return { replicas: DEFAULT_REPLICAS, image: DEFAULT_IMAGE };
  }
  if (!isObject(spec)) {
    throw new Rejection(`spec must be an object, got ${JSON.stringify(spec)}`);
  }
  let replicas = field(spec, 'replicas');
  if (replicas === undefined || replicas === null) {
    replicas = DEFAULT_REPLICAS;
  } else if (!Number.isInteger(replicas) || replicas < 0 || replicas > MAX_REPLICAS) {
    throw new Rejection(
      `spec.replicas must be an integer from 0 to ${MAX_REPLICAS}, got ${JSON.stringify(replicas)}`,
    );
  }
  let image = field(spec, 'image');
  if (image === undefined || image === null) {
    image = DEFAULT_IMAGE;
  } else if (typeof image !== 'string' || image.trim() === '') {
    throw new Rejection(`spec.image must be a non-empty string, got ${JSON.stringify(image)}`);
  }
  return { replicas, image };
}

/**
 * `status.readyReplicas` of the observed Deployment `deployName` (0 when it has none yet), or `undefined`
 * when no such Deployment was observed.
 */
function observedReadyReplicas(childrenJson, deployName) {
  for (const [i, text] of childrenJson.entries()) {
    const child = parse(text, `observed child ${i}`);
    if (field(child, 'kind') === 'Deployment' && field(field(child, 'metadata'), 'name') === deployName) {
      const ready = field(field(child, 'status'), 'readyReplicas');
      return Number.isInteger(ready) ? ready : 0;
    }
  }
  return undefined;
}

/** The desired Deployment, as the seed's `create_deployment` builds it. */
function deploymentFor(name, namespace, deployName, replicas, image) {
  const labels = () => ({ app: name });
  const metadata = { name: deployName };
  if (namespace !== undefined) {
    metadata.namespace = namespace;
  }
  metadata.labels = labels();
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas,
      selector: { matchLabels: labels() },
      template: {
        metadata: { labels: labels() },
        spec: {
          containers: [{ name: 'main', image, ports: [{ containerPort: 80 }] }],
        },
      },
    },
  };
}

function parse(text, what) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Rejection(`${what} is not valid JSON: ${e.message}`);
  }
}

function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `object[key]` if `object` is a JSON object holding `key`, else `undefined` (never a prototype's). */
function field(object, key) {
  return isObject(object) && Object.hasOwn(object, key) ? object[key] : undefined;
}

function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}
