/**
 * Many published schedules without replicas: a schedule file of `n` schedules, loaded by the real loader and
 * published by the real publish script (runner/engine/definitions.ts) into a namespace, as a replica would at
 * start. For the dashboard's scale test and benchmark.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadSchedules } from '../../runner/config/load.js';
import { Definitions } from '../../runner/engine/definitions.js';
import { LiveReplicas } from '../../runner/engine/ownership.js';
import type { RedisClient } from '../../runner/redis/connect.js';
import { Keyspace } from '../../runner/redis/keys.js';

/** Writes and publishes `n` schedules (`s-00000` …, various crons) into `namespace`, as replica `publisher`. */
export async function publishMany(redis: RedisClient, dir: string, namespace: string, n: number, publisher = 'bench'): Promise<void> {
  const crons = ['*/5 * * * *', '0 * * * *', '30 2 * * *', '0 0 * * 0', '15 */6 * * *'];
  const lines = ['schedules:'];
  for (let i = 0; i < n; i++) {
    lines.push(`  - {name: s-${String(i).padStart(5, '0')}, cron: "${crons[i % crons.length]}", jitter: 30s, job: {kind: http, url: "http://127.0.0.1:9/hook"}}`);
  }
  const file = join(dir, `many-${n}.yaml`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  const res = await loadSchedules(file);
  if (res.errors.length) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const keys = new Keyspace(namespace);
  await new Definitions(redis, keys, publisher, new LiveReplicas()).publish(res.schedules);
  // A live membership for the publisher, so that the definitions count as published by a live replica.
  await redis.zadd(keys.replicas, Date.now() + 3_600_000, publisher);
}
