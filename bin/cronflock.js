#!/usr/bin/env node
// The published entry point: the compiled CLI lives in dist/ (built by `npm run build`, run on `npm ci`).
import '../dist/runner/cli/main.js';
