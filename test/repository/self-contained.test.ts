/**
 * The repository stands alone: a clone with nothing beside it builds, passes its tests and explains its design.
 * Nothing in it may reach outside its own folder — no `../shared/…` next to the clone, no sibling checkout — and
 * the documents it links to must be in it. A local run cannot see such a reference fail when the outside file
 * happens to exist on this machine, so this test reads the sources instead: every relative path literal in code
 * (`'../…'`), resolved from where the file runs (`dist/` for compiled sources), and every relative link in the
 * Markdown files.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/replica.js';

/** Tracked files (git), so that local scratch files and node_modules do not count. */
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);

/** Whether `file` is compiled into dist/ (tsconfig.build.json) and so runs from there. */
const compiled = (file: string): boolean => /^(runner|jobs|k8s|bench)\/.*\.ts$/.test(file) && !file.endsWith('.test.ts');

const inside = (abs: string): boolean => {
  const rel = path.relative(ROOT, abs);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

describe('the repository stands alone', () => {
  it('has code whose relative paths stay inside it (resolved from where each file runs)', () => {
    const outside: string[] = [];
    for (const file of tracked.filter((f) => /\.(ts|mts|js|mjs|cjs)$/.test(f))) {
      const runsIn = path.dirname(path.join(ROOT, compiled(file) ? path.join('dist', file) : file));
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const m of line.matchAll(/(['"`])(\.\.\/[^'"`$]*)\1/g)) {
            if (!inside(path.resolve(runsIn, m[2]!))) outside.push(`${file}:${i + 1}: ${m[2]}`);
          }
        });
    }
    expect(outside, 'these paths leave the repository; copy what they need into it').toEqual([]);
  });

  it('has Markdown whose relative links point at files in it', () => {
    const broken: string[] = [];
    for (const file of tracked.filter((f) => f.endsWith('.md'))) {
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const m of line.matchAll(/\]\(([^)\s#]+)(#[^)\s]*)?\)/g)) {
            const target = m[1]!;
            if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
            const abs = path.resolve(path.dirname(path.join(ROOT, file)), target);
            if (!inside(abs) || !existsSync(abs)) broken.push(`${file}:${i + 1}: ${target}`);
          }
        });
    }
    expect(broken, 'these links point outside the repository or at nothing').toEqual([]);
  });

  it('documents its design in docs/design.md, linked from the README', () => {
    expect(existsSync(path.join(ROOT, 'docs/design.md'))).toBe(true);
    expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain('](docs/design.md)');
  });
});
