// The EvidenceAgent guest in JavaScript: the same verdicts and changes as the Rust guest (guests/evidenceagent/src), module by module.

import {
  Parent, RECONCILING, RETRY_SECONDS, VerdictBuilder, apply, certificate as certificateChange, checkOwned,
  chooseImage, debug, fails, ok, parentJson, read, readFailure, remove, setting, settingList, stalled, unknown,
  unread, utf8Length, workloadCondition, ALLOWED_REPOSITORIES,
} from '../../sdk/index.js';
import { at, display, isNull, str } from './json.js';
import * as objectstore from './objectstore.js';
import * as R from './registry.js';

// ---- children.rs ---------------------------------------------------------------

export const CA_BUNDLE_KEY = 'service-ca.crt';
export const TLS_KEYS = ['tls.crt', 'tls.key'];
const MAX_SERVICE_NAME = 63;

export function childrenOf(agent) {
  return {
    workload: `${agent}-evidence-agent`,
    servingSecret: `${agent}-serving-cert`,
    caBundle: `${agent}-service-ca`,
  };
}

export function dnsNames(children, namespace) {
  const s = children.workload;
  return [s, `${s}.${namespace}`, `${s}.${namespace}.svc`, `${s}.${namespace}.svc.cluster.local`];
}

function serviceNameProblem(children, agent) {
  const name = children.workload;
  const valid = utf8Length(name) <= MAX_SERVICE_NAME && /^[a-z]/.test(name) && /^[a-z0-9-]*$/.test(name);
  const longest = MAX_SERVICE_NAME - (utf8Length(name) - utf8Length(agent));
  return valid
    ? undefined
    : `metadata.name ${agent} gives the Service ${name}, which is not a DNS-1035 label (at most ${MAX_SERVICE_NAME} lowercase letters, digits and '-', starting with a letter): name the agent with at most ${longest} such characters`;
}

// ---- issuer.rs -------------------------------------------------------------------

export const ISSUER_SETTING = 'servingCertificate';
export const OPERATOR_EXPIRY_ANNOTATION = 'reconciler.dev/certificate-expiry';
export const SERVICE_CA_EXPIRY_ANNOTATION = 'service.beta.openshift.io/expiry';
export const SERVICE_CA_ORIGIN_ANNOTATION = 'service.beta.openshift.io/originating-service-name';

export const OPERATOR = { value: 'operator', who: 'the operator', expiryAnnotation: OPERATOR_EXPIRY_ANNOTATION };
export const SERVICE_CA = { value: 'service-ca', who: 'the OpenShift service CA', expiryAnnotation: SERVICE_CA_EXPIRY_ANNOTATION };

export function issuerFromSetting(value) {
  const v = value === undefined ? undefined : value.trim();
  if (v === undefined || v === '' || v === 'operator') return OPERATOR;
  if (v === 'service-ca') return SERVICE_CA;
  throw stalled(R.CONFIGURATION_INVALID, `the operator setting ${ISSUER_SETTING} is ${debug(v)}: it is operator (the default) or service-ca`);
}

// ---- spec.rs ---------------------------------------------------------------------

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const absent = (v) => v === null || v === undefined || (typeof v === 'string' && v.trim() === '');

/** `.spec` as the Rust SDK's serde parse reads it: fields in key order, then the missing ones. */
export function parseSpec(parent) {
  const spec = at(parent, 'spec');
  const invalid = (m) => stalled(R.CONFIGURATION_INVALID, m);
  if (!isObject(spec)) throw invalid('spec is missing or is not an object');
  const out = { cluster: undefined, image: undefined };
  for (const key of Object.keys(spec).sort()) {
    const value = spec[key];
    if (absent(value)) continue;
    if (key === 'cluster') {
      if (!isObject(value)) throw invalid(`spec.cluster must be an object with a name, not ${display(value)}`);
      const name = value.name;
      if (absent(name)) throw invalid('spec.cluster.name is required');
      if (typeof name !== 'string') throw invalid(`spec.cluster.name must be a string, not ${display(name)}`);
      out.cluster = { name };
    } else if (key === 'image') {
      if (typeof value !== 'string') throw invalid(`spec.image must be a string, not ${display(value)}`);
      out.image = value;
    }
  }
  if (out.cluster === undefined) throw invalid('spec.cluster is required');
  if (!isObjectName(out.cluster.name)) {
    throw invalid(`spec.cluster.name ${debug(out.cluster.name)} is not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253 characters)`);
  }
  return out;
}

function isObjectName(name) {
  const edge = (c) => c !== undefined && /^[a-z0-9]$/.test(c);
  return utf8Length(name) <= 253 && edge(name[0]) && edge(name[name.length - 1]) && /^[a-z0-9.-]*$/.test(name);
}

// ---- configuration.rs ------------------------------------------------------------

export const BARMAN_PLUGIN = 'barman-cloud.cloudnative-pg.io';
export const DEFAULT_IMAGE = 'defaultImage';

/** ConfigurationValid's checks in their documented order; throws NotValid, else the valid configuration. */
function configuration(input, facts, agent, children) {
  const spec = parseSpec(parentJson(input));
  const problem = serviceNameProblem(children, agent.name);
  if (problem !== undefined) throw stalled(R.CONFIGURATION_INVALID, problem);
  const issuer = issuerFromSetting(setting(input, ISSUER_SETTING));
  const allowed = settingList(input, ALLOWED_REPOSITORIES);
  const chosen = chooseImage(spec.image, setting(input, DEFAULT_IMAGE), DEFAULT_IMAGE, allowed);
  if (chosen.refusal) throw stalled(chosen.refusal.reason, chosen.refusal.message);
  if (chosen.image === undefined) throw stalled(R.IMAGE_REQUIRED, 'spec.image is not set and the operator has no defaultImage');
  const [objectStore, store] = backupTarget(facts, agent.namespace, spec.cluster.name);
  ownership(facts, agent, children, issuer);
  return { spec, image: chosen.image, objectStore, store, issuer };
}

function backupTarget(facts, namespace, clusterName) {
  const cluster = read(() => facts.get(R.clusterKind(), namespace, clusterName));
  if (cluster.error) throw unread(readFailure(`Cluster ${clusterName}`, cluster.error));
  if (cluster.value === undefined) throw stalled(R.CLUSTER_NOT_FOUND, `Cluster ${clusterName} does not exist in ${namespace}`);
  const clusterJson = parse(cluster.value.json);
  const objectStore = barmanObjectName(clusterName, clusterJson);
  const kind = R.objectStoreKind();
  const unavailable = (forbidden) => {
    const why = forbidden
      ? `the operator may not read ObjectStores (barmancloud.cnpg.io/v1) in ${namespace}`
      : 'the ObjectStore API (barmancloud.cnpg.io/v1) is not served: install the Barman Cloud plugin';
    return stalled(R.OBJECT_STORE_API_UNAVAILABLE, `Cluster ${clusterName} archives to ObjectStore ${objectStore}, but ${why}`);
  };
  const availability = facts.apiAvailability(kind, namespace);
  if (availability === 'not-served') throw unavailable(false);
  if (availability === 'forbidden') throw unavailable(true);
  const found = read(() => facts.get(kind, namespace, objectStore));
  if (found.error) {
    if (found.error.tag === 'not-served') throw unavailable(false);
    if (found.error.tag === 'forbidden') throw unavailable(true);
    throw unread(readFailure(`ObjectStore ${objectStore}`, found.error));
  }
  if (found.value === undefined) {
    throw stalled(R.OBJECT_STORE_NOT_FOUND, `ObjectStore ${objectStore}, which Cluster ${clusterName} archives to, does not exist in ${namespace}`);
  }
  try {
    return [objectStore, objectstore.check(objectStore, parse(found.value.json))];
  } catch (e) {
    if (!(e instanceof objectstore.Problem)) throw e;
    switch (e.kind) {
      case 'destination-invalid': throw stalled(R.DESTINATION_INVALID, e.message);
      case 'unsupported': throw stalled(R.UNSUPPORTED_OBJECT_STORE, e.message);
      case 'region-required': throw stalled(R.REGION_REQUIRED, e.message);
      default: throw stalled(R.CONFIGURATION_INVALID, `ObjectStore ${objectStore}: ${e.message}`);
    }
  }
}

function parse(json) {
  try {
    return JSON.parse(json);
  } catch {
    return null;
  }
}

function barmanObjectName(clusterName, cluster) {
  const plugins = at(cluster, 'spec', 'plugins');
  const entry = Array.isArray(plugins) ? plugins.find((p) => str(at(p, 'name')) === BARMAN_PLUGIN) : undefined;
  const notConfigured = (m) => stalled(R.BARMAN_PLUGIN_NOT_CONFIGURED, m);
  if (entry === undefined) {
    const inTree = isNull(at(cluster, 'spec', 'backup', 'barmanObjectStore'))
      ? ''
      : ' (it backs up with the in-tree spec.backup.barmanObjectStore, which the agent does not read)';
    throw notConfigured(`Cluster ${clusterName} has no spec.plugins entry ${BARMAN_PLUGIN}${inTree}`);
  }
  if (at(entry, 'enabled') === false) {
    throw notConfigured(`Cluster ${clusterName}'s spec.plugins entry ${BARMAN_PLUGIN} is disabled (enabled: false)`);
  }
  const name = str(at(entry, 'parameters', 'barmanObjectName'));
  if (name === undefined || name === '') {
    throw notConfigured(`Cluster ${clusterName}'s spec.plugins entry ${BARMAN_PLUGIN} names no ObjectStore in parameters.barmanObjectName`);
  }
  return name;
}

const metaOf = (observed) => (observed.error || observed.value === undefined ? observed : { value: observed.value.meta });

function ownership(facts, agent, children, issuer) {
  const ns = agent.namespace;
  const w = children.workload;
  checkOwned(agent, 'Deployment', w, metaOf(read(() => facts.workload(ns, w))));
  checkOwned(agent, 'Service', w, metaOf(read(() => facts.get(R.serviceKind(), ns, w))));
  if (issuer === OPERATOR) servingSecret(facts, agent, children);
  else checkOwned(agent, 'ConfigMap', children.caBundle, metaOf(read(() => facts.configMap(ns, children.caBundle))));
}

function servingSecret(facts, agent, children) {
  const name = children.servingSecret;
  const found = read(() => facts.secret(agent.namespace, name));
  if (found.error) throw unread(readFailure(`Secret ${name}`, found.error));
  const secret = found.value;
  if (secret === undefined) return;
  const refusal = agent.foreign('Secret', name, secret.meta);
  if (refusal !== undefined) throw stalled(R.RESOURCE_NOT_OWNED, refusal);
  if (secret.meta.controller !== undefined) return;
  const serviceCas = secret.meta.annotations.some(([k, v]) => k === SERVICE_CA_ORIGIN_ANNOTATION && v === children.workload);
  const whatToDo = serviceCas
    ? `it is the OpenShift service CA's, for Service ${children.workload}: remove the Service's annotation ${SERVING_CERT_ANNOTATION}, then delete the Secret`
    : 'delete it';
  throw stalled(
    R.RESOURCE_NOT_OWNED,
    `Secret ${name} exists and ${agent.kind} ${agent.name} does not control it: the operator issues the serving certificate only into a Secret of its own; ${whatToDo}`,
  );
}

// ---- certificate.rs --------------------------------------------------------------

export const STATUS_FIELD = 'servingCertificate';

function certificate(input, facts, agent, children, issuer, verdict) {
  const name = children.servingSecret;
  const found = read(() => facts.secret(agent.namespace, name));
  if (found.error) {
    verdict.aspect(unknown(R.SERVING_CERTIFICATE_READY, RECONCILING, readFailure(`Secret ${name}`, found.error)))
      .requeueAfter(RETRY_SECONDS);
    return;
  }
  if (issuer === OPERATOR) byOperator(input, found.value, name, verdict);
  else byServiceCa(input, facts, agent, children, found.value, verdict);
}

const missingKeys = (secret) => TLS_KEYS.filter((k) => !secret.keys.includes(k));

function expiry(secret, issuer) {
  const found = secret.meta.annotations.find(([k]) => k === issuer.expiryAnnotation);
  return found ? found[1] : undefined;
}

function byOperator(input, secret, name, verdict) {
  const e = secret && missingKeys(secret).length === 0 ? expiry(secret, OPERATOR) : undefined;
  let c;
  if (secret !== undefined && e !== undefined) {
    record(input, secret, OPERATOR, verdict);
    c = ok(R.SERVING_CERTIFICATE_READY, `Secret ${name} holds the serving certificate signed by the operator's CA (expires ${e})`);
  } else if (secret === undefined) {
    c = unknown(R.SERVING_CERTIFICATE_READY, RECONCILING, `the operator is issuing the serving certificate in Secret ${name}`);
  } else {
    const missing = missingKeys(secret);
    const found = missing.length === 0
      ? `the certificate there has no ${OPERATOR_EXPIRY_ANNOTATION} annotation`
      : `the Secret lacks ${missing.join(' and ')}`;
    c = unknown(R.SERVING_CERTIFICATE_READY, RECONCILING, `the operator is issuing the serving certificate in Secret ${name}: ${found}`);
  }
  verdict.aspect(c);
}

function byServiceCa(input, facts, agent, children, secret, verdict) {
  const name = children.servingSecret;
  const operators = secret !== undefined && secret.meta.controller !== undefined && secret.meta.controller.uid === agent.uid;
  const issued = secret !== undefined && !operators && missingKeys(secret).length === 0 ? secret : undefined;
  if (issued !== undefined) record(input, issued, SERVICE_CA, verdict);
  const bundle = read(() => facts.configMap(agent.namespace, children.caBundle));
  if (bundle.error) {
    verdict.aspect(unknown(R.SERVING_CERTIFICATE_READY, RECONCILING, readFailure(`ConfigMap ${children.caBundle}`, bundle.error)))
      .requeueAfter(RETRY_SECONDS);
    return;
  }
  const injected = bundle.value !== undefined && bundle.value.keys.includes(CA_BUNDLE_KEY);
  const pending = (m) => fails(R.SERVING_CERTIFICATE_READY, R.SERVICE_CA_PENDING, m);
  let c;
  if (secret === undefined) {
    c = pending(`the OpenShift service CA has not issued Secret ${name} yet`);
  } else if (issued === undefined && operators) {
    c = pending(`the OpenShift service CA has not issued Secret ${name} yet: the Secret there is the one the operator issued`);
  } else if (issued === undefined) {
    c = pending(`the OpenShift service CA has not issued the certificate yet: Secret ${name} lacks ${missingKeys(secret).join(' and ')}`);
  } else if (!injected) {
    c = pending(`the OpenShift service CA has not injected its CA bundle into ConfigMap ${children.caBundle} (key ${CA_BUNDLE_KEY}) yet`);
  } else {
    const e = expiry(issued, SERVICE_CA);
    c = ok(
      R.SERVING_CERTIFICATE_READY,
      `Secret ${name} holds the serving certificate${e === undefined ? '' : ` (expires ${e})`}; ConfigMap ${children.caBundle} holds the service CA bundle`,
    );
  }
  verdict.aspect(c);
}

function record(input, secret, issuer, verdict) {
  const e = expiry(secret, issuer);
  const seen = { secretName: secret.meta.name, uid: secret.meta.uid };
  if (e !== undefined) seen.expiry = e;
  const previous = at(parentJson(input), 'status', STATUS_FIELD);
  const same = JSON.stringify(at(previous, 'uid')) === JSON.stringify(seen.uid)
    && JSON.stringify(at(previous, 'expiry')) === JSON.stringify(seen.expiry ?? null);
  if (!same) {
    const what = isNull(previous) ? 'issued' : 'renewed';
    verdict.event(
      'normal',
      R.CERTIFICATE_ISSUED,
      `${issuer.who} ${what} the serving certificate in Secret ${secret.meta.name}${e === undefined ? '' : `, valid until ${e}`}`,
    );
  }
  verdict.field(STATUS_FIELD, seen);
}

// ---- workload.rs -------------------------------------------------------------------

function workload(facts, namespace, deployment, objectStore, secrets, verdict) {
  let c;
  const referenced = referencedSecrets(facts, namespace, objectStore, secrets);
  if (referenced.unread !== undefined) {
    verdict.requeueAfter(RETRY_SECONDS);
    c = unknown(R.WORKLOAD_READY, RECONCILING, referenced.unread);
  } else if (referenced.condition !== undefined) {
    c = referenced.condition;
  } else {
    const observed = read(() => facts.workload(namespace, deployment));
    if (observed.error) verdict.requeueAfter(RETRY_SECONDS);
    c = workloadCondition(R.WORKLOAD_READY, deployment, observed);
  }
  verdict.aspect(c);
}

const byteOrder = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function referencedSecrets(facts, namespace, objectStore, secrets) {
  const found = new Map();
  for (const r of secrets) {
    if (!found.has(r.name)) {
      const s = read(() => facts.secret(namespace, r.name));
      if (s.error) return { unread: readFailure(`Secret ${r.name}`, s.error) };
      found.set(r.name, s.value);
    }
  }
  const absentFields = new Map();
  for (const r of secrets) {
    if (found.has(r.name) && found.get(r.name) === undefined) {
      if (!absentFields.has(r.name)) absentFields.set(r.name, []);
      absentFields.get(r.name).push(r.field);
    }
  }
  const absentList = [...absentFields.keys()].sort(byteOrder).map((n) => `Secret ${n} (${absentFields.get(n).join(', ')})`);
  if (absentList.length > 0) {
    return {
      condition: fails(R.WORKLOAD_READY, R.SECRET_NOT_FOUND, `ObjectStore ${objectStore} references Secrets that do not exist in ${namespace}: ${absentList.join(', ')}`),
    };
  }
  const keyless = secrets
    .filter((r) => found.get(r.name) !== undefined && !found.get(r.name).keys.includes(r.key))
    .map((r) => `Secret ${r.name} has no key ${r.key} (${r.field})`);
  if (keyless.length > 0) {
    return { condition: fails(R.WORKLOAD_READY, R.SECRET_KEY_MISSING, `ObjectStore ${objectStore}: ${keyless.join('; ')}`) };
  }
  return {};
}

// ---- render.rs ---------------------------------------------------------------------

export const NAME_LABEL = ['app.kubernetes.io/name', 'evidence-agent'];
export const INSTANCE_LABEL = 'app.kubernetes.io/instance';
export const CONTAINER = 'evidence-agent';
export const CONTAINER_PORT = 8443;
export const PORT_NAME = 'https';
export const SERVICE_PORT = 443;
export const TLS_MOUNT = '/var/run/secrets/tls';
const TLS_VOLUME = 'tls';
export const READINESS_PATH = '/readyz';
export const ISSUER_ANNOTATION = 'pgtoolbox.fyannk.dev/serving-certificate';
export const SERVING_CERT_ANNOTATION = 'service.beta.openshift.io/serving-cert-secret-name';
export const INJECT_CA_BUNDLE_ANNOTATION = 'service.beta.openshift.io/inject-cabundle';

export const labels = (agent) => ({ [NAME_LABEL[0]]: NAME_LABEL[1], [INSTANCE_LABEL]: agent });

export function deploymentBody(agent, children, valid) {
  const l = labels(agent);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: children.workload, labels: l },
    spec: {
      replicas: 1,
      selector: { matchLabels: l },
      template: {
        metadata: { labels: l },
        spec: {
          automountServiceAccountToken: false,
          containers: [{
            name: CONTAINER,
            image: valid.image,
            env: env(valid),
            ports: [{ name: PORT_NAME, containerPort: CONTAINER_PORT, protocol: 'TCP' }],
            readinessProbe: { httpGet: { path: READINESS_PATH, port: PORT_NAME, scheme: 'HTTPS' } },
            resources: { requests: { cpu: '10m', memory: '64Mi' } },
            securityContext: {
              allowPrivilegeEscalation: false,
              capabilities: { drop: ['ALL'] },
              runAsNonRoot: true,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            volumeMounts: [{ name: TLS_VOLUME, mountPath: TLS_MOUNT, readOnly: true }],
          }],
          volumes: [{ name: TLS_VOLUME, secret: { secretName: children.servingSecret } }],
        },
      },
    },
  };
}

function env(valid) {
  const value = (name, v) => ({ name, value: v });
  const out = [
    value('EVIDENCE_AGENT_CLUSTER', valid.spec.cluster.name),
    value('EVIDENCE_AGENT_OBJECT_STORE', valid.objectStore),
    value('EVIDENCE_AGENT_DESTINATION_PATH', valid.store.destination),
  ];
  if (valid.store.endpoint !== undefined) out.push(value('EVIDENCE_AGENT_ENDPOINT_URL', valid.store.endpoint));
  for (const r of valid.store.secrets) out.push({ name: r.env, valueFrom: { secretKeyRef: { name: r.name, key: r.key } } });
  return out;
}

export function serviceBody(agent, children, issuer) {
  const annotations = { [ISSUER_ANNOTATION]: issuer.value };
  if (issuer === SERVICE_CA) annotations[SERVING_CERT_ANNOTATION] = children.servingSecret;
  const l = labels(agent);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: children.workload, labels: l, annotations },
    spec: {
      type: 'ClusterIP',
      selector: l,
      ports: [{ name: PORT_NAME, port: SERVICE_PORT, targetPort: PORT_NAME, protocol: 'TCP' }],
    },
  };
}

export function caBundleBody(agent, children) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: children.caBundle, labels: labels(agent), annotations: { [INJECT_CA_BUNDLE_ANNOTATION]: 'true' } },
  };
}

// ---- changes.rs ----------------------------------------------------------------------

function changesOf(facts, agent, children, valid, verdict) {
  const changes = [];
  const left = leftover(facts, agent, children, valid.issuer);
  if (left.error) verdict.requeueAfter(RETRY_SECONDS);
  else if (left.value !== undefined) changes.push(left.value);
  if (valid.issuer === OPERATOR) {
    changes.push(certificateChange(children.servingSecret, dnsNames(children, agent.namespace)));
  } else {
    changes.push(apply(R.configMapKind(), children.caBundle, caBundleBody(agent.name, children)));
  }
  changes.push(apply(R.serviceKind(), children.workload, serviceBody(agent.name, children, valid.issuer)));
  changes.push(apply(R.deploymentKind(), children.workload, deploymentBody(agent.name, children, valid)));
  return changes;
}

function leftover(facts, agent, children, issuer) {
  if (issuer === OPERATOR) {
    const owned = read(() => facts.children(R.configMapKind()));
    if (owned.error) return owned;
    const found = owned.value.find((o) => o.meta.name === children.caBundle);
    return { value: found && remove(R.configMapKind(), children.caBundle, found.meta.uid) };
  }
  const secret = read(() => facts.secret(agent.namespace, children.servingSecret));
  if (secret.error) return secret;
  const s = secret.value;
  const operators = s !== undefined && s.meta.controller !== undefined && s.meta.controller.uid === agent.uid;
  return { value: operators ? remove(R.secretKind(), children.servingSecret, s.meta.uid) : undefined };
}

// ---- lib.rs --------------------------------------------------------------------------

/** One pass: the verdict and the changes (see the Rust guest's `reconcile`). */
export function reconcile(input, facts) {
  const verdict = new VerdictBuilder();
  let changes = [];
  if (input.paused) return { verdict: verdict.build(), changes };
  const agent = Parent.of(R.KIND, input.parent.meta);
  const children = childrenOf(agent.name);
  let valid;
  try {
    valid = configuration(input, facts, agent, children);
  } catch (e) {
    if (e.kind === 'stalled') {
      verdict.aspect(fails(R.CONFIGURATION_VALID, e.reason, e.message)).stall(e.reason, e.message);
    } else if (e.kind === 'unread') {
      verdict.aspect(unknown(R.CONFIGURATION_VALID, RECONCILING, e.message)).requeueAfter(RETRY_SECONDS);
    } else {
      throw e;
    }
    return { verdict: verdict.build(), changes };
  }
  verdict.aspect(ok(
    R.CONFIGURATION_VALID,
    `Cluster ${valid.spec.cluster.name} archives to ObjectStore ${valid.objectStore} (${valid.store.destination}); image ${valid.image}`,
  ));
  changes = changesOf(facts, agent, children, valid, verdict);
  certificate(input, facts, agent, children, valid.issuer, verdict);
  workload(facts, agent.namespace, children.workload, valid.objectStore, valid.store.secrets, verdict);
  return { verdict: verdict.build(), changes };
}

export const describe = R.describe;
export const writes = R.writes;
