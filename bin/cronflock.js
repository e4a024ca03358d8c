#!/usr/bin/env node
// The published entry point: the compiled CLI lives in dist/ (built by `npm run build`, run on `npm ci`).
import module from 'node:module';

// Node >= 22.1 keeps V8's compiled code of the modules on disk (os.tmpdir()/node-compile-cache, or
// NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off): a replica's imports then cost ~20 % less CPU
// from the second start on. Node 20 has no such cache; a cache that cannot be written is skipped silently.
module.enableCompileCache?.();
await import('../dist/runner/cli/main.js');
