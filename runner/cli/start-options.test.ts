import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { compileOptions, DEFAULT_OPTIONS, OptionsError } from '../engine/options.js';
import { flagNames, flagOption, optionsFromFlags, START_FLAGS } from './start-options.js';

/** `cronflock start`'s runner options parsed from `argv` as the command does. */
function parse(argv: string[], env: Record<string, string> = {}): Record<string, unknown> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const c = new Command().exitOverride();
    for (const f of START_FLAGS) c.addOption(flagOption(f));
    c.parse(argv, { from: 'user' });
    return c.opts();
  } finally {
    process.env = saved;
  }
}

describe('the start flags (one table)', () => {
  it('set each runner option once, in its unit; flags not given and empty names are left to the defaults', () => {
    const runnerFlags = START_FLAGS.filter((f) => f.option !== undefined);
    expect(new Set(runnerFlags.map((f) => f.option)).size).toBe(runnerFlags.length);
    expect(new Set(START_FLAGS.map((f) => flagOption(f).attributeName())).size).toBe(START_FLAGS.length);
    expect(optionsFromFlags(parse(['--lock', '2s', '--stalled-interval', '500ms', '--max-stalls', '0', '--backfill-concurrency', '3']))).toEqual({
      lockMs: 2000,
      stalledIntervalMs: 500,
      maxStalls: 0,
      backfillConcurrency: 3,
    });
    expect(optionsFromFlags(parse(['--replica', '']))).toEqual({});
    expect(optionsFromFlags(parse([], { CRONFLOCK_REPLICA: 'from-env' }))).toEqual({ replica: 'from-env' });
    expect(() => parse(['--concurrency', '0'])).toThrow(/must be a whole number ≥ 1/);
    expect(() => parse(['--tick', 'soon'])).toThrow(/tick/);
  });

  it('show each default in its unit', () => {
    const help = (option: string): string => flagOption(START_FLAGS.find((f) => f.option === option)!).description;
    expect(help('lockMs')).toBe(`claim lease; failover takes about lock + lock/2 (default 4s)`);
    expect(help('horizonMs')).toContain('(default 1h)');
    expect(help('concurrency')).toContain(`(default ${DEFAULT_OPTIONS.concurrency})`);
    expect(help('stalledIntervalMs')).toContain('(default: lock/2)');
  });

  it("name the flags in compileOptions' messages", () => {
    const message = (() => {
      try {
        compileOptions(optionsFromFlags(parse(['--tick', '2s'])));
      } catch (e) {
        return (e as OptionsError).message;
      }
      return '';
    })();
    expect(flagNames(message)).toBe('--tick must be ≥ 50 ms and at most half of --lookahead (3000 ms)');
    expect(flagNames('prefetchMs must be shorter than lookaheadMs; namespace and replica')).toBe('prefetch must be shorter than --lookahead; --namespace and --replica');
  });

  it('--redis-wait-replicas: off by default; its timeout at least 1 ms (WAIT 0 waits for ever) and under half the lease', () => {
    expect(compileOptions({}).redisWaitReplicas).toBe(0);
    expect(optionsFromFlags(parse(['--redis-wait-replicas', '1', '--redis-wait-timeout', '250ms']))).toEqual({ redisWaitReplicas: 1, redisWaitTimeoutMs: 250 });
    const message = (argv: string[]): string => {
      try {
        compileOptions(optionsFromFlags(parse(argv)));
      } catch (e) {
        return flagNames((e as OptionsError).message);
      }
      return '';
    };
    expect(message(['--redis-wait-replicas', '1', '--lock', '1s'])).toBe(
      '--redis-wait-timeout must be at least 1 ms and shorter than half of --lock (500 ms), got 1000 ms',
    );
    expect(message(['--redis-wait-replicas', '1', '--redis-wait-timeout', '0ms'])).toMatch(/^--redis-wait-timeout must be at least 1 ms/);
    // Without WAIT the default timeout is not used, so it is not checked.
    expect(message(['--lock', '1s'])).toBe('');
    // A timeout given without WAIT would be ignored without a word: refused, saying how to fix it.
    const refusal = /^--redis-wait-timeout 250ms has no effect without --redis-wait-replicas of 1 or more \((not given|got 0): claims are not waited for\): add --redis-wait-replicas <n>, .* or leave out --redis-wait-timeout$/;
    expect(message(['--redis-wait-timeout', '250ms'])).toMatch(refusal);
    expect(message(['--redis-wait-timeout', '250ms'])).toContain('(not given:');
    expect(message(['--redis-wait-replicas', '0', '--redis-wait-timeout', '250ms'])).toContain('(got 0:');
    expect(message(['--redis-wait-replicas', '0', '--redis-wait-timeout', '250ms'])).toMatch(refusal);
    expect(() => parse(['--redis-wait-replicas', '-1'])).toThrow();
  });
});
