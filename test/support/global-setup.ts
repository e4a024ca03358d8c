/**
 * Builds dist/ once per test run: replica processes and CLI tests run the compiled package, as users do.
 */
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  if (process.env.CRONFLOCK_SKIP_BUILD === '1') return;
  execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' }); // tsc, and the .lua scripts copied beside it
}
