// The supported profile: which Barman Cloud ObjectStores the agent reads, and the Secret keys they reference, each with the variable the agent reads it from (guests/evidenceagent/src/objectstore.rs).

import { debug, utf8Length } from '../../sdk/index.js';
import { at, isNull, str } from './json.js';

export const S3 = 's3';
export const AZURE = 'azure';
export const GOOGLE = 'google';

const CREDENTIALS_FIELD = { [S3]: 's3Credentials', [AZURE]: 'azureCredentials', [GOOGLE]: 'googleCredentials' };

const CONFIGURATION = 'spec.configuration';
const ENDPOINT_CA_ENV = 'EVIDENCE_AGENT_ENDPOINT_CA';

/** Why an ObjectStore is outside the profile: `kind` is destination-invalid, unsupported, region-required or malformed. */
export class Problem extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

const destinationInvalid = (m) => new Problem('destination-invalid', m);
const unsupported = (m) => new Problem('unsupported', m);

/** Checks the ObjectStore `name` (its whole object) against the profile: `{provider, destination, endpoint, secrets}`, or throws a Problem. */
export function check(name, object) {
  const configuration = at(object, 'spec', 'configuration');
  const raw = str(at(configuration, 'destinationPath'));
  const destination = raw === undefined ? '' : raw.trim();
  if (destination === '') {
    throw destinationInvalid(`ObjectStore ${name} has no ${CONFIGURATION}.destinationPath`);
  }
  const [provider, host] = locate(name, destination);
  const field = CREDENTIALS_FIELD[provider];
  const credentials = at(configuration, field);
  if (isNull(credentials)) {
    const others = [S3, AZURE, GOOGLE].map((p) => CREDENTIALS_FIELD[p]).filter((f) => !isNull(at(configuration, f)));
    throw others.length === 0
      ? unsupported(`ObjectStore ${name} gives no ${field}: the agent does not use ambient credentials, it needs keys in a Secret`)
      : destinationInvalid(`ObjectStore ${name}: destinationPath ${destination} needs ${field}, but the ObjectStore gives ${others.join(' and ')}`);
  }
  const secrets = [];
  let endpoint;
  if (provider === S3) endpoint = s3(name, configuration, credentials, secrets);
  else if (provider === AZURE) azure(name, destination, host, credentials, secrets);
  else google(name, credentials, secrets);
  const ca = selector(configuration, CONFIGURATION, 'endpointCA', ENDPOINT_CA_ENV);
  if (ca) secrets.push(ca);
  return { provider, destination, endpoint, secrets };
}

function splitOnce(s, sep) {
  const i = s.indexOf(sep);
  return i < 0 ? undefined : [s.slice(0, i), s.slice(i + sep.length)];
}

function locate(name, destination) {
  const invalid = (why) => destinationInvalid(`ObjectStore ${name}: destinationPath ${destination} ${why}`);
  const parts = splitOnce(destination, '://');
  if (!parts) throw invalid('is not a URL (s3://, gs:// or https://)');
  const [scheme, rest] = parts;
  const [authority, path] = splitOnce(rest, '/') ?? [rest, ''];
  if (scheme === 's3' && isBucket(authority, false)) return [S3, authority];
  if (scheme === 'gs' && isBucket(authority, true)) return [GOOGLE, authority];
  if (scheme === 's3' || scheme === 'gs') {
    throw invalid(`names no valid bucket (${debug(authority)}: 3 to 63 lowercase letters, digits, '.' and '-')`);
  }
  if ((scheme === 'https' || scheme === 'http') && authority !== '') {
    const container = path.split('/')[0];
    if (container === '') {
      throw invalid('names no container (https://<account>.blob.core.windows.net/<container>/<path>)');
    }
    return [AZURE, authority];
  }
  throw invalid(`has scheme ${scheme}://, not s3://, gs:// or https://`);
}

const lowerOrDigit = (c) => (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

function isBucket(name, underscores) {
  const inner = (c) => lowerOrDigit(c) || c === '.' || c === '-' || (underscores && c === '_');
  const chars = Array.from(name);
  const len = utf8Length(name);
  return len >= 3 && len <= 63 && chars.every(inner) && lowerOrDigit(chars[0]) && lowerOrDigit(chars[chars.length - 1]);
}

function s3(name, configuration, credentials, secrets) {
  const where = `${CONFIGURATION}.s3Credentials`;
  if (at(credentials, 'inheritFromIAMRole') === true) {
    throw unsupported(`ObjectStore ${name} inherits an IAM role (${where}.inheritFromIAMRole): the role belongs to the Cluster's Pods, the agent needs accessKeyId and secretAccessKey in a Secret`);
  }
  const keyId = selector(credentials, where, 'accessKeyId', 'AWS_ACCESS_KEY_ID');
  const secret = selector(credentials, where, 'secretAccessKey', 'AWS_SECRET_ACCESS_KEY');
  if (!keyId || !secret) {
    throw unsupported(`ObjectStore ${name} gives no ${where}.accessKeyId and secretAccessKey: the agent reads the bucket with static keys only`);
  }
  const url = str(at(configuration, 'endpointURL'));
  const endpoint = url === undefined || url === '' ? undefined : url;
  let host;
  if (endpoint !== undefined) {
    host = endpointHost(endpoint);
    if (host === undefined) {
      throw destinationInvalid(`ObjectStore ${name}: endpointURL ${endpoint} is not an http:// or https:// URL with a host`);
    }
  }
  const region = selector(credentials, where, 'region', 'AWS_REGION');
  const aws = host === undefined || host === 'amazonaws.com' || host.endsWith('.amazonaws.com');
  if (aws && !region) {
    throw new Problem('region-required', `ObjectStore ${name} stores in AWS S3 without ${where}.region: set it to a Secret key holding the bucket's region`);
  }
  const token = selector(credentials, where, 'sessionToken', 'AWS_SESSION_TOKEN');
  for (const r of [keyId, secret, token, region]) if (r) secrets.push(r);
  return endpoint;
}

function endpointHost(url) {
  let rest;
  if (url.startsWith('https://')) rest = url.slice('https://'.length);
  else if (url.startsWith('http://')) rest = url.slice('http://'.length);
  else return undefined;
  const authority = rest.split('/')[0];
  const colon = authority.lastIndexOf(':');
  const host = colon >= 0 ? authority.slice(0, colon) : authority;
  return host !== '' && !/\s/u.test(host) ? host : undefined;
}

function azure(name, destination, host, credentials, secrets) {
  const where = `${CONFIGURATION}.azureCredentials`;
  const suffix = '.blob.core.windows.net';
  const account = host.endsWith(suffix) ? host.slice(0, -suffix.length) : '';
  if (!destination.startsWith('https://') || account === '' || account.includes('.')) {
    throw unsupported(`ObjectStore ${name} stores in ${host}: the agent supports Azure Blob Storage at https://<account>.blob.core.windows.net only (not Azurite, sovereign clouds or custom domains)`);
  }
  for (const ambient of ['inheritFromAzureAD', 'useDefaultAzureCredentials']) {
    if (at(credentials, ambient) === true) {
      throw unsupported(`ObjectStore ${name} uses ${where}.${ambient}: that identity belongs to the Cluster's Pods, the agent needs a connectionString, or a storageAccount with a storageKey or storageSasToken, in a Secret`);
    }
  }
  const connection = selector(credentials, where, 'connectionString', 'AZURE_STORAGE_CONNECTION_STRING');
  if (connection) {
    secrets.push(connection);
    return;
  }
  const acct = selector(credentials, where, 'storageAccount', 'AZURE_STORAGE_ACCOUNT');
  const key = selector(credentials, where, 'storageKey', 'AZURE_STORAGE_KEY')
    ?? selector(credentials, where, 'storageSasToken', 'AZURE_STORAGE_SAS_TOKEN');
  if (acct && key) {
    secrets.push(acct, key);
    return;
  }
  throw unsupported(`ObjectStore ${name} gives no ${where}.connectionString, nor a storageAccount with a storageKey or storageSasToken`);
}

function google(name, credentials, secrets) {
  const where = `${CONFIGURATION}.googleCredentials`;
  const application = selector(credentials, where, 'applicationCredentials', 'GOOGLE_APPLICATION_CREDENTIALS_JSON');
  if (application) {
    secrets.push(application);
    return;
  }
  const gke = at(credentials, 'gkeEnvironment') === true ? " (gkeEnvironment is the Cluster's Pods' workload identity)" : '';
  throw unsupported(`ObjectStore ${name} gives no ${where}.applicationCredentials${gke}: the agent needs a service account key in a Secret`);
}

/** The selector `parent.field`, if set: `{field, name, key, env}`. */
function selector(parent, where, field, env) {
  const value = at(parent, field);
  if (isNull(value)) return undefined;
  const text = (k) => {
    const s = str(at(value, k));
    return s === undefined || s === '' ? undefined : s;
  };
  const name = text('name');
  const key = text('key');
  if (name !== undefined && key !== undefined) return { field: `${where}.${field}`, name, key, env };
  throw new Problem('malformed', `${where}.${field} must name a Secret and a key ({name, key})`);
}
