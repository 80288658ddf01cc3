// The kind's static spec: names, aspects, the reason registry, stalls, reads and writes (guests/evidenceagent/src/registry.rs).

import {
  Registry, WORKLOAD_REASONS, kindRef, kindSpec, pause, reads, readsOptional, stalls, wideColumn, stringify,
} from '../../sdk/index.js';

export const GROUP = 'pgtoolbox.fyannk.dev';
export const VERSION = 'v1alpha1';
export const KIND = 'EvidenceAgent';
export const OWNER = 'evidenceagent';

export const CONFIGURATION_VALID = 'ConfigurationValid';
export const SERVING_CERTIFICATE_READY = 'ServingCertificateReady';
export const WORKLOAD_READY = 'WorkloadReady';

export const CONFIGURATION_INVALID = 'ConfigurationInvalid';
export const CLUSTER_NOT_FOUND = 'ClusterNotFound';
export const BARMAN_PLUGIN_NOT_CONFIGURED = 'BarmanPluginNotConfigured';
export const OBJECT_STORE_NOT_FOUND = 'ObjectStoreNotFound';
export const OBJECT_STORE_API_UNAVAILABLE = 'ObjectStoreAPIUnavailable';
export const UNSUPPORTED_OBJECT_STORE = 'UnsupportedObjectStore';
export const DESTINATION_INVALID = 'DestinationInvalid';
export const REGION_REQUIRED = 'RegionRequired';
export const IMAGE_REQUIRED = 'ImageRequired';
export const IMAGE_NOT_ALLOWED = 'ImageNotAllowed';
export const RESOURCE_NOT_OWNED = 'ResourceNotOwned';
export const SERVICE_CA_PENDING = 'ServiceCAPending';
export const CERTIFICATE_ISSUED = 'CertificateIssued';
export const SECRET_NOT_FOUND = 'SecretNotFound';
export const SECRET_KEY_MISSING = 'SecretKeyMissing';
export const SCALED_TO_ZERO = 'ScaledToZero';

/** Every ConfigurationValid=False reason: each one stalls the agent. */
export const CONFIGURATION_REASONS = [
  CONFIGURATION_INVALID, IMAGE_REQUIRED, IMAGE_NOT_ALLOWED, CLUSTER_NOT_FOUND, BARMAN_PLUGIN_NOT_CONFIGURED,
  OBJECT_STORE_API_UNAVAILABLE, OBJECT_STORE_NOT_FOUND, DESTINATION_INVALID, UNSUPPORTED_OBJECT_STORE,
  REGION_REQUIRED, RESOURCE_NOT_OWNED,
];

const COMMON_USED = [
  CONFIGURATION_INVALID, CLUSTER_NOT_FOUND, IMAGE_NOT_ALLOWED, RESOURCE_NOT_OWNED, SECRET_NOT_FOUND,
  SECRET_KEY_MISSING, SCALED_TO_ZERO,
];

const OWNED = [
  [BARMAN_PLUGIN_NOT_CONFIGURED, 'The Cluster does not archive with the Barman Cloud plugin: no enabled spec.plugins entry barman-cloud.cloudnative-pg.io naming an ObjectStore in parameters.barmanObjectName.'],
  [OBJECT_STORE_NOT_FOUND, "The ObjectStore the Cluster's Barman Cloud plugin names does not exist in the namespace."],
  [OBJECT_STORE_API_UNAVAILABLE, "The Barman Cloud plugin's ObjectStore API (barmancloud.cnpg.io/v1) is not served, or the operator may not read it in the namespace."],
  [UNSUPPORTED_OBJECT_STORE, 'The ObjectStore is outside the supported profile: ambient credentials (IAM role, Azure AD, default Azure credentials, GKE environment) or none, or an Azure endpoint other than <account>.blob.core.windows.net.'],
  [DESTINATION_INVALID, "The ObjectStore's destinationPath or endpointURL is not a valid location for its provider (s3://<bucket>, gs://<bucket>, https://<account>.blob.core.windows.net/<container>), or its credentials are for another provider."],
  [REGION_REQUIRED, 'The ObjectStore stores in AWS S3 without s3Credentials.region: the agent signs its requests for one region and does not discover it.'],
  [IMAGE_REQUIRED, 'No image can be chosen: spec.image is not set and the operator has no defaultImage.'],
  [SERVICE_CA_PENDING, 'The OpenShift service CA has not issued the serving certificate or injected the CA bundle yet.'],
  [CERTIFICATE_ISSUED, 'Event: a serving certificate was issued or renewed.'],
];

export const PAUSE_KEY = 'pgtoolbox.fyannk.dev/reconcile';
export const PAUSE_VALUE = 'skip';

export const clusterKind = () => kindRef('postgresql.cnpg.io', 'v1', 'Cluster');
export const objectStoreKind = () => kindRef('barmancloud.cnpg.io', 'v1', 'ObjectStore');
export const serviceKind = () => kindRef('', 'v1', 'Service');
export const deploymentKind = () => kindRef('apps', 'v1', 'Deployment');
export const secretKind = () => kindRef('', 'v1', 'Secret');
export const configMapKind = () => kindRef('', 'v1', 'ConfigMap');

export const writes = () => [deploymentKind(), serviceKind(), configMapKind(), secretKind()];

/** The OpenAPI v3 schema of `spec` (the Rust guest derives the same from its type). */
export const SPEC_SCHEMA = {
  type: 'object',
  required: ['cluster'],
  properties: {
    cluster: {
      type: 'object',
      description: "The CloudNativePG Cluster, in the agent's namespace, whose Barman Cloud backups the agent gathers evidence of.",
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1, maxLength: 253 } },
    },
    image: {
      type: 'string',
      description: "The agent's image; defaults to the operator's defaultImage. Its repository must be within allowedImageRepositories when the operator sets it.",
      minLength: 1,
    },
  },
};

export function describe() {
  return kindSpec({
    group: GROUP,
    version: VERSION,
    kind: KIND,
    plural: 'evidenceagents',
    namespaced: true,
    profile: 'progressing',
    aspects: [CONFIGURATION_VALID, SERVING_CERTIFICATE_READY, WORKLOAD_READY],
    reasons: new Registry(OWNER).common(COMMON_USED).common(WORKLOAD_REASONS).owned(OWNED).build(),
    quietReasons: [SERVICE_CA_PENDING],
    stalls: CONFIGURATION_REASONS.map(stalls),
    reads: [
      reads(clusterKind()),
      readsOptional(objectStoreKind()),
      reads(deploymentKind()),
      reads(kindRef('', 'v1', 'Pod')),
      reads(secretKind()),
      reads(configMapKind()),
      reads(serviceKind()),
    ],
    pause: pause(PAUSE_KEY, PAUSE_VALUE),
    specSchema: stringify(SPEC_SCHEMA),
    printerColumns: [wideColumn('Certificate-Expiry', 'string', '.status.servingCertificate.expiry')],
  });
}
