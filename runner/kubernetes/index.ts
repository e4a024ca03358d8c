/**
 * cronflock on Kubernetes: the Schedule custom resource (its CRD, generated from the schedule-file schema),
 * the Schedule source every replica watches, the status and Events the replicas write, and the CronJob
 * converter.
 */
export * from './resource.js';
export * from './crd.js';
