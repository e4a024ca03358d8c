/**
 * cronflock's Kubernetes access layer, on @kubernetes/client-node 1.4: finding the cluster (kubeconfig,
 * in-cluster), one rate-limited client per identity with 429/Retry-After retries, discovery with a cache,
 * paged and metadata-only lists that restart on 410 Gone, preconditioned deletes, server-side apply, and
 * SelfSubjectAccessReview. Every failure is a {@link K8sError} with a `code`.
 */
export * from './errors.js';
export * from './config.js';
export * from './ratelimit.js';
export * from './client.js';
export * from './discovery.js';
export * from './objects.js';
export * from './list.js';
export * from './access.js';
export * from './watch.js';
export * from './informer.js';
export * from './structural.js';
